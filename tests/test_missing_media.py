"""helm-summarize when media files a run points to are gone: the leaderboard is still written.

HELM rebuilds every request's ``MediaObject`` for the predictions pages (``write_run_display_json`` ->
``from_json(ScenarioState)``), and ``MediaObject`` asserts that a local file exists. One deleted cached frame, or
a copy of ``runs/`` without ``scenarios/``, then stops plain helm-summarize before any leaderboard table is
written. ``RoboRewardSummarizer`` skips the affected runs' predictions pages with one log line naming a missing
file and the fix, and writes everything else.
"""

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helm_harness import PROD_ENV, REPO, TIMEOUT, check_completed, cli, read_json, rows_of
from tests.test_end_to_end import environment, private_local_path

SCHEMA = REPO / "static" / "schema_roboreward.yaml"
SUBSETS = {"sim_arena": "Sim Arena (sample)", "sim_panda": "Sim Panda (sample)", "sim_kuka": "Sim KUKA (sample)"}
SUMMARIZER = "helm_roboreward.summarizer.RoboRewardSummarizer"
FIX = "copy scenarios/ too"


def run_name(subset: str) -> str:
    return f"roboreward:subset={subset},data=sample,video=frames,model=baseline_constant-3"


def constant_mae(subset: str) -> float:
    rows = rows_of(subset)
    return sum(abs(3 - row["reward"]) for row in rows) / len(rows)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working folder where helm-run ran the constant baseline on every sample subset."""
    workdir = tmp_path_factory.mktemp("missing-media")
    entries = [f"roboreward:subset={subset},data=sample,model=baseline/constant-3" for subset in SUBSETS]
    process = subprocess.run(
        [cli("helm-run"), "-r", *entries, "--suite", "test", "-m", "100", "--local-path",
         str(private_local_path(workdir / "local")), "-o", "benchmark_output"],
        cwd=workdir, env=environment(), capture_output=True, text=True, timeout=TIMEOUT)
    check_completed(process, "helm-run")
    return workdir


@dataclass
class Damaged:
    workdir: Path
    missing: list[str]
    """Recorded locations (relative to workdir) of the deleted files."""
    affected: list[str]
    """Runs whose media include a deleted file."""


def media_of(run_dir: Path) -> list[str]:
    states = read_json(run_dir / "scenario_state.json")["request_states"]
    return [m["location"] for s in states for m in s["request"]["multimodal_prompt"]["media_objects"][1:]]


def damage(built: Path, target: Path, how: str) -> Damaged:
    """A copy of the working folder with one frame deleted, or with runs/ only (no scenarios/)."""
    runs = built / "benchmark_output" / "runs"
    if how == "one-frame-deleted":
        shutil.copytree(built / "benchmark_output", target / "benchmark_output", symlinks=True)
        location = media_of(runs / "test" / run_name("sim_panda"))[0]
        (target / location).unlink()
        missing = [location]
    else:
        shutil.copytree(runs, target / "benchmark_output" / "runs", symlinks=True)
        missing = sorted({loc for subset in SUBSETS for loc in media_of(runs / "test" / run_name(subset))})
    affected = [run_name(subset) for subset in SUBSETS
                if set(media_of(runs / "test" / run_name(subset))) & set(missing)]
    return Damaged(target, missing, affected)


def summarize(workdir: Path, *extra: str) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(
        [cli("helm-summarize"), "--suite", "test", "--schema-path", str(SCHEMA), "--schema-validation", "error",
         "-o", "benchmark_output", "--local-path", str(PROD_ENV), "-n", "1", *extra],
        cwd=workdir, env=environment(), capture_output=True, text=True, timeout=TIMEOUT)


def leaderboard_values(suite_dir: Path) -> dict[str, float]:
    """``subset -> MAE`` of the constant baseline in the sample leaderboard's MAE table."""
    tables = read_json(suite_dir / "groups" / "roboreward_sample.json")
    table = next(t for t in tables if t["name"] == "accuracy")
    (row,) = table["rows"]
    values = {}
    for index, cell in enumerate(table["header"]):
        group = cell.get("metadata", {}).get("run_group")
        for subset, display_name in SUBSETS.items():
            if group == display_name:
                values[subset] = row[index]["value"]
                assert row[index]["run_spec_names"] == [run_name(subset)]
    return values


@pytest.mark.parametrize("how", ["one-frame-deleted", "runs-copied-without-scenarios"])
def test_our_summarizer_writes_the_leaderboard_and_names_the_missing_file(built: Path, tmp_path: Path,
                                                                         how: str) -> None:
    damaged = damage(built, tmp_path, how)
    assert damaged.affected, "no run points to the deleted file"
    process = summarize(damaged.workdir, "--summarizer-class-name", SUMMARIZER)
    check_completed(process, "helm-summarize with RoboRewardSummarizer")
    suite_dir = damaged.workdir / "benchmark_output" / "runs" / "test"
    values = leaderboard_values(suite_dir)
    assert set(values) == set(SUBSETS)
    for subset, value in values.items():
        assert value == pytest.approx(constant_mae(subset), abs=1e-12)
    for name in ("schema.json", "summary.json", "runs.json", "costs.json"):
        assert (suite_dir / name).is_file(), name
    output = process.stdout + process.stderr
    lines = [line for line in output.splitlines() if "does not exist" in line and "RoboReward" in line]
    assert len(lines) == 1, output[-4000:]
    (line,) = lines
    assert damaged.missing[0] in line and FIX in line and "roboreward prepare / helm-run" in line
    assert f"{len(damaged.missing)} missing file(s)" in line and f"{len(damaged.affected)} run(s)" in line
    assert "Traceback" not in output
    for subset in SUBSETS:
        display = suite_dir / run_name(subset) / "display_predictions.json"
        assert display.exists() == (run_name(subset) not in damaged.affected), run_name(subset)


def test_plain_helm_summarize_stops_without_a_leaderboard(built: Path, tmp_path: Path) -> None:
    """What HELM 0.5.16 itself does (docs/bad_inputs.md, `summarize-missing-media`): an assertion, no tables."""
    damaged = damage(built, tmp_path, "one-frame-deleted")
    process = summarize(damaged.workdir)
    assert process.returncode != 0
    output = process.stdout + process.stderr
    assert f"AssertionError: Local file does not exist at path: {damaged.missing[0]}" in output
    suite_dir = damaged.workdir / "benchmark_output" / "runs" / "test"
    assert (suite_dir / "schema.json").is_file()  # written before the predictions pages
    assert not (suite_dir / "groups").exists()  # the leaderboard never is


def test_a_stale_predictions_page_of_a_skipped_run_is_removed(built: Path, tmp_path: Path) -> None:
    damaged = damage(built, tmp_path, "one-frame-deleted")
    suite_dir = damaged.workdir / "benchmark_output" / "runs" / "test"
    run_dir = suite_dir / damaged.affected[0]
    page = run_dir / "display_predictions.json"
    page.write_text("[]", encoding="utf-8")  # an earlier summarize's page ...
    state = run_dir / "scenario_state.json"
    state.touch()  # ... of an earlier run: the scenario state is newer
    stamp = state.stat().st_mtime_ns
    os.utime(page, ns=(stamp - 10**9, stamp - 10**9))
    process = summarize(damaged.workdir, "--summarizer-class-name", SUMMARIZER)
    check_completed(process, "helm-summarize with RoboRewardSummarizer")
    assert not page.exists()
    assert (suite_dir / "groups" / "roboreward_sample.json").is_file()
