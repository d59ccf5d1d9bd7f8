"""Rows to Inspect samples, and which media an Inspect model gets: the same as a helm-run of the same options.

The rows come from ``protocol/rows.py``, the frames or mp4 from ``protocol/media_preparation.py``, the prompt from
``protocol/rules.py``, the instance ids from the HELM scenario; the route is ``helm_frontend/routing.py``'s rule
applied to the Inspect model (docs/inspect.md). A route Inspect cannot send is refused in one line, never replaced.
"""

import os
from dataclasses import dataclass

from helm.benchmark import model_deployment_registry as deployments  # noqa: TID251 (this package's deployments)
from inspect_ai._util.error import PrerequisiteError  # what the inspect command prints as a message alone
from inspect_ai.dataset import Sample

from helm_roboreward.helm_frontend.model_registry import register_package_models
from helm_roboreward.helm_frontend.routing import (
    RoutingRequest,
    choose_video_mode,
    model_takes_video,
    needs_reasoning_allowance,
    run_name_prefix,
)
from helm_roboreward.helm_frontend.scenario import instance_id, worker_count
from helm_roboreward.protocol import rules as protocol
from helm_roboreward.protocol.data_sources import HubDownloadError, resolve_data_source
from helm_roboreward.protocol.instance_record import InstanceRecord
from helm_roboreward.protocol.media_preparation import failed_rows_error, prepare_media
from helm_roboreward.protocol.rows import load_rollouts
from helm_roboreward.protocol.rules import AUTO, FRAMES, NATIVE, FrameOptions, build_prompt

PROVIDER = "roboreward"
"""This package's model provider: ``--model roboreward/<deployment>`` runs the deployment's own client."""

PACKAGE_CLIENTS = (protocol.OPENAI_VIDEO_CLIENT, protocol.TRANSFORMERS_CLIENT,
                   "helm_roboreward.helm_frontend.clients.baselines.ConstantScoreClient",
                   "helm_roboreward.helm_frontend.clients.baselines.RandomScoreClient")
"""The clients the ``roboreward`` provider runs (HELM's stock clients have Inspect providers of their own)."""

VIDEO_PROVIDERS = ("google", "hf")
"""Inspect providers that send an mp4 (``ContentVideo``) as it is."""

TURN_PER_PART_PROVIDERS = ("google",)
"""HELM's GoogleGenAIClient, the official Gemini client, sends one user turn per part (docs/protocol.md, section 3)."""

MEDIA_KEY, CONTENT_TYPE_KEY = "media", "content_type"
"""Sample metadata beside the instance record: the media paths in order, and their content type."""


class RouteError(PrerequisiteError, ValueError):
    """A model, option or data this task cannot run as the protocol says; the message says what to do.

    A PrerequisiteError: the ``inspect`` command prints its message alone, without a traceback.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.args = (message,)


@dataclass(frozen=True)
class Route:
    """What one Inspect model gets."""

    model: str
    """The Inspect model, ``<provider>/<name>``."""

    video: str
    """``frames`` or ``native`` (the mp4)."""

    turn_per_part: bool
    """One user message per part (official Gemini), else one user message holding every part."""

    max_tokens: int
    deployment: str = ""
    """The HELM deployment of a ``roboreward/<deployment>`` model ('' for Inspect's own providers)."""


def package_deployment(name: str) -> tuple[str, str]:
    """``(model, client class)`` of one of this package's deployments; RouteError for any other name."""
    register_package_models()
    deployment = deployments.DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT.get(name)
    if deployment is None:
        raise RouteError(f"--model {PROVIDER}/{name}: no such deployment; `roboreward models` lists them (e.g. "
                         f"{PROVIDER}/baseline/constant-3, {PROVIDER}/vllm/roboreward-8b)")
    client = deployment.client_spec.class_name
    if client not in PACKAGE_CLIENTS:
        raise RouteError(f"--model {PROVIDER}/{name}: its client is HELM's {client.rsplit('.', 1)[-1]}; run "
                         f"{deployment.model_name} with Inspect's own provider (e.g. --model {deployment.model_name})")
    return deployment.model_name or name, client


def route(model: str, video: str = AUTO, layout: str = protocol.OFFICIAL) -> Route:
    """The route of an Inspect model under ``video`` and ``layout``; RouteError for what cannot be sent."""
    if video not in protocol.VIDEO_MODES:
        raise RouteError(f"-T video={video}: give one of {', '.join(protocol.VIDEO_MODES)} (auto: the official route)")
    if layout not in protocol.LAYOUTS:
        raise RouteError(f"-T layout={layout}: give one of {', '.join(protocol.LAYOUTS)}")
    provider, _, name = model.partition("/")
    if provider == PROVIDER:
        helm_model, client = package_deployment(name)
        try:
            mode = choose_video_mode(video, helm_model, client, name)
        except ValueError as error:
            raise RouteError(str(error)) from None
        return Route(model, mode, False, max_tokens(helm_model), name)
    native = video == NATIVE or (video == AUTO and model_takes_video(model))
    if native and provider not in VIDEO_PROVIDERS:
        official = "gets the mp4 officially" if video == AUTO else "was asked the mp4 (-T video=native)"
        raise RouteError(f"{model} {official} but Inspect's {provider} provider cannot send video: run this package's "
                         f"client with --model {PROVIDER}/<deployment> (e.g. {PROVIDER}/vllm/roboreward-8b; "
                         "`roboreward models`), or send frames with -T video=frames (not the official route)")
    turn_per_part = provider in TURN_PER_PART_PROVIDERS and layout == protocol.OFFICIAL
    return Route(model, NATIVE if native else FRAMES, turn_per_part, max_tokens(model))


def max_tokens(model: str) -> int:
    """5,000, plus 60,000 for the OpenAI and Gemini models (docs/protocol.md, section 5)."""
    allowance = protocol.REASONING_TOKEN_ALLOWANCE if needs_reasoning_allowance(model) else 0
    return protocol.DEFAULT_MAX_TOKENS + allowance


def settings_of(subset: str, data: str, revision: str, video: str, options: FrameOptions, failed: str) -> str:
    """The run's settings as a helm-run of the same options names them (``data=sample,video=frames``)."""
    args = {"subset": subset, **({"data": data} if data != "hf" else {}),
            **({"revision": revision} if revision != protocol.DATASET_REVISION else {})}
    prefix = run_name_prefix(args, RoutingRequest(video, options, failed), video, None)
    return ",".join(part for part in prefix.split(":", 1)[1].split(",") if not part.startswith("subset="))


def load_samples(subset: str, data: str, revision: str, video: str, options: FrameOptions,
                 media_dir: str) -> list[Sample]:
    """One sample per row of ``subset`` (``all``: every subset), its media prepared under ``media_dir``."""
    subsets = None if subset == "all" else [subset]
    try:
        source = resolve_data_source(data, revision, subsets)
        rollouts = load_rollouts(source.root, subsets, source.description, source.trusted_root)
        report = prepare_media(rollouts, os.path.abspath(media_dir), video == NATIVE, options, jobs=worker_count())
    except (HubDownloadError, OSError, ValueError) as error:  # a data problem, the hub, an unwritable media folder
        raise RouteError(f"-T subset={subset} data={data}: {error}") from None
    if report.failures:
        raise RouteError(str(failed_rows_error(rollouts, report, source.description)))
    samples = []
    for rollout in rollouts:
        media = report.media[rollout.video_path]
        record = InstanceRecord(
            subset=rollout.row.subset, task=rollout.row.task, robot=rollout.robot, kind=rollout.kind,
            episode=rollout.episode, cluster=rollout.cluster, video_sha256=media.video_sha256, video_mode=video,
            num_frames=len(media.frame_indices), frame_indices=tuple(media.frame_indices), media_bytes=media.num_bytes,
            dataset_revision=source.revision, source_file=rollout.row.file_name, metadata_line=rollout.row.line,
            rows_in_run=len(rollouts))
        metadata = {**record.to_extra_data(), MEDIA_KEY: list(media.paths), CONTENT_TYPE_KEY: media.content_type}
        samples.append(Sample(id=instance_id(rollout.row.file_name), input=build_prompt(rollout.row.task),
                              target=str(rollout.row.gold_score), metadata=metadata))
    return samples
