"""Registering the package's models and deployments with HELM: only names HELM does not know, no new defaults.

Option deployments (the deployments serving ``layout=``, ``decoding=`` and ``score=``) register only when a run asks
for one (:func:`register_option_deployments`). Registration order and HELM's default deployments: docs/data.md.
"""

import dataclasses
import functools
import os

import cattrs
import dacite
import yaml
from helm.benchmark import model_deployment_registry as deployments
from helm.benchmark import model_metadata_registry as metadata_registry
from helm.benchmark.model_deployment_registry import (
    ALL_MODEL_DEPLOYMENTS,
    DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT,
    ClientSpec,
    ModelDeployment,
)

from helm_roboreward.config import MODEL_DEPLOYMENTS_FILE, MODEL_METADATA_FILE, config_dir
from helm_roboreward.protocol import rules as protocol
from helm_roboreward.protocol.rules import CHECKPOINT, GREEDY, HELM_GEMINI_CLIENT, ONE_MESSAGE_GEMINI_CLIENT

LOGPROBS_CLIENTS = (protocol.TRANSFORMERS_CLIENT, protocol.OPENAI_VIDEO_CLIENT)
"""The clients that can record the answer's token log-probabilities (their ``top_logprobs`` argument)."""
OPTION_DEPLOYMENT_SUFFIXES = {"layout": "-one-message", "decoding": "-greedy", "score": "-logprobs"}
"""An option deployment's name: its deployment's name, then the suffix of each option it serves, in this order."""


def options_served(client: deployments.ClientSpec) -> dict[str, str]:
    """The options a deployment's client serves, by run-entry argument.

    The deployment is an option deployment, or one the user wrote with such a client.
    """
    served = {"layout": protocol.ONE_MESSAGE} if client.class_name == protocol.ONE_MESSAGE_GEMINI_CLIENT else {}
    if client.class_name in LOGPROBS_CLIENTS:  # greedy and log-probabilities: the package's own clients only
        if client.args.get("decoding") == protocol.GREEDY:
            served["decoding"] = protocol.GREEDY
        if client.args.get("top_logprobs"):
            served["score"] = protocol.EXPECTED
    return served


def register_package_models() -> list[str]:
    """Register the package's models and deployments that HELM does not know yet; returns the names added."""
    added: list[str] = []
    for model in _package_metadata():
        if model.name not in metadata_registry.MODEL_NAME_TO_MODEL_METADATA:
            metadata_registry.register_model_metadata(model)
            added.append(model.name)
    for deployment in _package_deployments():
        if deployment.model_name not in metadata_registry.MODEL_NAME_TO_MODEL_METADATA:
            continue  # a HELM built-in model not loaded yet: HELM would invent placeholder metadata
        if deployment.name not in deployments.DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT:
            register_deployment(deployment)
            added.append(deployment.name)
    keep_helm_defaults()
    return added


def register_deployment(deployment: deployments.ModelDeployment) -> None:
    """Register a deployment with HELM's function, keeping the ``deployment_names`` HELM built for its own models."""
    metadata = metadata_registry.MODEL_NAME_TO_MODEL_METADATA.get(deployment.model_name or "")
    kept = None if metadata is None or metadata.deployment_names is None else list(metadata.deployment_names)
    deployments.register_model_deployment(deployment)
    if metadata is not None and metadata.name not in package_model_names():
        metadata.deployment_names = kept


@functools.lru_cache(maxsize=1)
def _package_metadata() -> tuple[metadata_registry.ModelMetadata, ...]:
    with open(os.path.join(config_dir(), MODEL_METADATA_FILE), encoding="utf-8") as handle:
        return tuple(dacite.from_dict(metadata_registry.ModelMetadataList, yaml.safe_load(handle)).models)


def package_model_names() -> list[str]:
    """The models this package defines (``helm_roboreward/config/model_metadata.yaml``), in file order."""
    return [model.name for model in _package_metadata()]


@functools.lru_cache(maxsize=1)
def _package_deployments() -> list[deployments.ModelDeployment]:
    with open(os.path.join(config_dir(), MODEL_DEPLOYMENTS_FILE), encoding="utf-8") as handle:
        return list(cattrs.structure(yaml.safe_load(handle), deployments.ModelDeployments).model_deployments)


def preferred_deployment(model: str) -> str | None:
    """The package's first registered deployment of ``model`` (a ``roboreward`` run's default), if it has one."""
    for deployment in _package_deployments():
        if deployment.model_name == model and deployment.name in deployments.DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT:
            return deployment.name
    return None


def is_option_deployment(deployment: deployments.ModelDeployment) -> bool:
    """True for a deployment named and configured as an option deployment (``x-greedy`` serving ``decoding=greedy``)."""
    return any(deployment.name.endswith(OPTION_DEPLOYMENT_SUFFIXES[option])
               for option in options_served(deployment.client_spec))


def keep_helm_defaults() -> None:
    """Order the deployments so that no model's default deployment in HELM (the last one registered) changes.

    Option deployments go first, then the package's deployments of models HELM also deploys, then the rest, each in
    its order.
    """
    ours = {deployment.name for deployment in _package_deployments()}
    option_deployments = {d.name for d in deployments.ALL_MODEL_DEPLOYMENTS if is_option_deployment(d)}
    theirs = {d.model_name for d in deployments.ALL_MODEL_DEPLOYMENTS
              if d.name not in ours and d.name not in option_deployments}
    moved = {d.name for d in deployments.ALL_MODEL_DEPLOYMENTS if d.name in ours and d.model_name in theirs}
    # A stable sort: each group keeps its order.
    deployments.ALL_MODEL_DEPLOYMENTS.sort(
        key=lambda d: 0 if d.name in option_deployments else 1 if d.name in moved else 2)


LOGPROBS_TOP_N = 20  # the most OpenAI-compatible servers return (vLLM's default --max-logprobs)


def has_option_deployment(option: str, deployment: ModelDeployment) -> bool:
    """True when ``deployment`` gets an option deployment serving ``option``'s non-default value."""
    client, model = deployment.client_spec, (deployment.model_name or "").lower()
    if option == "layout":
        return client.class_name == HELM_GEMINI_CLIENT and model.startswith("google/gemini")
    if client.class_name not in LOGPROBS_CLIENTS:
        return False
    return not client.args.get("top_logprobs") if option == "score" else client.args.get("decoding") == CHECKPOINT


def option_deployment(option: str, deployment: ModelDeployment) -> ModelDeployment:
    """The option deployment of ``deployment`` serving ``option``'s non-default value."""
    args, class_name = dict(deployment.client_spec.args), deployment.client_spec.class_name
    if option == "layout":
        class_name = ONE_MESSAGE_GEMINI_CLIENT
    elif option == "score":
        args["top_logprobs"] = LOGPROBS_TOP_N
    else:
        args["decoding"] = GREEDY
    return dataclasses.replace(deployment, name=deployment.name + OPTION_DEPLOYMENT_SUFFIXES[option],
                               client_spec=ClientSpec(class_name=class_name, args=args))


def register_option_deployments() -> list[str]:
    """Register the option deployments of every deployment that has them (idempotent); returns the names added."""
    added: list[str] = []
    options = list(OPTION_DEPLOYMENT_SUFFIXES)
    # From the option after the last one served: x -> x-greedy -> x-greedy-logprobs, never x-logprobs-greedy.
    pending = [(d, max((options.index(o) + 1 for o in options_served(d.client_spec)), default=0))
               for d in list(ALL_MODEL_DEPLOYMENTS)]
    while pending:
        deployment, start = pending.pop()
        for index in range(start, len(options)):
            if has_option_deployment(options[index], deployment):
                made = option_deployment(options[index], deployment)
                if made.name not in DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT:
                    register_deployment(made)
                    added.append(made.name)
                    pending.append((made, index + 1))
    if added:
        keep_helm_defaults()
    return added


def deployment_serving(deployment_name: str, options: dict[str, str]) -> str:
    """The deployment serving the options asked for; one its client has no option deployment for changes nothing."""
    register_option_deployments()
    for option in OPTION_DEPLOYMENT_SUFFIXES:
        # None: a deployment HELM generates, which has no option deployments
        deployment = DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT.get(deployment_name)
        if option not in options or deployment is None:
            continue
        if option not in options_served(deployment.client_spec) and has_option_deployment(option, deployment):
            deployment_name += OPTION_DEPLOYMENT_SUFFIXES[option]
    return deployment_name
