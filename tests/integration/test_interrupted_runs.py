"""Killed and concurrent runs: nothing computed is lost, nothing is computed twice, nothing is corrupt.

- ``helm-run`` on the sample (``vllm/...`` frames deployment against the loopback fake, one request at a time,
  each answer delayed) is SIGKILLed once some requests completed and rerun with the same command: the final
  stats equal an uninterrupted run's (timing stats aside), HELM's request cache (the ``--local-path``'s
  ``cache/``) spares every request completed before the kill, and the rerun decodes no video (every media
  file keeps its modification time; the scenario logs every video as a cache hit).
- ``roboreward prepare`` (every frame kept, one worker) is SIGKILLed mid-way and rerun: it completes, no
  temporary file remains, every manifest's files exist with the recorded sizes, the frames finished before the
  kill are not rewritten, and the cache is byte-identical to an uninterrupted prepare's.
- Concurrency beyond what tests/protocol/test_prepare_cli.py (two prepares of the sample's official frames, which
  finish in well under a second) and tests/integration/test_model_families.py (two helm-runs on *disjoint* subsets,
  one suite)
  cover: two prepares keeping every frame (seconds of real overlap) and two native-video prepares at once; two
  helm-runs of the *same* entry in different suites sharing ``-o`` and the request cache, then a third that
  must find every answer in that cache.

To SIGKILL a process outside a file write (so the kill itself leaves no temporary file), it is first stopped
with SIGSTOP and killed only when no temporary file exists; a kill inside a write is simulated separately by
planting an old temporary file, which the next run must remove.
"""

import collections
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from helm_roboreward.protocol.frame_cache import MANIFEST_FILE, read_manifest
from tests.helpers.fakes import FakeModelServer, Recorded, Reply, media_parts
from tests.helpers.harness import (
    SAMPLE,
    TIMEOUT,
    check_completed,
    helm_environment,
    helm_run_command,
    private_local_path,
    read_json,
    reap,
    sha256,
)
from tests.helpers.sample import sample_rows

pytestmark = pytest.mark.slow

MODEL = "meta/llama-4-scout-17b-16e-instruct"  # vllm/... deployment: OpenAIVideoClient, frames
ENTRY = f"roboreward:subset=all,data=sample,model={MODEL}"
RUN = "roboreward:subset=all,data=sample,video=frames,model=meta_llama-4-scout-17b-16e-instruct"
DELAY = 0.25
"""Seconds the fake waits before each answer while a run is to be killed."""
EVERY_FRAME = ("--fps", "1000")
"""Keep every frame (stride 1): enough work per video for a kill to land mid-way."""


# --------------------------------------------------------------------------------------------- helpers


def scripted(recorded: Recorded) -> Reply:
    """A deterministic answer from what the request carried."""
    parts = media_parts(recorded)
    digest = sha256((parts[0].text or "").encode() + b"".join(sha256(p.data or b"").encode() for p in parts[1:]))
    return Reply(text=f"Thinking it over.\nANSWER: {int(digest, 16) % 5 + 1}")


def request_key(recorded: Recorded) -> tuple[str, tuple[str, ...]]:
    """What identifies an instance's request: its prompt and its media bytes."""
    parts = media_parts(recorded)
    return parts[0].text or "", tuple(sha256(p.data or b"") for p in parts[1:])


def comparable_stats(run_dir: Path) -> dict[str, tuple[int, float]]:
    """stats.json without timing stats: name -> (count, sum)."""
    out = {}
    for stat in read_json(run_dir / "stats.json"):
        name = stat["name"]["name"]
        if "time" in name or "runtime" in name:
            continue
        out[json.dumps(stat["name"], sort_keys=True)] = (stat["count"], round(stat["sum"], 9))
    return out


def file_states(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder``: relative path -> (size, mtime_ns)."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file()}


def contents(folder: Path) -> dict[str, str]:
    """Every file under ``folder``: relative path -> sha256 of its bytes.

    Verification stamps are left out: they record inode numbers and change times, which are this machine's
    and this moment's by design (media_store).
    """
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in folder.rglob("*") if p.is_file() and not p.name.endswith("verified.json")}


def temporary_files(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.rglob("*")
                  if p.name.endswith(".part") or p.name.startswith((".tmp-", ".write-check-")))


def manifests(media: Path) -> dict[Path, dict[str, Any]]:
    """Frame folders with a manifest -> the manifest, asserting each is complete (files with their sizes)."""
    found = {}
    for path in media.rglob(MANIFEST_FILE):
        manifest = read_manifest(str(path.parent))
        assert manifest is not None, f"incomplete or unreadable manifest {path}"
        for name, size in zip(manifest["files"], manifest["sizes"], strict=True):  # type: ignore[call-overload]
            assert (path.parent / name).stat().st_size == size
        found[path.parent] = manifest
    return found


def complete_frame_dirs(media: Path) -> list[Path]:
    return sorted(path.parent for path in media.rglob(MANIFEST_FILE) if read_manifest(str(path.parent)) is not None)


def wait_until(condition: Callable[[], bool], process: "subprocess.Popen[Any]", what: str,
               timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if process.poll() is not None:
            raise AssertionError(f"the process ended (status {process.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def kill_outside_writes(process: "subprocess.Popen[Any]", folder: Path) -> list[str]:
    """SIGKILL a process group at a moment when it has no temporary file open under ``folder``.

    Stops it (SIGSTOP) and looks for temporary files; while one exists the process is resumed briefly. Returns
    the temporary files present at the kill (empty unless no clean moment was found in 200 tries).
    """
    group = os.getpgid(process.pid)
    leftovers: list[str] = []
    for _ in range(200):
        os.killpg(group, signal.SIGSTOP)
        leftovers = temporary_files(folder)
        if not leftovers:
            break
        os.killpg(group, signal.SIGCONT)
        time.sleep(0.002)
    os.killpg(group, signal.SIGKILL)
    process.wait(timeout=30)
    return leftovers


def start(command: list[str], cwd: Path, env: dict[str, str], log: Path) -> "subprocess.Popen[str]":
    with open(log, "w") as out:
        return subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)


def finish(process: "subprocess.Popen[str]", log: Path, what: str) -> str:
    try:
        process.wait(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            os.killpg(os.getpgid(process.pid), signal.SIGKILL)
            process.wait()
    output = log.read_text(errors="replace")
    check_completed(subprocess.CompletedProcess(process.args, process.returncode, output, output), what)
    return output


def media_cache_line(output: str) -> tuple[int, int]:
    """(videos, from cache) of the scenario's log line."""
    match = re.search(r"media in \S+: (\d+) videos, (\d+) from cache", output)
    assert match, "the scenario's media line is missing from helm-run's output"
    return int(match.group(1)), int(match.group(2))


# --------------------------------------------------------------------------------------------- helm-run


@dataclass
class Reference:
    stats: dict[str, tuple[int, float]]
    keys: Counter[tuple[str, tuple[str, ...]]]


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """An uninterrupted helm-run of the entry: the stats every interrupted or concurrent run must reproduce."""
    workdir = tmp_path_factory.mktemp("reference-run")
    with FakeModelServer(scripted) as fake:
        process = subprocess.run(helm_run_command([ENTRY], "ref", private_local_path(workdir / "local", fake)),
                                 cwd=workdir, env=helm_environment(fake), capture_output=True, text=True,
                                 timeout=TIMEOUT)
        check_completed(process, "reference helm-run")
        keys = collections.Counter(request_key(r) for r in fake.requests)
    assert sum(keys.values()) == len(sample_rows())
    return Reference(comparable_stats(workdir / "benchmark_output" / "runs" / "ref" / RUN), keys)


def test_killed_helm_run_resumes_from_the_request_cache(tmp_path: Path, reference_run: Reference) -> None:
    rows = len(sample_rows())
    delay = {"seconds": DELAY}

    def slow(recorded: Recorded) -> Reply:
        reply = scripted(recorded)
        reply.delay = delay["seconds"]
        return reply

    with FakeModelServer(slow) as fake:
        local = private_local_path(tmp_path / "local", fake)
        env = helm_environment(fake)
        command = helm_run_command([ENTRY], "resume", local, threads=1)  # one request at a time
        first = start(command, tmp_path, env, tmp_path / "first.log")
        wanted = max(3, rows // 3)
        try:
            wait_until(lambda: len(fake.requests) > wanted, first, f"{wanted + 1} requests")
        finally:  # killed here in any case (its whole group), and waited for
            reap([first], group=True)
        before_kill = fake.requests
        # With one thread HELM sends a request only after the previous answer is cached: all but the last
        # request (still inside the fake's delay) completed.
        completed = [request_key(r) for r in before_kill[:-1]]
        assert len(completed) >= wanted
        media = tmp_path / "benchmark_output" / "scenarios" / "roboreward"
        media_before = file_states(media / "frames")  # (the provenance record next to it is rewritten by design)
        frame_dirs = complete_frame_dirs(media)
        assert media_before and frame_dirs, "the killed run prepared no media"
        assert not (tmp_path / "benchmark_output" / "runs" / "resume" / RUN / "stats.json").exists()

        delay["seconds"] = 0.0
        rerun = start(command, tmp_path, env, tmp_path / "rerun.log")
        output = finish(rerun, tmp_path / "rerun.log", "helm-run after the kill")
        after = [request_key(r) for r in fake.requests[len(before_kill):]]

    repeated = set(completed) & set(after)
    assert not repeated, f"{len(repeated)} request(s) completed before the kill were sent again"
    assert collections.Counter(completed) + collections.Counter(after) == reference_run.keys
    assert comparable_stats(tmp_path / "benchmark_output" / "runs" / "resume" / RUN) == reference_run.stats
    # The rerun decoded nothing: every media file is untouched and every video came from the cache.
    assert file_states(media / "frames") == media_before, "the rerun rewrote media files"
    videos, cached = media_cache_line(output)
    assert videos == rows and cached == len(frame_dirs), (videos, cached, len(frame_dirs))
    assert temporary_files(tmp_path / "benchmark_output") == []


def test_two_helm_runs_of_the_same_entry_share_output_and_cache(tmp_path: Path, reference_run: Reference) -> None:
    with FakeModelServer(scripted) as fake:
        local = private_local_path(tmp_path / "local", fake)
        env = helm_environment(fake)
        runs: list[subprocess.Popen[str]] = []
        try:
            for suite in ("one", "two"):
                runs.append(start(helm_run_command([ENTRY], suite, local), tmp_path, env, tmp_path / f"{suite}.log"))
            for process, suite in zip(runs, ("one", "two"), strict=True):
                finish(process, tmp_path / f"{suite}.log", f"concurrent helm-run --suite {suite}")
        finally:
            reap(runs, group=True)
        sent = len(fake.requests)
        third = subprocess.run(helm_run_command([ENTRY], "three", local), cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=TIMEOUT)
        check_completed(third, "helm-run after the concurrent pair")
        sent_by_third = len(fake.requests) - sent
    rows = len(sample_rows())
    assert rows <= sent <= 2 * rows
    assert sent_by_third == 0, "the request cache written by two processes at once lost answers"
    for suite in ("one", "two", "three"):
        assert comparable_stats(tmp_path / "benchmark_output" / "runs" / suite / RUN) == reference_run.stats, suite
    media = tmp_path / "benchmark_output" / "scenarios" / "roboreward"
    assert len(manifests(media)) == len({sha256((SAMPLE / r["file_name"]).read_bytes()) for r in sample_rows()})
    assert temporary_files(tmp_path / "benchmark_output") == []


# --------------------------------------------------------------------------------------------- roboreward prepare


def prepare_command(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "helm_roboreward.cli", "prepare", "--data", "sample", "--output-path", str(out),
            "--quiet", *extra]


def environment() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}


def distinct_videos() -> int:
    return len({sha256((SAMPLE / r["file_name"]).read_bytes()) for r in sample_rows()})


@dataclass
class PreparedReference:
    contents: dict[str, str]
    frames: int


@pytest.fixture(scope="module")
def reference_prepare(tmp_path_factory: pytest.TempPathFactory) -> PreparedReference:
    """An uninterrupted prepare keeping every frame: the bytes every other prepare must reproduce."""
    out = tmp_path_factory.mktemp("reference-prepare") / "out"
    process = subprocess.run(prepare_command(out, *EVERY_FRAME, "--jobs", "2"), env=environment(),
                             capture_output=True, text=True, timeout=TIMEOUT)
    check_completed(process, "reference prepare")
    frames = int(re.search(r"frames: (\d+)", process.stdout).group(1))  # type: ignore[union-attr]
    assert f"distinct videos ready: {distinct_videos()}" in process.stdout
    return PreparedReference(contents(out), frames)


def test_killed_prepare_resumes_without_redoing_finished_videos(tmp_path: Path,
                                                                reference_prepare: PreparedReference) -> None:
    out = tmp_path / "out"
    media = out / "scenarios" / "roboreward"
    total = distinct_videos()
    assert total >= 6, "the sample needs a few distinct videos for a mid-way kill"
    command = prepare_command(out, *EVERY_FRAME, "--jobs", "1")
    first = start(command, tmp_path, environment(), tmp_path / "first.log")
    wanted = min(3, total // 3)
    try:
        wait_until(lambda: len(list(media.rglob(MANIFEST_FILE))) >= wanted, first, f"{wanted} manifests")
        left_at_kill = kill_outside_writes(first, out)
    finally:
        reap([first], group=True)
    assert left_at_kill == [], f"no moment without a temporary file: {left_at_kill}"
    finished = complete_frame_dirs(media)
    assert wanted <= len(finished) < total, f"the kill did not land mid-way ({len(finished)} of {total} done)"
    finished_files = {path: state for path, state in file_states(media).items()
                      if any((media / path).parent == folder for folder in finished)}

    rerun = subprocess.run(command, cwd=tmp_path, env=environment(), capture_output=True, text=True,
                           timeout=TIMEOUT)
    check_completed(rerun, "prepare after the kill")
    assert f"cache hits: {len(finished)}" in rerun.stdout and f"distinct videos ready: {total}" in rerun.stdout
    assert temporary_files(out) == []
    assert len(manifests(media)) == total
    now = file_states(media)
    rewritten = [path for path, state in finished_files.items() if now.get(path) != state]
    assert not rewritten, f"frames finished before the kill were rewritten: {rewritten[:5]}"
    assert contents(out) == reference_prepare.contents, "the resumed cache differs from an uninterrupted one"


def test_two_prepares_at_once_keeping_every_frame_and_copying_videos(tmp_path: Path,
                                                                    reference_prepare: PreparedReference) -> None:
    out = tmp_path / "out"
    for label, extra in (("frames", (*EVERY_FRAME, "--jobs", "2")), ("native", ("--video", "native", "--jobs", "1"))):
        pair: list[subprocess.Popen[str]] = []
        try:
            for i in range(2):
                pair.append(start(prepare_command(out, *extra), tmp_path, environment(), tmp_path / f"{label}-{i}.log"))
            outputs = [finish(process, tmp_path / f"{label}-{i}.log", f"concurrent prepare ({label})")
                       for i, process in enumerate(pair)]
        finally:
            reap(pair, group=True)
        for output in outputs:
            assert f"distinct videos ready: {distinct_videos()}" in output
        assert temporary_files(out) == []
    media = out / "scenarios" / "roboreward"
    assert len(manifests(media)) == distinct_videos()
    frames_only = {path: digest for path, digest in contents(out).items()
                   if path.startswith(os.path.join("scenarios", "roboreward", "frames"))}
    assert frames_only == reference_prepare.contents, "two concurrent prepares wrote other bytes than one"
    videos = sorted((media / "videos").rglob("*.mp4"))
    assert len(videos) == distinct_videos()
    for video in videos:
        assert hashlib.sha256(video.read_bytes()).hexdigest()[:32] == video.stem, f"corrupt copy {video}"
    # A third run finds everything.
    again = subprocess.run(prepare_command(out, *EVERY_FRAME), env=environment(), capture_output=True, text=True,
                           timeout=TIMEOUT)
    check_completed(again, "prepare after the concurrent pair")
    assert f"cache hits: {distinct_videos()}" in again.stdout


class StaleTemporaryFilesError(Exception):
    """Temporary files of a killed writer survived a rerun (a shared cache would collect them forever)."""


def test_rerun_removes_temporary_files_of_a_writer_killed_mid_write(tmp_path: Path) -> None:
    out = tmp_path / "out"
    media = out / "scenarios" / "roboreward"
    for extra in ((), ("--video", "native")):
        check_completed(subprocess.run(prepare_command(out, "--jobs", "1", *extra), env=environment(),
                                       capture_output=True, text=True, timeout=TIMEOUT), "prepare")
    # What a SIGKILL inside write_atomically / store_video leaves: a half-written frame folder without
    # manifest holding a temporary file, and a temporary video copy; both an hour old.
    folder = sorted(media.rglob(MANIFEST_FILE))[0].parent
    (folder / MANIFEST_FILE).unlink()
    stale = [folder / ".tmp-killed.part", next((media / "videos").rglob("*.mp4")).parent / ".tmp-killed.mp4.99999.part"]
    for path in stale:
        path.write_bytes(b"half a file")
        an_hour_ago = time.time() - 3600
        os.utime(path, (an_hour_ago, an_hour_ago))
    for extra in ((), ("--video", "native")):
        check_completed(subprocess.run(prepare_command(out, "--jobs", "1", *extra), env=environment(),
                                       capture_output=True, text=True, timeout=TIMEOUT), "rerun")
    assert read_manifest(str(folder)) is not None
    if temporary_files(out):
        raise StaleTemporaryFilesError(f"still there after the rerun: {temporary_files(out)}")

