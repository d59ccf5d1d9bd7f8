"""A local copy holding a subset the schema does not know: leaderboard and report never disagree silently.

HELM leaves a run whose group the schema does not define out of every table, so the leaderboard's mean skips that
subset while the report counts it. (a) ``roboreward files --data <dir>`` writes a schema that covers the copy's
subsets; (b) ``roboreward report`` stops (exit 2) when the summarized leaderboard leaves out a subset it would count.

The local copy is built from the bundled sample: ``sim_panda`` copied as ``bridge`` (an official subset id) and
``sim_kuka`` as ``my_robot`` (unknown to the benchmark), with the metadata rewritten.
"""

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from helm.benchmark.presentation.schema import read_schema, validate_schema

from helm_roboreward import cli
from helm_roboreward.helm_frontend.run_rows import ModelRows, SuiteRows
from helm_roboreward.protocol.rules import OFFICIAL_SUBSET_IDS
from helm_roboreward.results.report.coverage import check_leaderboard_coverage
from tests.helpers.harness import (
    PROD_ENV,
    SAMPLE,
    SCHEMA,
    TIMEOUT,
    check_completed,
    helm_environment,
    helm_run_command,
    helm_summarize_command,
    private_local_path,
    read_json,
)
from tests.helpers.sample import constant_mae, sample_rows

pytestmark = pytest.mark.slow  # local copies end to end: helm-run, summarize and report several times

RENAMED = {"sim_panda": "bridge", "sim_kuka": "my_robot"}
STANDARD_SCHEMA = SCHEMA


def build_local_copy(root: Path) -> Path:
    rows = []
    for row in sample_rows():
        subset, name = row["file_name"].split("/", 1)
        if subset in RENAMED:
            rows.append(dict(row, file_name=f"{RENAMED[subset]}/{name}"))
            target = root / "test" / RENAMED[subset] / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(SAMPLE / row["file_name"], target)
    (root / "test" / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return root


def rows_of(subset: str) -> list[dict[str, Any]]:
    original = {new: old for old, new in RENAMED.items()}[subset]
    return [row for row in sample_rows() if row["file_name"].startswith(original + "/")]


@dataclass
class Built:
    workdir: Path
    data: Path

    def copy(self, target: Path) -> Path:
        shutil.copytree(self.workdir / "benchmark_output", target / "benchmark_output", symlinks=True)
        return target


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """helm-run with the constant baseline on both subsets of the local copy (not summarized)."""
    root = tmp_path_factory.mktemp("local-subsets")
    data = build_local_copy(root / "copy")
    workdir = root / "work"
    workdir.mkdir()
    entries = [f"roboreward:subset={subset},data={data},model=baseline/constant-3" for subset in RENAMED.values()]
    process = subprocess.run(helm_run_command(entries, "local", private_local_path(workdir / "local")),
                             cwd=workdir, env=helm_environment(), capture_output=True, text=True, timeout=TIMEOUT)
    check_completed(process, "helm-run")
    return Built(workdir, data)


def summarize(workdir: Path, schema: Path) -> None:
    process = subprocess.run(helm_summarize_command("local", schema=schema), cwd=workdir, env=helm_environment(),
                             capture_output=True, text=True, timeout=TIMEOUT)
    check_completed(process, "helm-summarize")


def report(workdir: Path, out: Path) -> int:
    return cli.main(["report", "--suite", "local", "--output-path", str(workdir / "benchmark_output"), "--out",
                     str(out), "--local-path", str(PROD_ENV), "--resamples", "50"])


def suite_dir(workdir: Path) -> Path:
    return workdir / "benchmark_output" / "runs" / "local"


def runs(workdir: Path) -> dict[str, str]:
    return {path.name.split(",", 1)[0].split("=", 1)[1]: path.name for path in suite_dir(workdir).iterdir()
            if path.name.startswith("roboreward:")}


# ----------------------------------------------------------------------------- (a) roboreward files --data


def test_files_with_data_writes_a_schema_covering_the_local_subsets(built: Built, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["files", "--out", str(tmp_path), "--data", str(built.data)]) == 0
    out = capsys.readouterr().out
    assert "the schema also covers 1 subset(s) of the local copy: my_robot" in out
    path = tmp_path / "static" / "schema_roboreward.yaml"
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    groups = {group["name"]: group for group in raw["run_groups"]}
    parent = groups["roboreward"]["subgroups"]
    assert parent == [f"roboreward_{subset}" for subset in OFFICIAL_SUBSET_IDS] + ["roboreward_my_robot"]
    mine = groups["roboreward_my_robot"]
    assert mine["display_name"] == "my_robot" and "(Unknown)" in mine["description"]
    names = [group["name"] for group in raw["run_groups"]]
    assert names.index("roboreward_my_robot") == names.index("roboreward_viola") + 1  # after the official ones
    metrics = {metric["name"] for metric in raw["metrics"]}
    assert {"mae_subset_my_robot", "mae_robot_unknown"} <= metrics
    assert validate_schema(read_schema(str(path)), schema_path=str(path), strict=True) == []
    # The standard schema stays what the repository holds: only --data adds groups.
    assert cli.main(["files", "--out", str(tmp_path / "plain")]) == 0
    assert (tmp_path / "plain" / "static" / "schema_roboreward.yaml").read_text() == STANDARD_SCHEMA.read_text()


def test_files_with_data_refuses_a_folder_that_is_not_a_local_copy(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["files", "--out", str(tmp_path / "out"), "--data", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "--data" in err and "not a folder" in err and "Traceback" not in err
    (tmp_path / "bad" / "test").mkdir(parents=True)
    (tmp_path / "bad" / "test" / "metadata.jsonl").write_text('{"file_name": "x/a.mp4", "task": "t"}\n')
    assert cli.main(["files", "--out", str(tmp_path / "out"), "--data", str(tmp_path / "bad")]) == 2
    assert "line 1, field 'reward': missing" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # nothing written


# ----------------------------------------------------------------------------- (b) roboreward report


def test_report_stops_when_the_leaderboard_leaves_out_a_subset(built: Built, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    work = built.copy(tmp_path / "work")
    summarize(work, STANDARD_SCHEMA)
    tables = read_json(suite_dir(work) / "groups" / "roboreward.json")
    assert "my_robot" not in json.dumps(tables)  # HELM skipped the run: its group is not in the schema
    assert report(work, tmp_path / "report") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("roboreward report: ") and "\n" not in err and "Traceback" not in err
    assert "subset(s) my_robot" in err and runs(work)["my_robot"] in err
    assert "roboreward files --data" in err and "--force" in err and "helm-summarize again" in err
    assert "bridge" not in err.split("(runs")[0].split("subset(s)")[1]  # only the uncovered subset is named
    assert not (tmp_path / "report").exists()  # stopped before writing anything


def test_report_proceeds_on_a_suite_that_was_never_summarized(built: Built, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    work = built.copy(tmp_path / "work")
    assert report(work, tmp_path / "report") == 0
    err = capsys.readouterr().err
    assert "has not been summarized" in err and "no leaderboard to compare with" in err
    assert "has not been summarized" in (tmp_path / "report" / "report.md").read_text()


def test_with_the_covering_schema_leaderboard_and_report_agree(built: Built, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    work = built.copy(tmp_path / "work")
    assert cli.main(["files", "--out", str(work), "--data", str(built.data)]) == 0
    summarize(work, work / "static" / "schema_roboreward.yaml")
    tables = read_json(suite_dir(work) / "groups" / "roboreward.json")
    table = next(t for t in tables if t["name"] == "accuracy")
    header = [cell["value"] for cell in table["header"]]
    (row,) = table["rows"]
    mean = row[header.index("Mean MAE (macro)")]["value"]
    expected = (constant_mae(rows_of("bridge")) + constant_mae(rows_of("my_robot"))) / 2
    assert mean == pytest.approx(expected, abs=1e-12)
    assert any("my_robot" in value for value in header)
    capsys.readouterr()
    assert report(work, tmp_path / "report") == 0
    leaderboard = (tmp_path / "report" / "leaderboard.csv").read_text().splitlines()
    assert float(leaderboard[1].split(",")[1]) == pytest.approx(mean, abs=1e-6)


def test_report_stops_when_a_run_finished_after_the_last_summarize(built: Built, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    work = built.copy(tmp_path / "work")
    assert cli.main(["files", "--out", str(work), "--data", str(built.data)]) == 0
    late = suite_dir(work) / runs(work)["my_robot"]
    parked = tmp_path / "parked"
    shutil.move(str(late), parked)
    summarize(work, work / "static" / "schema_roboreward.yaml")
    shutil.move(str(parked), late)
    capsys.readouterr()
    assert report(work, tmp_path / "report") == 2
    err = capsys.readouterr().err
    assert "subset(s) my_robot come from runs the leaderboard does not hold yet" in err
    assert late.name in err and "helm-summarize again" in err


def test_subsets_on_different_leaderboards_are_noted(tmp_path: Path) -> None:
    suite = tmp_path / "runs" / "s"
    (suite / "groups").mkdir(parents=True)
    schema = {"run_groups": [{"name": "roboreward", "subgroups": ["roboreward_bridge"]},
                             {"name": "roboreward_sample", "subgroups": ["roboreward_sim_panda"]}]}
    (suite / "schema.json").write_text(json.dumps(schema))
    for group, run in (("roboreward", "r-bridge"), ("roboreward_sample", "r-panda")):
        table = {"name": "accuracy", "rows": [[{"value": "m"}, {"value": 1.0, "run_spec_names": [run]}]]}
        (suite / "groups" / f"{group}.json").write_text(json.dumps([table]))
    rows = SuiteRows("s", [ModelRows("m", "Model M", [], {"bridge": "r-bridge", "sim_panda": "r-panda"})])
    (note,) = check_leaderboard_coverage(rows, str(suite))
    assert "Model M: its subsets are on 2 different leaderboards" in note and "separate suites" in note
