"""The HELM plugin entry point (group ``helm``): registers the ``roboreward`` run spec and the package's models.

It only adds: HELM's run expanders are untouched, the package's models join none of HELM's model groups (their
``UNSUPPORTED_MODEL_TAG``) and never become a default deployment (tests/official/test_good_guest.py).
:func:`load_registries` loads HELM's registries as ``helm-run`` does, for the ``roboreward`` commands.
"""

import os

from helm.benchmark.config_registry import register_builtin_configs_from_helm_package, register_configs_from_directory

import helm_roboreward.helm_frontend.run_specs  # noqa: F401  (registers the roboreward run spec function)
from helm_roboreward.helm_frontend.model_registry import register_option_deployments, register_package_models

register_package_models()


_LOADED: list[str] = []


def load_registries(local_path: str) -> None:
    """Register HELM's built-ins, ``local_path``'s YAML files, then this plugin (once per process).

    Raises:
        ValueError: ``local_path`` is a file or a link to no folder, the registries were already loaded from
            another ``--local-path`` in this process, or a YAML file under ``local_path`` cannot be read (the
            message names it).
    """
    require_local_path_folder(local_path)
    folder = os.path.abspath(local_path)
    if _LOADED:
        if _LOADED[0] != folder:
            raise ValueError(f"HELM's registries are already loaded from --local-path {_LOADED[0]}; one folder "
                             "per process")
        return
    register_builtin_configs_from_helm_package()
    if os.path.isdir(folder):
        try:
            register_configs_from_directory(folder)
        except Exception as error:  # HELM raises whatever its YAML and dataclass loaders raise
            raise ValueError(
                f"--local-path {local_path}: HELM cannot load its model_metadata.yaml / model_deployments.yaml "
                f"({type(error).__name__}: {error}). Fix the file (HELM's own YAML format) or pass another "
                "--local-path."
            ) from None

    # The plugin registers on its first import only; calling again covers a process that imported it before
    # the local path's models were registered (both calls add only what is missing).
    register_package_models()
    register_option_deployments()
    _LOADED.append(folder)


def require_local_path_folder(local_path: str) -> None:
    """Refuse a ``--local-path`` that is a file or a link to no folder (helm-run would silently load nothing there).

    A path that does not exist is fine: it holds no models (the default ``prod_env`` outside a checkout).
    """
    if not os.path.lexists(local_path) or os.path.isdir(local_path):
        return
    if os.path.islink(local_path):
        target = os.path.realpath(local_path)
        what = "which does not exist" if not os.path.lexists(target) else "a file, not a folder"
        raise ValueError(f"--local-path {local_path} is a link to {target}, {what}; give the folder that holds "
                         "model_metadata.yaml / model_deployments.yaml (helm-run's --local-path)")
    raise ValueError(f"--local-path {local_path} is a file, not a folder; give the folder that holds "
                     "model_metadata.yaml / model_deployments.yaml (helm-run's --local-path)")
