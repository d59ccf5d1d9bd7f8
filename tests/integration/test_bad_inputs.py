"""The bad-input catalogue: broken data, videos, options, output folders and model outputs, through the user's commands.

Every case is one parametrized test case and one row of ``docs/bad_inputs.md`` (a test keeps the two in
sync). Entry points, as a user meets them:

- ``roboreward prepare`` (``python -m helm_roboreward.cli prepare``, a subprocess) for data, video and
  output-folder cases. Checked: the exit status; a message naming the file, line and field (or option) and
  the fix; no Python traceback; and that nothing already computed is lost or corrupted: a failure before any
  media work leaves an existing cache byte-for-byte as it was (and a rerun on repaired data finds every video
  in it), a failure of some rows still prepares every good row (complete manifests) and a rerun reports those
  as cache hits without rewriting a file.
- ``helm-run`` (a subprocess) for run-entry options: non-zero exit, the message in its output, no stats
  written and no request sent. A traceback in helm-run's output is HELM's own way of reporting and accepted.
- ``helm-run`` against the loopback fake model server (tests/helpers/fakes) for bad model outputs:
  the run completes and the metric charges or skips the instance as PROTOCOL section 6 says.

A message that names the problem but not what to do about it fails with :class:`MissingFixError`, a helm-run
that dies on one model output with :class:`RunCrashedError`, so a regression says which promise it broke.

Nothing here hard-codes the bundled sample: the small data set is the sample's smallest subset with at least
three rows, read from its ``metadata.jsonl`` at test time.
"""

import collections
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import av
import pytest

from helm_roboreward.protocol.frame_cache import frames_directory, frames_key, read_manifest
from helm_roboreward.protocol.rules import FrameOptions
from helm_roboreward.protocol.safe_files import file_digest
from tests.helpers.fakes import FakeModelServer, Recorded, Reply, media_parts
from tests.helpers.harness import (
    REPO,
    SAMPLE,
    TIMEOUT,
    check_completed,
    finish_logged,
    gold_of,
    helm_environment,
    helm_run_command,
    private_local_path,
    prompt_of,
    read_json,
    reap,
    request_states,
    run_stats,
    start_logged,
)
from tests.helpers.path_cases import EXPORT_REFUSALS
from tests.helpers.sample import sample_rows
from tests.helpers.unwritable import unwritable
from tests.helpers.videos import make_audio_only, make_text_file, make_truncated, make_video, make_zero_byte

DOC = REPO / "docs" / "bad_inputs.md"
EXIT_FAILED_ROWS = 1
"""``roboreward prepare``: some rows failed, the others are prepared."""
EXIT_USAGE = 2
"""``roboreward prepare``: bad data or options, nothing done."""


class MissingFixError(Exception):
    """The message names the problem but not what to do about it."""


class RunCrashedError(Exception):
    """helm-run failed the whole run on one model output instead of scoring it (PROTOCOL section 6)."""


# --------------------------------------------------------------------------------------------- helpers


def subset_of(row: dict[str, Any]) -> str:
    return str(row["file_name"]).split("/", 1)[0]


def small_rows() -> list[dict[str, Any]]:
    """The rows of the sample's smallest subset with at least three rows (all rows if none has three)."""
    rows = sample_rows()
    sizes = collections.Counter(subset_of(row) for row in rows)
    candidates = sorted((count, subset) for subset, count in sizes.items() if count >= 3)
    if not candidates:
        return rows
    chosen = candidates[0][1]
    return [row for row in rows if subset_of(row) == chosen]


def write_metadata(root: Path, rows: Sequence[dict[str, Any]]) -> None:
    path = root / "test" / "metadata.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def build_data(root: Path, rows: Sequence[dict[str, Any]]) -> Path:
    """A data folder in the dataset layout holding copies of the sample's videos for ``rows``."""
    write_metadata(root, rows)
    for row in rows:
        target = root / "test" / row["file_name"]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SAMPLE / row["file_name"], target)
    return root


def roboreward(*args: str, cwd: Path) -> "subprocess.CompletedProcess[str]":
    """``roboreward ...`` as a user runs it (``python -m helm_roboreward.cli`` of the test Python)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}
    return subprocess.run([sys.executable, "-m", "helm_roboreward.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)


def prepare(data: Path, out: Path, *extra: str) -> "subprocess.CompletedProcess[str]":
    return roboreward("prepare", "--data", str(data), "--output-path", str(out), "--jobs", "1", "--quiet", *extra,
                      cwd=out.parent)


def output_of(process: "subprocess.CompletedProcess[str]") -> str:
    return process.stdout + process.stderr


def media_dir(out: Path) -> Path:
    return out / "scenarios" / "roboreward"


def snapshot(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under ``folder``: relative path -> (size, mtime_ns, sha256).

    Verification stamps (``verified.json``) are left out: they record inodes and change times, which a copy of
    the cache or a re-check legitimately renews; they hold no media.
    """
    files: dict[str, tuple[int, int, str]] = {}
    if not folder.exists():
        return files
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink() and not path.name.endswith("verified.json"):
            info = path.stat()
            files[str(path.relative_to(folder))] = (info.st_size, info.st_mtime_ns,
                                                    hashlib.sha256(path.read_bytes()).hexdigest())
    return files


def leftovers(folder: Path) -> list[str]:
    """Temporary files a writer left behind (``.part``, ``.tmp-*``, ``.write-check-*``)."""
    return sorted(str(p) for p in folder.rglob("*")
                  if p.name.endswith(".part") or p.name.startswith((".tmp-", ".write-check-")))


def assert_no_traceback(process: "subprocess.CompletedProcess[str]") -> None:
    assert "Traceback (most recent call last)" not in output_of(process), output_of(process)[-3000:]


def assert_says(text: str, fragments: Sequence[str]) -> None:
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in the output:\n{text[-3000:]}"


def require_fix(text: str, fixes: Sequence[str], what: str) -> None:
    """Raise :class:`MissingFixError` unless one of ``fixes`` (case-insensitive) is in ``text``."""
    if not any(fix.lower() in text.lower() for fix in fixes):
        raise MissingFixError(f"{what}: none of {list(fixes)} in:\n{text}")


def frames_of(video: Path, cache: Path) -> dict[str, object] | None:
    """The complete manifest of a video's official frames in a cache, or None."""
    return read_manifest(frames_directory(str(cache), frames_key(file_digest(str(video)), FrameOptions())))


def make_zero_frame_mp4(path: Path) -> Path:
    """An mp4 whose container declares an H.264 video stream (64x48, 10 fps) holding no frame at all.

    A plain mp4 muxer drops a track without samples; a fragmented mp4 (``empty_moov``) writes the track
    header up front, so the stream exists and has nothing in it.
    """
    with av.open(str(path), mode="w", format="mp4", options={"movflags": "frag_keyframe+empty_moov"}) as container:
        stream = container.add_stream("libx264", rate=10)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        container.start_encoding()
    with av.open(str(path)) as check:
        assert len(check.streams.video) == 1 and check.streams.video[0].frames == 0
    return path


# --------------------------------------------------------------------------------------------- prepare cases


@dataclass
class Ctx:
    """One case's copy of the small data set and its output folder."""

    data: Path
    out: Path
    rows: list[dict[str, Any]]
    target: int = 1
    """Index of the row a case breaks (the second: a good row comes first)."""

    @property
    def metadata(self) -> Path:
        return self.data / "test" / "metadata.jsonl"

    @property
    def row(self) -> dict[str, Any]:
        return self.rows[self.target]

    @property
    def line(self) -> str:
        return f"line {self.target + 1}"

    @property
    def video(self) -> Path:
        return self.data / "test" / str(self.row["file_name"])

    @property
    def subset(self) -> str:
        return subset_of(self.row)

    def rewrite(self, rows: Sequence[dict[str, Any]]) -> None:
        write_metadata(self.data, rows)

    def with_target(self, **changes: Any) -> list[dict[str, Any]]:
        rows = [dict(row) for row in self.rows]
        rows[self.target].update(changes)
        return rows


@dataclass(frozen=True)
class PrepareCase:
    id: str
    break_it: Callable[[Ctx], object]
    exit: int
    says: Callable[[Ctx], list[str]]
    """Fragments of the message: file, line, field (or option), the problem."""
    fixes: tuple[str, ...]
    """The fix: one of these must be in the message (in the failing row's own line for row failures)."""
    row_failure: bool = False
    """True: the other rows are prepared (start from an empty output); False: nothing is done (start warm)."""
    args: tuple[str, ...] = ()


def _without_field(ctx: Ctx) -> None:
    rows = ctx.with_target()
    del rows[ctx.target]["reward"]
    ctx.rewrite(rows)


def _not_json(ctx: Ctx) -> None:
    lines = ctx.metadata.read_text(encoding="utf-8").splitlines()
    lines[ctx.target] = lines[ctx.target][: len(lines[ctx.target]) // 2]  # a line cut in the middle
    ctx.metadata.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _not_utf8(ctx: Ctx) -> None:
    lines = ctx.metadata.read_bytes().splitlines()
    lines[ctx.target] = json.dumps(dict(ctx.row, task="place the cup on the plate")).encode("ascii").replace(
        b"plate", b"assiette \xe9maill\xe9e")  # Latin-1 bytes, as a spreadsheet export writes them
    ctx.metadata.write_bytes(b"\n".join(lines) + b"\n")


def _symlink_out(ctx: Ctx) -> None:
    outside = ctx.data.parent / "elsewhere" / "video.mp4"
    outside.parent.mkdir()
    shutil.copyfile(ctx.video, outside)
    ctx.video.unlink()
    ctx.video.symlink_to(outside)


LINE_SEPARATORS = "\u2028\u2029\u0085"
"""Characters JSON allows raw inside a string that ``str.splitlines`` breaks lines at."""
INVISIBLE_TASK = "\u200b\u2060 \ufeff\u200d"


def _line_separators(ctx: Ctx) -> None:
    """The target row's task holds raw line separators (valid JSON); the row after it has reward 6."""
    rows = ctx.with_target(task=f"pick up{LINE_SEPARATORS}the block")
    rows[ctx.target + 1]["reward"] = 6
    ctx.metadata.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    assert "\u2028" in ctx.metadata.read_text(encoding="utf-8")


def _video_folder(ctx: Ctx) -> None:
    ctx.video.unlink()
    ctx.video.mkdir()  # a folder named like the row's mp4 (an unpacked archive, a failed download)


def _dotdot(ctx: Ctx) -> None:
    shutil.copyfile(ctx.video, ctx.data / "outside.mp4")  # the target exists: it is the path that is refused
    ctx.rewrite(ctx.with_target(file_name=f"{ctx.subset}/../../outside.mp4"))


PREPARE_CASES = [
    # ------------------------------------------------------------------ data: the metadata file
    PrepareCase("metadata-missing", lambda c: c.metadata.unlink(), EXIT_USAGE,
                lambda c: [str(c.metadata), "not found"], ("test/metadata.jsonl and test/<subset>/*.mp4",)),
    PrepareCase("metadata-empty", lambda c: c.metadata.write_bytes(b""), EXIT_USAGE,
                lambda c: [str(c.metadata), "no rows"], ("re-download the dataset",)),
    PrepareCase("metadata-not-json", _not_json, EXIT_USAGE,
                lambda c: [str(c.metadata), c.line, "not valid JSON"], ("fix or re-download the metadata file",)),
    PrepareCase("metadata-not-utf8", _not_utf8, EXIT_USAGE,
                lambda c: [str(c.metadata), c.line, "not valid UTF-8"], ("re-save it as UTF-8",)),
    PrepareCase("metadata-json-array", lambda c: c.metadata.write_text(json.dumps(c.rows) + "\n"), EXIT_USAGE,
                lambda c: [str(c.metadata), "line 1", "expected a JSON object, got list"],
                ("fix or re-download the metadata file",)),
    # ------------------------------------------------------------------ data: rows
    PrepareCase("row-missing-field", _without_field, EXIT_USAGE,
                lambda c: [str(c.metadata), f"{c.line}, field 'reward': missing"],
                ("fix or re-download the metadata file",)),
    PrepareCase("row-wrong-type", lambda c: c.rewrite(c.with_target(reward=str(c.row["reward"]))), EXIT_USAGE,
                lambda c: [str(c.metadata), f"{c.line}, field 'reward'", "expected an integer 1..5"],
                ("fix or re-download the metadata file",)),
    PrepareCase("reward-out-of-range", lambda c: c.rewrite(c.with_target(reward=6)), EXIT_USAGE,
                lambda c: [str(c.metadata), f"{c.line}, field 'reward'", "6 is outside 1..5"],
                ("fix or re-download the metadata file",)),
    PrepareCase("metadata-line-separators", _line_separators, EXIT_USAGE,
                lambda c: [str(c.metadata), "1 invalid row(s)",
                           f"line {c.target + 2}, field 'reward': 6 is outside 1..5"],
                ("fix or re-download the metadata file",)),
    PrepareCase("task-no-visible-characters", lambda c: c.rewrite(c.with_target(task=INVISIBLE_TASK)), EXIT_USAGE,
                lambda c: [str(c.metadata), f"{c.line}, field 'task': has no visible characters"],
                ("write the robot's task instruction",)),
    PrepareCase("duplicate-file-name", lambda c: c.rewrite(c.with_target(file_name=c.rows[0]["file_name"])),
                EXIT_USAGE, lambda c: [str(c.metadata), f"{c.line}, field 'file_name'", "already appears on line 1"],
                ("every row needs its own video file",)),
    PrepareCase("absolute-path", lambda c: c.rewrite(c.with_target(file_name=str(c.video))), EXIT_USAGE,
                lambda c: [str(c.metadata), f"{c.line}, field 'file_name'", "must be a relative path"],
                ("'<subset>/<name>.mp4'",)),
    PrepareCase("dotdot-path", _dotdot, EXIT_USAGE,
                lambda c: [str(c.metadata), f"{c.line}, field 'file_name'", "'..'"], ("inside the split folder",)),
    PrepareCase("symlink-outside-data", _symlink_out, EXIT_FAILED_ROWS,
                lambda c: [str(c.metadata), f"{c.line}, field 'file_name'", "outside the data folder"],
                ("Replace the link with the file itself",), row_failure=True),
    PrepareCase("unknown-subset", lambda c: None, EXIT_USAGE,
                lambda c: ["subset 'no_such_subset' not found", "Available subsets: " + c.subset],
                ("--subset all",), args=("--subset", "no_such_subset")),
    # ------------------------------------------------------------------ videos
    PrepareCase("missing-video", lambda c: c.video.unlink(), EXIT_FAILED_ROWS,
                lambda c: [str(c.metadata), f"{c.line}, field 'file_name'", "not found"],
                ("Re-download the subset",), row_failure=True),
    PrepareCase("video-is-a-folder", _video_folder, EXIT_FAILED_ROWS,
                lambda c: [str(c.metadata), f"{c.line}, field 'file_name'", "is a folder, not a video file"],
                ("Replace it with the mp4 the row names",), row_failure=True),
    PrepareCase("empty-video", lambda c: make_zero_byte(c.video), EXIT_FAILED_ROWS,
                lambda c: [str(c.metadata), f"{c.line}, field 'file_name'", "empty (0 bytes)"],
                ("Re-download the subset",), row_failure=True),
    PrepareCase("truncated-mp4", lambda c: make_truncated(c.video, source=make_video(c.data.parent / "full.mp4", 30)),
                EXIT_FAILED_ROWS, lambda c: [f"metadata {c.line} ({c.row['file_name']})", "cannot be read as a video"],
                ("re-download", "replace the file", "remove the row"), row_failure=True),
    PrepareCase("not-a-video", lambda c: make_text_file(c.video), EXIT_FAILED_ROWS,
                lambda c: [f"metadata {c.line} ({c.row['file_name']})", "cannot be read as a video"],
                ("re-download", "replace the file", "remove the row"), row_failure=True),
    PrepareCase("zero-frame-mp4", lambda c: make_zero_frame_mp4(c.video), EXIT_FAILED_ROWS,
                lambda c: [f"metadata {c.line} ({c.row['file_name']})", "the video stream has no frames"],
                ("re-download", "replace the file", "remove the row"), row_failure=True),
    PrepareCase("audio-only-mp4", lambda c: make_audio_only(c.video), EXIT_FAILED_ROWS,
                lambda c: [f"metadata {c.line} ({c.row['file_name']})", "no video stream"],
                ("re-download", "replace the file", "remove the row"), row_failure=True),
]


@dataclass(frozen=True)
class Small:
    pristine: Path
    """The small data set, untouched."""
    warm: Path
    """An output folder where ``roboreward prepare`` already prepared it."""
    rows: list[dict[str, Any]]
    distinct_videos: int


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Small:
    root = tmp_path_factory.mktemp("small")
    rows = small_rows()
    data = build_data(root / "data", rows)
    warm = root / "warm"
    process = prepare(data, warm)
    check_completed(process, "roboreward prepare (warm cache)")
    distinct = len({file_digest(str(data / "test" / row["file_name"])) for row in rows})
    assert "cache hits: 0" in process.stdout and f"distinct videos ready: {distinct}" in process.stdout
    return Small(data, warm, rows, distinct)


def case_context(small: Small, tmp_path: Path, warm: bool) -> Ctx:
    data = tmp_path / "data"
    shutil.copytree(small.pristine, data, symlinks=True)
    out = tmp_path / "out"
    if warm:
        shutil.copytree(small.warm, out)
    return Ctx(data=data, out=out, rows=[dict(row) for row in small.rows])


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in PREPARE_CASES])
def test_prepare_bad_data_and_videos(case: PrepareCase, small: Small, tmp_path: Path) -> None:
    ctx = case_context(small, tmp_path, warm=not case.row_failure)
    before = snapshot(ctx.out)
    case.break_it(ctx)

    failed = prepare(ctx.data, ctx.out, *case.args)
    text = output_of(failed)
    assert failed.returncode == case.exit, text[-3000:]
    assert_no_traceback(failed)
    assert_says(failed.stderr, case.says(ctx))
    assert leftovers(ctx.out) == []

    if case.row_failure:
        # The other rows were prepared: complete manifests, and a rerun finds them all in the cache.
        good = [row for index, row in enumerate(ctx.rows) if index != ctx.target]
        good_digests = {file_digest(str(ctx.data / "test" / row["file_name"])) for row in good}
        for row in good:
            manifest = frames_of(ctx.data / "test" / row["file_name"], media_dir(ctx.out) / "frames")
            assert manifest is not None, f"no complete frames for the good row {row['file_name']}"
        prepared = snapshot(ctx.out)
        assert prepared, "nothing was prepared"
        rerun = prepare(ctx.data, ctx.out, *case.args)
        assert rerun.returncode == case.exit, output_of(rerun)[-3000:]
        assert_says(rerun.stdout, [f"distinct videos ready: {len(good_digests)}",
                                   f"cache hits: {len(good_digests)}"])
        assert_says(rerun.stderr, case.says(ctx))
        assert snapshot(ctx.out) == prepared, "the rerun rewrote prepared media"
        problem_lines = "\n".join(line for line in failed.stderr.splitlines() if ctx.row["file_name"] in line)
        require_fix(problem_lines, case.fixes, case.id)
    else:
        # Nothing was done: the existing cache is exactly as it was, and once the data is repaired a rerun
        # finds every video in it.
        assert snapshot(ctx.out) == before, "a failed command changed the existing cache"
        shutil.rmtree(ctx.data)
        shutil.copytree(small.pristine, ctx.data, symlinks=True)
        repaired = prepare(ctx.data, ctx.out)
        check_completed(repaired, "roboreward prepare on the repaired data")
        assert f"cache hits: {small.distinct_videos}" in repaired.stdout, repaired.stdout
        assert snapshot(ctx.out) == before
        require_fix(failed.stderr, case.fixes, case.id)


# --------------------------------------------------------------------------------------------- output folders


@dataclass(frozen=True)
class OutputCase:
    id: str
    says: Callable[[Ctx], list[str]]
    fixes: tuple[str, ...]


OUTPUT_CASES = [
    OutputCase("output-folder-is-a-file", lambda c: [str(c.out / "scenarios")],
               ("Choose a writable output folder", "is a file", "not a folder")),
    OutputCase("output-folder-read-only", lambda c: [str(media_dir(c.out)), "cannot write to the media folder"],
               ("Choose a writable output folder",)),
]


@pytest.mark.parametrize("case", [
    pytest.param(OUTPUT_CASES[0], id=OUTPUT_CASES[0].id),
    pytest.param(OUTPUT_CASES[1], id=OUTPUT_CASES[1].id),
])
def test_prepare_unwritable_output_folder(case: OutputCase, small: Small, tmp_path: Path) -> None:
    ctx = case_context(small, tmp_path, warm=case.id == "output-folder-read-only")
    if case.id == "output-folder-is-a-file":
        # A previous run's results live in the output folder; a stray file sits where scenarios/ should be.
        (ctx.out / "runs" / "v1").mkdir(parents=True)
        (ctx.out / "runs" / "v1" / "stats.json").write_text('[{"name": {"name": "abs_error"}, "mean": 1.0}]')
        (ctx.out / "scenarios").write_text("not a folder\n")
        locked: list[Path] = []
    else:
        locked = [media_dir(ctx.out), *[p for p in media_dir(ctx.out).rglob("*") if p.is_dir()]]
    before = snapshot(ctx.out)
    with unwritable(locked) if locked else contextlib.nullcontext():
        # --last-frame needs new frames: there is something to write.
        failed = prepare(ctx.data, ctx.out, "--last-frame")
    assert failed.returncode == EXIT_USAGE, output_of(failed)[-3000:]
    assert_no_traceback(failed)
    assert_says(failed.stderr, case.says(ctx))
    assert snapshot(ctx.out) == before, "the failed command changed the output folder"
    assert leftovers(ctx.out) == []
    if locked:
        rerun = prepare(ctx.data, ctx.out)
        check_completed(rerun, "roboreward prepare once the folder is writable again")
        assert f"cache hits: {small.distinct_videos}" in rerun.stdout
    require_fix(failed.stderr, case.fixes, case.id)


# --------------------------------------------------------------------------------------------- run-entry options


@dataclass(frozen=True)
class OptionCase:
    id: str
    entry: str
    says: tuple[str, ...]


CONSTANT = "model=baseline/constant-3"
OPTION_CASES = [
    OptionCase("option-unknown-subset", f"roboreward:subset=no_such_subset,data=sample,{CONSTANT}",
               ("subset='no_such_subset' is not in data=sample", "Valid subsets: all, ")),
    OptionCase("option-unknown-data", f"roboreward:data=hff,{CONSTANT}",
               ("data='hff': not 'hf', 'sample' or an existing folder", "Give the folder of a local copy")),
    OptionCase("option-data-folder-without-metadata", f"roboreward:data=DATA_DIR,{CONSTANT}",
               ("test/metadata.jsonl not found", "A local copy must use the dataset layout")),
    OptionCase("option-unknown-video", f"roboreward:data=sample,video=hybrid,{CONSTANT}",
               ("video='hybrid' is not one of frames, native, auto",)),
    OptionCase("option-unknown-failed-policy", f"roboreward:data=sample,failed=ignore,{CONSTANT}",
               ("failed='ignore' is not one of max_error, skip",)),
    OptionCase("option-revision-with-sample", f"roboreward:data=sample,revision=abc123,{CONSTANT}",
               ("revision= applies to data=hf only; drop it for data=sample",)),
    OptionCase("option-native-video-on-frames-only-client",
               "roboreward:data=sample,video=native,model=anthropic/claude-sonnet-4-5-20250929",
               ("video=native", "AnthropicMessagesClient", "cannot send video", "Use video=frames")),
    OptionCase("option-fps-zero", f"roboreward:data=sample,fps=0,{CONSTANT}",
               ("roboreward: fps must be a positive number, got 0.0", "1 is the official rule")),
    OptionCase("option-max-frames-negative", f"roboreward:data=sample,max_frames=-1,{CONSTANT}",
               ("roboreward: max_frames must be 0 (no cap) or positive, got -1", "0 is the official rule")),
    OptionCase("option-subset-path", f"roboreward:subset=../../outside,data=DATA_DIR,{CONSTANT}",
               ("subset='../../outside' is not a subset id", "give the name of a folder under the data's test/")),
]


@dataclass
class HelmOutcome:
    workdir: Path
    returncode: int
    output: str
    requests: list[Recorded] = field(default_factory=list)


def _start(command: list[str], workdir: Path, env: dict[str, str]) -> "subprocess.Popen[str]":
    """Start a helm-run whose output goes to ``workdir/stdout.log`` (a pipe could fill up and stall it)."""
    return start_logged(command, workdir, env, workdir / "stdout.log")


def _finish(process: "subprocess.Popen[str]", workdir: Path) -> tuple[int, str]:
    return finish_logged(process, workdir / "stdout.log")


@pytest.fixture(scope="module")
def option_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, HelmOutcome]]:
    """Every option case's helm-run, started at once (each in its own folder)."""
    root = tmp_path_factory.mktemp("options")
    empty_data = root / "empty-data"
    (empty_data / "test").mkdir(parents=True)
    with FakeModelServer() as fake:
        env = helm_environment(fake)
        processes = {}
        try:
            for case in OPTION_CASES:
                workdir = root / case.id
                workdir.mkdir()
                local = private_local_path(workdir / "local", fake)
                entry = case.entry.replace("DATA_DIR", str(empty_data))
                processes[case.id] = (workdir, _start(helm_run_command([entry], "bad", local), workdir, env))
            outcomes = {case_id: HelmOutcome(workdir, *_finish(process, workdir))
                        for case_id, (workdir, process) in processes.items()}
        finally:  # one timed out: the others are ended and waited for too (no zombie helm-runs)
            reap(process for _, process in processes.values())
        requests = fake.requests
    for outcome in outcomes.values():
        outcome.requests = requests
    yield outcomes


@pytest.mark.parametrize("case", OPTION_CASES, ids=[c.id for c in OPTION_CASES])
def test_helm_run_bad_option(case: OptionCase, option_runs: dict[str, HelmOutcome]) -> None:
    outcome = option_runs[case.id]
    assert outcome.returncode != 0, outcome.output[-3000:]
    assert_says(outcome.output, case.says)
    runs = outcome.workdir / "benchmark_output" / "runs"
    assert sorted(runs.rglob("stats.json")) == [] and sorted(runs.rglob("per_instance_stats.json")) == []
    assert outcome.requests == [], "a request was sent"
    if runs.exists():  # HELM creates a run's folder before running it: never outside runs/<suite>/
        assert {path.name for path in runs.iterdir()} <= {"bad"}


# --------------------------------------------------------------------------------------------- model outputs

UNPARSEABLE = "The gripper closes on the block and lifts it; the final state is close to the goal."
PERMANENT_ERROR = "the video is longer than this model's context"
MODEL = "teetone/roboreward-8b,model_deployment=vllm/roboreward-8b"  # the vLLM path, against the loopback fake
MODEL_RUN = ("roboreward:subset=all,data=sample,video=native,model=teetone_roboreward-8b,"
             "model_deployment=vllm_roboreward-8b")
HUGE_ANSWER = "ANSWER: 1" + "0" * 100
MODEL_CASES = ["model-output-unparseable", "model-output-empty", "model-request-failed", "model-output-huge-number"]


@dataclass
class ModelOutputRun:
    run_dir: Path
    returncode: int
    output: str
    task_of_case: dict[str, str]
    states: list[dict[str, Any]] = field(default_factory=list)
    per_instance: dict[str, dict[str, float]] = field(default_factory=dict)

    def task_of(self, state: dict[str, Any]) -> str:
        return prompt_of(state).rsplit("\n\nTask: ", 1)[1]

    def states_of(self, case_id: str) -> list[dict[str, Any]]:
        return [s for s in self.states if self.task_of(s) == self.task_of_case[case_id]]


def _task_of_request(recorded: Recorded) -> str:
    return (media_parts(recorded)[0].text or "").rsplit("\n\nTask: ", 1)[1]


@pytest.fixture(scope="module")
def model_output_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModelOutputRun]:
    """Two helm-runs over the whole sample at once, each against its own fake.

    ``bad``: the fake answers the rows of three tasks badly (unparseable, empty, HTTP 400), the rest 'ANSWER: 3'.
    ``huge``: the rows of one task get 'ANSWER: 1' followed by 100 zeros, the rest 'ANSWER: 3'.
    """
    tasks = sorted({row["task"] for row in sample_rows()})
    assert len(tasks) >= 4, "the sample needs four distinct tasks"
    task_of_case = dict(zip(MODEL_CASES, tasks, strict=False))
    reply_of_task = {
        task_of_case["model-output-unparseable"]: Reply(text=UNPARSEABLE),
        task_of_case["model-output-empty"]: Reply(text=""),
        task_of_case["model-request-failed"]: Reply(status=400, error=PERMANENT_ERROR),
        task_of_case["model-output-huge-number"]: Reply(text=HUGE_ANSWER),
    }
    huge_task = task_of_case["model-output-huge-number"]

    def bad(recorded: Recorded) -> Reply:
        task = _task_of_request(recorded)
        return Reply(text="ANSWER: 3") if task == huge_task else reply_of_task.get(task, Reply(text="ANSWER: 3"))

    def huge(recorded: Recorded) -> Reply:
        return Reply(text=HUGE_ANSWER) if _task_of_request(recorded) == huge_task else Reply(text="ANSWER: 3")

    root = tmp_path_factory.mktemp("model-outputs")
    runs = {}
    with FakeModelServer(bad) as bad_fake, FakeModelServer(huge) as huge_fake:
        started = {}
        try:
            for name, fake in (("bad", bad_fake), ("huge", huge_fake)):
                workdir = root / name
                workdir.mkdir()
                local = private_local_path(workdir / "local", fake)
                command = helm_run_command([f"roboreward:subset=all,data=sample,model={MODEL}"], name, local)
                started[name] = (workdir, _start(command, workdir, helm_environment(fake)))
            finished = {name: _finish(process, workdir) for name, (workdir, process) in started.items()}
        finally:  # one timed out: the other is ended and waited for too
            reap(process for _, process in started.values())
        for name, (workdir, _) in started.items():
            returncode, output = finished[name]
            run = ModelOutputRun(workdir / "benchmark_output" / "runs" / name / MODEL_RUN, returncode, output,
                                 task_of_case)
            if (run.run_dir / "per_instance_stats.json").exists():
                run.states = request_states(run.run_dir)
                for entry in read_json(run.run_dir / "per_instance_stats.json"):
                    run.per_instance[entry["instance_id"]] = {
                        s["name"]["name"]: s["mean"] for s in entry["stats"] if "perturbation" not in s["name"]}
            runs[name] = run
    return runs


@pytest.mark.parametrize("case_id", MODEL_CASES[:3])
def test_bad_model_output(case_id: str, model_output_runs: dict[str, ModelOutputRun]) -> None:
    run = model_output_runs["bad"]
    assert run.returncode == 0, run.output[-3000:]  # the run completes
    mine = run.states_of(case_id)
    assert mine, f"no row has the task chosen for {case_id}"
    for state in mine:
        stats = run.per_instance[state["instance"]["id"]]
        if case_id == "model-request-failed":
            assert state["result"]["success"] is False
            assert "400" in state["result"]["error"] and PERMANENT_ERROR in state["result"]["error"]
            assert stats["failed_request"] == 1
            assert (stats["abs_error"], stats["squared_error"], stats["exact_match"]) == (4, 16, 0)  # official charge
            assert "invalid_output" not in stats  # a failed request is not an invalid output
        else:
            expected_text = UNPARSEABLE if case_id == "model-output-unparseable" else ""
            assert state["result"]["success"] is True
            assert state["result"]["completions"][0]["text"] == expected_text
            assert (stats["failed_request"], stats["invalid_output"]) == (0, 1)
            assert (stats["abs_error"], stats["squared_error"], stats["exact_match"]) == (4, 16, 0)
            assert "predicted_score" not in stats and "signed_error" not in stats
    # Kept: every other instance is scored as usual, and the run-level means follow.
    failed_task = run.task_of_case["model-request-failed"]
    invalid_tasks = {run.task_of_case["model-output-unparseable"], run.task_of_case["model-output-empty"]}
    errors = [4.0 if run.task_of(s) in invalid_tasks | {failed_task} else abs(3 - gold_of(s)) for s in run.states]
    stats = run_stats(run.run_dir)
    assert stats["num_instances"] == len(run.states) == len(sample_rows())
    assert stats["abs_error"] == pytest.approx(sum(errors) / len(errors), abs=1e-12)  # failed ones charged 4
    failed = sum(1 for s in run.states if run.task_of(s) == failed_task)
    assert stats["failed_request"] == pytest.approx(failed / len(run.states), abs=1e-12)
    invalid = sum(1 for s in run.states if run.task_of(s) in invalid_tasks)
    assert stats["invalid_output"] == pytest.approx(invalid / (len(run.states) - failed), abs=1e-12)


def test_bad_model_output_huge_number(model_output_runs: dict[str, ModelOutputRun]) -> None:
    case_id = "model-output-huge-number"
    run = model_output_runs["huge"]
    if run.returncode != 0 and "OverflowError" in run.output:
        raise RunCrashedError(run.output[-2000:])
    assert run.returncode == 0, run.output[-3000:]
    mine = run.states_of(case_id)
    assert mine
    for state in mine:
        stats = run.per_instance[state["instance"]["id"]]
        assert state["result"]["completions"][0]["text"] == HUGE_ANSWER
        assert (stats["invalid_output"], stats["abs_error"], stats["squared_error"]) == (1, 4, 16)
    errors = [4.0 if s in mine else abs(3 - gold_of(s)) for s in run.states]
    assert run_stats(run.run_dir)["abs_error"] == pytest.approx(sum(errors) / len(errors), abs=1e-12)


# --------------------------------------------------------------------------------------------- the catalogue


RUN_NAMES = "tests/official/test_run_names.py"
MISSING_MEDIA = "tests/integration/test_missing_media.py"
LOCAL_SUBSETS = "tests/integration/test_local_subsets.py"
PATH_SAFETY = "tests/integration/test_path_safety.py"
CACHE_INTEGRITY = "tests/protocol/test_cache_integrity.py"

OTHER_FILE_CASES: dict[str, str] = {
    # run names (helm-run)
    "option-fps-close-values": f"{RUN_NAMES}::test_entries_differing_only_in_fps_get_different_names",
    "option-revision-with-slash": f"{RUN_NAMES}::test_revisions_get_distinct_slash_free_names",
    # helm-summarize
    "summarize-missing-media": f"{MISSING_MEDIA}::"
                               "test_our_summarizer_writes_the_leaderboard_and_names_the_missing_file",
    "summarize-missing-media-plain-helm": f"{MISSING_MEDIA}::test_plain_helm_summarize_stops_without_a_leaderboard",
    # leaderboard vs report
    "report-subset-not-on-leaderboard": f"{LOCAL_SUBSETS}::test_report_stops_when_the_leaderboard_leaves_out_a_subset",
    "report-run-newer-than-leaderboard": f"{LOCAL_SUBSETS}::"
                                         "test_report_stops_when_a_run_finished_after_the_last_summarize",
    "report-never-summarized": f"{LOCAL_SUBSETS}::test_report_proceeds_on_a_suite_that_was_never_summarized",
    "files-data-not-a-local-copy": f"{LOCAL_SUBSETS}::test_files_with_data_refuses_a_folder_that_is_not_a_local_copy",
    # paths out of a command's root (the export cases are the ids of tests/helpers/path_cases.py's EXPORT_REFUSALS)
    **{case: f"{PATH_SAFETY}::test_export_media_refuses_a_path_out_of_its_roots" for case in (
        "export-source-dotdot-out-of-output", "export-source-dotdot-inside", "export-source-absolute-outside",
        "export-source-not-media", "export-source-wrong-content-type", "export-source-link-leads-out",
        "export-target-folder-link-leads-out")},
    "export-target-file-link": f"{PATH_SAFETY}::test_export_media_replaces_a_link_planted_at_a_target",
    "export-missing-file": f"{PATH_SAFETY}::test_export_media_reports_a_missing_file_without_refusing",
    "files-link-at-temporary-name": f"{PATH_SAFETY}::test_files_never_writes_through_a_link_at_the_old_temporary_name",
    "files-link-at-destination": f"{PATH_SAFETY}::test_files_replaces_a_link_planted_at_the_destination",
    "files-folder-link-leads-out": f"{PATH_SAFETY}::test_files_refuses_a_folder_link_leading_out_of_out",
    "report-out-links": f"{PATH_SAFETY}::test_report_replaces_links_planted_in_out",
    "report-out-is-a-file": f"{PATH_SAFETY}::test_report_refuses_an_out_path_through_a_file",
    "report-run-folder-link-leads-out": f"{PATH_SAFETY}::"
                                        "test_report_does_not_follow_a_run_folder_link_out_of_the_suite",
    "prepare-media-folder-link-leads-out": f"{PATH_SAFETY}::"
                                           "test_prepare_refuses_a_media_folder_link_out_of_the_output_path",
    # the media cache
    **{case: f"{CACHE_INTEGRITY}::{function}" for case, function in (
        ("cache-manifest-fewer-frames", "test_a_manifest_listing_fewer_frames_is_rebuilt"),
        ("cache-manifest-forged-count", "test_a_forged_frame_count_is_caught_against_the_video"),
        ("cache-frame-corrupted-same-size", "test_a_frame_corrupted_in_place_is_rebuilt"),
        ("cache-folder-link-to-other-video", "test_a_folder_linked_to_another_videos_frames_is_rebuilt"),
        ("cache-manifest-of-other-video", "test_a_copied_manifest_of_another_video_is_rebuilt"),
        ("cache-entry-older-format", "test_an_entry_of_the_previous_format_is_rebuilt"),
        ("native-mp4-hard-link", "test_a_hard_linked_native_mp4_of_an_older_version_is_replaced"),
        ("native-not-a-video", "test_native_mode_rejects_what_frames_mode_rejects"),
        ("native-tags-carry-gold-scores", "test_gold_scores_in_container_tags_never_reach_a_model"),
        ("workers-parent-killed", "test_workers_do_not_outlive_a_killed_parent"),
        ("disk-full", "test_a_full_disk_says_so_and_keeps_what_was_prepared"),
        ("cache-file-modes", "test_cache_files_follow_the_umask"),
    )},
    # LeRobot imports (roboreward import-lerobot)
    **{case: "tests/robot_data/test_bad_lerobot_inputs.py::test_bad_lerobot_input" for case in (
        "lerobot-unknown-version", "lerobot-camera-missing", "lerobot-camera-ambiguous", "lerobot-camera-depth",
        "lerobot-timestamps-beyond-video", "lerobot-zero-length-episode", "lerobot-undecodable-video",
        "lerobot-labels-unknown-episode", "lerobot-labels-out-of-range", "lerobot-labels-duplicate",
        "lerobot-labels-missing-for-selection", "lerobot-episodes-unknown", "lerobot-no-labels",
        "lerobot-not-a-dataset", "lerobot-out-holds-other-import")},
}
"""Catalogue cases tested in another file: case id -> ``file::test function``."""

ALL_CASE_IDS = ([c.id for c in PREPARE_CASES] + [c.id for c in OUTPUT_CASES] + [c.id for c in OPTION_CASES]
                + MODEL_CASES + list(OTHER_FILE_CASES))


def test_cases_tested_elsewhere_have_their_test() -> None:
    for case, where in OTHER_FILE_CASES.items():
        path, function = where.split("::")
        assert f"\ndef {function}(" in (REPO / path).read_text(encoding="utf-8"), f"{case}: no {where}"
        if function == "test_export_media_refuses_a_path_out_of_its_roots":
            assert case in EXPORT_REFUSALS, case


def test_catalogue_matches_the_doc() -> None:
    assert len(ALL_CASE_IDS) == len(set(ALL_CASE_IDS)) >= 20
    documented = re.findall(r"^\| `([a-z0-9-]+)` \|", DOC.read_text(encoding="utf-8"), flags=re.MULTILINE)
    assert sorted(documented) == sorted(ALL_CASE_IDS), (
        f"in the tests only: {sorted(set(ALL_CASE_IDS) - set(documented))}; "
        f"in docs/bad_inputs.md only: {sorted(set(documented) - set(ALL_CASE_IDS))}")

