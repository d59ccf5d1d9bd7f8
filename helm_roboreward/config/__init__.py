"""The package's HELM configuration files, a package only so that presentation code finds them without HELM."""

import os

MODEL_METADATA_FILE = "model_metadata.yaml"
MODEL_DEPLOYMENTS_FILE = "model_deployments.yaml"


def config_dir() -> str:
    """The folder holding ``model_metadata.yaml`` and ``model_deployments.yaml``."""
    return os.path.dirname(os.path.abspath(__file__))

