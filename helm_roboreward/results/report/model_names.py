"""Display names of models, from HELM's model metadata YAML files (built-in, this package's, ``--local-path``)."""

import os

import yaml

from helm_roboreward.config import MODEL_METADATA_FILE, config_dir


def helm_builtin_file(name: str) -> str:
    """A file of HELM's own ``helm/config`` folder, located without importing HELM ('' when HELM is absent)."""
    from importlib import metadata

    try:
        return str(metadata.distribution("crfm-helm").locate_file(f"helm/config/{name}"))
    except metadata.PackageNotFoundError:
        return ""


def _metadata_files(local_path: str) -> list[str]:
    """Files in increasing precedence: HELM's built-in list, this package's, then the local path's."""
    files = [helm_builtin_file(MODEL_METADATA_FILE), os.path.join(config_dir(), MODEL_METADATA_FILE),
             os.path.join(local_path, MODEL_METADATA_FILE)]
    return [path for path in files if path]


def _names_in(path: str) -> dict[str, str]:
    """``name -> display_name`` of one metadata file; an absent or unreadable file gives nothing."""
    try:
        with open(path, encoding="utf-8") as handle:
            loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
            content = yaml.load(handle, Loader=loader)  # a safe loader (C version when built)
    except (OSError, yaml.YAMLError):
        return {}
    models = content.get("models") if isinstance(content, dict) else None
    names: dict[str, str] = {}
    for model in models if isinstance(models, list) else []:
        if isinstance(model, dict) and model.get("name") and model.get("display_name"):
            names[str(model["name"])] = str(model["display_name"])
    return names


def model_display_names(local_path: str) -> dict[str, str]:
    """Display names of every model HELM would know with ``--local-path local_path``.

    Args:
        local_path: HELM's ``--local-path`` folder (``prod_env`` by default); it may not exist.

    Returns:
        ``model name -> display name``; the local path's entries win over the package's and HELM's.
    """
    names: dict[str, str] = {}
    for path in _metadata_files(local_path):
        names.update(_names_in(path))
    return names
