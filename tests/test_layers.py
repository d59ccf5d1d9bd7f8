"""The package's layers: core, data, media, presentation and robot_data import no HELM, not even transitively.

ruff's banned-api rule (pyproject.toml, TID251) stops a direct ``import helm`` in them; this test catches the
indirect ones: each module of those layers is imported in a fresh interpreter, which must end with no ``helm``
module loaded. The modules HELM names (``helm_roboreward.scenario``, ``metrics``, ``run_specs``, ``plugin``,
``summarizer``, ``clients``), ``routing``, ``expected_scores``, ``models`` and the CLI may import HELM.
"""

import json
import pkgutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import helm_roboreward

HELM_FREE_LAYERS = ("core", "data", "media", "presentation", "config", "robot_data")
PACKAGE = Path(helm_roboreward.__file__).parent

PROBE = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
print(json.dumps(sorted(name for name in sys.modules if name == "helm" or name.startswith("helm."))))
"""


def helm_free_modules() -> list[str]:
    modules = ["helm_roboreward"]
    for layer in HELM_FREE_LAYERS:
        modules.append(f"helm_roboreward.{layer}")
        modules += [info.name for info in pkgutil.walk_packages([str(PACKAGE / layer)], f"helm_roboreward.{layer}.")]
    return modules


def helm_modules_after_importing(module: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, module], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"importing {module} failed:\n{done.stderr[-2000:]}"
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_every_layer_module_is_found() -> None:
    modules = helm_free_modules()
    assert "helm_roboreward.core.stats" in modules and "helm_roboreward.media.preparation" in modules
    assert "helm_roboreward.presentation.report.loading" in modules and len(modules) > 25


def test_core_data_media_and_presentation_import_no_helm() -> None:
    modules = helm_free_modules()
    with ThreadPoolExecutor(max_workers=4) as pool:
        loaded = dict(zip(modules, pool.map(helm_modules_after_importing, modules), strict=True))
    offenders = {module: found[:3] for module, found in loaded.items() if found}
    assert offenders == {}, f"these modules pull in HELM: {offenders}"


@pytest.mark.parametrize("module", ["helm_roboreward.metrics", "helm_roboreward.scenario"])
def test_the_probe_sees_helm_where_it_is(module: str) -> None:
    """The probe is not vacuous: the HELM layer and the stable paths do load HELM."""
    assert "helm" in helm_modules_after_importing(module)
