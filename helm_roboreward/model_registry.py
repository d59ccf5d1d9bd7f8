"""Registering the package's model metadata and deployments with HELM, without duplicates."""

import functools
import os
from importlib import resources
from typing import Dict, List

import cattrs
import dacite
import yaml
from helm.benchmark.model_deployment_registry import (
    ALL_MODEL_DEPLOYMENTS,
    DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT,
    ModelDeployment,
    ModelDeployments,
    register_model_deployment,
)
from helm.benchmark.model_metadata_registry import (
    MODEL_NAME_TO_MODEL_METADATA,
    ModelMetadataList,
    register_model_metadata,
)

MODEL_METADATA_FILE = "model_metadata.yaml"
MODEL_DEPLOYMENTS_FILE = "model_deployments.yaml"


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
    keep_helm_defaults()
    return added


@functools.lru_cache(maxsize=1)
def _package_deployments() -> List[ModelDeployment]:
    with open(os.path.join(config_dir(), MODEL_DEPLOYMENTS_FILE), encoding="utf-8") as handle:
        return list(cattrs.structure(yaml.safe_load(handle), ModelDeployments).model_deployments)


def preferred_deployments() -> Dict[str, str]:
    """``model name -> deployment name``: the package's deployment a ``roboreward`` run uses by default.

    For models HELM also deploys (Qwen2.5-VL on local transformers, Llama 4 on Together/Vertex), the
    benchmark's runs use the package's vLLM deployment (the official setup served open models itself);
    HELM's own default stays untouched for every other benchmark (:func:`keep_helm_defaults`).
    """
    preferred: Dict[str, str] = {}
    for deployment in _package_deployments():
        if deployment.model_name and deployment.name in DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT:  # registered
            preferred.setdefault(deployment.model_name, deployment.name)
    return preferred


def keep_helm_defaults() -> None:
    """Put the package's deployments before HELM's own ones for the same model.

    HELM's default deployment for a model is the last one registered; the package's (registered by this
    plugin or through ``--local-path prod_env``) would otherwise replace it for every benchmark that runs
    the model. Their relative order is otherwise kept.
    """
    ours = {deployment.name for deployment in _package_deployments()}
    theirs = {deployment.model_name for deployment in ALL_MODEL_DEPLOYMENTS if deployment.name not in ours}
    moved = [d for d in ALL_MODEL_DEPLOYMENTS if d.name in ours and d.model_name in theirs]
    if moved:
        ALL_MODEL_DEPLOYMENTS[:] = moved + [d for d in ALL_MODEL_DEPLOYMENTS if d not in moved]
