"""``roboreward add-model``: a model and its deployment written into a ``--local-path`` in HELM's own YAML format.

The two files (``model_metadata.yaml``, ``model_deployments.yaml``) are merged: other entries are kept, an entry
of the same name is replaced only with ``--force``; the files are rewritten from their YAML content, so comments
are not kept (the command says so when there were any). The package's own configuration is never written: when
a file is a link into it (``prod_env/`` in a checkout), the command refuses and names the two ways out.

The deployment gets the client class and arguments of its provider (:data:`CLIENTS`) and the tags routing reads
(``VISION_LANGUAGE_MODEL_TAG``; ``ROBOREWARD_NATIVE_VIDEO_TAG`` with ``--video native``), so ``video=auto``, the
token allowance, the request limits and the credentials follow as for the package's own models.
"""

import datetime
import fnmatch
import os
import re
from dataclasses import dataclass
from typing import Any

import cattrs
import dacite
import yaml
from helm.benchmark.model_deployment_registry import DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT, ModelDeployments
from helm.benchmark.model_metadata_registry import MODEL_NAME_TO_MODEL_METADATA, ModelMetadataList

from helm_roboreward.config import MODEL_DEPLOYMENTS_FILE, MODEL_METADATA_FILE, config_dir
from helm_roboreward.core.files import write_atomically
from helm_roboreward.helm_layer.model_catalog import credentials_key
from helm_roboreward.helm_layer.model_lifecycle import ALIASES, retirement_of
from helm_roboreward.helm_layer.model_registry import OPENAI_VIDEO_CLIENT, TRANSFORMERS_CLIENT
from helm_roboreward.helm_layer.routing import (
    FRAMES,
    NATIVE,
    NATIVE_VIDEO_MODEL_PATTERNS,
    NATIVE_VIDEO_TAG,
    REASONING_TOKEN_ALLOWANCE,
    client_sends_video,
    needs_reasoning_allowance,
)
from helm_roboreward.helm_layer.run_specs import DEFAULT_MAX_TOKENS

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
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_BASE_TAGS = ["TEXT_MODEL_TAG", "VISION_LANGUAGE_MODEL_TAG", "INSTRUCTION_FOLLOWING_MODEL_TAG"]


class AddModelError(ValueError):
    """A bad ``add-model`` request; the message names the input and the fix."""


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
    for flag, value in (("--max-images-per-prompt", new.max_images_per_prompt),
                        ("--max-videos-per-prompt", new.max_videos_per_prompt),
                        ("--max-sequence-length", new.max_sequence_length)):
        if value is not None and value < 0:
            raise AddModelError(f"{flag} {value} must be >= 0")
    retirement = retirement_of(new.model)
    if retirement is not None:
        raise AddModelError(f"{new.model} was retired by its provider on {retirement.date.isoformat()}; add its "
                            f"successor instead ({retirement.successor}), or run that one: it is known already")
    if new.model in ALIASES:
        raise AddModelError(f"{new.model} is this package's alias of {ALIASES[new.model]}; it is known already")


def metadata_entry(new: NewModel) -> dict[str, Any]:
    """The model's entry in ``model_metadata.yaml``."""
    tags = list(_BASE_TAGS) + ([NATIVE_VIDEO_TAG] if new.video == NATIVE else [])
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
    if new.base_url:
        args["base_url"] = new.base_url
    if new.max_images_per_prompt is not None:
        args["max_images_per_prompt"] = new.max_images_per_prompt
    if new.max_videos_per_prompt is not None:
        args["max_videos_per_prompt"] = new.max_videos_per_prompt
    return args


def deployment_entry(new: NewModel) -> dict[str, Any]:
    """The deployment's entry in ``model_deployments.yaml`` (no tokenizer: nothing to download)."""
    entry: dict[str, Any] = {"name": new.deployment_name, "model_name": new.model}
    if new.max_sequence_length:
        entry["max_sequence_length"] = new.max_sequence_length
    client: dict[str, Any] = {"class_name": CLIENTS[new.client]}
    args = _client_args(new)
    if args:
        client["args"] = args
    entry["client_spec"] = client
    return entry


def _refuse_package_config(path: str) -> None:
    package = os.path.realpath(config_dir())
    real = os.path.realpath(path)
    if os.path.islink(path) or os.path.dirname(real) == package:
        folder = os.path.dirname(path) or "."
        raise AddModelError(
            f"{path} is the package's own configuration (a link to {real}); writing there would change the package "
            f"for every run. Either pass --local-path DIR, a folder of your own (the new files hold your models; "
            f"use the same --local-path for helm-run and helm-summarize), or make {folder}'s files your own "
            f"copies first: cp --remove-destination {os.path.join(package, MODEL_METADATA_FILE)} "
            f"{os.path.join(package, MODEL_DEPLOYMENTS_FILE)} {folder}/ and run add-model again."
        )


def _read(path: str, key: str) -> tuple[list[dict[str, Any]], bool]:
    """The entries under ``key`` of an existing file (none when absent) and whether it has comments."""
    if not os.path.exists(path):
        return [], False
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        content = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError) as error:
        raise AddModelError(f"{path}: cannot read it ({error}); fix its permissions or pass another "
                            "--local-path") from None
    except yaml.YAMLError as error:
        raise AddModelError(f"{path}: not valid YAML ({' '.join(str(error).split())}); fix the file (HELM's "
                            "format) or pass another --local-path") from None
    if content is None:
        return [], False
    entries = content.get(key) if isinstance(content, dict) else None
    if not isinstance(entries, list) or not all(isinstance(item, dict) and item.get("name") for item in entries):
        raise AddModelError(f"{path}: expected a mapping with a '{key}:' list of entries that each have a name "
                            f"(HELM's {os.path.basename(path)} format); fix the file or pass another --local-path")
    has_comments = any(line.lstrip().startswith("#") or " #" in line for line in text.splitlines())
    return entries, has_comments


def _merged(entries: list[dict[str, Any]], new: dict[str, Any], path: str, force: bool,
            registered: bool) -> list[dict[str, Any]]:
    names = [str(item["name"]) for item in entries]
    name = str(new["name"])
    if name in names:
        if not force:
            raise AddModelError(f"{path} already has an entry named {name}; pass --force to replace it")
        return [new if str(item["name"]) == name else item for item in entries]
    if registered:
        raise AddModelError(f"{name} is already known to HELM (a built-in or this package's); run it by name "
                            "(model=... or model_deployment=...), or add it under another name")
    return entries + [new]


def _check_helm_reads(metadata: list[dict[str, Any]], deployments: list[dict[str, Any]], local_path: str) -> None:
    try:
        dacite.from_dict(ModelMetadataList, {"models": metadata})
        cattrs.structure({"model_deployments": deployments}, ModelDeployments)
    except Exception as error:  # dacite and cattrs raise their own error types
        raise AddModelError(f"{local_path}: HELM could not read the merged files ({type(error).__name__}: "
                            f"{error}); fix the existing entries first") from None


def _dump(key: str, entries: list[dict[str, Any]], header: str) -> bytes:
    body = yaml.safe_dump({key: entries}, sort_keys=False, allow_unicode=True, default_flow_style=False, width=120)
    return (header + body).encode("utf-8")


def add_model(new: NewModel, local_path: str, force: bool = False) -> list[str]:
    """Merge the model's metadata and deployment into ``local_path``; returns what was done, as lines to print.

    Call :func:`helm_roboreward.helm_layer.registries.load_registries` first (the name checks use the registries).

    Raises:
        AddModelError: Bad input, an existing entry without ``force``, a name HELM already has, a file that is the
            package's configuration, or an unreadable file (nothing is written then).
    """
    validate(new)
    if os.path.exists(local_path) and not os.path.isdir(local_path):
        raise AddModelError(f"--local-path {local_path} is a file, not a folder")
    metadata_path = os.path.join(local_path, MODEL_METADATA_FILE)
    deployments_path = os.path.join(local_path, MODEL_DEPLOYMENTS_FILE)
    for path in (metadata_path, deployments_path):
        _refuse_package_config(path)
    models, models_commented = _read(metadata_path, "models")
    deployments, deployments_commented = _read(deployments_path, "model_deployments")
    model_entry, deployment = metadata_entry(new), deployment_entry(new)
    models = _merged(models, model_entry, metadata_path, force, new.model in MODEL_NAME_TO_MODEL_METADATA)
    deployments = _merged(deployments, deployment, deployments_path, force,
                          new.deployment_name in DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT)
    _check_helm_reads(models, deployments, local_path)
    os.makedirs(local_path, exist_ok=True)
    header = "# Written by roboreward add-model in HELM's format: other entries are kept, comments are not.\n"
    write_atomically(metadata_path, _dump("models", models, header))
    write_atomically(deployments_path, _dump("model_deployments", deployments, header))
    return _summary(new, deployment, local_path, [
        path for path, commented in ((metadata_path, models_commented), (deployments_path, deployments_commented))
        if commented])


def _native_by_name(model: str) -> bool:
    """True when the model's name alone gives it the mp4 under ``video=auto`` (the official name patterns)."""
    return any(fnmatch.fnmatchcase(model.lower(), pattern) for pattern in NATIVE_VIDEO_MODEL_PATTERNS)


def _summary(new: NewModel, deployment: dict[str, Any], local_path: str, commented: list[str]) -> list[str]:
    """What ``roboreward`` runs of the new model will do (computed from the entries, registering nothing)."""
    client = CLIENTS[new.client]
    native = (_native_by_name(new.model) or new.video == NATIVE) and client_sends_video(client)
    max_tokens = DEFAULT_MAX_TOKENS + (REASONING_TOKEN_ALLOWANCE if needs_reasoning_allowance(new.model) else 0)
    structured = cattrs.structure({"model_deployments": [deployment]}, ModelDeployments).model_deployments[0]
    lines = [f"roboreward add-model: {new.model} (deployment {new.deployment_name}, {client.rsplit('.', 1)[-1]}"
             f", model id {new.provider_id!r}) written into {os.path.join(local_path, MODEL_METADATA_FILE)} and "
             f"{os.path.join(local_path, MODEL_DEPLOYMENTS_FILE)}",
             f"  video=auto sends: {NATIVE if native else FRAMES}; max_tokens: {max_tokens:,}; credentials.conf: "
             f"{credentials_key(structured)}"]
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
