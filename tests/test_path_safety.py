"""Every path a ``roboreward`` command reads or writes stays inside its root folder, or the command refuses.

- ``export-media`` reads media files under ``--output-path`` and writes under ``--export-path``: a recorded
  location in ``scenario_state.json`` is data, and may point anywhere (``benchmark_output/../../x``, an absolute
  path, a non-media file, through a link); links may be planted inside the export folder.
- ``files`` writes under ``--out`` (before: through a fixed temporary name ``<path>.tmp``, so a link planted there
  was written through), ``report`` under ``--out``, ``prepare`` under ``--output-path``.

Each case checks that nothing outside the roots changed (byte for byte) and that the message names the path.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from helm_roboreward import cli
from helm_roboreward.presentation.project_files import generated_texts
from tests.helm_harness import PROD_ENV, TIMEOUT, check_completed
from tests.helm_harness import cli as console_script
from tests.test_end_to_end import environment, private_local_path

JPEG = b"\xff\xd8\xff\xe0" + b"frame" * 20
SECRET = b"\xff\xd8\xff\xe0 not for export: a file outside the output folder"
SUITE = "s"
FRAME = "benchmark_output/scenarios/roboreward/frames/aa/aakey/0000.jpg"


def snapshot(folder: Path) -> dict[str, tuple[str, str]]:
    """Every entry under ``folder``: relative path -> (kind, sha256 or link target)."""
    entries: dict[str, tuple[str, str]] = {}
    if not folder.exists():
        return entries
    for path in sorted(folder.rglob("*")):
        relative = str(path.relative_to(folder))
        if path.is_symlink():
            entries[relative] = ("link", os.readlink(path))
        elif path.is_file():
            entries[relative] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
        else:
            entries[relative] = ("folder", "")
    return entries


# ----------------------------------------------------------------------------- export-media


@dataclass
class ExportCase:
    """A tree under ``tmp``: ``a/work`` (cwd, holds benchmark_output/), ``a/outside``, ``b/export``, ``b/outside``."""

    tmp: Path

    @property
    def work(self) -> Path:
        return self.tmp / "a" / "work"

    @property
    def export(self) -> Path:
        return self.tmp / "b" / "export"

    def outsides(self) -> dict[str, dict[str, tuple[str, str]]]:
        return {side: snapshot(self.tmp / side / "outside") for side in ("a", "b")}

    def record(self, media: list[tuple[str, str]]) -> None:
        """A run whose scenario_state.json records these ``(content_type, location)`` media objects."""
        run = self.work / "benchmark_output" / "runs" / SUITE / "roboreward:subset=x,video=frames,model=m"
        run.mkdir(parents=True, exist_ok=True)
        objects = [{"content_type": "text/plain", "text": "prompt"}]
        objects += [{"content_type": kind, "location": location} for kind, location in media]
        state = {"request_states": [{"request": {"multimodal_prompt": {"media_objects": objects}}}]}
        (run / "scenario_state.json").write_text(json.dumps(state), encoding="utf-8")
        (run / "stats.json").write_text("[]", encoding="utf-8")


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


def _dotdot_source(case: ExportCase) -> str:
    case.record([("image/jpeg", FRAME), ("image/jpeg", "benchmark_output/../../outside/secret.jpg")])
    return "benchmark_output/../../outside/secret.jpg"


def _dotdot_inside(case: ExportCase) -> str:
    location = "benchmark_output/scenarios/roboreward/../roboreward/frames/aa/aakey/0000.jpg"
    case.record([("image/jpeg", location)])
    return location


def _absolute_outside(case: ExportCase) -> str:
    other = case.tmp / "a" / "outside" / "benchmark_output" / "x.jpg"
    other.parent.mkdir()
    other.write_bytes(SECRET)
    case.record([("image/jpeg", str(other))])
    return str(other)


def _not_media(case: ExportCase) -> str:
    location = f"benchmark_output/runs/{SUITE}/roboreward:subset=x,video=frames,model=m/stats.json"
    case.record([("image/jpeg", location)])
    return location


def _wrong_content_type(case: ExportCase) -> str:
    case.record([("application/octet-stream", FRAME)])
    return FRAME


def _link_in_output(case: ExportCase) -> str:
    (case.work / "benchmark_output/scenarios/roboreward/frames/zz").symlink_to(case.tmp / "a" / "outside")
    location = "benchmark_output/scenarios/roboreward/frames/zz/secret.jpg"
    case.record([("image/jpeg", location)])
    return location


def _folder_link_in_export(case: ExportCase) -> str:
    (case.export / "benchmark_output").mkdir()
    (case.export / "benchmark_output" / "scenarios").symlink_to(case.tmp / "b" / "outside")
    case.record([("image/jpeg", FRAME)])
    return str(case.export / "benchmark_output" / "scenarios")


EXPORT_REFUSALS: dict[str, Callable[[ExportCase], str]] = {  # case id (docs/bad_inputs.md) -> crafting
    "export-source-dotdot-out-of-output": _dotdot_source,
    "export-source-dotdot-inside": _dotdot_inside,
    "export-source-absolute-outside": _absolute_outside,
    "export-source-not-media": _not_media,
    "export-source-wrong-content-type": _wrong_content_type,
    "export-source-link-leads-out": _link_in_output,
    "export-target-folder-link-leads-out": _folder_link_in_export,
}


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


@pytest.fixture(scope="module")
def suite_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("report-out")
    process = subprocess.run(
        [console_script("helm-run"), "-r", "roboreward:subset=sim_arena,data=sample,model=baseline/constant-3",
         "--suite", SUITE, "-m", "100", "--local-path", str(private_local_path(workdir / "local")), "-o",
         "benchmark_output"], cwd=workdir, env=environment(), capture_output=True, text=True, timeout=TIMEOUT)
    check_completed(process, "helm-run")
    return workdir


def report(output: Path, out: Path) -> int:
    return cli.main(["report", "--suite", SUITE, "--output-path", str(output), "--out", str(out), "--local-path",
                     str(PROD_ENV), "--resamples", "20"])


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


def test_report_does_not_follow_a_run_folder_link_out_of_the_suite(suite_workdir: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "benchmark_output"
    shutil.copytree(suite_workdir / "benchmark_output" / "runs", output / "runs", symlinks=True)
    (run,) = [p for p in (output / "runs" / SUITE).iterdir() if p.name.startswith("roboreward:")]
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(run, elsewhere)
    linked = output / "runs" / SUITE / "roboreward:subset=sim_arena,data=sample,video=frames,model=elsewhere"
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
