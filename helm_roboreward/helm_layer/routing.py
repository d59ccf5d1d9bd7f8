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
"""

import dataclasses
import fnmatch
from typing import Any

from helm.benchmark.model_deployment_registry import (
    ModelDeploymentNotFoundError,
    get_default_model_deployment_for_model,
    get_model_deployment,
)
from helm.benchmark.model_metadata_registry import model_has_tag
from helm.benchmark.run_spec import RunSpec

from helm_roboreward.helm_layer.model_registry import (
    DECODING_OPTION,
    LAYOUT_OPTION,
    OFFICIAL,
    TRANSFORMERS_CLIENT,
    VARIANTS,
    preferred_deployment,
    variant_of,
    variants_served,
)
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
    """The deployment serving the departures the run entry asks for (``layout=``, ``decoding=``).

    A departure that does not apply to the deployment's client (``layout=one_message`` for a model whose
    client already sends one message, ``decoding=greedy`` for a model that decodes greedily anyway) changes
    nothing, and the run name does not show it.
    """
    for variant in VARIANTS:
        value = str(args.get(variant.option, OFFICIAL))
        if value == OFFICIAL:
            continue
        served = variant_of(deployment, variant.option, value)
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
    options += [f"{variant.option}={variant.value}" for variant in variants_served(deployment)]
    parts[video:video + 1] = [f"video={mode}", *options]
    return f"{prefix}:{','.join(parts)}"


def resolve_video_routing(run_spec: RunSpec, apply_token_allowance: bool) -> RunSpec:
    """Fix the deployment, video mode (and reasoning token allowance) of a ``roboreward`` run spec for its model.

    Other run specs pass through unchanged. An unknown model is left for HELM to report.
    """
    if run_spec.scenario_spec.class_name != SCENARIO_CLASS:
        return run_spec
    chosen = _deployment_of(run_spec)
    if chosen is None or _client_class(chosen) is None:
        return run_spec
    args = run_spec.scenario_spec.args
    deployment = apply_variants(chosen, args)
    client_class = _client_class(deployment) or ""
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
