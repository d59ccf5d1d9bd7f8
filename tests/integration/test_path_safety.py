"""Every path a ``roboreward`` command reads or writes stays inside its root folder, or the command refuses.

- ``export-media`` reads media files under ``--output-path`` and writes under ``--export-path``: a recorded
  location in ``scenario_state.json`` is data, and may point anywhere (``benchmark_output/../../x``, an absolute
  path, a non-media file, through a link); links may be planted inside the export folder.
- ``files`` writes under ``--out`` (before: through a fixed temporary name ``<path>.tmp``, so a link planted there
  was written through), ``report`` under ``--out``, ``prepare`` under ``--output-path``.

Each case checks that nothing outside the roots changed (byte for byte) and that the message names the path.
"""

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from helm_roboreward import cli
from helm_roboreward.results.project_files import generated_texts
from tests.helpers.harness import PROD_ENV, TIMEOUT
from tests.helpers.path_cases import EXPORT_REFUSALS, FRAME, JPEG, SECRET, SUITE, ExportCase, snapshot
from tests.helpers.suite import SUITE as SAMPLE_SUITE
from tests.helpers.suite import SampleSuite, SuiteCopy

# ----------------------------------------------------------------------------- export-media (helpers/path_cases.py)


@pytest.fixture()
def export_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ExportCase:
    case = ExportCase(tmp_path)
    frame = case.work / FRAME
    frame.parent.mkdir(parents=True)
    frame.write_bytes(JPEG)
    for side in ("a", "b"):
        (tmp_path / side / "outside").mkdir(parents=True, exist_ok=True)
        (tmp_path / side / "outside" / "secret.jpg").write_bytes(SECRET)
    case.export.mkdir(parents=True)
    monkeypatch.chdir(case.work)  # locations are recorded relative to the folder helm-run ran in
    return case


def export(case: ExportCase) -> int:
    return cli.main(["export-media", "--suite", SUITE, "--output-path", "benchmark_output", "--export-path",
                     str(case.export)])


@pytest.mark.parametrize("craft", EXPORT_REFUSALS.values(), ids=EXPORT_REFUSALS.keys())
def test_export_media_refuses_a_path_out_of_its_roots(export_case: ExportCase, craft: Callable[[ExportCase], str],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    named = craft(export_case)
    before = export_case.outsides()
    export_before = snapshot(export_case.export)
    assert export(export_case) == 2
    err = capsys.readouterr().err
    assert "roboreward export-media: refused" in err and "nothing was copied" in err and "Traceback" not in err
    assert named in err
    assert export_case.outsides() == before  # nothing read out to or written outside
    assert snapshot(export_case.export) == export_before  # nothing copied at all


def test_export_media_copies_a_recorded_frame(export_case: ExportCase, capsys: pytest.CaptureFixture[str]) -> None:
    export_case.record([("image/jpeg", FRAME)])
    assert export(export_case) == 0
    assert "1 files" in capsys.readouterr().out
    copy = export_case.export / FRAME
    assert copy.read_bytes() == JPEG and not copy.is_symlink()
    assert [p.name for p in copy.parent.iterdir()] == ["0000.jpg"]  # no temporary file left


def test_export_media_replaces_a_link_planted_at_a_target(export_case: ExportCase) -> None:
    export_case.record([("image/jpeg", FRAME)])
    victim = export_case.tmp / "b" / "outside" / "victim.jpg"
    victim.write_bytes(b"x" * len(JPEG))  # same size as the frame: a size check must not follow the link
    target = export_case.export / FRAME
    target.parent.mkdir(parents=True)
    target.symlink_to(victim)
    assert export(export_case) == 0
    assert victim.read_bytes() == b"x" * len(JPEG)
    assert not target.is_symlink() and target.read_bytes() == JPEG


def test_export_media_reports_a_missing_file_without_refusing(export_case: ExportCase,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    missing = "benchmark_output/scenarios/roboreward/frames/bb/bbkey/0000.jpg"
    export_case.record([("image/jpeg", FRAME), ("image/jpeg", missing)])
    assert export(export_case) == 1
    err = capsys.readouterr().err
    assert f"{missing}: file not found (run this command from where helm-run ran)" in err
    assert (export_case.export / FRAME).read_bytes() == JPEG


# ----------------------------------------------------------------------------- roboreward files


def test_files_never_writes_through_a_link_at_the_old_temporary_name(tmp_path: Path) -> None:
    out, outside = tmp_path / "out", tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("keep me\n")
    (out / "static").mkdir(parents=True)
    (out / "static" / "schema_roboreward.yaml.tmp").symlink_to(victim)
    before = snapshot(outside)
    assert cli.main(["files", "--out", str(out)]) == 0
    assert snapshot(outside) == before
    schema = out / "static" / "schema_roboreward.yaml"
    assert not schema.is_symlink() and schema.read_text() == generated_texts()["static/schema_roboreward.yaml"]
    assert [p.name for p in (out / "static").iterdir() if p.name.startswith(".tmp-")] == []


@pytest.mark.parametrize("same_text", [False, True], ids=["other-text", "same-text"])
def test_files_replaces_a_link_planted_at_the_destination(tmp_path: Path, same_text: bool,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    out, outside = tmp_path / "out", tmp_path / "outside"
    outside.mkdir()
    conf = "run_specs/roboreward.conf"
    victim = outside / "victim.conf"
    victim.write_text(generated_texts()[conf] if same_text else "keep me\n")
    (out / "run_specs").mkdir(parents=True)
    (out / conf).symlink_to(victim)
    before = snapshot(outside)
    assert cli.main(["files", "--out", str(out)]) == 2  # a link is never taken for an up-to-date file
    assert f"{out / conf} (a symbolic link)" in capsys.readouterr().err
    assert cli.main(["files", "--out", str(out), "--force"]) == 0
    assert snapshot(outside) == before
    assert not (out / conf).is_symlink() and (out / conf).read_text() == generated_texts()[conf]


def test_files_refuses_a_folder_link_leading_out_of_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, outside = tmp_path / "out", tmp_path / "outside"
    outside.mkdir()
    out.mkdir()
    (out / "prod_env").symlink_to(outside)
    assert cli.main(["files", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(out / "prod_env") in err and f"outside {out}" in err and "Traceback" not in err
    assert snapshot(outside) == {}
    assert sorted(p.name for p in out.iterdir()) == ["prod_env"]  # nothing written, not even static/


# ----------------------------------------------------------------------------- roboreward report --out, prepare


@pytest.fixture()
def suite_workdir(sample_suite: SampleSuite) -> Path:
    """The shared demo suite's working folder (read only: the reports go elsewhere)."""
    return sample_suite.workdir


def report(output: Path, out: Path) -> int:
    return cli.main(["report", "--suite", SAMPLE_SUITE, "--output-path", str(output), "--out", str(out),
                     "--local-path", str(PROD_ENV), "--resamples", "20"])


def test_report_replaces_links_planted_in_out(suite_workdir: Path, tmp_path: Path) -> None:
    out, outside = tmp_path / "report", tmp_path / "outside"
    outside.mkdir()
    out.mkdir()
    for name in ("report.md", "leaderboard.csv", "macro_mae.png"):
        (outside / name).write_text("keep me\n")
        (out / name).symlink_to(outside / name)
    before = snapshot(outside)
    assert report(suite_workdir / "benchmark_output", out) == 0
    assert snapshot(outside) == before
    for name in ("report.md", "leaderboard.csv", "macro_mae.png"):
        assert not (out / name).is_symlink() and (out / name).stat().st_size > 20
    assert [p.name for p in out.iterdir() if p.name.startswith(".tmp-")] == []


def test_report_refuses_an_out_path_through_a_file(suite_workdir: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "taken").write_text("a file\n")
    assert report(suite_workdir / "benchmark_output", tmp_path / "taken") == 2
    err = capsys.readouterr().err
    assert f"roboreward report: cannot write the report: {tmp_path / 'taken'} is a file, not a folder" in err
    assert "choose another --out" in err and "Traceback" not in err


def test_report_does_not_follow_a_run_folder_link_out_of_the_suite(copy_suite: Callable[..., SuiteCopy],
                                                                   tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    copy = copy_suite(summarized=False, media="none",
                      keep=lambda name: name.startswith("roboreward:subset=sim_arena,") and "constant-3" in name)
    output = copy.output
    (run,) = [p for p in copy.runs.iterdir() if p.name.startswith("roboreward:")]
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(run, elsewhere)
    linked = copy.runs / "roboreward:subset=sim_arena,data=sample,video=frames,model=elsewhere"
    linked.symlink_to(elsewhere)
    assert report(output, tmp_path / "report") == 0  # the real run is reported
    err = capsys.readouterr().err
    assert f"warning: run {linked.name} skipped: its folder is a link to {elsewhere}" in err
    assert "outside the suite folder" in err


def test_prepare_refuses_a_media_folder_link_out_of_the_output_path(tmp_path: Path) -> None:
    out, outside = tmp_path / "out", tmp_path / "outside"
    outside.mkdir()
    out.mkdir()
    (out / "scenarios").symlink_to(outside)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}
    process = subprocess.run([sys.executable, "-m", "helm_roboreward.cli", "prepare", "--data", "sample", "--subset",
                              "sim_arena", "--output-path", str(out), "--jobs", "1", "--quiet"], cwd=tmp_path,
                             env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert process.returncode == 2, process.stderr
    assert f"media folder {out / 'scenarios' / 'roboreward'} resolves to" in process.stderr
    assert "--output-path" in process.stderr and "Traceback" not in process.stderr
    assert snapshot(outside) == {}


@pytest.mark.parametrize("suite", ["../../../x", "/tmp", "a/b", ".."])
def test_export_media_refuses_a_suite_given_as_a_path(export_case: ExportCase, suite: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 36, case 13: every command's --suite is a plain folder name (helm_frontend/run_rows.check_suite_name)."""
    export_before = snapshot(export_case.export)
    assert cli.main(["export-media", "--suite", suite, "--output-path", "benchmark_output", "--export-path",
                     str(export_case.export)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"roboreward export-media: --suite {suite!r}") and "Traceback" not in err
    assert snapshot(export_case.export) == export_before
