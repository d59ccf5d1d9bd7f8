"""The package's shape: layers that import only downward, no import cycle, and HELM's recorded class paths.

The picture is docs/development.md's. Each package sits on a layer and imports only its own layer's package or
lower ones; siblings on one layer import neither each other. ``protocol``, ``results`` and ``robot_data`` import no
HELM, not even transitively (checked in a fresh interpreter per module). The class paths HELM records in
``run_spec.json`` and the deployments, and the plugin's entry point, are frozen: results files name them.
"""

import configparser
import importlib
import json
import pkgutil
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import helm_roboreward
from tests.helpers.import_graph import PACKAGE, read_graph

ROOT = Path(helm_roboreward.__file__).parent.parent
LAYERS = {
    "config": 0,
    "protocol": 1,
    "helm_frontend": 2,
    "reward": 3, "results": 3, "model_tools": 3,
    "robot_data": 4, "rl_rewards": 4, "inspect_frontend": 4,
    "cli": 5,
}
"""Each package's layer: a module imports modules of its own package or of a lower layer only."""

RECORDED_CLASS_PATHS = (
    "helm_roboreward.helm_frontend.scenario.RoboRewardScenario",
    "helm_roboreward.helm_frontend.metrics.RoboRewardMetric",
    "helm_roboreward.helm_frontend.summarizer.RoboRewardSummarizer",
    "helm_roboreward.helm_frontend.clients.baselines.ConstantScoreClient",
    "helm_roboreward.helm_frontend.clients.baselines.RandomScoreClient",
    "helm_roboreward.helm_frontend.clients.openai_video_client.OpenAIVideoClient",
    "helm_roboreward.helm_frontend.clients.transformers_client.TransformersQwen3VLClient",
    "helm_roboreward.helm_frontend.clients.gemini_client.OneMessageGoogleGenAIClient",
)
"""Frozen since 0.1.0: HELM writes these into run_spec.json and reads them back (helm-summarize, reruns)."""

PLUGIN_ENTRY_POINT = "roboreward = helm_roboreward.helm_frontend.plugin"
HELM_FREE = ("protocol", "results", "robot_data", "rl_rewards", "config")
MAX_DEFERRED_IMPORTS = 25
MAX_SMALL_MODULES = 5  # modules under 40 lines, __init__.py files aside


def layer_of(module: str) -> tuple[str, int]:
    parts = module.split(".")
    if len(parts) == 1:
        return PACKAGE, -1  # the package's face: re-exports and the lazy RewardModel
    return parts[1], LAYERS[parts[1]]


@pytest.fixture(scope="module")
def graph():
    return read_graph(ROOT)


def test_every_package_has_a_layer(graph) -> None:
    unplaced = {module.split(".")[1] for module in graph.files if "." in module} - set(LAYERS) - {"sample"}
    assert unplaced == set(), f"give these packages a layer in LAYERS and in docs/development.md: {unplaced}"


def test_imports_run_only_downward(graph) -> None:
    wrong = []
    for importer, imported in sorted(graph.edges):
        (package, layer), (target_package, target_layer) = layer_of(importer), layer_of(imported)
        if layer < 0 or package == target_package:
            continue
        if target_layer >= layer:
            wrong.append(f"{importer} -> {imported}")
    assert wrong == []


def test_no_import_cycle(graph) -> None:
    assert graph.cycles() == []


def test_the_probe_sees_cycles_and_deferred_imports(tmp_path) -> None:
    """The graph reader is not vacuous: a cycle through an import inside a function is found."""
    package = tmp_path / PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from helm_roboreward.b import x\n")
    (package / "b.py").write_text("x = 1\n\ndef f():\n    from helm_roboreward import a\n")
    made = read_graph(tmp_path)
    assert made.cycles() == [["helm_roboreward.a", "helm_roboreward.b"]]
    assert made.deferred == [("helm_roboreward.b", "helm_roboreward.a", 4)]


def test_few_deferred_imports(graph) -> None:
    """Imports inside functions: CLI commands' modules and optional heavy dependencies only."""
    listed = [f"{importer} -> {imported} (line {line})" for importer, imported, line in graph.deferred]
    assert len(listed) <= MAX_DEFERRED_IMPORTS, "\n".join(listed)


def test_modules_are_units_of_meaning(graph) -> None:
    small = [module for module, path in graph.files.items()
             if path.name != "__init__.py" and len(path.read_text(encoding="utf-8").splitlines()) < 40]
    assert len(small) <= MAX_SMALL_MODULES, small
    names: dict[str, list[str]] = {}
    for module, path in graph.files.items():
        if path.name != "__init__.py":
            names.setdefault(path.name, []).append(module)
    assert {name: modules for name, modules in names.items() if len(modules) > 1} == {}


@pytest.mark.parametrize("path", RECORDED_CLASS_PATHS)
def test_recorded_class_paths_resolve(path: str) -> None:
    module, _, name = path.rpartition(".")
    assert isinstance(getattr(importlib.import_module(module), name), type)


def test_recorded_class_paths_are_the_ones_the_package_writes() -> None:
    from helm_roboreward.protocol import rules

    written = {rules.SCENARIO_CLASS, rules.OPENAI_VIDEO_CLIENT, rules.TRANSFORMERS_CLIENT,
               rules.ONE_MESSAGE_GEMINI_CLIENT}
    assert written <= set(RECORDED_CLASS_PATHS)
    deployments = (ROOT / PACKAGE / "config" / "model_deployments.yaml").read_text(encoding="utf-8")
    named = {line.split("class_name:")[1].strip().strip('"') for line in deployments.splitlines()
             if "class_name:" in line and PACKAGE in line}
    assert named and named <= set(RECORDED_CLASS_PATHS)
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    assert config["options.entry_points"]["helm"].strip() == PLUGIN_ENTRY_POINT


PROBE = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
print(json.dumps(sorted(name for name in sys.modules if name == "helm" or name.startswith("helm."))))
"""


def helm_free_modules() -> list[str]:
    modules = [PACKAGE]
    for package in HELM_FREE:
        modules.append(f"{PACKAGE}.{package}")
        path = str(ROOT / PACKAGE / package)
        modules += [info.name for info in pkgutil.walk_packages([path], f"{PACKAGE}.{package}.")]
    return modules


def helm_modules_after_importing(module: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, module], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"importing {module} failed:\n{done.stderr[-2000:]}"
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_helm_free_packages_import_no_helm() -> None:
    modules = helm_free_modules()
    assert f"{PACKAGE}.protocol.rules" in modules and f"{PACKAGE}.results.report.writer" in modules
    with ThreadPoolExecutor(max_workers=4) as pool:
        loaded = dict(zip(modules, pool.map(helm_modules_after_importing, modules), strict=True))
    assert {module: found[:3] for module, found in loaded.items() if found} == {}


@pytest.mark.parametrize("module", ["helm_roboreward.helm_frontend.metrics", "helm_roboreward.helm_frontend.scenario"])
def test_the_probe_sees_helm_where_it_is(module: str) -> None:
    assert helm_modules_after_importing(module)


def test_the_wheel_builds_without_warnings_and_holds_the_sample(tmp_path: Path) -> None:
    """Issue 36, B6: an install printed five setuptools "Package would be ignored" warnings (one per sample folder)."""
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-cache-dir",
                            "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    assert "would be ignored" not in built.stdout + built.stderr
    (wheel,) = tmp_path.glob("helm_roboreward-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    sample = [name for name in names if name.startswith("helm_roboreward/sample/test/") and name.endswith(".mp4")]
    assert len(sample) == len(list((ROOT / "helm_roboreward/sample/test").glob("*/*.mp4"))) > 0
    assert "helm_roboreward/config/model_deployments.yaml" in names
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]
