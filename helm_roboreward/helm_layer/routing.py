"""Which models get the native mp4 and which get frames (docs/protocol.md, sections 3 and 4), decided per model.

HELM calls a run spec function before it knows the model (``model=`` is a run expander), so the
``roboreward`` run spec leaves ``video=auto`` in its scenario arguments and this module resolves
it right after HELM's model expander has set the model: the run name then says ``video=native``
or ``video=frames``. The decision uses one documented list:

- a model takes video natively when its name matches :data:`NATIVE_VIDEO_MODEL_PATTERNS` (the
  models that received the mp4 on the official leaderboard) or its metadata carries
  :data:`NATIVE_VIDEO_TAG`;
- a deployment can send video when its client class is in :data:`VIDEO_CLIENT_CLASSES`.

``auto`` gives the mp4 only when both hold; ``native`` on a client that cannot send video is an
error before any request (HELM's OpenAI, vLLM and Together clients raise on video and retry for
minutes; the Anthropic client silently drops it).

Routing also stops a run naming a model its provider retired, with its successor (:func:`check_not_retired`,
:mod:`helm_roboreward.helm_layer.model_lifecycle`), and says which deployment a run uses from the run's name
(:func:`run_request_limits`), so the scenario can check every instance against that deployment's request limits
after preparing its media and before any request (:mod:`helm_roboreward.core.request_limits`). The limits stay
out of the scenario arguments: HELM names summarize tables and instance folders after every scenario argument,
and per-deployment values would split a subset's tables by model.
"""

import dataclasses
import fnmatch
from collections.abc import Iterable, Mapping
from typing import Any

from helm.benchmark.model_deployment_registry import (
    DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT,
    ModelDeploymentNotFoundError,
    get_default_model_deployment_for_model,
    get_model_deployment,
)
from helm.benchmark.model_metadata_registry import MODEL_NAME_TO_MODEL_METADATA, model_has_tag
from helm.benchmark.run_spec import RunSpec
from helm.common.hierarchical_logger import hlog

from helm_roboreward.core.request_limits import RequestLimits
from helm_roboreward.helm_layer.model_lifecycle import retired_message, retired_runs_allowed, retirement_of
from helm_roboreward.helm_layer.model_registry import (
    DECODING_OPTION,
    EXPECTED,
    LAYOUT_OPTION,
    LOGPROBS_CLIENTS,
    OFFICIAL,
    SCORE_OPTION,
    TRANSFORMERS_CLIENT,
    VARIANTS,
    preferred_deployment,
    variant_of,
    variants_served,
)
from helm_roboreward.helm_layer.request_limits import limits_for_deployment
from helm_roboreward.media.selection import FrameOptions

FRAMES = "frames"
NATIVE = "native"
AUTO = "auto"
VIDEO_MODES = (FRAMES, NATIVE, AUTO)

SCENARIO_CLASS = "helm_roboreward.scenario.RoboRewardScenario"

NATIVE_VIDEO_TAG = "ROBOREWARD_NATIVE_VIDEO_TAG"
"""Model metadata tag marking a model that takes the native mp4 (for models the patterns miss)."""

NATIVE_VIDEO_MODEL_PATTERNS: tuple[str, ...] = (
    "google/gemini*",  # every Gemini model, Gemini Robotics-ER 1.5/1.6 included
    "*qwen3-vl*",
    "*roboreward*",  # RoboReward 4B/8B: fine-tuned Qwen3-VL
    "*qwen2.5-vl*",
)
"""Model-name patterns (case-insensitive) of the models that officially received the mp4."""

VIDEO_CLIENT_CLASSES: tuple[str, ...] = (
    "helm.clients.google_genai_client.GoogleGenAIClient",
    "helm.clients.vertexai_client.VertexAIChatClient",
    "helm_roboreward.clients.gemini_client.OneMessageGoogleGenAIClient",
    "helm_roboreward.clients.openai_video_client.OpenAIVideoClient",
    TRANSFORMERS_CLIENT,
    "helm_roboreward.clients.baselines.ConstantScoreClient",
    "helm_roboreward.clients.baselines.RandomScoreClient",
)
"""Client classes that send ``video/mp4`` media to the model (the baselines accept anything)."""

REASONING_TOKEN_ALLOWANCE = 60_000
"""Extra max_tokens for OpenAI and Gemini models, whose reasoning spends output tokens (docs/protocol.md, section 5)."""

_REASONING_BUDGET_PATTERNS = ("openai/*", "google/gemini*")


def model_takes_video(model: str) -> bool:
    """True when the model officially gets the native mp4."""
    name = model.lower()
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in NATIVE_VIDEO_MODEL_PATTERNS) or model_has_tag(
        model, NATIVE_VIDEO_TAG
    )


def client_sends_video(client_class: str) -> bool:
    """True when a client class forwards ``video/mp4`` media."""
    return client_class in VIDEO_CLIENT_CLASSES


def needs_reasoning_allowance(model: str) -> bool:
    """True for the models whose max_tokens the official setup raised by 60,000."""
    name = model.lower()
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in _REASONING_BUDGET_PATTERNS)


def choose_video_mode(requested: str, model: str, client_class: str, deployment: str) -> str:
    """Resolve ``video=auto|frames|native`` for one model deployment.

    Raises:
        ValueError: ``native`` was asked for a deployment whose client cannot send video.
    """
    if requested == FRAMES:
        return FRAMES
    if requested == NATIVE:
        if not client_sends_video(client_class):
            raise ValueError(
                f"roboreward: video=native, but model deployment {deployment!r} uses {client_class}, which cannot "
                "send video (HELM would reject or silently drop it). Use video=frames (or video=auto), or a "
                "deployment whose client takes video, e.g. the vLLM deployments in prod_env/."
            )
        return NATIVE
    if requested != AUTO:
        raise ValueError(f"roboreward: video={requested!r} is not one of {', '.join(VIDEO_MODES)}")
    return NATIVE if model_takes_video(model) and client_sends_video(client_class) else FRAMES


def check_not_retired(model: str) -> None:
    """Stop a run naming a model its provider retired, with the successor (unless ``ROBOREWARD_ALLOW_RETIRED=1``).

    Raises:
        ValueError: ``model`` is retired (see :data:`helm_roboreward.helm_layer.model_lifecycle.RETIRED_MODELS`).
    """
    retirement = retirement_of(model)
    if retirement is not None and not retired_runs_allowed():
        raise ValueError(retired_message(model, retirement))


def without_retired(run_specs: list[RunSpec], model_value: str) -> list[RunSpec]:
    """Leave retired models out of a model group's ``roboreward`` runs (``model=vlm`` without ``--models-to-run``).

    HELM drops deprecated models from its groups the same way; a retired model named explicitly still stops the
    run with its successor (:func:`check_not_retired`).
    """
    if "/" in model_value or retired_runs_allowed():
        return run_specs
    kept = [spec for spec in run_specs
            if spec.scenario_spec.class_name != SCENARIO_CLASS or retirement_of(spec.adapter_spec.model) is None]
    for spec in run_specs:
        retirement = retirement_of(spec.adapter_spec.model)
        if spec.scenario_spec.class_name == SCENARIO_CLASS and retirement is not None:
            hlog(f"RoboReward: model={model_value} leaves out {spec.adapter_spec.model} (retired on "
                 f"{retirement.date.isoformat()}; successor {retirement.successor})")
    return kept


def _named(value: str | None, names: Iterable[str]) -> str | None:
    """The registered name that a run name's sanitized value (``/`` written ``_``) stands for (None: none, or two)."""
    if not value:
        return None
    found = [name for name in names if name.replace("/", "_") == value]
    return found[0] if len(found) == 1 else None


def deployment_of_run(run_name: str, args: Mapping[str, Any]) -> str | None:
    """The deployment a ``roboreward`` run uses, recovered from its name and scenario arguments as routing chose it.

    The name holds ``model=`` and, when the entry named one, ``model_deployment=`` (HELM writes ``/`` as ``_``);
    the arguments hold the departures served by twins (``layout=``, ``decoding=``). None when the name does not
    say (a run spec built by hand).
    """
    parts = dict(part.split("=", 1) for part in run_name.partition(":")[2].split(",") if "=" in part)
    named = _named(parts.get("model_deployment"), DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT)
    model = _named(parts.get("model"), MODEL_NAME_TO_MODEL_METADATA)
    chosen = named or (roboreward_deployment(model) if model else None)
    if chosen is None or _client_class(chosen) is None:
        return None
    return apply_variants(chosen, dict(args))


def run_request_limits(run_name: str, args: Mapping[str, Any]) -> tuple[str, RequestLimits] | None:
    """The deployment of a ``roboreward`` run (by :func:`deployment_of_run`) and its request limits, or None."""
    deployment = deployment_of_run(run_name, args)
    if deployment is None:
        return None
    return deployment, limits_for_deployment(get_model_deployment(deployment))


def roboreward_deployment(model: str) -> str | None:
    """The deployment a ``roboreward`` run of ``model`` uses when the entry names none (None: HELM has none).

    The package's preferred deployment (:func:`preferred_deployment`), else HELM's default for the model.
    """
    return preferred_deployment(model) or get_default_model_deployment_for_model(model) or None


def _deployment_of(run_spec: RunSpec) -> str | None:
    """The deployment a run spec names, or the one it would get: the package's, then HELM's default.

    None when HELM cannot resolve it yet (an unknown model is left for HELM to report).
    """
    adapter = run_spec.adapter_spec
    name: str | None = adapter.model_deployment
    if not name and adapter.model:
        name = preferred_deployment(adapter.model) or get_default_model_deployment_for_model(adapter.model)
    return name or None


def _client_class(deployment: str) -> str | None:
    try:
        return get_model_deployment(deployment).client_spec.class_name
    except ModelDeploymentNotFoundError:
        return None


def apply_variants(deployment: str, args: dict[str, Any]) -> str:
    """The deployment serving the departures the run entry asks for (``layout=``, ``decoding=``, ``score=``).

    ``score=expected`` picks the ``-logprobs`` twin of a client that can record log-probabilities (other clients
    record none; the run's ``expected_score_coverage`` says so). A departure that does not apply to the
    deployment's client (``layout=one_message`` for a model whose client already sends one message,
    ``decoding=greedy`` for a model that decodes greedily anyway) changes nothing, and the run name does not show
    it.
    """
    for variant in VARIANTS:
        if str(args.get(variant.option, OFFICIAL)) != variant.value:
            continue
        served = variant_of(deployment, variant.option, variant.value)
        if served is not None:
            deployment = served
    return deployment


FRAME_OPTION_NAMES = ("fps", "last_frame", "max_frames", "max_side")
"""Run-entry options that shape frames only: they do nothing for a model given the native mp4."""

VARIANT_OPTION_NAMES = (LAYOUT_OPTION, DECODING_OPTION)
"""Run-entry options served by twin deployments: named only where the deployment serves them."""


def _named_for_mode(run_name: str, current: str, mode: str, args: dict[str, Any], deployment: str) -> str:
    """The run name with ``video=<mode>``, the non-default frame options (frames only) and the departures served.

    Rebuilt from the scenario arguments every time, so a later expander switching native back to
    frames (``model=...,model_deployment=...``) restores the options an earlier pass left out. A departure
    (``layout=one_message``, ``decoding=greedy``) is named when the deployment used serves it, whether the
    entry asked for it or named its twin deployment, and only then: the name says what ran.
    """
    prefix, _, rest = run_name.partition(":")
    dropped = FRAME_OPTION_NAMES + VARIANT_OPTION_NAMES
    parts = [part for part in rest.split(",") if part.split("=", 1)[0] not in dropped]
    if f"video={current}" not in parts:  # not a name this package built: only the mode changes
        return run_name.replace(f"video={current}", f"video={mode}", 1)
    video = parts.index(f"video={current}")
    # The run spec stores the frame options under FrameOptions' own field names.
    frame_args = {field.name: args[field.name] for field in dataclasses.fields(FrameOptions) if field.name in args}
    options = [] if mode == NATIVE else FrameOptions(**frame_args).run_name_options()
    options += [f"{variant.option}={variant.value}" for variant in variants_served(deployment)
                if variant.named_by_routing]
    parts[video:video + 1] = [f"video={mode}", *options]
    return f"{prefix}:{','.join(parts)}"


def resolve_video_routing(run_spec: RunSpec, apply_token_allowance: bool) -> RunSpec:
    """Fix the deployment, video mode (and reasoning token allowance) of a ``roboreward`` run spec for its model.

    Other run specs pass through unchanged. An unknown model is left for HELM to report.
    """
    if run_spec.scenario_spec.class_name != SCENARIO_CLASS:
        return run_spec
    check_not_retired(run_spec.adapter_spec.model)
    chosen = _deployment_of(run_spec)
    if chosen is None or _client_class(chosen) is None:
        return run_spec
    args = run_spec.scenario_spec.args
    deployment = apply_variants(chosen, args)
    client_class = _client_class(deployment) or ""
    if str(args.get(SCORE_OPTION, "")) == EXPECTED and client_class not in LOGPROBS_CLIENTS:
        hlog(f"RoboReward: score=expected for {deployment}: its client ({client_class.rsplit('.', 1)[-1]}) records "
             "no answer-token probabilities: expected_score_coverage 0, and the reward-model statistics use the "
             "parsed score")
    current = str(args.get("video", AUTO))
    # The user's request survives resolution, so a later expander (model after model_deployment, or a
    # deployment override after the model) decides again from it rather than from an earlier guess.
    requested = str(args.get("video_request", current))
    mode = choose_video_mode(requested, run_spec.adapter_spec.model, client_class, deployment)
    scenario_spec = dataclasses.replace(
        run_spec.scenario_spec, args={**args, "video": mode, "video_request": requested}
    )
    name = _named_for_mode(run_spec.name, current, mode, args, deployment)
    adapter_spec = run_spec.adapter_spec
    if adapter_spec.model_deployment != deployment:
        adapter_spec = dataclasses.replace(adapter_spec, model_deployment=deployment)  # the one routed for
    if apply_token_allowance and needs_reasoning_allowance(adapter_spec.model):
        adapter_spec = dataclasses.replace(adapter_spec, max_tokens=adapter_spec.max_tokens + REASONING_TOKEN_ALLOWANCE)
    return dataclasses.replace(run_spec, name=name, scenario_spec=scenario_spec, adapter_spec=adapter_spec)
