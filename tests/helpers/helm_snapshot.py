"""What HELM builds for other benchmarks' run entries, taken in a fresh interpreter with or without this plugin.

Run as ``python -m tests.helpers.helm_snapshot plugin|stock ENTRY...``: it registers HELM's built-in configuration,
then (``plugin``) loads the ``helm`` entry points exactly as ``helm-run`` does (``helm.benchmark.run``,
``load_entry_point_plugins``), then prints one JSON object: every entry's run specs (as HELM serializes them to
``run_spec.json``), HELM's run expander classes, and for every model HELM ships its metadata and default deployment,
and for every deployment HELM ships its client settings. A ``stock`` and a ``plugin`` snapshot must be equal on
everything HELM ships (tests/official/test_good_guest.py).
"""

import dataclasses
import json
import sys
from typing import Any


def snapshot(with_plugin: bool, entries: list[str]) -> dict[str, Any]:
    from helm.benchmark.config_registry import register_builtin_configs_from_helm_package
    from helm.benchmark.model_deployment_registry import ALL_MODEL_DEPLOYMENTS, get_default_model_deployment_for_model
    from helm.benchmark.model_metadata_registry import ALL_MODELS_METADATA
    from helm.benchmark.presentation.run_entry import RunEntry
    from helm.benchmark.run import load_entry_point_plugins, run_entries_to_run_specs
    from helm.benchmark.run_expander import RUN_EXPANDERS
    from helm.common.general import asdict_without_nones

    register_builtin_configs_from_helm_package()
    helm_models = [dataclasses.asdict(model) for model in ALL_MODELS_METADATA]
    helm_deployments = {deployment.name: dataclasses.asdict(deployment) for deployment in ALL_MODEL_DEPLOYMENTS}
    if with_plugin:
        load_entry_point_plugins()
    runs: dict[str, Any] = {}
    for entry in entries:
        specs = run_entries_to_run_specs([RunEntry(description=entry, priority=1, groups=None)])
        runs[entry] = [asdict_without_nones(spec) for spec in specs]
    names = {model["name"] for model in helm_models}
    return {
        "runs": runs,
        "expanders": {key: f"{value.__module__}.{value.__qualname__}" for key, value in RUN_EXPANDERS.items()},
        "models": {model.name: dataclasses.asdict(model) for model in ALL_MODELS_METADATA if model.name in names},
        "helm_models_at_load": {model["name"]: model for model in helm_models},
        "default_deployments": {name: get_default_model_deployment_for_model(name) for name in sorted(names)},
        "deployments": {deployment.name: dataclasses.asdict(deployment) for deployment in ALL_MODEL_DEPLOYMENTS
                        if deployment.name in helm_deployments},
    }


if __name__ == "__main__":
    mode, *run_entries = sys.argv[1:]
    json.dump(snapshot(mode == "plugin", run_entries), sys.stdout, default=str, sort_keys=True)
