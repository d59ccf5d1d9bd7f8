"""HELM's model registries loaded as ``helm-run`` loads them, for the ``roboreward`` commands that need them.

``helm-run`` (``helm/benchmark/run.py``, ``helm_run``) registers HELM's built-in configuration, then the
``--local-path`` folder's YAML files, then imports the entry-point plugins (this package's registers its models and
deployments); the commands also register every option twin. Registering twice would list models twice, so this
happens once per process.
"""

import os

from helm.benchmark.config_registry import register_builtin_configs_from_helm_package, register_configs_from_directory

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
    import helm_roboreward.plugin  # noqa: F401  (registers the package's models, as helm-run does)
    from helm_roboreward.models.registry import register_package_models
    from helm_roboreward.models.variants import register_variant_twins

    # The plugin registers on its first import only; calling again covers a process that imported it before
    # the local path's models were registered (both calls add only what is missing).
    register_package_models()
    register_variant_twins()
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
