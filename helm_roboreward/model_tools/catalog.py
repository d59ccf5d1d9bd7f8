"""What ``roboreward models`` lists: every model the plugin knows, as a ``roboreward`` run would use it.

For each model: its family, the deployment a ``roboreward`` run uses when the entry names none, that
deployment's client class, the media it gets under ``video=auto``, its max_tokens, its status (current, an
alias, or retired with the successor) and the HELM ``credentials.conf`` key its client needs. The registries must
be loaded as ``helm-run`` loads them first (:func:`helm_roboreward.helm_frontend.plugin.load_registries`).
"""

import csv
import fnmatch
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass

import yaml
from helm.benchmark.model_deployment_registry import (
    DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT,
    ModelDeployment,
)
from helm.benchmark.model_metadata_registry import (
    MODEL_NAME_TO_MODEL_METADATA,
    VISION_LANGUAGE_MODEL_TAG,
    get_model_names_with_tag,
)
from helm.benchmark.run_expander import ModelRunExpander

from helm_roboreward.config import MODEL_METADATA_FILE, config_dir
from helm_roboreward.helm_frontend.model_registry import package_model_names
from helm_roboreward.helm_frontend.routing import choose_video_mode, needs_reasoning_allowance, roboreward_deployment
from helm_roboreward.protocol.published import ALIASES, RETIRED_MODELS
from helm_roboreward.protocol.published import LEADERBOARD_MODELS as PUBLISHED_MODELS
from helm_roboreward.protocol.rules import (
    AUTO,
    DEFAULT_MAX_TOKENS,
    HELM_GEMINI_CLIENT,
    ONE_MESSAGE_GEMINI_CLIENT,
    OPENAI_VIDEO_CLIENT,
    REASONING_TOKEN_ALLOWANCE,
    TRANSFORMERS_CLIENT,
)

CATALOG_SEEDS: tuple[str, ...] = (
    *PUBLISHED_MODELS,
    *(retirement.successor for retirement in RETIRED_MODELS.values()),
    "anthropic/claude-sonnet-4-5-20250929", "anthropic/claude-opus-4-6",
)
"""The models ``roboreward models`` lists first: the published leaderboard's, the successors of its retired ones,
and the Claude models README's family table names."""

MODEL_GROUPS = ("leaderboard", "all", "baselines")
"""Groups ``roboreward models --group G --names`` prints for HELM's ``--models-to-run``: the published
leaderboard's models, every model that takes images or video, the offline baselines."""

BASELINES = ("baseline/constant-3", "baseline/uniform-random")


def models_in_group(group: str) -> list[str]:
    """The models of a group (registered, not retired, not aliases), in a fixed order.

    - ``leaderboard``: the published leaderboard's models (:data:`~..protocol.published.LEADERBOARD_MODELS`;
      retired ones left out: their successors are other models);
    - ``all``: HELM's vision-language model group (what ``model=vlm`` gives other benchmarks), then the package's own
      current models (the baselines are a group of their own);
    - ``baselines``: the two offline baselines.

    Raises:
        ValueError: An unknown group.
    """
    if group == "leaderboard":
        names = list(PUBLISHED_MODELS)
    elif group == "all":
        names = ModelRunExpander("vlm").get_model_group_to_model_names()["vlm"]
        names += [name for name in package_model_names() if name not in BASELINES]
    elif group == "baselines":
        names = list(BASELINES)
    else:
        raise ValueError(f"roboreward: group {group!r} is not one of {', '.join(MODEL_GROUPS)}")
    return [name for name in dict.fromkeys(names)
            if name in MODEL_NAME_TO_MODEL_METADATA and name not in ALIASES and name not in RETIRED_MODELS]


COLUMNS = ("model", "family", "deployment", "client", "media", "max_tokens", "status", "credentials")

_FAMILIES = (
    ("*roboreward*", "RoboReward"),
    ("*qwen3-vl*", "Qwen3-VL"),
    ("*qwen2.5-vl*", "Qwen2.5-VL"),
    ("google/gemini-robotics-er*", "Gemini Robotics-ER"),
    ("google/gemini*", "Gemini"),
    ("openai/gpt*", "GPT"),
    ("openai/o[0-9]*", "OpenAI o-series"),
    ("anthropic/claude*", "Claude"),
    ("meta/llama-4*", "Llama 4"),
    ("baseline/*", "baseline"),
)
_NO_CREDENTIALS_CLIENTS = (TRANSFORMERS_CLIENT, "helm_roboreward.helm_frontend.clients.baselines.ConstantScoreClient",
                           "helm_roboreward.helm_frontend.clients.baselines.RandomScoreClient")
_SERVER_CLIENTS = (OPENAI_VIDEO_CLIENT, "helm.clients.vllm_client.VLLMChatClient",
                   "helm.clients.vllm_client.VLLMClient")


@dataclass(frozen=True)
class ModelEntry:
    """One row of ``roboreward models``."""

    model: str
    family: str
    deployment: str
    client: str
    """The client's full class name."""

    media: str
    """``native`` or ``frames`` under ``video=auto`` (``-`` without a deployment)."""

    max_tokens: int
    status: str
    credentials: str

    def cells(self, short_client: bool = True) -> list[str]:
        """The row's cells in :data:`COLUMNS` order (the client's class name alone when ``short_client``)."""
        client = self.client.rsplit(".", 1)[-1] if short_client else self.client
        return [self.model, self.family, self.deployment, client, self.media, str(self.max_tokens), self.status,
                self.credentials]


def family_of(model: str) -> str:
    """A family label from the model name (else the creator organization in the model's metadata)."""
    name = model.lower()
    for pattern, family in _FAMILIES:
        if fnmatch.fnmatchcase(name, pattern):
            return family
    metadata = MODEL_NAME_TO_MODEL_METADATA.get(model)
    return metadata.creator_organization_name if metadata is not None else model.split("/", 1)[0]


def credentials_key(deployment: ModelDeployment) -> str:
    """The ``credentials.conf`` key(s) the deployment's client needs (HELM injects ``<host>ApiKey`` and friends)."""
    client = deployment.client_spec.class_name
    args = deployment.client_spec.args
    host = deployment.host_organization
    if client in _NO_CREDENTIALS_CLIENTS or ".huggingface" in client or "vision_language" in client:
        return "none"
    if client in _SERVER_CLIENTS:
        return "none (base_url in args)" if args.get("base_url") else f"{host}BaseUrl"
    if client in (HELM_GEMINI_CLIENT, ONE_MESSAGE_GEMINI_CLIENT):
        if args.get("genai_use_vertexai") is True:
            return f"{host}ProjectId + {host}Location"
        if args.get("genai_use_vertexai") is False:
            return f"{host}ApiKey"
        return f"{host}ApiKey (Vertex AI: {host}ProjectId, {host}Location)"
    if client == "helm.clients.vertexai_client.VertexAIChatClient":
        return f"{host}ProjectId + {host}Location"
    return f"{host}ApiKey"


def status_of(model: str) -> str:
    """``current``, ``alias of <model>`` or ``retired on <date> -> <successor>`` (``roboreward models``)."""
    retirement = RETIRED_MODELS.get(model)
    if retirement is not None:
        return f"retired on {retirement.date.isoformat()} -> {retirement.successor}"
    return f"alias of {ALIASES[model]}" if model in ALIASES else "current"


def entry_for(model: str) -> ModelEntry:
    """The row of one model (its deployment's facts as a ``roboreward`` run without ``model_deployment=``)."""
    deployment_name = roboreward_deployment(model)
    deployment = DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT.get(deployment_name or "")
    max_tokens = DEFAULT_MAX_TOKENS + (REASONING_TOKEN_ALLOWANCE if needs_reasoning_allowance(model) else 0)
    if deployment is None:
        return ModelEntry(model, family_of(model), "-", "-", "-", max_tokens, status_of(model), "-")
    client = deployment.client_spec.class_name
    return ModelEntry(model, family_of(model), deployment.name, client,
                      choose_video_mode(AUTO, model, client, deployment.name), max_tokens, status_of(model),
                      credentials_key(deployment))


def _models_in(path: str) -> list[str]:
    """Model names of one metadata YAML file (none when it is absent or unreadable: HELM would have said so)."""
    try:
        with open(path, encoding="utf-8") as handle:
            content = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError):
        return []
    models = content.get("models") if isinstance(content, dict) else None
    return [str(item["name"]) for item in models or [] if isinstance(item, dict) and item.get("name")]


def known_models(local_path: str, include_all: bool = False) -> list[str]:
    """The package's models, the leaderboard's, the local path's, and with ``include_all`` every HELM VLM."""
    names = list(CATALOG_SEEDS) + _models_in(os.path.join(config_dir(), MODEL_METADATA_FILE))
    names += _models_in(os.path.join(local_path, MODEL_METADATA_FILE)) + list(RETIRED_MODELS) + list(ALIASES)
    if include_all:
        names += get_model_names_with_tag(VISION_LANGUAGE_MODEL_TAG)
    return [name for name in dict.fromkeys(names) if name in MODEL_NAME_TO_MODEL_METADATA]


def catalog(local_path: str, include_all: bool = False) -> list[ModelEntry]:
    """Every known model's row, by family then name."""
    entries = [entry_for(model) for model in known_models(local_path, include_all)]
    return sorted(entries, key=lambda entry: (entry.family.lower(), entry.model))


def format_text_table(columns: Sequence[str], rows: Sequence[Sequence[str]], right_aligned: Sequence[str] = ()) -> str:
    """Columns padded to their widest cell, two spaces apart; ``right_aligned`` columns (numbers) flush right."""
    widths = [max([len(column)] + [len(row[i]) for row in rows]) for i, column in enumerate(columns)]
    right = {i for i, column in enumerate(columns) if column in right_aligned}

    def line(cells: Sequence[str]) -> str:
        padded = [cell.rjust(width) if i in right else cell.ljust(width)
                  for i, (cell, width) in enumerate(zip(cells, widths, strict=True))]
        return "  ".join(padded).rstrip()

    return "\n".join([line(columns), line(["-" * width for width in widths])] + [line(row) for row in rows])


def csv_text(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The table as CSV (header row first, one line per row)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    return buffer.getvalue()
