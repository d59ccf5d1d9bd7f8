"""Routing a ``roboreward`` run once HELM has set its model: deployment, media, token allowance, run name.

HELM calls the run spec function before it knows the model (``model=`` is HELM's expander), so the run spec carries
a :class:`RoutingRequest` that :func:`route` resolves (docs/protocol.md, sections 4-5), refusing what cannot run.
"""

import dataclasses
import fnmatch
import hashlib
import itertools
import os
import re
import urllib.parse
from typing import Any

from helm.benchmark import model_deployment_registry as deployments
from helm.benchmark.model_metadata_registry import MODEL_NAME_TO_MODEL_METADATA, model_has_tag
from helm.benchmark.run_spec import RunSpec
from helm.common.hierarchical_logger import hlog, hwarn

from helm_roboreward.helm_frontend import refusals
from helm_roboreward.helm_frontend.model_registry import (
    LOGPROBS_CLIENTS,
    OPTION_DEPLOYMENT_SUFFIXES,
    deployment_serving,
    options_served,
    preferred_deployment,
    register_option_deployments,
)
from helm_roboreward.helm_frontend.refusals import (
    check_not_retired,
    deployment_not_registered,
    frames_not_video,
    run_name_clash,
    undeclarable_limits,
    video_not_sendable,
)
from helm_roboreward.protocol import rules as protocol
from helm_roboreward.protocol.rules import AUTO, FRAMES, NATIVE, FrameOptions

RUN_SPEC_NAME = "roboreward"
_ENTRIES = itertools.count(1)
_FIRST_MODEL_OF_ENTRY: dict[int, str] = {}  # two models routed from one entry: a HELM model group (model=vlm)


@dataclasses.dataclass(frozen=True)
class RoutingRequest:
    """What a ``roboreward`` entry asked for that depends on the model, and what it was routed to."""

    video: str
    frame_options: FrameOptions
    failed: str = protocol.MAX_ERROR
    score: str = protocol.PARSED
    layout: str = protocol.OFFICIAL
    decoding: str = protocol.OFFICIAL
    entry: int = dataclasses.field(default_factory=lambda: next(_ENTRIES))  # the run entry's serial (copies keep it)
    model: str = ""  # '' until HELM's model expander sets one
    deployment: str = ""
    name_prefix: str = ""  # the part of the run name this package wrote; HELM's expanders append theirs

    def deployment_options(self) -> dict[str, str]:
        """The non-default options asked for that option deployments serve, by run-entry argument."""
        asked = {"layout": self.layout, "decoding": self.decoding, "score": self.score}
        return {option: value for option, value in asked.items() if value not in (protocol.OFFICIAL, protocol.PARSED)}


def model_takes_video(model: str) -> bool:
    """True when the model officially gets the native mp4."""
    name = model.lower()
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in protocol.NATIVE_VIDEO_MODEL_PATTERNS) or \
        model_has_tag(model, protocol.NATIVE_VIDEO_TAG)


def client_sends_video(client_class: str) -> bool:
    """True when a client class forwards ``video/mp4`` media."""
    return client_class in protocol.VIDEO_CLIENT_CLASSES


def needs_reasoning_allowance(model: str) -> bool:
    """True for the models whose max_tokens the official setup raised by 60,000."""
    return any(fnmatch.fnmatchcase(model.lower(), pattern) for pattern in protocol.REASONING_MODEL_PATTERNS)


def choose_video_mode(requested: str, model: str, client_class: str, deployment: str) -> str:
    """Resolve ``video=auto|frames|native`` for one model deployment (``native`` needs a client that sends video)."""
    if requested == FRAMES:
        return FRAMES
    if requested == NATIVE:
        if not client_sends_video(client_class):
            raise video_not_sendable(deployment, client_class)
        return NATIVE
    if requested != AUTO:
        raise ValueError(f"roboreward: video={requested!r} is not one of {', '.join(protocol.VIDEO_MODES)}")
    return NATIVE if model_takes_video(model) and client_sends_video(client_class) else FRAMES


def roboreward_deployment(model: str) -> str | None:
    """The deployment a ``roboreward`` run of ``model`` uses when the entry names none (None: HELM has none)."""
    return preferred_deployment(model) or deployments.get_default_model_deployment_for_model(model) or None


def run_name_data(data: str) -> str:
    """The ``data`` value in a run name: a local path becomes ``<folder>-<hash of the absolute path>``."""
    if data in ("hf", "sample"):
        return data
    absolute = os.path.abspath(os.path.expanduser(data))
    folder = re.sub(r"[^A-Za-z0-9_.-]+", "_", os.path.basename(absolute.rstrip(os.sep)) or "root")
    return f"{folder}-{hashlib.sha256(absolute.encode('utf-8')).hexdigest()[:8]}"


def run_name_revision(revision: str) -> str:
    """The ``revision`` value in a run name: percent-encoded, one-to-one, so ``refs/pr/1`` stays one folder."""
    return urllib.parse.quote(revision, safe="")


def run_name_prefix(args: dict[str, Any], request: RoutingRequest, mode: str, deployment: str | None) -> str:
    """``roboreward:subset=..,data=..,video=<mode>,<frame options>,<options served>,score=..,failed=..``."""
    parts = [f"subset={args['subset']}"]
    if "data" in args:
        parts.append(f"data={run_name_data(str(args['data']))}")
    if "revision" in args:
        parts.append(f"revision={run_name_revision(str(args['revision']))}")
    parts.append(f"video={mode}")
    if mode != NATIVE:
        parts += request.frame_options.run_name_options()
    registered = deployments.DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT.get(deployment or "")  # None: HELM generates it
    if registered is not None:  # the options its deployment serves (score=expected is named below)
        served = options_served(registered.client_spec)
        parts += [f"{option}={value}" for option, value in served.items() if option != "score"]
    if request.score != protocol.PARSED:
        parts.append(f"score={request.score}")
    if request.failed != protocol.MAX_ERROR:
        parts.append(f"failed={request.failed}")
    return f"{RUN_SPEC_NAME}:{','.join(parts)}"


def scenario_args(base: dict[str, Any], mode: str, options: FrameOptions) -> dict[str, Any]:
    """The scenario's arguments: only what changes its instances, so every model of a subset shares its tables."""
    args: dict[str, Any] = {key: base[key] for key in ("subset", "data", "revision") if key in base}
    args["video"] = mode
    if mode != NATIVE:
        defaults = FrameOptions()
        args.update({field: getattr(options, field) for field in protocol.FRAME_FIELDS
                     if getattr(options, field) != getattr(defaults, field)})
    return args


def _deployment(name: str) -> deployments.ModelDeployment:
    if (name not in deployments.DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT
            and name.endswith(tuple(OPTION_DEPLOYMENT_SUFFIXES.values()))):

        register_option_deployments()
    try:
        return deployments.get_model_deployment(name)
    except deployments.ModelDeploymentNotFoundError:
        raise deployment_not_registered(name) from None


def check_distinct_run_name(model: str) -> None:
    """Refuse a model HELM writes like another registered model in run names (``/`` becomes ``_``)."""
    written = model.replace("/", "_")
    same = [name for name in MODEL_NAME_TO_MODEL_METADATA if name != model and name.replace("/", "_") == written]
    if same:
        raise run_name_clash(model, same[0])


def _check_one_model(request: RoutingRequest, model: str) -> None:
    """Refuse a second model for one entry: a second model expander, or a HELM model group (``model=vlm``)."""
    first = _FIRST_MODEL_OF_ENTRY.setdefault(request.entry, model)
    if (request.model and request.model != model) or first != model:
        raise refusals.second_model(request.model, model) if request.model else refusals.model_group(first, model)


def route(spec: RunSpec, request: RoutingRequest) -> dict[str, Any]:
    """The fields of a ``RoboRewardRunSpec`` (``request``: its routing) settled once HELM has set its model."""
    adapter, run_name = spec.adapter_spec, spec.name
    model, deployment, max_tokens = adapter.model, adapter.model_deployment or "", adapter.max_tokens
    first, base_args = not request.model, dict(spec.scenario_spec.args)
    _check_one_model(request, model)
    check_distinct_run_name(model)
    check_not_retired(model)
    chosen = deployment or roboreward_deployment(model)
    if not chosen:
        raise ValueError(f"roboreward: HELM has no deployment for model {model!r}; see `roboreward models` or add "
                         "one with `roboreward add-model`")
    routed_deployment = _deployment(chosen).name
    if request.deployment_options():
        routed_deployment = deployment_serving(routed_deployment, request.deployment_options())
    client = _deployment(routed_deployment).client_spec
    declared = sorted(set(client.args) & set(protocol.DECLARED_LIMIT_ARGS))
    if declared and client.class_name != protocol.OPENAI_VIDEO_CLIENT:
        raise undeclarable_limits(routed_deployment, declared, client.class_name, protocol.OPENAI_VIDEO_CLIENT)
    if first and request.score == protocol.EXPECTED and client.class_name not in LOGPROBS_CLIENTS:
        hlog(f"RoboReward: score=expected for {routed_deployment}: its client "
             f"({client.class_name.rsplit('.', 1)[-1]}) records no answer-token probabilities: "
             "expected_score_coverage 0, and the reward-model statistics use the parsed score")
    mode = choose_video_mode(request.video, model, client.class_name, routed_deployment)
    if first and request.video == AUTO and mode == FRAMES and model_takes_video(model):
        hwarn(frames_not_video(model, routed_deployment, client.class_name))
    if first and needs_reasoning_allowance(model):
        max_tokens += protocol.REASONING_TOKEN_ALLOWANCE
    if not run_name.startswith(request.name_prefix):
        raise ValueError(f"roboreward: run name {run_name!r} does not start with {request.name_prefix!r}")
    prefix = run_name_prefix(base_args, request, mode, routed_deployment)
    return {"name": prefix + run_name[len(request.name_prefix):],
            "scenario_spec": dataclasses.replace(spec.scenario_spec,
                                                 args=scenario_args(base_args, mode, request.frame_options)),
            "adapter_spec": dataclasses.replace(adapter, model_deployment=routed_deployment, max_tokens=max_tokens),
            "routing": dataclasses.replace(request, model=model, deployment=routed_deployment, name_prefix=prefix)}
