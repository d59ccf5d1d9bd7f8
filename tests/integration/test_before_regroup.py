"""A suite written before the package was regrouped into layers still summarizes and reports.

``tests/fixtures/suite_before_regroup/benchmark_output`` holds a small suite helm-run wrote with the previous
layout (suite ``before_regroup``: the constant baseline on the ``sim_kuka`` sample subset, two 32-pixel frames
per video, its frames under ``scenarios/``). HELM stored the class paths of that layout in ``run_spec.json``
(``helm_roboreward.scenario.RoboRewardScenario``, ``helm_roboreward.metrics.RoboRewardMetric``), and the model
deployments name the client classes by path (``helm_roboreward.clients.*``): every such path must still import,
and helm-summarize (our schema, our summarizer, ``--schema-validation error``) and ``roboreward report`` must
work on a copy of the suite and give its numbers.
"""

import csv
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from helm.common.object_spec import get_class_by_name

from helm_roboreward import cli
from tests.helpers.harness import (
    PROD_ENV,
    REPO,
    TIMEOUT,
    check_completed,
    helm_environment,
    helm_summarize_command,
    read_json,
    request_states,
)

FIXTURE = REPO / "tests" / "fixtures" / "suite_before_regroup" / "benchmark_output"
SUITE = "before_regroup"
RUN = "roboreward:subset=sim_kuka,data=sample,video=frames,max_frames=2,max_side=32,model=baseline_constant-3"
RECORDED_MAE = 1.3
"""The suite's MAE as helm-run recorded it: 20 rows of sim_kuka, constant answer 3."""
DEPLOYMENT_FILES = [PROD_ENV / "model_deployments.yaml", REPO / "helm_roboreward" / "config" / "model_deployments.yaml"]


def class_names(value: Any) -> list[str]:
    """Every ``class_name`` in a JSON / YAML value."""
    if isinstance(value, dict):
        found = [str(value["class_name"])] if "class_name" in value else []
        return found + [name for item in value.values() for name in class_names(item)]
    if isinstance(value, list):
        return [name for item in value for name in class_names(item)]
    return []


def run_spec() -> dict[str, Any]:
    return dict(read_json(FIXTURE / "runs" / SUITE / RUN / "run_spec.json"))


def gold_mae() -> float:
    """The constant baseline's MAE from the fixture's own gold scores (frozen with the fixture)."""
    golds = [int(state["instance"]["references"][0]["output"]["text"])
             for state in request_states(FIXTURE / "runs" / SUITE / RUN)]
    return sum(abs(3 - gold) for gold in golds) / len(golds)


@pytest.fixture(scope="module")
def summarized(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the fixture, summarized from its working folder (media paths are relative to it)."""
    workdir = tmp_path_factory.mktemp("before-regroup")
    shutil.copytree(FIXTURE, workdir / "benchmark_output")
    process = subprocess.run(helm_summarize_command(SUITE), cwd=workdir, env=helm_environment(), capture_output=True,
                             text=True, timeout=TIMEOUT)
    check_completed(process, "helm-summarize on the suite written before the regrouping")
    assert "Traceback" not in process.stdout + process.stderr
    return workdir


def test_the_fixture_records_the_previous_class_paths() -> None:
    spec = run_spec()
    assert spec["scenario_spec"]["class_name"] == "helm_roboreward.scenario.RoboRewardScenario"
    assert "helm_roboreward.metrics.RoboRewardMetric" in class_names(spec["metric_specs"])
    assert gold_mae() == pytest.approx(RECORDED_MAE, abs=1e-12)
    stats = {s["name"]["name"]: s["mean"] for s in read_json(FIXTURE / "runs" / SUITE / RUN / "stats.json")
             if s["name"].get("split") == "test" and "perturbation" not in s["name"]}
    assert stats["abs_error"] == pytest.approx(RECORDED_MAE) and stats["num_instances"] == 20


def test_every_class_path_in_the_run_spec_imports() -> None:
    names = class_names(run_spec())
    assert any(name.startswith("helm_roboreward.") for name in names)
    for name in names:
        assert isinstance(get_class_by_name(name), type), name


@pytest.mark.parametrize("path", DEPLOYMENT_FILES, ids=["prod_env", "package config"])
def test_every_client_class_path_of_the_model_deployments_imports(path: Path) -> None:
    deployments = yaml.safe_load(path.read_text(encoding="utf-8"))["model_deployments"]
    names = sorted({name for deployment in deployments for name in class_names(deployment)})
    ours = [name for name in names if name.startswith("helm_roboreward.")]
    assert ours and all(name.startswith("helm_roboreward.clients.") for name in ours), ours  # the stable paths
    for name in names:
        try:
            found = get_class_by_name(name)
        except ImportError as error:  # HELM's own clients may need an optional extra; ours never do
            assert not name.startswith("helm_roboreward."), f"{name}: {error}"
            continue
        assert isinstance(found, type), name


def test_helm_summarize_writes_the_leaderboard_with_the_recorded_numbers(summarized: Path) -> None:
    suite_dir = summarized / "benchmark_output" / "runs" / SUITE
    table = next(t for t in read_json(suite_dir / "groups" / "roboreward_sample.json") if t["name"] == "accuracy")
    header = [cell["value"] for cell in table["header"]]
    (row,) = table["rows"]
    assert row[0]["value"] == "Constant 3 (baseline)"
    (column,) = [i for i, cell in enumerate(table["header"])
                 if cell.get("metadata", {}).get("run_group") == "Sim KUKA (sample)"]
    assert row[column]["value"] == pytest.approx(RECORDED_MAE, abs=1e-12)
    assert row[column]["run_spec_names"] == [RUN]
    assert row[header.index("Mean MAE (macro)")]["value"] == pytest.approx(RECORDED_MAE, abs=1e-12)
    for name in ("schema.json", "summary.json", "runs.json"):
        assert (suite_dir / name).is_file(), name
    assert json.loads((suite_dir / RUN / "display_predictions.json").read_text())  # the predictions page too


def test_roboreward_report_gives_the_recorded_numbers(summarized: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    assert cli.main(["report", "--suite", SUITE, "--output-path", str(summarized / "benchmark_output"), "--out",
                     str(out), "--local-path", str(PROD_ENV), "--resamples", "200"]) == 0
    assert "Traceback" not in capsys.readouterr().err
    with open(out / "leaderboard.csv", newline="", encoding="utf-8") as handle:
        (row,) = list(csv.DictReader(handle))
    assert row["model_id"] == "baseline/constant-3"
    assert float(row["sim_kuka"]) == pytest.approx(RECORDED_MAE, abs=1e-6)
    assert float(row["mean"]) == pytest.approx(RECORDED_MAE, abs=1e-6)
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "# RoboRewardBench report: suite `before_regroup`" in text and "Constant 3 (baseline)" in text
    assert "## Warnings" not in text
