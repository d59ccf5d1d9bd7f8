"""Why a ``roboreward`` run entry is refused before anything runs (or runs off the official input), and what to do.

The messages of the checks in :mod:`.run_specs`, :mod:`.routing` and :mod:`.scenario`, which stay there, and the
check that stops a run of a retired model (the retirement table: :mod:`helm_roboreward.protocol.published`).
"""

import os

from helm_roboreward.protocol.published import ALLOW_RETIRED_VARIABLE, RETIRED_MODELS, Retirement

_OFFICIAL_VALUES = {
    "score": "parsed; expected: expected-score rewards from the answer token's probabilities",
    "layout": "the message layout of each model's official client",
    "decoding": "checkpoint sampling for Qwen-VL and RoboReward, temperature 0 for the rest",
}


def not_one_of(name: str, value: str, allowed: tuple[str, ...]) -> ValueError:
    """An option value outside its choices (the official one named where the choice is not obvious)."""
    official = _OFFICIAL_VALUES.get(name)
    return ValueError(f"roboreward: {name}={value!r} is not one of {', '.join(allowed)}"
                      + (f" (official: {official})" if official else ""))


def unknown_arguments(names: list[str]) -> ValueError:
    """Arguments the run spec does not take."""
    return ValueError(f"roboreward: unknown argument(s) {', '.join(sorted(names))}; see README's run-entry options "
                      "table")


def not_a_subset_id(subset: str) -> ValueError:
    """A subset that is no folder name (it would move the run folder: the run name holds it)."""
    return ValueError(f"roboreward: subset={subset!r} is not a subset id: give the name of a folder under the data's "
                      "test/ folder (no '/', '\\', '.' or '..'), or subset=all")


def video_not_sendable(deployment: str, client_class: str) -> ValueError:
    """``video=native`` for a deployment whose client cannot send video."""
    return ValueError(
        f"roboreward: video=native, but model deployment {deployment!r} uses {client_class}, which cannot send video "
        "(HELM would reject or silently drop it). Use video=frames (or video=auto), or a deployment whose client "
        "takes video, e.g. the vLLM deployments in prod_env/.")


def frames_not_video(model: str, deployment: str, client_class: str) -> str:
    """The warning for ``video=auto`` giving frames to a model that officially got the mp4 (its client cannot)."""
    return (f"RoboReward: {model} officially gets the mp4, but deployment {deployment} uses "
            f"{client_class.rsplit('.', 1)[-1]}, which cannot send video: it gets frames (not the official input). "
            "For the mp4, use a deployment whose client sends video (`roboreward models`; the vLLM and transformers "
            "deployments, or `roboreward add-model --client vllm`).")


def unresolved_video(video: str, resolved: tuple[str, ...]) -> ValueError:
    """A scenario built with ``video=auto`` (or another value): only routing resolves it, per model."""
    return ValueError(f"video={video!r} reached the scenario unresolved; expected one of {resolved}. video=auto is "
                      "resolved per model when the run entry names the model (model=<org/name> or --models-to-run) "
                      "and helm-roboreward is installed; or pass video=frames / video=native explicitly.")


def deployment_not_registered(name: str) -> ValueError:
    """A deployment HELM does not know."""
    return ValueError(
        f"roboreward: model deployment {name!r} is not registered with HELM. List the known ones with `roboreward "
        "models`, add one with `roboreward add-model`, or give helm-run the --local-path whose "
        "model_deployments.yaml defines it.")


def run_name_clash(model: str, other: str) -> ValueError:
    """Two registered models HELM writes alike in run names (``/`` becomes ``_``)."""
    return ValueError(
        f"roboreward: models {model!r} and {other!r} are both registered, and HELM writes both as "
        f"{model.replace('/', '_')!r} in run names: their runs would share one output folder and one would overwrite "
        "the other. Rename one of them (model_metadata.yaml and model_deployments.yaml under --local-path, or "
        "`roboreward add-model --force` with another name).")


def second_model(routed: str, model: str) -> ValueError:
    """A routed run given another model by a second model expander."""
    return ValueError(
        f"roboreward: this run was routed for {routed}, then given model {model} by a second model expander; name "
        "one model per entry (model=<org/name>), or leave model= out and use --models-to-run.")


def model_group(first: str, model: str) -> ValueError:
    """Two models from one entry: ``model=`` named one of HELM's model groups."""
    return ValueError(
        f"roboreward: the entry's model= names a HELM model group (it gave {first} and {model}, e.g. model=vlm). "
        "This package's models stay out of HELM's groups, so that other benchmarks are unchanged; a group therefore "
        "does not mean every model. Leave model= out and name the models with HELM's --models-to-run: "
        "--models-to-run $(roboreward models --group all --names) for every model that takes images or video, "
        "--group leaderboard for the published leaderboard's models; or model=<org/name> for one.")


def undeclarable_limits(deployment: str, declared: list[str], client_class: str, video_client: str) -> ValueError:
    """Request limits declared on a deployment whose client takes no such argument."""
    return ValueError(
        f"roboreward: model deployment {deployment!r} declares {', '.join(declared)}, but its client {client_class} "
        f"takes no such argument (HELM would fail to build it). Only this package's {video_client.rsplit('.', 1)[-1]} "
        "enforces declared request limits; remove them, and check a run against the provider's documented limits "
        "with `roboreward estimate`.")


def retired(model: str, retirement: Retirement) -> ValueError:
    """A model its provider retired: when, the successor, how to run it, the way around."""
    return ValueError(
        f"roboreward: model {model} was retired by its provider on {retirement.date.isoformat()} "
        f"({retirement.source}); its requests would fail. Run its successor instead: replace model={model} by "
        f"model={retirement.successor} in the run entry (or --models-to-run {retirement.successor}), e.g. "
        f"helm-run --run-entries roboreward:subset=all,model={retirement.successor} --suite <suite> -m 2831. "
        f"Old suites that ran {model} still summarize. To run it anyway (replaying HELM's request cache), set "
        f"{ALLOW_RETIRED_VARIABLE}=1.")


def check_not_retired(model: str) -> None:
    """Stop a run naming a retired model before any request, with its successor (unless ROBOREWARD_ALLOW_RETIRED)."""
    retirement = RETIRED_MODELS.get(model)
    if retirement is not None and os.environ.get(ALLOW_RETIRED_VARIABLE, "").strip().lower() not in (
            "1", "true", "yes", "on"):
        raise retired(model, retirement)
