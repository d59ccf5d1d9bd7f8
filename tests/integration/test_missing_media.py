"""helm-summarize when media files a run points to are gone: the leaderboard is still written.

HELM rebuilds every request's ``MediaObject`` for the predictions pages (``write_run_display_json`` ->
``from_json(ScenarioState)``), and ``MediaObject`` asserts that a local file exists. One deleted cached frame, or
a copy of ``runs/`` without ``scenarios/``, then stops plain helm-summarize before any leaderboard table is
written. ``RoboRewardSummarizer`` skips the affected runs' predictions pages with one log line naming a missing
file and the fix, and writes everything else.
"""

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.harness import TIMEOUT, check_completed, helm_environment, helm_summarize_command, read_json
from tests.helpers.sample import constant_mae, rows_of
from tests.helpers.suite import SUBSETS, SUITE, SuiteCopy, run_name

pytestmark = pytest.mark.slow  # helm-summarize on damaged copies of the sample suite

FIX = "copy scenarios/ too"


def constant_run(subset: str) -> str:
    return run_name(subset, "constant-3")


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


def damage(copy_suite: Callable[..., SuiteCopy], how: str) -> Damaged:
    """A copy of the shared working folder where helm-run ran the constant baseline on every sample subset (the
    other baseline's runs left out, not summarized), with one frame deleted, or with runs/ only (no scenarios/)."""
    def constant_only(name: str) -> bool:
        return name.endswith("model=baseline_constant-3")

    media = "copy" if how == "one-frame-deleted" else "none"
    copy = copy_suite(summarized=False, media=media, keep=constant_only)
    runs = copy.runs
    if how == "one-frame-deleted":
        location = media_of(runs / constant_run("sim_panda"))[0]
        (copy.workdir / location).unlink()
        missing = [location]
    else:
        missing = sorted({loc for subset in SUBSETS for loc in media_of(runs / constant_run(subset))})
    affected = [constant_run(subset) for subset in SUBSETS
                if set(media_of(runs / constant_run(subset))) & set(missing)]
    return Damaged(copy.workdir, missing, affected)


def summarize(workdir: Path, summarizer: bool) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(helm_summarize_command(SUITE, summarizer=summarizer), cwd=workdir, env=helm_environment(),
                          capture_output=True, text=True, timeout=TIMEOUT)


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
                assert row[index]["run_spec_names"] == [constant_run(subset)]
    return values


@pytest.mark.parametrize("how", ["one-frame-deleted", "runs-copied-without-scenarios"])
def test_our_summarizer_writes_the_leaderboard_and_names_the_missing_file(copy_suite: Callable[..., SuiteCopy],
                                                                         how: str) -> None:
    damaged = damage(copy_suite, how)
    assert damaged.affected, "no run points to the deleted file"
    process = summarize(damaged.workdir, summarizer=True)
    check_completed(process, "helm-summarize with RoboRewardSummarizer")
    suite_dir = damaged.workdir / "benchmark_output" / "runs" / SUITE
    values = leaderboard_values(suite_dir)
    assert set(values) == set(SUBSETS)
    for subset, value in values.items():
        assert value == pytest.approx(constant_mae(rows_of(subset)), abs=1e-12)
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
        display = suite_dir / constant_run(subset) / "display_predictions.json"
        assert display.exists() == (constant_run(subset) not in damaged.affected), constant_run(subset)


def test_plain_helm_summarize_stops_without_a_leaderboard(copy_suite: Callable[..., SuiteCopy]) -> None:
    """What HELM 0.5.16 itself does (docs/bad_inputs.md, `summarize-missing-media`): an assertion, no tables."""
    damaged = damage(copy_suite, "one-frame-deleted")
    process = summarize(damaged.workdir, summarizer=False)
    assert process.returncode != 0
    output = process.stdout + process.stderr
    assert f"AssertionError: Local file does not exist at path: {damaged.missing[0]}" in output
    suite_dir = damaged.workdir / "benchmark_output" / "runs" / SUITE
    assert (suite_dir / "schema.json").is_file()  # written before the predictions pages
    assert not (suite_dir / "groups").exists()  # the leaderboard never is


def test_a_stale_predictions_page_of_a_skipped_run_is_removed(copy_suite: Callable[..., SuiteCopy]) -> None:
    damaged = damage(copy_suite, "one-frame-deleted")
    suite_dir = damaged.workdir / "benchmark_output" / "runs" / SUITE
    run_dir = suite_dir / damaged.affected[0]
    page = run_dir / "display_predictions.json"
    page.write_text("[]", encoding="utf-8")  # an earlier summarize's page ...
    state = run_dir / "scenario_state.json"
    state.touch()  # ... of an earlier run: the scenario state is newer
    stamp = state.stat().st_mtime_ns
    os.utime(page, ns=(stamp - 10**9, stamp - 10**9))
    process = summarize(damaged.workdir, summarizer=True)
    check_completed(process, "helm-summarize with RoboRewardSummarizer")
    assert not page.exists()
    assert (suite_dir / "groups" / "roboreward_sample.json").is_file()
