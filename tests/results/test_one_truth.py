"""One source of truth for a suite's numbers (issue 36): ``leaderboard``, ``report``, ``publish`` and
``export-predictions`` read the same rows through one reader, and stop, naming the file, where a run's files
disagree; ``--suite`` is a plain folder name everywhere; the manifest keeps every run's video hashes.

All on private copies of the shared sample suite (``demo``: two baselines on three sample subsets).
"""

import argparse
import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from helm_roboreward import cli
from helm_roboreward.helm_frontend.run_rows import ReportError, check_suite_name
from helm_roboreward.protocol.rows import DataError
from helm_roboreward.results.publish.evidence import suite_facts
from helm_roboreward.results.publish.manifest import MANIFEST_FILE, build_manifest
from helm_roboreward.results.publish.publish_command import add_publish_options, run_publish
from helm_roboreward.results.terminal_leaderboard import main as leaderboard_main
from helm_roboreward.robot_data.predictions_export import export_predictions
from tests.helpers.harness import PROD_ENV
from tests.helpers.suite import SUITE, SuiteCopy, run_name

SOURCE = "https://huggingface.co/datasets/lab/demo-traces"
EDITED_RUN = run_name("sim_arena", "constant-3")


def publish_args(output: Path, out: Path, suite: str = SUITE) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_publish_options(parser)
    return parser.parse_args(["--suite", suite, "--output-path", str(output), "--out", str(out), "--source-url",
                              SOURCE, "--local-path", str(PROD_ENV), "--allow-not-comparable"])


def surfaces(output: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], suite: str = SUITE
             ) -> dict[str, tuple[int, str]]:
    """Each command's exit status and message on the suite (export-predictions: 2 when it raised DataError)."""
    results = {}
    results["leaderboard"] = (leaderboard_main(["--suite", suite, "--output-path", str(output)]),
                              capsys.readouterr().err)
    results["report"] = (cli.main(["report", "--suite", suite, "--output-path", str(output), "--out",
                                   str(tmp_path / "report"), "--local-path", str(PROD_ENV), "--resamples", "20"]),
                         capsys.readouterr().err)
    results["publish"] = (run_publish(publish_args(output, tmp_path / "publish", suite)), capsys.readouterr().err)
    try:
        export_predictions(str(output), suite, str(tmp_path / "predictions.parquet"))
        results["export-predictions"] = (0, "")
    except DataError as error:
        results["export-predictions"] = (2, str(error))
    return results


def edit_first_error(copy: SuiteCopy, value: float) -> Path:
    """Change the first row's abs_error in one run's per_instance_stats.json, as an edit after the run would."""
    path = copy.runs / EDITED_RUN / "per_instance_stats.json"
    entries = json.loads(path.read_text())
    for stat in entries[0]["stats"]:
        if stat["name"]["name"] == "abs_error":
            stat["sum"] = value * stat["count"]
    path.write_text(json.dumps(entries))
    return path


def assert_every_surface_stops_naming(results: dict[str, tuple[int, str]], path: Path, what: str,
                                      tmp_path: Path) -> None:
    for surface, (code, message) in results.items():
        assert code != 0, f"{surface} went on: {message}"
        assert str(path) in message and what in message, (surface, message)
    assert not (tmp_path / "report" / "report.md").exists()
    assert not list((tmp_path / "publish").rglob("*.yaml")) and not (tmp_path / "predictions.parquet").exists()


def test_an_edited_error_stops_every_surface_naming_the_file(copy_suite: Callable[..., SuiteCopy], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    copy = copy_suite()
    path = edit_first_error(copy, 3.5)
    results = surfaces(copy.output, tmp_path, capsys)
    assert_every_surface_stops_naming(results, path, "differs from stats.json", tmp_path)
    assert not (copy.runs / MANIFEST_FILE).exists()


def test_a_second_record_of_one_instance_stops_every_surface(copy_suite: Callable[..., SuiteCopy], tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    copy = copy_suite()
    path = copy.runs / EDITED_RUN / "per_instance_stats.json"
    entries = json.loads(path.read_text())
    path.write_text(json.dumps([entries[0]] + entries))  # the first record wins where duplicates are read
    results = surfaces(copy.output, tmp_path, capsys)
    assert_every_surface_stops_naming(results, path, f"instance {entries[0]['instance_id']} is recorded 2 times",
                                      tmp_path)


@pytest.mark.parametrize("suite", ["../../benchmark_output/runs/demo", "/abs/demo", "demo/", ".", "..", "a\nb", ""])
def test_the_suite_is_a_plain_folder_name(suite: str) -> None:
    with pytest.raises(ReportError, match=r"--suite .*: give the suite's folder name under <output-path>/runs/"):
        check_suite_name(suite)


def test_a_suite_given_as_a_path_is_refused_everywhere_and_nothing_is_written_outside(
        copy_suite: Callable[..., SuiteCopy], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = copy_suite(summarized=False, media="none")
    other = copy.workdir / "other"
    (other / "runs").mkdir(parents=True)
    escape = "../../benchmark_output/runs/demo"  # other/runs/<escape> is the real suite folder
    results = surfaces(other, tmp_path, capsys, escape)
    for surface, (code, message) in results.items():
        assert code != 0 and "--suite '../../benchmark_output/runs/demo': give the suite's folder name" in message, (
            surface, message)
    assert not (copy.runs / MANIFEST_FILE).exists()
    assert check_suite_name("demo_2.x-y") == "demo_2.x-y"


def test_the_manifest_keeps_each_runs_hash_of_a_video_that_changed_between_runs(
        copy_suite: Callable[..., SuiteCopy]) -> None:
    copy = copy_suite(summarized=False, media="none")
    path = copy.runs / run_name("sim_kuka", "uniform-random") / "scenario_state.json"
    state = json.loads(path.read_text())
    extra = state["request_states"][0]["instance"]["extra_data"]
    before, extra["video_sha256"] = extra["video_sha256"], "0" * 64
    path.write_text(json.dumps(state))
    manifest = build_manifest(suite_facts(str(copy.output), SUITE))
    (revision, conflicts), = manifest["video_conflicts"].items()
    assert conflicts == {extra["source_file"]: {run_name("sim_kuka", "constant-3"): before,
                                                run_name("sim_kuka", "uniform-random"): "0" * 64}}
    assert extra["source_file"] not in manifest["videos"][revision]
    assert sum(len(files) for files in manifest["videos"].values()) == 57


def test_the_manifest_hashes_each_runs_files(copy_suite: Callable[..., SuiteCopy]) -> None:
    copy = copy_suite(summarized=False, media="none")
    manifest = build_manifest(suite_facts(str(copy.output), SUITE))
    run = next(run for model in manifest["models"] for run in model["runs"] if run["name"] == EDITED_RUN)
    assert run["files_sha256"] == {name: hashlib.sha256((copy.runs / EDITED_RUN / name).read_bytes()).hexdigest()
                                   for name in ("per_instance_stats.json", "run_spec.json", "scenario_state.json",
                                                "stats.json")}


def test_the_report_names_the_row_column_for_what_it_counts(copy_suite: Callable[..., SuiteCopy], tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    copy = copy_suite(summarized=False, media="none")
    assert cli.main(["report", "--suite", SUITE, "--output-path", str(copy.output), "--out", str(tmp_path),
                     "--local-path", str(PROD_ENV), "--resamples", "20"]) == 0
    text = (tmp_path / "report.md").read_text()
    assert "Rows scored" in text and "Rows with an error" not in text
