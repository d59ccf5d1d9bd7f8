"""Registering the package's model metadata and deployments with HELM, without duplicates."""

import os
from importlib import resources
from typing import List

import cattrs
import dacite
import yaml
from helm.benchmark.model_deployment_registry import (
    DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT,
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
    with open(os.path.join(config_dir(), MODEL_DEPLOYMENTS_FILE), encoding="utf-8") as handle:
        deployments = cattrs.structure(yaml.safe_load(handle), ModelDeployments)
    for deployment in deployments.model_deployments:
        if deployment.model_name not in MODEL_NAME_TO_MODEL_METADATA:
            # A HELM built-in model whose metadata is not loaded yet (HELM would invent placeholder metadata
            # and list the model twice later); helm-run always loads the built-ins before plugins.
            continue
        if deployment.name not in DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT:
            register_model_deployment(deployment)
            added.append(deployment.name)
    return added
