"""``roboreward export-predictions`` against hostile run folders, targets and hubs (issue 27, third sweep).

Rows of docs/bad_inputs.md, section "Your own robot data and exports (issue 27)". The suites are hand-built HELM
output folders (``run_spec.json`` and ``scenario_state.json`` as helm-run writes them, one instance each); the
command runs as a user runs it, in process or (full disk, hubs) as a subprocess. A push goes to a loopback port
that refuses connections, or to a loopback socket that accepts and never answers.
"""

import json
import os
import resource
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from helm_roboreward import cli as roboreward
from helm_roboreward.protocol.rules import SCENARIO_CLASS
from tests.helpers.fakes.silent import SilentServer, refused_url
from tests.helpers.harness import check_completed, cli, helm_environment

SUITE = "s"
EXIT_USAGE = 2


def write_run(output: Path, name: str, locations: list[tuple[str, str]], finished: bool = True,
              model: str = "baseline/constant-3") -> Path:
    """A RoboReward run folder of one instance whose request sent ``locations`` (content type, location)."""
    folder = output / "runs" / SUITE / name
    folder.mkdir(parents=True)
    spec = {"name": name, "scenario_spec": {"class_name": SCENARIO_CLASS, "args": {"subset": "sim_panda", "data": "x"}},
            "adapter_spec": {"model": model, "model_deployment": model}}
    (folder / "run_spec.json").write_text(json.dumps(spec), encoding="utf-8")
    if finished:
        media = [{"content_type": "text/plain", "text": "prompt"}]
        media += [{"content_type": kind, "location": location} for kind, location in locations]
        state = {"request_states": [{
            "instance": {"id": "id0", "extra_data": {
                "source_file": "sim_panda/sim_panda_originalsplit_train_index_0.mp4", "subset": "sim_panda",
                "task": "grasp"},
                         "references": [{"output": {"text": "4"}, "tags": ["correct"]}]},
            "request": {"multimodal_prompt": {"media_objects": media}},
            "result": {"success": True, "completions": [{"text": "ANSWER: 3"}]}}]}
        (folder / "scenario_state.json").write_text(json.dumps(state), encoding="utf-8")
    return folder


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder helm-run ran in: ``benchmark_output/`` with one finished run and its frame."""
    monkeypatch.chdir(tmp_path)
    frame = tmp_path / "benchmark_output" / "scenarios" / "roboreward" / "frames" / "ab" / "0001.jpg"
    frame.parent.mkdir(parents=True)
    frame.write_bytes(os.urandom(200_000))
    write_run(tmp_path / "benchmark_output", "roboreward:subset=sim,model=a",
              [("image/jpeg", "benchmark_output/scenarios/roboreward/frames/ab/0001.jpg")])
    return tmp_path


def export(capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, str, str]:
    capsys.readouterr()
    status = roboreward.main(["export-predictions", "--suite", SUITE, *arguments])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return status, captured.out, captured.err


@pytest.mark.parametrize("location", ["/elsewhere/secret.jpg", "benchmark_output/../../secret.jpg"])
def test_include_media_reads_nothing_outside_the_output_folder(workdir: Path, location: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    secret = workdir.parent / "secret.jpg"
    secret.write_bytes(b"private bytes")
    location = location.replace("/elsewhere", str(workdir.parent))
    write_run(workdir / "benchmark_output", "roboreward:subset=sim,model=b", [("image/jpeg", location)])
    status, _, err = export(capsys, "--out", "p.parquet", "--include-media")
    assert status == EXIT_USAGE and not (workdir / "p.parquet").exists()
    assert f"media location {location}" in err and "--include-media embeds only the frames and videos" in err
    reason = "is not a plain relative path" if ".." in location else "not under a 'benchmark_output' folder"
    assert reason in err


def test_a_link_out_of_the_output_folder_is_refused(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workdir.parent / "secret.jpg").write_bytes(b"private bytes")
    link = workdir / "benchmark_output" / "scenarios" / "roboreward" / "frames" / "ab" / "0002.jpg"
    link.symlink_to(workdir.parent / "secret.jpg")
    write_run(workdir / "benchmark_output", "roboreward:subset=sim,model=b",
              [("image/jpeg", "benchmark_output/scenarios/roboreward/frames/ab/0002.jpg")])
    status, _, err = export(capsys, "--out", "p.parquet", "--include-media")
    assert status == EXIT_USAGE and "secret.jpg, outside" in err and not (workdir / "p.parquet").exists()


def test_a_run_that_did_not_finish_is_named(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(workdir / "benchmark_output", "roboreward:subset=sim,model=failed", [], finished=False)
    status, out, err = export(capsys, "--out", "p.parquet")
    assert status == 0 and "1 predictions of suite s" in out
    assert ("warning: run roboreward:subset=sim,model=failed is not in the export: it has no scenario_state.json "
            "(helm-run failed on it, or is still running it)") in err


def test_a_truncated_scenario_state_is_named(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = workdir / "benchmark_output" / "runs" / SUITE / "roboreward:subset=sim,model=a" / "scenario_state.json"
    state.write_bytes(state.read_bytes()[:50])
    status, _, err = export(capsys, "--out", "p.parquet")
    assert status == EXIT_USAGE and not (workdir / "p.parquet").exists()
    assert f"{state.relative_to(workdir)}: cannot be read as JSON (" in err and "the run's file is damaged" in err


@pytest.mark.parametrize("target", ["existing-file", "run-folder", "run-folder-disk", "folder-disk"])
def test_an_export_replaces_only_an_earlier_export(workdir: Path, target: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    run = workdir / "benchmark_output" / "runs" / SUITE / "roboreward:subset=sim,model=a"
    notes = workdir / "notes.txt"
    notes.write_text("mine", encoding="utf-8")
    (workdir / "folder").mkdir()
    (workdir / "folder" / "notes.txt").write_text("mine", encoding="utf-8")
    out, extra, expected = {
        "existing-file": (notes, [], "exists and is not a parquet file (an earlier export is replaced, nothing else)"),
        "run-folder": (run / "stats.json", [], "lies in helm-run's run folders"),
        "run-folder-disk": (run, ["--format", "disk"], "lies in helm-run's run folders"),
        "folder-disk": (workdir / "folder", ["--format", "disk"], "holds files other than an earlier export"),
    }[target]
    before = {path: path.read_bytes() for path in workdir.rglob("*") if path.is_file()}
    status, _, err = export(capsys, "--out", str(out), *extra)
    assert status == EXIT_USAGE and f"--out {out}" in err and expected in err
    assert {path: path.read_bytes() for path in workdir.rglob("*") if path.is_file()} == before


def test_an_earlier_export_is_replaced(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for _ in range(2):
        assert export(capsys, "--out", "p.parquet")[0] == 0
        assert export(capsys, "--out", "disk", "--format", "disk")[0] == 0
    assert pq.read_table(workdir / "p.parquet").num_rows == 1
    assert sorted(os.listdir(workdir)) == ["benchmark_output", "disk", "p.parquet"]  # no temporary left


def _limit_file_size() -> None:
    """A full disk, as the export sees it: writes beyond 64 KB fail (EFBIG; SIGXFSZ ignored)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64_000, 64_000))


def test_a_full_disk_leaves_the_earlier_export(workdir: Path) -> None:
    command = [cli("roboreward"), "export-predictions", "--suite", SUITE, "--out", "p.parquet"]
    check_completed(subprocess.run(command, cwd=workdir, env=helm_environment(), capture_output=True, text=True,
                                   timeout=300), "export-predictions")
    earlier = (workdir / "p.parquet").read_bytes()
    process = subprocess.run([*command, "--include-media"], cwd=workdir, env=helm_environment(), capture_output=True,
                             text=True, timeout=300, preexec_fn=_limit_file_size)
    assert process.returncode == EXIT_USAGE and "Traceback" not in process.stderr, process.stderr
    assert "--out p.parquet: cannot write the export (File too large); nothing was written and an earlier export " \
           "there is kept" in process.stderr
    assert (workdir / "p.parquet").read_bytes() == earlier
    assert sorted(os.listdir(workdir)) == ["benchmark_output", "p.parquet"]


@pytest.mark.parametrize("hub", ["refused", "silent"])
def test_a_push_fails_in_bounded_time_with_one_message(workdir: Path, hub: str, silent_hub: SilentServer) -> None:
    endpoint = refused_url() if hub == "refused" else silent_hub.url
    env = {**helm_environment(), "HF_ENDPOINT": endpoint, "HF_TOKEN": "hf_faketoken1234567890",
           "HF_HUB_OFFLINE": "0", "ROBOREWARD_HUB_TIMEOUT": "1"}
    started = time.monotonic()
    process = subprocess.run([cli("roboreward"), "export-predictions", "--suite", SUITE, "--out", "p.parquet",
                              "--push-to-hub", "lab/predictions"], cwd=workdir, env=env, capture_output=True,
                             text=True, timeout=120)
    seconds = time.monotonic() - started
    assert process.returncode == EXIT_USAGE and "Traceback" not in process.stderr, process.stderr
    assert f"roboreward export-predictions: --push-to-hub lab/predictions: the push to {endpoint} failed" in \
           process.stderr
    assert "the export is written to p.parquet" in process.stderr and "hf_faketoken" not in process.stderr
    if hub == "silent":
        assert "(no answer within 1 s)" in process.stderr and silent_hub.accepted
    assert seconds < 90
    assert pq.read_table(workdir / "p.parquet").num_rows == 1
