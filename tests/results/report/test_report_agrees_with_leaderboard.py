"""``roboreward report`` never shows other numbers than the leaderboard helm-summarize wrote, unsaid.

Copies of the shared demo suite (tests/helpers/suite.py), damaged by hand: a run whose run_spec.json names another
model than its folder (the leaderboard files it under the recorded model), and a run the leaderboard counts whose
stats.json is cut or whose per_instance_stats.json is gone (leaving it out with a warning would print another
mean: 1.284 over 2 subsets against the leaderboard's 1.289 over 3). Both stop the report before it writes anything,
as a deleted run folder does.
"""

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.harness import TIMEOUT, check_completed, helm_environment, helm_summarize_command
from tests.helpers.report_cli import one_line_error, report, runs_of
from tests.helpers.suite import SUITE, SuiteCopy


def file_bytes(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def relabel(run: Path, model: str) -> None:
    """Rewrite a run's run_spec.json as if copied from a run of ``model`` (its folder and name unchanged)."""
    spec = json.loads((run / "run_spec.json").read_text())
    spec["adapter_spec"]["model"] = spec["adapter_spec"]["model_deployment"] = model
    (run / "run_spec.json").write_text(json.dumps(spec))


def test_a_run_whose_run_spec_names_another_model_is_refused(copy_suite: Callable[..., SuiteCopy], tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    suite = copy_suite(summarized=False, media="link")
    relabelled = runs_of(suite.output, "baseline/uniform-random")[0]
    relabel(relabelled, "baseline/constant-3")
    process = subprocess.run(helm_summarize_command(SUITE), cwd=suite.workdir, env=helm_environment(),
                             capture_output=True, text=True, timeout=TIMEOUT)
    check_completed(process, "helm-summarize")
    logged = process.stdout + process.stderr
    assert f"runs/{SUITE}/{relabelled.name}: its name says model=baseline_uniform-random" in logged
    assert "the leaderboard shows its numbers under baseline/constant-3" in logged
    assert report(suite.output, tmp_path / "r") == 2
    err = one_line_error(capsys)
    assert f"run folder {relabelled}: its name says model=baseline_uniform-random but its run_spec.json records " \
           "the model baseline/constant-3" in err
    assert "rerun helm-run for the run entry of the folder name" in err and "Nothing was written" in err
    assert not (tmp_path / "r").exists()


def test_a_run_named_by_its_deployment_or_routed_to_an_option_deployment_is_not_a_mismatch() -> None:
    from helm_roboreward.helm_frontend.run_rows import model_mismatch

    assert model_mismatch("roboreward:subset=a,model=vllm_roboreward-8b", "teetone/roboreward-8b",
                          "vllm/roboreward-8b") is None
    assert model_mismatch("roboreward:subset=a,model=teetone_roboreward-8b,model_deployment=vllm_roboreward-8b",
                          "teetone/roboreward-8b", "vllm/roboreward-8b") is None
    assert model_mismatch("roboreward:subset=a,data=sample", "baseline/constant-3", None) is None
    assert model_mismatch("roboreward:subset=a,decoding=greedy,model=teetone_roboreward-8b,"
                          "model_deployment=vllm_roboreward-8b", "teetone/roboreward-8b",
                          "vllm/roboreward-8b-greedy") is None  # routed to an option deployment of the deployment named
    assert model_mismatch("roboreward:subset=a,model=acme_x", "acme/y", "acme/y") == \
        "its name says model=acme_x but its run_spec.json records the model acme/y"


def cut_stats(run: Path) -> str:
    text = (run / "stats.json").read_text()
    (run / "stats.json").write_text(text[: len(text) // 2])
    return "stats.json is unreadable"


def drop_per_instance_stats(run: Path) -> str:
    (run / "per_instance_stats.json").unlink()
    return "no per_instance_stats.json"


@pytest.mark.parametrize("damage", [cut_stats, drop_per_instance_stats])
def test_a_damaged_run_the_leaderboard_counts_stops_the_report(
        copy_suite: Callable[..., SuiteCopy], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        damage: Callable[[Path], str]) -> None:
    summarized = copy_suite(summarized=True, media="none")
    out = tmp_path / "r"
    assert report(summarized.output, out) == 0
    before = file_bytes(out)
    capsys.readouterr()
    damaged = runs_of(summarized.output, "baseline/uniform-random")[0]
    reason = damage(damaged)
    assert report(summarized.output, out) == 2
    err = one_line_error(capsys)
    assert f"{damaged}: {reason}" in err and "the leaderboard" in err and "cannot read" in err
    assert "rerun helm-run" in err and "helm-summarize again" in err and "Nothing was written" in err
    assert file_bytes(out) == before  # the earlier report is kept as it was


def test_a_damaged_run_of_a_suite_never_summarized_is_skipped_with_a_warning(
        copy_suite: Callable[..., SuiteCopy], tmp_path: Path) -> None:
    """No leaderboard to disagree with: the run is left out, the warning names it (the report's means skip it)."""
    copy = copy_suite(summarized=False, media="none").output
    damaged = runs_of(copy, "baseline/uniform-random")[0]
    reason = drop_per_instance_stats(damaged)
    assert report(copy, tmp_path / "r") == 0
    text = (tmp_path / "r" / "report.md").read_text()
    assert f"run {damaged.name} skipped: {reason}" in text and "has not been summarized" in text
