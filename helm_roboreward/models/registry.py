"""Registering the package's model metadata and deployments with HELM, without duplicates."""

import dataclasses
import fnmatch
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
LOGPROBS_TOP_N = 20
"""``score=expected`` runs on a twin whose client records the answer token's top 20 alternatives: the most
OpenAI-compatible servers return (OpenAI's and vLLM's default ``--max-logprobs``), enough that the digits 1..5 are
among them whenever they carry appreciable probability."""

LOGPROBS_CLIENTS = (TRANSFORMERS_CLIENT, OPENAI_VIDEO_CLIENT)
"""The clients that can record the answer's token log-probabilities (their ``top_logprobs`` argument)."""


@dataclasses.dataclass(frozen=True)
class DeploymentVariant:
    """A named departure served by a twin of a deployment (same model and credentials, own client or args)."""

    option: str
    """Run-entry argument that asks for it (``layout``, ``decoding``, ``score``)."""

    value: str
    """The argument's value (``one_message``, ``greedy``, ``expected``)."""

    suffix: str
    """Twin name = deployment name + suffix."""

    named_by_routing: bool = True
    """True when the routing adds ``<option>=<value>`` to the run name where the deployment serves it. False for
    ``score=expected``: the run spec names it always, since it changes the metric for every model, and the
    twin only makes a client able to record what the metric reads."""

    def applies_to(self, deployment: ModelDeployment) -> bool:
        """True when ``deployment`` is one this variant has a twin of."""
        client = deployment.client_spec
        if self.option == LAYOUT_OPTION:
            return client.class_name == HELM_GEMINI_CLIENT and _is_gemini(deployment.model_name or "")
        if self.option == SCORE_OPTION:
            return client.class_name in LOGPROBS_CLIENTS and not client.args.get("top_logprobs")
        return client.class_name in (TRANSFORMERS_CLIENT, OPENAI_VIDEO_CLIENT) and (
            client.args.get("decoding") == CHECKPOINT)

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
        if self.option == SCORE_OPTION:
            return client.class_name in LOGPROBS_CLIENTS and bool(client.args.get("top_logprobs"))
        return client.class_name in (TRANSFORMERS_CLIENT, OPENAI_VIDEO_CLIENT) and client.args.get("decoding") == GREEDY


VARIANTS = (
    DeploymentVariant(LAYOUT_OPTION, ONE_MESSAGE, "-one-message"),
    DeploymentVariant(DECODING_OPTION, GREEDY, "-greedy"),
    DeploymentVariant(SCORE_OPTION, EXPECTED, "-logprobs", named_by_routing=False),
)
"""Every departure served by twin deployments, in the order they combine: ``decoding=greedy`` with
``score=expected`` runs on ``<deployment>-greedy-logprobs``. The run name shows ``<option>=<value>`` when one
is used."""

GEMINI_TWIN_SUFFIX = VARIANTS[0].suffix
"""``google/gemini-2.5-pro`` -> ``google/gemini-2.5-pro-one-message`` (same host, so the same credentials)."""


def register_package_models() -> list[str]:
    """Register the package's models and deployments that HELM does not know yet.

    HELM registers ``--local-path`` configuration before it imports plugins; registering the same
    model twice would list it twice under ``model=vlm``, so known names are skipped.

    Returns:
        The names newly registered (models and deployments).
    """
    added: list[str] = []
    for model in _package_metadata():
        if model.name not in MODEL_NAME_TO_MODEL_METADATA:
            register_model_metadata(model)
            added.append(model.name)
    for deployment in _package_deployments():
        if deployment.model_name not in MODEL_NAME_TO_MODEL_METADATA:
            # A HELM built-in model whose metadata is not loaded yet (HELM would invent placeholder metadata
            # and list the model twice later); helm-run always loads the built-ins before plugins.
            continue
        if deployment.name not in DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT:
            _register(deployment)
            added.append(deployment.name)
    added += register_variant_twins()
    keep_helm_defaults()
    return added


def _register(deployment: ModelDeployment) -> None:
    """Register a deployment with HELM's own function, leaving the model's metadata as it was.

    HELM's ``register_model_deployment`` appends the deployment's name to its model's ``deployment_names``
    (bookkeeping nothing in HELM 0.5.16 reads); for a model HELM ships, that list stays as HELM built it.
    """
    metadata = MODEL_NAME_TO_MODEL_METADATA.get(deployment.model_name or "")
    before = None if metadata is None else metadata.deployment_names
    kept = None if before is None else list(before)
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
    """Register the twins of every deployment a :data:`VARIANTS` entry applies to (idempotent).

    A twin has the same model, settings and credentials as its deployment, with the variant's client or
    client arguments; its client caches apart where the cache key would not tell the variants apart.

    Returns:
        The names added.
    """
    added: list[str] = []
    # Twins chain in VARIANTS order (x -> x-greedy -> x-greedy-logprobs): a deployment gets twins only for the
    # variants after the last one it already serves, so a second call, or a twin met as a deployment, adds no
    # second spelling (x-logprobs-greedy).
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
    """The deployment serving ``option=value`` for ``deployment_name``: its twin, itself, or None if it has none.

    Returns ``deployment_name`` itself for the official value, and for a deployment that already serves the
    variant (a twin, or one of the user's configured the same way).
    """
    variant = next((v for v in VARIANTS if v.option == option and v.value == value), None)
    if variant is None:  # the official value (``official``; ``parsed`` for ``score``)
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


def _is_gemini(model: str) -> bool:
    return fnmatch.fnmatchcase(model.lower(), "google/gemini*")


@functools.lru_cache(maxsize=1)
def _package_deployments() -> list[ModelDeployment]:
    with open(os.path.join(config_dir(), MODEL_DEPLOYMENTS_FILE), encoding="utf-8") as handle:
        return list(cattrs.structure(yaml.safe_load(handle), ModelDeployments).model_deployments)


def preferred_deployment(model: str) -> str | None:
    """The package's deployment a ``roboreward`` run of ``model`` uses by default, if it has one.

    The first deployment of the model in the package's ``model_deployments.yaml``: the official in-process
    transformers path for Qwen3-VL and RoboReward, vLLM for Qwen2.5-VL and Llama 4 (HELM deploys those on
    local transformers or Together/Vertex; the official setup served open models itself). Gemini keeps
    HELM's own deployment (the official numbers came from it), so there is no preference and HELM's default
    applies. HELM's own default stays untouched for every other benchmark (:func:`keep_helm_defaults`).
    """
    for deployment in _package_deployments():
        if deployment.model_name == model and deployment.name in DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT:
            return deployment.name
    return None


def keep_helm_defaults() -> None:
    """Order the deployments so that installing the plugin changes no model's default deployment in HELM.

    HELM's default deployment for a model is the last one registered. Twins (:data:`VARIANTS`) go first, so
    a named departure is never anybody's default; then the package's deployments of models HELM also deploys
    (registered by this plugin or through ``--local-path prod_env``), so HELM's own stays the default for
    every other benchmark. The relative order is otherwise kept.
    """
    ours = {deployment.name for deployment in _package_deployments()}
    twins = [d for d in ALL_MODEL_DEPLOYMENTS if any(d.name.endswith(v.suffix) and v.describes(d) for v in VARIANTS)]
    twin_names = {d.name for d in twins}
    theirs = {d.model_name for d in ALL_MODEL_DEPLOYMENTS if d.name not in ours and d.name not in twin_names}
    moved = [d for d in ALL_MODEL_DEPLOYMENTS if d.name in ours and d.model_name in theirs]
    moved_names = {d.name for d in moved}
    rest = [d for d in ALL_MODEL_DEPLOYMENTS if d.name not in twin_names and d.name not in moved_names]
    ALL_MODEL_DEPLOYMENTS[:] = twins + moved + rest
