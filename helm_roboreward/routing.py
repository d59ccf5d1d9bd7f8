"""The official per-model routing of a ``roboreward`` run (docs/protocol.md, sections 3-5), decided from its run spec.

HELM calls a run spec function before it knows the model (``model=`` is a run expander, HELM's own), so the
``roboreward`` run spec carries a :class:`RoutingRequest` (what the entry asked: ``video``, frame options,
``layout``, ``decoding``, ``score``) and :func:`route` resolves it once HELM has set the model
(:class:`helm_roboreward.run_specs.RoboRewardRunSpec`). Routing reads only the run spec: its model, and
its deployment when the entry named one. It decides:

- the deployment: the one named (``model_deployment=``), else the package's preferred deployment for the model,
  else HELM's default; the twin that serves a named departure (``layout=``, ``decoding=``, ``score=``);
- the media: the native mp4 when the model officially took video (:data:`NATIVE_VIDEO_MODEL_PATTERNS` or the
  :data:`NATIVE_VIDEO_TAG` tag) and its client can send it (:data:`VIDEO_CLIENT_CLASSES`), else frames;
  ``video=native`` on a client that cannot send video is an error before any request;
- the reasoning token allowance (+60,000 for OpenAI and Gemini models);
- the run name, which shows every setting that changes results.

It refuses, before anything runs: an unknown deployment, declared request limits on a client that cannot take
them, a retired model
(:mod:`helm_roboreward.models.lifecycle`), two registered models whose names HELM would write alike in
run names (``acme/x_y`` and ``acme_x/y``), and a HELM model group (``model=vlm``) in a ``roboreward`` entry (the
package's models stay out of HELM's groups, so a group no longer means "every model"; HELM's ``--models-to-run``
with ``roboreward models --group all --names`` does).
"""

import dataclasses
import fnmatch
import hashlib
import os
import re
import urllib.parse
from typing import Any

from helm.benchmark.model_deployment_registry import (
    ModelDeployment,
    ModelDeploymentNotFoundError,
    get_default_model_deployment_for_model,
    get_model_deployment,
)
from helm.benchmark.model_metadata_registry import MODEL_NAME_TO_MODEL_METADATA, model_has_tag
from helm.common.hierarchical_logger import hlog

from helm_roboreward.core.request_limits import DECLARED_LIMIT_ARGS
from helm_roboreward.media.selection import FrameOptions
from helm_roboreward.metrics import DEFAULT_FAILED_POLICY, PARSED_SCORE
from helm_roboreward.models.lifecycle import check_not_retired
from helm_roboreward.models.registry import (
    EXPECTED,
    LOGPROBS_CLIENTS,
    OFFICIAL,
    OPENAI_VIDEO_CLIENT,
    TRANSFORMERS_CLIENT,
    VARIANTS,
    preferred_deployment,
    variant_of,
    variants_served,
)

FRAMES = "frames"
NATIVE = "native"
AUTO = "auto"
VIDEO_MODES = (FRAMES, NATIVE, AUTO)

RUN_SPEC_NAME = "roboreward"
FRAME_FIELDS = ("frames_per_second", "include_last_frame", "max_frames", "max_side")
"""The scenario arguments of frame options (:class:`FrameOptions` fields), present when not the default."""

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


@dataclasses.dataclass(frozen=True)
class RoutingRequest:
    """What a ``roboreward`` entry asked for that depends on the model, kept on the run spec until HELM sets it."""

    video: str
    """``auto``, ``frames`` or ``native``, as the entry asked (``auto``: the official per-model routing)."""

    frame_options: FrameOptions
    """The entry's frame options (used by frames runs only)."""

    failed: str = DEFAULT_FAILED_POLICY
    score: str = PARSED_SCORE
    layout: str = OFFICIAL
    decoding: str = OFFICIAL

    model: str = ""
    """The model this request was routed for ('' until HELM's model expander has set one)."""

    name_prefix: str = ""
    """The part of the run name this package wrote (HELM's expanders append theirs after it)."""

    def departures(self) -> dict[str, str]:
        """The departures served by twin deployments, by run-entry argument (``layout``, ``decoding``, ``score``)."""
        return {"layout": self.layout, "decoding": self.decoding, "score": self.score}


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


def roboreward_deployment(model: str) -> str | None:
    """The deployment a ``roboreward`` run of ``model`` uses when the entry names none (None: HELM has none).

    The package's preferred deployment (:func:`preferred_deployment`), else HELM's default for the model.
    """
    return preferred_deployment(model) or get_default_model_deployment_for_model(model) or None


def apply_variants(deployment: str, departures: dict[str, str]) -> str:
    """The deployment serving the departures the run entry asks for (``layout=``, ``decoding=``, ``score=``).

    ``score=expected`` picks the ``-logprobs`` twin of a client that can record log-probabilities (other clients
    record none; the run's ``expected_score_coverage`` says so). A departure that does not apply to the
    deployment's client (``layout=one_message`` for a model whose client already sends one message,
    ``decoding=greedy`` for a model that decodes greedily anyway) changes nothing, and the run name does not show
    it.
    """
    for variant in VARIANTS:
        if departures.get(variant.option, OFFICIAL) != variant.value:
            continue
        served = variant_of(deployment, variant.option, variant.value)
        if served is not None:
            deployment = served
    return deployment


def data_label(data: str) -> str:
    """The ``data`` value as it appears in a run name: local paths become ``<folder>-<hash>`` (no slashes)."""
    if data in ("hf", "sample"):
        return data
    absolute = os.path.abspath(os.path.expanduser(data))
    folder = re.sub(r"[^A-Za-z0-9_.-]+", "_", os.path.basename(absolute.rstrip(os.sep)) or "root")
    return f"{folder}-{hashlib.sha256(absolute.encode('utf-8')).hexdigest()[:8]}"


def revision_label(revision: str) -> str:
    """The ``revision`` value as it appears in a run name: percent-encoded, so it stays one folder and exact.

    Hub revisions may hold slashes (``refs/pr/1``), which would split the run folder; letters, digits and
    ``_.-~`` are kept, so branch, tag and commit names read as given (``v1.0``, ``main``, a sha). The
    encoding is one-to-one (``%`` itself is encoded), so two revisions never share a name.
    """
    return urllib.parse.quote(revision, safe="")


def data_and_revision_parts(args: dict[str, Any]) -> list[str]:
    """The run-name parts of the scenario's ``data`` and ``revision`` arguments (absent: the defaults)."""
    parts = []
    if "data" in args:
        parts.append(f"data={data_label(str(args['data']))}")
    if "revision" in args:
        parts.append(f"revision={revision_label(str(args['revision']))}")
    return parts


def run_name_prefix(args: dict[str, Any], request: RoutingRequest, mode: str, deployment: str | None) -> str:
    """``roboreward:subset=...,data=...,video=<mode>,<frame options>,<departures served>,score=...,failed=...``.

    Frame options appear for frames runs only (and before routing, when the mode is still the request); a
    departure served by a twin (``layout=one_message``, ``decoding=greedy``) appears when the deployment used serves
    it, whether the entry asked for it or named the twin: the name says what ran.
    """
    parts = [f"subset={args['subset']}", *data_and_revision_parts(args), f"video={mode}"]
    if mode != NATIVE:
        parts += request.frame_options.run_name_options()
    if deployment is not None:
        parts += [f"{variant.option}={variant.value}" for variant in variants_served(deployment)
                  if variant.named_by_routing]
    if request.score != PARSED_SCORE:
        parts.append(f"score={request.score}")
    if request.failed != DEFAULT_FAILED_POLICY:
        parts.append(f"failed={request.failed}")
    return f"{RUN_SPEC_NAME}:{','.join(parts)}"


def scenario_args(base: dict[str, Any], mode: str, options: FrameOptions) -> dict[str, Any]:
    """The scenario's arguments: what changes its instances, and nothing else (no defaults, no model settings).

    HELM names a subset's tables and caches instances after these arguments, so model-level settings
    (departures, limits, worker counts) never enter them: every model of a subset shares its tables.
    """
    args: dict[str, Any] = {key: base[key] for key in ("subset", "data", "revision") if key in base}
    args["video"] = mode
    if mode != NATIVE:
        defaults = FrameOptions()
        for field in FRAME_FIELDS:
            value = getattr(options, field)
            if value != getattr(defaults, field):
                args[field] = value
    return args


def _deployment(name: str) -> ModelDeployment:
    try:
        return get_model_deployment(name)
    except ModelDeploymentNotFoundError:
        raise ValueError(
            f"roboreward: model deployment {name!r} is not registered with HELM. List the known ones with "
            "`roboreward models`, add one with `roboreward add-model`, or give helm-run the --local-path whose "
            "model_deployments.yaml defines it."
        ) from None


def check_distinct_run_name(model: str) -> None:
    """Refuse a model whose name HELM writes like another registered model's in run names (``/`` becomes ``_``).

    Raises:
        ValueError: Both names, and the fix (two runs would share one output folder).
    """
    written = model.replace("/", "_")
    same = [name for name in MODEL_NAME_TO_MODEL_METADATA if name != model and name.replace("/", "_") == written]
    if same:
        raise ValueError(
            f"roboreward: models {model!r} and {same[0]!r} are both registered, and HELM writes both as "
            f"{model.replace('/', '_')!r} in run names: their runs would share one output folder and one would "
            "overwrite the other. Rename one of them (model_metadata.yaml and model_deployments.yaml under "
            "--local-path, or `roboreward add-model --force` with another name)."
        )


_GROUP_PARENTS: dict[int, tuple[RoutingRequest, str]] = {}
"""Unrouted requests (by identity) -> the first model routed from them. HELM's model expander copies one parent run
spec per model of a group, so two models routed from one parent request mean a group (``model=vlm``). Entries are
kept (one per run entry) so an identity is never reused."""


def _check_not_a_group(request: RoutingRequest, model: str) -> None:
    first = _GROUP_PARENTS.setdefault(id(request), (request, model))[1]
    if first != model:
        raise ValueError(
            f"roboreward: the entry's model= names a HELM model group (it gave {first} and {model}, e.g. "
            "model=vlm). This package's models stay out of HELM's groups, so that other benchmarks are unchanged; "
            "a group therefore no longer means every model. Leave model= out and name the models with HELM's "
            "--models-to-run: --models-to-run $(roboreward models --group all --names) for every model that takes "
            "images or video, --group leaderboard for the published leaderboard's models; or model=<org/name> for "
            "one."
        )


def route(run_name: str, base_args: dict[str, Any], request: RoutingRequest, model: str,
          model_deployment: str, max_tokens: int) -> tuple[str, dict[str, Any], RoutingRequest, str, int]:
    """Resolve a ``roboreward`` run for ``model``: ``(name, scenario args, routed request, deployment, max_tokens)``.

    ``run_name`` is the run spec's current name (this package's prefix, then what HELM's expanders appended);
    ``model_deployment`` the deployment the run spec names ('' when none). Calling it again on its own result
    returns the same result (HELM copies run specs many times while it expands an entry).

    Raises:
        ValueError: A model group, a model changed after routing (a second model expander), an unknown
            deployment, a retired model, a run-name clash, or ``video=native`` on a client that cannot send
            video.
    """
    first = not request.model
    if first:
        _check_not_a_group(request, model)
    elif request.model != model:
        raise ValueError(
            f"roboreward: this run was routed for {request.model}, then given model {model} by a second model "
            "expander; name one model per entry (model=<org/name>), or leave model= out and use --models-to-run."
        )
    check_distinct_run_name(model)
    check_not_retired(model)
    chosen = model_deployment or roboreward_deployment(model)
    if not chosen:
        raise ValueError(f"roboreward: HELM has no deployment for model {model!r}; see `roboreward models` or add "
                         "one with `roboreward add-model`")
    deployment = apply_variants(_deployment(chosen).name, request.departures())
    client = _deployment(deployment).client_spec
    client_class = client.class_name
    declared = sorted(set(client.args) & set(DECLARED_LIMIT_ARGS))
    if declared and client_class != OPENAI_VIDEO_CLIENT:
        raise ValueError(
            f"roboreward: model deployment {deployment!r} declares {', '.join(declared)}, but its client "
            f"{client_class} takes no such argument (HELM would fail to build it). Only this package's "
            f"{OPENAI_VIDEO_CLIENT.rsplit('.', 1)[-1]} enforces declared request limits; remove them, and check "
            "a run against the provider's documented limits with `roboreward estimate`."
        )
    if first and request.score == EXPECTED and client_class not in LOGPROBS_CLIENTS:
        hlog(f"RoboReward: score=expected for {deployment}: its client ({client_class.rsplit('.', 1)[-1]}) records "
             "no answer-token probabilities: expected_score_coverage 0, and the reward-model statistics use the "
             "parsed score")
    mode = choose_video_mode(request.video, model, client_class, deployment)
    if first and needs_reasoning_allowance(model):
        max_tokens += REASONING_TOKEN_ALLOWANCE
    prefix = run_name_prefix(base_args, request, mode, deployment)
    if not run_name.startswith(request.name_prefix):
        raise ValueError(f"roboreward: run name {run_name!r} no longer starts with {request.name_prefix!r}")
    name = prefix + run_name[len(request.name_prefix):]
    routed = dataclasses.replace(request, model=model, name_prefix=prefix)
    return name, scenario_args(base_args, mode, request.frame_options), routed, deployment, max_tokens
