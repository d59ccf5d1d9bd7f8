"""Turning rollouts into the media files requests point to: JPEG frames, or native mp4 copies.

Content-addressed names under one media folder let ``roboreward prepare`` and ``helm-run`` share the work and
keep HELM's path-keyed request cache correct, and no original file name (it can carry the label) reaches a
model. Workers, signals and failures: docs/media.md.
"""

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from tqdm import tqdm

from helm_roboreward.core.files import file_digest, write_atomically
from helm_roboreward.data.rows import Rollout
from helm_roboreward.media.decoding import FrameSet, MediaWriteError, VideoError, cached_frames, extract_frames
from helm_roboreward.protocol import FrameOptions

if TYPE_CHECKING:
    from helm_roboreward.media.copies import VideoCopy

FRAMES_FOLDER = "frames"
VIDEO_CONTENT_TYPE = "video/mp4"
FRAME_CONTENT_TYPE = "image/jpeg"
PARENT_CHECK_SECONDS = 0.5
"""How often a worker checks that the process that started it is alive."""

_T = TypeVar("_T")


@dataclass(frozen=True)
class PreparedMedia:
    """The media of one rollout as a request will carry it."""

    video_sha256: str
    content_type: str
    paths: tuple[str, ...]
    """One mp4, or the JPEG frames in order."""

    frame_indices: tuple[int, ...]
    """Source frame numbers of the frames (empty for native video)."""

    num_bytes: int
    cached: bool
    rebuilt_because: str | None = None
    """Why an existing cache entry was not trusted and was rebuilt."""


@dataclass(frozen=True)
class Failure:
    """Why one video could not be prepared, and what to do about it."""

    message: str
    fix: str = VideoError.fix


Outcome = PreparedMedia | Failure


@dataclass
class PreparationReport:
    """What a preparation pass did, for summaries and stats."""

    media: dict[str, PreparedMedia] = field(default_factory=dict)
    """By video path (byte-identical videos at several paths share one entry's content)."""

    failures: dict[str, Failure] = field(default_factory=dict)
    """Video path -> what went wrong."""

    rebuilt: dict[str, str] = field(default_factory=dict)
    """Video path -> why its cache entry was not trusted (it was rebuilt)."""

    workers: int = 0
    """Worker processes started (none when every video was cached, or for one video)."""

    seconds: float = 0.0

    def _distinct(self) -> list[PreparedMedia]:
        return list({media.video_sha256: media for media in self.media.values()}.values())

    @property
    def num_videos(self) -> int:
        """Distinct video contents prepared (counterfactual copies of one video count once)."""
        return len(self._distinct())

    @property
    def num_frames(self) -> int:
        """Frames stored or found (each distinct video counted once)."""
        return sum(len(media.frame_indices) for media in self._distinct())

    @property
    def num_bytes(self) -> int:
        """Bytes of media (each distinct video counted once)."""
        return sum(media.num_bytes for media in self._distinct())

    @property
    def cache_hits(self) -> int:
        """Distinct videos that needed no work."""
        return sum(1 for media in self._distinct() if media.cached)


def _from_copy(copy: "VideoCopy", video_sha256: str) -> PreparedMedia:
    return PreparedMedia(video_sha256, VIDEO_CONTENT_TYPE, (copy.path,), (), copy.num_bytes, copy.cached,
                         copy.rebuilt_because)


def _from_frames(frame_set: FrameSet, video_sha256: str) -> PreparedMedia:
    return PreparedMedia(video_sha256, FRAME_CONTENT_TYPE, frame_set.frame_files, frame_set.frame_indices,
                         frame_set.total_bytes, frame_set.cached, frame_set.rebuilt_because)


def prepare_one(
    video_path: str, media_dir: str, native: bool, options: FrameOptions, digest: str | None = None,
    full_check: bool = False,
) -> PreparedMedia:
    """Produce one video's media (run inside worker processes); hashes the video unless ``digest`` is given."""
    digest = digest or file_digest(video_path)
    if native:
        from helm_roboreward.media.copies import store_video  # native-video runs only

        return _from_copy(store_video(video_path, digest, media_dir, full_check), digest)
    frames_dir = os.path.join(media_dir, FRAMES_FOLDER)
    return _from_frames(extract_frames(video_path, frames_dir, options, digest, full_check), digest)


def cached_media(
    video_path: str, media_dir: str, native: bool, options: FrameOptions, digest: str, full_check: bool
) -> tuple[PreparedMedia | None, str | None]:
    """The verified cached media of one video, or None and why an existing entry is not trusted."""
    if native:
        from helm_roboreward.media.copies import check_copy  # native-video runs only

        copy, problem = check_copy(video_path, digest, media_dir, full_check)
        return (_from_copy(copy, digest) if copy is not None else None), problem
    frames, problem = cached_frames(video_path, os.path.join(media_dir, FRAMES_FOLDER), options, digest, full_check)
    return (_from_frames(frames, digest) if frames is not None else None), problem


def _safe(call: Callable[[], _T], video_path: str) -> _T | Failure:
    """``call()``, or the :class:`Failure` its error describes."""
    try:
        return call()
    except MediaWriteError as error:
        return Failure(str(error), MediaWriteError.fix)
    except VideoError as error:
        return Failure(str(error))
    except OSError as error:
        return Failure(f"{video_path}: {error}")


def _safe_prepare(video_path: str, media_dir: str, native: bool, options: FrameOptions, digest: str,
                  full_check: bool) -> Outcome:
    return _safe(partial(prepare_one, video_path, media_dir, native, options, digest, full_check), video_path)


def prepare_media(
    rollouts: Sequence[Rollout],
    media_dir: str,
    native: bool,
    options: FrameOptions,
    jobs: int = 1,
    progress: bool = True,
    full_check: bool = False,
) -> PreparationReport:
    """Prepare the media of every distinct video, in worker processes when more than one needs work.

    Cache hits are verified here (``full_check`` re-reads every cached file); workers start only for the misses.
    A failure does not stop the others: the report lists each failure and each untrusted entry rebuilt.
    """
    started = time.perf_counter()
    _check_writable(media_dir)
    report = PreparationReport()
    # Hash first and prepare each distinct content once: counterfactual rows reuse a success's bytes.
    paths_by_digest: dict[str, list[str]] = {}
    for path in dict.fromkeys(rollout.video_path for rollout in rollouts):
        try:
            paths_by_digest.setdefault(file_digest(path), []).append(path)
        except OSError as error:
            report.failures[path] = Failure(f"{path}: cannot read ({error.strerror or error})")
    label = "videos" if native else "frames"
    bar = tqdm(total=len(paths_by_digest), desc=f"roboreward {label}", unit="video", disable=not progress)
    misses: list[tuple[str, list[str]]] = []
    for digest, paths in paths_by_digest.items():
        # A full check probes the video and may find it broken: a failure, not a miss.
        found = _safe(partial(cached_media, paths[0], media_dir, native, options, digest, full_check), paths[0])
        hit, problem = (found, None) if isinstance(found, Failure) else found
        if hit is None:
            if problem is not None:
                report.rebuilt[paths[0]] = problem
            misses.append((digest, paths))
        else:
            _record(report, paths, hit)
            bar.update(1)
    for paths, outcome in _run(misses, media_dir, native, options, jobs, full_check, report):
        _record(report, paths, outcome)
        bar.update(1)
    bar.close()
    report.seconds = time.perf_counter() - started
    return report


VIDEOS_PER_WORKER = 16
"""A spawned worker costs about a second of start-up (it imports PyAV, NumPy and the main module again); a worker
is started for every 16 videos that need work, so a small cold run (a sample subset) stays in this process."""


def _run(
    misses: list[tuple[str, list[str]]], media_dir: str, native: bool, options: FrameOptions, jobs: int,
    full_check: bool, report: PreparationReport,
) -> Iterator[tuple[list[str], Outcome]]:
    """Prepare the misses in ``min(jobs, misses // VIDEOS_PER_WORKER)`` spawned workers, or here when that is one."""
    workers = min(jobs, len(misses) // VIDEOS_PER_WORKER)
    if workers <= 1:
        for digest, paths in misses:
            yield paths, _safe_prepare(paths[0], media_dir, native, options, digest, full_check)
        return
    report.workers = workers
    # "spawn": forking a process that runs threads (helm-run, tqdm's monitor) and FFmpeg can deadlock the child.
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_watch_parent, initargs=(os.getpid(),))
    with _stop_on_sigterm(pool):
        try:
            futures: list[tuple[list[str], Future[Outcome]]] = [
                (paths, pool.submit(_safe_prepare, paths[0], media_dir, native, options, digest, full_check))
                for digest, paths in misses
            ]
            for paths, future in futures:
                yield paths, future.result()
        except BaseException:
            _stop(pool)
            raise
    pool.shutdown(wait=True)


def _watch_parent(parent: int) -> None:
    """Worker initializer: exit as soon as the parent is gone (killed, even by SIGKILL), queued work or not."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="roboreward-parent-watch", daemon=True).start()


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel the queued videos and end the workers now (a video being written stays unfinished, never partial)."""
    pool.shutdown(wait=False, cancel_futures=True)
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14
    if terminate is not None:
        terminate()
        return
    processes: dict[int, Any] = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        process.terminate()
    for process in list(processes.values()):
        process.join(timeout=5)


class _Stopped(BaseException):
    """SIGTERM arrived while workers ran: unwinds like KeyboardInterrupt, then the signal's default applies."""


def _raise_stopped(signum: int, frame: Any) -> None:
    raise _Stopped()


@contextmanager
def _stop_on_sigterm(pool: ProcessPoolExecutor) -> Iterator[None]:
    """Within this block, SIGTERM stops the pool, then takes its course (main thread only; elsewhere no change)."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_stopped) if main else None
    stopped = False
    try:
        yield
    except _Stopped:
        stopped = True
        raise
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
        if stopped:
            _stop(pool)
            signal.raise_signal(signal.SIGTERM)  # the previous handler (or the default: terminate) decides


def _record(report: PreparationReport, paths: list[str], outcome: Outcome) -> None:
    for path in paths:
        if isinstance(outcome, PreparedMedia):
            report.media[path] = outcome
            if outcome.rebuilt_because and paths[0] not in report.rebuilt:
                report.rebuilt[paths[0]] = outcome.rebuilt_because
        else:
            report.failures[path] = outcome


def _check_writable(media_dir: str) -> None:
    probe = os.path.join(media_dir, f".write-check-{os.getpid()}")
    try:
        os.makedirs(media_dir, exist_ok=True)
        write_atomically(probe, b"")
        os.unlink(probe)
    except OSError as error:
        raise PermissionError(
            f"cannot write to the media folder {media_dir} ({error.strerror or error}). "
            "Choose a writable output folder (helm-run -o / roboreward prepare --output-path)."
        ) from None


def failures_by_row(rollouts: Sequence[Rollout], report: PreparationReport) -> list[str]:
    """One line per failed row: metadata line, file name, the error and what to do."""
    lines: list[str] = []
    for rollout in rollouts:
        failure: Failure | None = report.failures.get(rollout.video_path)
        if failure is not None:
            fix = failure.fix.replace("the subset,", f"the subset {rollout.row.subset!r},")
            lines.append(f"metadata line {rollout.row.line} ({rollout.row.file_name}): {failure.message}. {fix}")
    return lines


def rebuilt_summary(report: PreparationReport, limit: int = 5) -> list[str]:
    """Lines saying which cache entries were not trusted and rebuilt (empty when none)."""
    if not report.rebuilt:
        return []
    reasons = list(report.rebuilt.values())
    lines = [f"{len(reasons)} cache entr{'y was' if len(reasons) == 1 else 'ies were'} not trusted and rebuilt:"]
    lines += [f"  {reason}" for reason in reasons[:limit]]
    if len(reasons) > limit:
        lines.append(f"  ... and {len(reasons) - limit} more")
    return lines
