"""Registering the package's model metadata, deployments and twin deployments with HELM, without duplicates.

Twins, registration order and HELM's default deployments: docs/data.md.
"""

import dataclasses
import functools
import os

import cattrs
import dacite
import yaml
from helm.benchmark.model_deployment_registry import (
    ALL_MODEL_DEPLOYMENTS,
    DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT,
    ClientSpec,
    ModelDeployment,
    ModelDeployments,
    register_model_deployment,
)
from helm.benchmark.model_metadata_registry import (
    MODEL_NAME_TO_MODEL_METADATA,
    ModelMetadata,
    ModelMetadataList,
    register_model_metadata,
)

from helm_roboreward.config import MODEL_DEPLOYMENTS_FILE, MODEL_METADATA_FILE, config_dir
from helm_roboreward.protocol import (
    CHECKPOINT,
    EXPECTED,
    GREEDY,
    HELM_GEMINI_CLIENT,
    ONE_MESSAGE,
    ONE_MESSAGE_GEMINI_CLIENT,
    OPENAI_VIDEO_CLIENT,
    TRANSFORMERS_CLIENT,
)

LAYOUT_OPTION, DECODING_OPTION, SCORE_OPTION = "layout", "decoding", "score"
LOGPROBS_TOP_N = 20  # the most OpenAI-compatible servers return (vLLM's default --max-logprobs)
LOGPROBS_CLIENTS = (TRANSFORMERS_CLIENT, OPENAI_VIDEO_CLIENT)
"""The clients that can record the answer's token log-probabilities (their ``top_logprobs`` argument)."""


@dataclasses.dataclass(frozen=True)
class DeploymentVariant:
    """A named departure served by a twin of a deployment (same model and credentials, own client or args)."""

    option: str  # the run-entry argument that asks for it
    value: str
    suffix: str  # twin name = deployment name + suffix
    named_by_routing: bool = True  # False: the run spec names it always (score=expected)

    def applies_to(self, deployment: ModelDeployment) -> bool:
        """True when ``deployment`` is one this variant has a twin of."""
        client = deployment.client_spec
        if self.option == LAYOUT_OPTION:
            model = (deployment.model_name or "").lower()
            return client.class_name == HELM_GEMINI_CLIENT and model.startswith("google/gemini")
        if client.class_name not in LOGPROBS_CLIENTS:  # greedy and logprobs twins: the package's own clients only
            return False
        if self.option == SCORE_OPTION:
            return not client.args.get("top_logprobs")
        return bool(client.args.get("decoding") == CHECKPOINT)

    def twin(self, deployment: ModelDeployment) -> ModelDeployment:
        """The twin deployment of ``deployment``."""
        args = dict(deployment.client_spec.args)
        class_name = deployment.client_spec.class_name
        if self.option == LAYOUT_OPTION:
            class_name = ONE_MESSAGE_GEMINI_CLIENT
        elif self.option == SCORE_OPTION:
            args["top_logprobs"] = LOGPROBS_TOP_N
        else:
            args["decoding"] = GREEDY
        return dataclasses.replace(deployment, name=deployment.name + self.suffix,
                                   client_spec=ClientSpec(class_name=class_name, args=args))

    def describes(self, deployment: ModelDeployment) -> bool:
        """True when ``deployment`` (a twin, or a deployment of the user's) already serves this variant."""
        client = deployment.client_spec
        if self.option == LAYOUT_OPTION:
            return client.class_name == ONE_MESSAGE_GEMINI_CLIENT
        if client.class_name not in LOGPROBS_CLIENTS:
            return False
        if self.option == SCORE_OPTION:
            return bool(client.args.get("top_logprobs"))
        return bool(client.args.get("decoding") == GREEDY)


VARIANTS = (
    DeploymentVariant(LAYOUT_OPTION, ONE_MESSAGE, "-one-message"),
    DeploymentVariant(DECODING_OPTION, GREEDY, "-greedy"),
    DeploymentVariant(SCORE_OPTION, EXPECTED, "-logprobs", named_by_routing=False),
)
"""Every departure served by twin deployments, in the order they combine (``<deployment>-greedy-logprobs``)."""


def register_package_models() -> list[str]:
    """Register the package's models, deployments and twins that HELM does not know yet; returns the names added."""
    added: list[str] = []
    for model in _package_metadata():
        if model.name not in MODEL_NAME_TO_MODEL_METADATA:
            register_model_metadata(model)
            added.append(model.name)
    for deployment in _package_deployments():
        if deployment.model_name not in MODEL_NAME_TO_MODEL_METADATA:
            continue  # a HELM built-in model not loaded yet: HELM would invent placeholder metadata
        if deployment.name not in DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT:
            _register(deployment)
            added.append(deployment.name)
    added += register_variant_twins()
    keep_helm_defaults()
    return added


def _register(deployment: ModelDeployment) -> None:
    """Register a deployment with HELM's function, keeping the ``deployment_names`` HELM built for its own models."""
    metadata = MODEL_NAME_TO_MODEL_METADATA.get(deployment.model_name or "")
    kept = None if metadata is None or metadata.deployment_names is None else list(metadata.deployment_names)
    register_model_deployment(deployment)
    if metadata is not None and metadata.name not in _package_model_set():
        metadata.deployment_names = kept


@functools.lru_cache(maxsize=1)
def _package_metadata() -> tuple[ModelMetadata, ...]:
    with open(os.path.join(config_dir(), MODEL_METADATA_FILE), encoding="utf-8") as handle:
        return tuple(dacite.from_dict(ModelMetadataList, yaml.safe_load(handle)).models)


def package_model_names() -> list[str]:
    """The models this package defines (``helm_roboreward/config/model_metadata.yaml``), in file order."""
    return [model.name for model in _package_metadata()]


@functools.lru_cache(maxsize=1)
def _package_model_set() -> frozenset[str]:
    return frozenset(package_model_names())


def register_variant_twins() -> list[str]:
    """Register the twins of every deployment a :data:`VARIANTS` entry applies to (idempotent); returns the names."""
    added: list[str] = []
    # Twins chain in VARIANTS order (x -> x-greedy -> x-greedy-logprobs), never a second spelling (x-logprobs-greedy).
    pending = [(deployment, _first_variant_to_twin(deployment)) for deployment in list(ALL_MODEL_DEPLOYMENTS)]
    while pending:
        deployment, start = pending.pop()
        for index in range(start, len(VARIANTS)):
            variant = VARIANTS[index]
            if not variant.applies_to(deployment):
                continue
            twin = variant.twin(deployment)
            if twin.name not in DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT:
                _register(twin)
                added.append(twin.name)
                pending.append((twin, index + 1))
    return added


def _first_variant_to_twin(deployment: ModelDeployment) -> int:
    """The index in :data:`VARIANTS` after the last variant ``deployment`` already serves (0: serves none)."""
    served = [index for index, variant in enumerate(VARIANTS) if variant.describes(deployment)]
    return served[-1] + 1 if served else 0


def variant_of(deployment_name: str, option: str, value: str) -> str | None:
    """The deployment serving ``option=value`` for ``deployment_name``: its twin, itself, or None if it has none."""
    variant = next((v for v in VARIANTS if v.option == option and v.value == value), None)
    if variant is None:  # the official value
        return deployment_name
    deployment = DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT.get(deployment_name)
    if deployment is None:
        return None
    if variant.describes(deployment):
        return deployment_name
    if not variant.applies_to(deployment):
        return None
    twin = deployment_name + variant.suffix
    return twin if twin in DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT else None


def variants_served(deployment_name: str) -> list[DeploymentVariant]:
    """The departures a deployment serves (what its run name must show)."""
    deployment = DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT.get(deployment_name)
    return [] if deployment is None else [v for v in VARIANTS if v.describes(deployment)]


@functools.lru_cache(maxsize=1)
def _package_deployments() -> list[ModelDeployment]:
    with open(os.path.join(config_dir(), MODEL_DEPLOYMENTS_FILE), encoding="utf-8") as handle:
        return list(cattrs.structure(yaml.safe_load(handle), ModelDeployments).model_deployments)


def preferred_deployment(model: str) -> str | None:
    """The package's first registered deployment of ``model`` (a ``roboreward`` run's default), if it has one."""
    for deployment in _package_deployments():
        if deployment.model_name == model and deployment.name in DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT:
            return deployment.name
    return None


def keep_helm_defaults() -> None:
    """Order the deployments so that installing the plugin changes no model's default deployment in HELM.

    HELM's default is the last one registered: twins go first, then the package's deployments of models HELM also
    deploys, then the rest, each in its order.
    """
    ours = {deployment.name for deployment in _package_deployments()}
    twins = [d for d in ALL_MODEL_DEPLOYMENTS if any(d.name.endswith(v.suffix) and v.describes(d) for v in VARIANTS)]
    twin_names = {d.name for d in twins}
    theirs = {d.model_name for d in ALL_MODEL_DEPLOYMENTS if d.name not in ours and d.name not in twin_names}
    moved = [d for d in ALL_MODEL_DEPLOYMENTS if d.name in ours and d.model_name in theirs]
    moved_names = {d.name for d in moved}
    rest = [d for d in ALL_MODEL_DEPLOYMENTS if d.name not in twin_names and d.name not in moved_names]
    ALL_MODEL_DEPLOYMENTS[:] = twins + moved + rest
