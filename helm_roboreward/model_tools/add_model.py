"""``roboreward add-model``: a model and its deployment written into a ``--local-path`` in HELM's own YAML format.

The two files (``model_metadata.yaml``, ``model_deployments.yaml``) are merged: other entries are kept; the model's
entries (its metadata and every deployment of it in the file, whatever the deployment's name) are replaced only
with ``--force``, and a deployment name that belongs to another model only with ``--take-deployment``. The files
are rewritten from their YAML content, so comments are not kept (the command says so when there were any). Each
merge reads, checks and writes both files holding an exclusive lock (``fcntl.flock`` on ``.<file>.lock`` next to
each), and every write is atomic (a temporary file and a rename), so concurrent ``add-model`` runs into one folder
keep each other's entries. The package's own configuration is never written: when a file is a link into it
(``prod_env/`` in a checkout), the command refuses and names the two ways out.

``--family`` (or, when it is not given, the model name or the provider id matching the family's name patterns)
gives an added Qwen3-VL / RoboReward (or Qwen2.5-VL) checkpoint the decoding and frame rule of the package's own
deployments of that family (:data:`FAMILIES`, read from ``helm_roboreward/config/model_deployments.yaml``):
``decoding: checkpoint`` (so ``decoding=greedy`` picks the ``-greedy`` option deployment and names it in the run)
and, on vLLM, the checkpoint processor's frame sampling (``video_fps`` / ``video_min_frames`` / ``video_max_frames``).

The deployment gets the client class and arguments of its provider (:data:`CLIENTS`) and the tags routing reads
(``VISION_LANGUAGE_MODEL_TAG``; ``ROBOREWARD_NATIVE_VIDEO_TAG`` with ``--video native``), so ``video=auto``, the
token allowance, the request limits and the credentials follow as for the package's own models.
"""

import datetime
import fnmatch
import math
import os
import re
from dataclasses import dataclass
from typing import Any

import cattrs
import yaml
from helm.benchmark.model_deployment_registry import ModelDeployments
from helm.benchmark.model_metadata_registry import MODEL_NAME_TO_MODEL_METADATA

from helm_roboreward.config import MODEL_DEPLOYMENTS_FILE, MODEL_METADATA_FILE, config_dir
from helm_roboreward.helm_frontend.plugin import require_local_path_folder
from helm_roboreward.helm_frontend.routing import client_sends_video, needs_reasoning_allowance
from helm_roboreward.model_tools.catalog import credentials_key
from helm_roboreward.model_tools.local_path_files import (
    AddModelError,
    check_helm_reads,
    dump_entries,
    locked,
    merged_deployments,
    merged_entries,
    read_entries,
    refuse_package_config,
)
from helm_roboreward.protocol.published import ALIASES, RETIRED_MODELS
from helm_roboreward.protocol.rules import (
    DEFAULT_MAX_TOKENS,
    FRAMES,
    NATIVE,
    NATIVE_VIDEO_MODEL_PATTERNS,
    NATIVE_VIDEO_TAG,
    OPENAI_VIDEO_CLIENT,
    REASONING_TOKEN_ALLOWANCE,
    TRANSFORMERS_CLIENT,
)
from helm_roboreward.protocol.safe_files import write_atomically

CLIENTS: dict[str, str] = {
    "openai": "helm.clients.openai_responses_client.OpenAIResponseClient",
    "anthropic": "helm.clients.anthropic_client.AnthropicMessagesClient",
    "google": "helm.clients.google_genai_client.GoogleGenAIClient",
    "vllm": OPENAI_VIDEO_CLIENT,
    "transformers": TRANSFORMERS_CLIENT,
}
"""``--client`` value -> client class. The deployment is named ``<client>/<name>``, so HELM reads the credentials
``<client>ApiKey`` (``<client>BaseUrl`` for vllm); transformers runs in process and needs none."""

BASE_URL_CLIENTS = ("openai", "vllm")
OPEN_WEIGHT_CLIENTS = ("vllm", "transformers")
SERVER_SETTING_CLIENTS = ("vllm",)
"""Clients whose class takes ``timeout_seconds`` and ``max_retries`` (this package's OpenAIVideoClient); HELM's
OpenAI, Anthropic and Google clients take neither."""

NO_FAMILY = "none"
NO_TOKENIZER_WINDOW_SERVICE = "helm.benchmark.window_services.no_tokenizer_window_service.NoTokenizerWindowService"


@dataclass(frozen=True)
class Family:
    """A model family whose checkpoints this package runs with their own decoding and frame rule."""

    name: str
    patterns: tuple[str, ...]
    """Case-insensitive patterns of model names and provider ids (checkpoints) that belong to it."""

    reference: dict[str, str]
    """``--client`` -> the package deployment whose settings an added checkpoint of the family gets."""


FAMILIES: dict[str, Family] = {
    "qwen3-vl": Family("qwen3-vl", ("*qwen3-vl*", "*roboreward*"),
                       {"vllm": "vllm/qwen3-vl-8b-instruct", "transformers": "transformers/qwen3-vl-8b-instruct"}),
    "qwen2.5-vl": Family("qwen2.5-vl", ("*qwen2.5-vl*",), {"vllm": "vllm/qwen2.5-vl-7b-instruct"}),
}
"""The families ``--family`` names (RoboReward 4B/8B are Qwen3-VL fine-tunes). The settings are those of the
package's own deployment of the family for that client: ``decoding: checkpoint`` and, on vLLM, the frame rule
(``video_fps``, ``video_min_frames``, ``video_max_frames``), plus its ``max_sequence_length``."""

IDENTITY_ARGS = ("served_model_name", "checkpoint", "base_url")
"""A reference deployment's arguments that name its own checkpoint or server, never copied."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_BASE_TAGS = ["TEXT_MODEL_TAG", "VISION_LANGUAGE_MODEL_TAG", "INSTRUCTION_FOLLOWING_MODEL_TAG"]


@dataclass(frozen=True)
class NewModel:
    """What ``roboreward add-model`` was asked to add."""

    model: str
    client: str
    api_id: str | None = None
    base_url: str | None = None
    display_name: str | None = None
    video: str | None = None
    """``native``, ``frames`` or None (the model-name rules decide)."""

    reasoning_effort: str | None = None
    max_images_per_prompt: int | None = None
    max_videos_per_prompt: int | None = None
    max_sequence_length: int | None = None
    timeout_seconds: float | None = None
    """``--timeout``: seconds the client waits for one response (OpenAIVideoClient's ``timeout_seconds``)."""

    max_retries: int | None = None
    """``--max-retries``: the client's own retries of a failed request (OpenAIVideoClient's ``max_retries``)."""

    family: str | None = None
    """``--family``: a key of :data:`FAMILIES`, ``none``, or None (inferred from the name and provider id)."""

    @property
    def engine(self) -> str:
        """The part of the name after ``/``."""
        return self.model.split("/", 1)[1]

    @property
    def deployment_name(self) -> str:
        """``<client>/<engine>`` (the host part chooses HELM's credentials keys)."""
        return f"{self.client}/{self.engine}"

    @property
    def provider_id(self) -> str:
        """The id the provider knows the model by (``--api-id``, else a default per client)."""
        if self.api_id:
            return self.api_id
        return self.model if self.client in OPEN_WEIGHT_CLIENTS else self.engine

    def resolved_family(self) -> tuple[Family | None, str]:
        """The family the checkpoint gets and why (``--family``, or the name or provider id it was inferred from)."""
        if self.family == NO_FAMILY:
            return None, "--family none"
        if self.family is not None:
            return FAMILIES[self.family], f"--family {self.family}"
        if self.client not in OPEN_WEIGHT_CLIENTS:
            return None, f"{self.client} client"
        for family in FAMILIES.values():
            for what, value in (("model name", self.model), ("checkpoint name", self.provider_id)):
                if any(fnmatch.fnmatchcase(value.lower(), pattern) for pattern in family.patterns):
                    return family, f"inferred from the {what} {value!r}"
        return None, "no family matches the name"


def validate(new: NewModel) -> None:
    """Check the request before anything is read or written.

    Raises:
        AddModelError: The first problem, with the fix.
    """
    if not _NAME.match(new.model):
        raise AddModelError(f"model name {new.model!r} must be org/name (letters, digits, '.', '_', '-'; one '/', "
                            "no spaces or commas), e.g. acme/vlm-2027-01-01")
    if new.client not in CLIENTS:
        raise AddModelError(f"--client {new.client!r} is not one of {', '.join(CLIENTS)}")
    if new.api_id is not None and (not new.api_id.strip() or "," in new.api_id):
        raise AddModelError(f"--api-id {new.api_id!r} must be the provider's model id (not empty, no commas)")
    if new.base_url is not None and new.client not in BASE_URL_CLIENTS:
        raise AddModelError(f"--base-url applies to --client {' or '.join(BASE_URL_CLIENTS)}, not {new.client} "
                            "(its SDK reads its own endpoint settings)")
    if new.base_url is not None and not re.match(r"^https?://", new.base_url):
        raise AddModelError(f"--base-url {new.base_url!r} must be an http(s) URL, e.g. http://localhost:8000/v1")
    if new.reasoning_effort is not None and new.client != "openai":
        raise AddModelError("--reasoning-effort applies to --client openai only")
    if new.video == NATIVE and not client_sends_video(CLIENTS[new.client]):
        raise AddModelError(f"--video native: the {new.client} client ({CLIENTS[new.client]}) cannot send video; "
                            "use --video frames (or leave --video out), or a client that sends video (google, "
                            "vllm, transformers)")
    for flag, value in (("--max-sequence-length", new.max_sequence_length), ("--max-retries", new.max_retries)):
        if value is not None and value < 0:
            raise AddModelError(f"{flag} {value} must be >= 0")
    for flag, value in (("--max-images-per-prompt", new.max_images_per_prompt),
                        ("--max-videos-per-prompt", new.max_videos_per_prompt)):
        if value is not None and value < 1:
            raise AddModelError(f"{flag} {value} must be >= 1: what the server takes (its --limit-mm-per-prompt); "
                                "leave the flag out for no limit (vLLM reads 0 as 'none allowed')")
    _validate_server_settings(new)
    _validate_family(new)
    retirement = RETIRED_MODELS.get(new.model)
    if retirement is not None:
        raise AddModelError(f"{new.model} was retired by its provider on {retirement.date.isoformat()}; add its "
                            f"successor instead ({retirement.successor}), or run that one: it is known already")
    if new.model in ALIASES:
        raise AddModelError(f"{new.model} is this package's alias of {ALIASES[new.model]}; it is known already")


def _validate_server_settings(new: NewModel) -> None:
    for flag, value in (("--timeout", new.timeout_seconds), ("--max-retries", new.max_retries),
                        ("--max-images-per-prompt", new.max_images_per_prompt),
                        ("--max-videos-per-prompt", new.max_videos_per_prompt)):
        if value is not None and new.client not in SERVER_SETTING_CLIENTS:
            raise AddModelError(f"{flag} applies to --client {' or '.join(SERVER_SETTING_CLIENTS)} "
                                "(OpenAIVideoClient's own arguments: timeout, retries, declared request "
                                f"limits); HELM's {new.client} client takes no such argument (its provider's "
                                "documented limits are what `roboreward estimate` checks)")
    if new.timeout_seconds is not None and not (math.isfinite(new.timeout_seconds) and new.timeout_seconds > 0):
        raise AddModelError(f"--timeout {new.timeout_seconds} must be a number of seconds > 0, e.g. --timeout 600")


def _validate_family(new: NewModel) -> None:
    if new.family is None or new.family == NO_FAMILY:
        return
    family = FAMILIES.get(new.family)
    if family is None:
        raise AddModelError(f"--family {new.family!r} is not one of {', '.join([*FAMILIES, NO_FAMILY])}")
    if new.client not in family.reference:
        raise AddModelError(f"--family {new.family} applies to --client {' or '.join(family.reference)} (the clients "
                            f"this package runs {new.family} checkpoints with), not {new.client}")


def _family_settings(new: NewModel) -> tuple[dict[str, Any], int | None]:
    """The client arguments and context length of the family's reference deployment for the client (none without)."""
    family, _ = new.resolved_family()
    reference = family.reference.get(new.client) if family is not None else None
    if reference is None:
        return {}, None
    with open(os.path.join(config_dir(), MODEL_DEPLOYMENTS_FILE), encoding="utf-8") as handle:
        entries = yaml.safe_load(handle)["model_deployments"]
    (entry,) = [item for item in entries if item["name"] == reference]
    args = {key: value for key, value in (entry["client_spec"].get("args") or {}).items()
            if key not in IDENTITY_ARGS}
    return args, entry.get("max_sequence_length")


def _needs_native_tag(new: NewModel) -> bool:
    """``--video native``; or a family checkpoint (the family officially got the mp4) whose name does not say so."""
    family, _ = new.resolved_family()
    return new.video == NATIVE or (new.video is None and family is not None and not _native_by_name(new.model)
                                   and client_sends_video(CLIENTS[new.client]))


def metadata_entry(new: NewModel) -> dict[str, Any]:
    """The model's entry in ``model_metadata.yaml``."""
    tags = list(_BASE_TAGS) + ([NATIVE_VIDEO_TAG] if _needs_native_tag(new) else [])
    return {
        "name": new.model,
        "display_name": new.display_name or new.engine,
        "description": f"Added with roboreward add-model on {datetime.date.today().isoformat()}: {new.client} "
                       f"client, model id {new.provider_id!r}.",
        "creator_organization_name": new.model.split("/", 1)[0],
        "access": "open" if new.client in OPEN_WEIGHT_CLIENTS else "limited",
        "release_date": None,
        "tags": tags,
    }


def _client_args(new: NewModel) -> dict[str, Any]:
    args: dict[str, Any] = {}
    if new.client == "openai":
        args["openai_model_name"] = new.provider_id
        if new.reasoning_effort:
            args["reasoning_effort"] = new.reasoning_effort
    elif new.client == "anthropic" and new.provider_id != new.engine:
        args["anthropic_model_name"] = new.provider_id
    elif new.client == "google":
        args["genai_use_vertexai"] = False
        if new.provider_id != new.engine:
            args["genai_model"] = new.provider_id
    elif new.client == "vllm":
        args["served_model_name"] = new.provider_id
    elif new.client == "transformers":
        args["checkpoint"] = new.provider_id
    args.update(_family_settings(new)[0])
    if new.base_url:
        args["base_url"] = new.base_url
    if new.timeout_seconds is not None:
        args["timeout_seconds"] = float(new.timeout_seconds)
    if new.max_retries is not None:
        args["max_retries"] = new.max_retries
    if new.max_images_per_prompt is not None:
        args["max_images_per_prompt"] = new.max_images_per_prompt
    if new.max_videos_per_prompt is not None:
        args["max_videos_per_prompt"] = new.max_videos_per_prompt
    return args


def deployment_entry(new: NewModel) -> dict[str, Any]:
    """The deployment's entry in ``model_deployments.yaml`` (no tokenizer: nothing to download).

    HELM's no-tokenizer window service keeps HELM from looking a tokenizer up, so the model runs on other
    benchmarks too.
    """
    entry: dict[str, Any] = {"name": new.deployment_name, "model_name": new.model,
                             "window_service_spec": {"class_name": NO_TOKENIZER_WINDOW_SERVICE}}
    max_sequence_length = new.max_sequence_length or _family_settings(new)[1]
    if max_sequence_length:
        entry["max_sequence_length"] = max_sequence_length
    client: dict[str, Any] = {"class_name": CLIENTS[new.client]}
    args = _client_args(new)
    if args:
        client["args"] = args
    entry["client_spec"] = client
    return entry


@dataclass(frozen=True)
class _Merge:
    models: list[dict[str, Any]]
    deployments: list[dict[str, Any]]
    commented: list[str]
    notes: list[str]


def _merge(new: NewModel, metadata_path: str, deployments_path: str, force: bool, take_deployment: bool) -> _Merge:
    """Read both files and merge the model's entries in; raises :class:`AddModelError` (nothing written)."""
    models, models_commented = read_entries(metadata_path, "models")
    deployments, deployments_commented = read_entries(deployments_path, "model_deployments")
    notes: list[str] = []
    registered = new.model in MODEL_NAME_TO_MODEL_METADATA
    models = merged_entries(models, metadata_entry(new), metadata_path, force, registered)
    deployments = merged_deployments(deployments, deployment_entry(new), deployments_path, force, take_deployment,
                                     notes)
    check_helm_reads(models, deployments, os.path.dirname(metadata_path) or ".")
    commented = [path for path, flag in ((metadata_path, models_commented), (deployments_path, deployments_commented))
                 if flag]
    return _Merge(models, deployments, commented, notes)


def add_model(new: NewModel, local_path: str, force: bool = False, take_deployment: bool = False) -> list[str]:
    """Merge the model's metadata and deployment into ``local_path``; returns what was done, as lines to print.

    Call :func:`helm_roboreward.helm_frontend.plugin.load_registries` first (the name checks use the registries).
    Concurrent calls on one folder are safe: each reads, merges and writes both files holding their locks.

    Args:
        new: The model to add.
        local_path: The ``--local-path`` folder (created when missing).
        force: Replace the model's existing entries (its metadata and every deployment of it in the file).
        take_deployment: Take a deployment name that belongs to another model in the file.

    Raises:
        AddModelError: Bad input, an existing entry without ``force``, another model's deployment name without
            ``take_deployment``, a name HELM already has, a file that is the package's configuration, or an
            unreadable file (nothing is written then).
    """
    validate(new)
    try:
        require_local_path_folder(local_path)
    except ValueError as error:
        raise AddModelError(str(error)) from None
    metadata_path = os.path.join(local_path, MODEL_METADATA_FILE)
    deployments_path = os.path.join(local_path, MODEL_DEPLOYMENTS_FILE)
    for path in (metadata_path, deployments_path):
        refuse_package_config(path)
    _merge(new, metadata_path, deployments_path, force, take_deployment)  # refuse before creating anything
    os.makedirs(local_path, exist_ok=True)
    header = "# Written by roboreward add-model in HELM's format: other entries are kept, comments are not.\n"
    with locked([metadata_path, deployments_path]):
        merge = _merge(new, metadata_path, deployments_path, force, take_deployment)  # again, as of now
        write_atomically(metadata_path, dump_entries("models", merge.models, header))
        write_atomically(deployments_path, dump_entries("model_deployments", merge.deployments, header))
    return _summary(new, deployment_entry(new), local_path, merge.commented, merge.notes)


def _native_by_name(model: str) -> bool:
    """True when the model's name alone gives it the mp4 under ``video=auto`` (the official name patterns)."""
    return any(fnmatch.fnmatchcase(model.lower(), pattern) for pattern in NATIVE_VIDEO_MODEL_PATTERNS)


def _family_line(new: NewModel) -> str:
    family, why = new.resolved_family()
    if family is None:
        decoding = "temperature 0" + (", no frame rule" if new.client == "vllm" else "")
        return f"  family: none ({why}): {decoding}; --family {' or '.join(FAMILIES)} gives a family's own settings"
    settings = ", ".join(f"{key}: {value}" for key, value in _family_settings(new)[0].items())
    line = (f"  family: {family.name} ({why}): {settings} (decoding=greedy in a run entry uses the -greedy option "
            "deployment)")
    return line + ("; --family none opts out" if new.family is None else "")


def _summary(new: NewModel, deployment: dict[str, Any], local_path: str, commented: list[str],
             notes: list[str] | None = None) -> list[str]:
    """What ``roboreward`` runs of the new model will do (computed from the entries, registering nothing)."""
    client = CLIENTS[new.client]
    native = (_native_by_name(new.model) or _needs_native_tag(new)) and client_sends_video(client)
    max_tokens = DEFAULT_MAX_TOKENS + (REASONING_TOKEN_ALLOWANCE if needs_reasoning_allowance(new.model) else 0)
    structured = cattrs.structure({"model_deployments": [deployment]}, ModelDeployments).model_deployments[0]
    lines = [f"roboreward add-model: {new.model} (deployment {new.deployment_name}, {client.rsplit('.', 1)[-1]}"
             f", model id {new.provider_id!r}) written into {os.path.join(local_path, MODEL_METADATA_FILE)} and "
             f"{os.path.join(local_path, MODEL_DEPLOYMENTS_FILE)}",
             f"  video=auto sends: {NATIVE if native else FRAMES}; max_tokens: {max_tokens:,}; credentials.conf: "
             f"{credentials_key(structured)}"]
    if new.client in OPEN_WEIGHT_CLIENTS:
        lines.append(_family_line(new))
    lines += notes or []
    if new.video == FRAMES and _native_by_name(new.model):
        lines.append(f"  note: {new.model} matches a native-video model-name rule, so video=auto sends it the mp4 "
                     "anyway; add video=frames to its run entries for frames")
    if not needs_reasoning_allowance(new.model) and new.client in ("openai", "google"):
        lines.append("  note: the official +60,000 max_tokens allowance goes to model names openai/* and "
                     "google/gemini* only")
    for path in commented:
        lines.append(f"  note: the comments in {path} were not kept (the file is rewritten from its YAML content)")
    lines.append(f"  run: helm-run --run-entries roboreward:subset=all,model={new.model} --local-path {local_path} "
                 "--suite <suite> -m 2831")
    return lines
