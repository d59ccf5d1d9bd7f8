"""Registering the package's model metadata and deployments with HELM, without duplicates."""

import dataclasses
import fnmatch
import functools
import os
from importlib import resources
from typing import List, Optional

import cattrs
import dacite
import yaml
from helm.benchmark.model_deployment_registry import (
    ALL_MODEL_DEPLOYMENTS,
    DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT,
    ClientSpec,
    ModelDeployment,
    ModelDeployments,
    get_default_model_deployment_for_model,
    register_model_deployment,
)
from helm.benchmark.model_metadata_registry import (
    MODEL_NAME_TO_MODEL_METADATA,
    ModelMetadataList,
    register_model_metadata,
)

MODEL_METADATA_FILE = "model_metadata.yaml"
MODEL_DEPLOYMENTS_FILE = "model_deployments.yaml"

HELM_GEMINI_CLIENT = "helm.clients.google_genai_client.GoogleGenAIClient"
ONE_MESSAGE_GEMINI_CLIENT = "helm_roboreward.clients.gemini_client.OneMessageGoogleGenAIClient"
GEMINI_TWIN_SUFFIX = "-one-message"
"""``google/gemini-2.5-pro`` -> ``google/gemini-2.5-pro-one-message`` (same host, so the same credentials)."""


def config_dir() -> str:
    """The folder of the package's HELM configuration files (what ``prod_env/`` links to)."""
    return str(resources.files("helm_roboreward") / "config")


def register_package_models() -> List[str]:
    """Register the package's models and deployments that HELM does not know yet.

    HELM registers ``--local-path`` configuration before it imports plugins; registering the same
    model twice would list it twice under ``model=vlm``, so known names are skipped.

    Returns:
        The names newly registered (models and deployments).
    """
    added: List[str] = []
    with open(os.path.join(config_dir(), MODEL_METADATA_FILE), encoding="utf-8") as handle:
        metadata = dacite.from_dict(ModelMetadataList, yaml.safe_load(handle))
    for model in metadata.models:
        if model.name not in MODEL_NAME_TO_MODEL_METADATA:
            register_model_metadata(model)
            added.append(model.name)
    for deployment in _package_deployments():
        if deployment.model_name not in MODEL_NAME_TO_MODEL_METADATA:
            # A HELM built-in model whose metadata is not loaded yet (HELM would invent placeholder metadata
            # and list the model twice later); helm-run always loads the built-ins before plugins.
            continue
        if deployment.name not in DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT:
            register_model_deployment(deployment)
            added.append(deployment.name)
    added += register_gemini_twins()
    keep_helm_defaults()
    return added


def register_gemini_twins() -> List[str]:
    """Register a one-message twin of every Gemini deployment on HELM's ``GoogleGenAIClient``.

    The twin has the same model, settings and credentials, on the package's one-message client.
    ``roboreward`` runs use the twin of the model's default deployment (PROTOCOL section 3: one user
    message); HELM's deployment stays the default everywhere else and can be named explicitly.

    Returns:
        The names added.
    """
    added: List[str] = []
    for deployment in list(ALL_MODEL_DEPLOYMENTS):
        if deployment.client_spec.class_name != HELM_GEMINI_CLIENT or not _is_gemini(deployment.model_name or ""):
            continue
        name = deployment.name + GEMINI_TWIN_SUFFIX
        if name not in DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT:
            client_spec = ClientSpec(class_name=ONE_MESSAGE_GEMINI_CLIENT, args=dict(deployment.client_spec.args))
            register_model_deployment(dataclasses.replace(deployment, name=name, client_spec=client_spec))
            added.append(name)
    return added


def _is_gemini(model: str) -> bool:
    return fnmatch.fnmatchcase(model.lower(), "google/gemini*")


@functools.lru_cache(maxsize=1)
def _package_deployments() -> List[ModelDeployment]:
    with open(os.path.join(config_dir(), MODEL_DEPLOYMENTS_FILE), encoding="utf-8") as handle:
        return list(cattrs.structure(yaml.safe_load(handle), ModelDeployments).model_deployments)


def preferred_deployment(model: str) -> Optional[str]:
    """The package's deployment a ``roboreward`` run of ``model`` uses by default, if it has one.

    Gemini: the one-message twin of the model's default deployment. Other models HELM also deploys
    (Qwen2.5-VL on local transformers, Llama 4 on Together/Vertex): the package's vLLM deployment (the
    official setup served open models itself). HELM's own default stays untouched for every other
    benchmark (:func:`keep_helm_defaults`).
    """
    if _is_gemini(model):
        default = get_default_model_deployment_for_model(model)
        if default:
            # Package-only Gemini models (no HELM deployment to sort before) have their twin as the default.
            twin = default if default.endswith(GEMINI_TWIN_SUFFIX) else default + GEMINI_TWIN_SUFFIX
            if twin in DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT:
                return twin
    for deployment in _package_deployments():
        if deployment.model_name == model and deployment.name in DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT:
            return deployment.name
    return None


def keep_helm_defaults() -> None:
    """Put the package's deployments before HELM's own ones for the same model.

    HELM's default deployment for a model is the last one registered; the package's (registered by this
    plugin or through ``--local-path prod_env``) would otherwise replace it for every benchmark that runs
    the model. Their relative order is otherwise kept.
    """
    ours = {deployment.name for deployment in _package_deployments()}
    ours |= {d.name for d in ALL_MODEL_DEPLOYMENTS if d.client_spec.class_name == ONE_MESSAGE_GEMINI_CLIENT}
    theirs = {deployment.model_name for deployment in ALL_MODEL_DEPLOYMENTS if deployment.name not in ours}
    moved = [d for d in ALL_MODEL_DEPLOYMENTS if d.name in ours and d.model_name in theirs]
    if moved:
        ALL_MODEL_DEPLOYMENTS[:] = moved + [d for d in ALL_MODEL_DEPLOYMENTS if d.name not in ours
                                            or d.model_name not in theirs]
