"""Rollouts to the media requests carry: JPEG frames or native mp4s, named by content (not by the file name).

Every distinct video is prepared once, in worker processes for runs with many videos; a failed or rebuilt video is
reported in lines that name its rows.
"""

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tqdm import tqdm

from helm_roboreward.protocol.frame_cache import cached_frames, extract_frames
from helm_roboreward.protocol.native_videos import cached_native_mp4, prepared_native_mp4
from helm_roboreward.protocol.rows import DataError, Rollout
from helm_roboreward.protocol.rules import FrameOptions
from helm_roboreward.protocol.safe_files import file_digest, write_atomically
from helm_roboreward.protocol.video_decoding import PreparedMedia, VideoError, unwritable_folder

FRAMES_FOLDER = "frames"
VIDEOS_PER_WORKER = 16  # a spawned worker costs about a second: a small cold run stays in this process

_T = TypeVar("_T")


@dataclass(frozen=True)
class Failure:
    """Why one video could not be prepared, and what to do about it."""

    message: str
    fix: str = VideoError.fix


@dataclass
class PreparationReport:
    """What a preparation pass did, by video path (byte-identical videos share one entry's content)."""

    media: dict[str, PreparedMedia] = field(default_factory=dict)
    failures: dict[str, Failure] = field(default_factory=dict)
    rebuilt: dict[str, str] = field(default_factory=dict)  # why a cache entry was not trusted (it was rebuilt)
    workers: int = 0  # worker processes started
    seconds: float = 0.0

    def distinct(self) -> list[PreparedMedia]:
        """The media prepared, once per video content (byte-identical videos, e.g. a relabel and its original: once)."""
        return list({media.video_sha256: media for media in self.media.values()}.values())

    @property
    def cache_hits(self) -> int:
        """Distinct videos that needed no work."""
        return sum(1 for media in self.distinct() if media.cached)


def recorded_path(path: str) -> str:
    """How a media path is recorded: relative to the working directory when under it, so HELM's viewer finds it."""
    relative = os.path.relpath(path) if os.path.isabs(path) else os.pardir
    return path if relative.startswith(os.pardir) else relative


def prepare_one(video_path: str, media_dir: str, native: bool, options: FrameOptions, digest: str | None = None,
                full_check: bool = False) -> PreparedMedia:
    """Produce one video's media (in worker processes too); hashes the video unless ``digest`` is given."""
    digest = digest or file_digest(video_path)
    if native:
        return prepared_native_mp4(video_path, digest, media_dir, full_check)
    return extract_frames(video_path, os.path.join(media_dir, FRAMES_FOLDER), options, digest, full_check)


def cached_media(video_path: str, media_dir: str, native: bool, options: FrameOptions, digest: str,
                 full_check: bool) -> tuple[PreparedMedia | None, str | None]:
    """The verified cached media of one video, or None and why an existing entry is not trusted."""
    if native:
        return cached_native_mp4(video_path, digest, media_dir, full_check)
    return cached_frames(video_path, os.path.join(media_dir, FRAMES_FOLDER), options, digest, full_check)


def _attempt(function: Callable[..., _T], video_path: str, *args: object) -> _T | Failure:
    """``function(video_path, *args)``, or the :class:`Failure` its error describes (the error says what to do)."""
    try:
        return function(video_path, *args)
    except VideoError as error:
        return Failure(str(error), error.fix)
    except OSError as error:
        return Failure(f"{video_path}: {error}")


def prepare_media(rollouts: Sequence[Rollout], media_dir: str, native: bool, options: FrameOptions, jobs: int = 1,
                  progress: bool = True, full_check: bool = False) -> PreparationReport:
    """Prepare every distinct video's media: hits verified here (``full_check``: re-read), misses maybe in workers.

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
    bar = tqdm(total=len(paths_by_digest), desc=f"roboreward {'videos' if native else 'frames'}", unit="video",
               disable=not progress)
    misses: list[tuple[str, list[str]]] = []
    for digest, paths in paths_by_digest.items():
        # A full check probes the video and may find it broken: a failure, not a miss.
        found = _attempt(cached_media, paths[0], media_dir, native, options, digest, full_check)
        hit, problem = (found, None) if isinstance(found, Failure) else found
        if hit is None:
            if problem is not None:
                report.rebuilt[paths[0]] = problem
            misses.append((digest, paths))
        else:
            _record(report, paths, hit)
            bar.update(1)
    calls = [(prepare_one, paths[0], media_dir, native, options, digest, full_check) for digest, paths in misses]
    report.workers = min(jobs, len(misses) // VIDEOS_PER_WORKER)
    if report.workers > 1:
        outcomes: Iterator[PreparedMedia | Failure] = in_workers(_attempt, calls, report.workers)
    else:
        report.workers, outcomes = 0, (_attempt(*call) for call in calls)
    for (_, paths), outcome in zip(misses, outcomes, strict=True):
        _record(report, paths, outcome)
        bar.update(1)
    bar.close()
    report.seconds = time.perf_counter() - started
    return report


def _record(report: PreparationReport, paths: list[str], outcome: PreparedMedia | Failure) -> None:
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
        raise unwritable_folder(media_dir, error) from None


PARENT_CHECK_SECONDS = 0.5
"""How often a worker checks that the process that started it is alive."""



def in_workers(function: Callable[..., _T], calls: Sequence[tuple[Any, ...]], workers: int) -> Iterator[_T]:
    """``function(*call)`` for every call, run in ``workers`` spawned processes, yielded in the order of ``calls``.

    Leaving the loop early, an exception, SIGINT or SIGTERM cancels the queued calls and ends the workers at once.
    """
    # "spawn": forking a process that runs threads (helm-run, tqdm's monitor) and FFmpeg can deadlock the child.
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_watch_parent, initargs=(os.getpid(),))
    with _stop_on_sigterm(pool):
        try:
            futures = [pool.submit(function, *call) for call in calls]
            for future in futures:
                yield future.result()
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
    """Cancel the queued calls and end the workers now (a file being written stays unfinished, never partial)."""
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


def failures_by_row(rollouts: Sequence[Rollout], report: PreparationReport) -> list[str]:
    """One line per failed row: metadata line, file name, the error and what to do."""
    lines: list[str] = []
    for rollout in rollouts:
        failure = report.failures.get(rollout.video_path)
        if failure is not None:
            fix = failure.fix.replace("the subset,", f"the subset {rollout.row.subset!r},")
            lines.append(f"metadata line {rollout.row.line} ({rollout.row.file_name}): {failure.message}. {fix}")
    return lines


def failed_rows_error(rollouts: Sequence[Rollout], report: PreparationReport, description: str) -> DataError:
    """The error a run raises when some rows' videos cannot be used, naming each row."""
    lines = failures_by_row(rollouts, report)
    return DataError(f"{len(lines)} row(s) of {description} have videos that cannot be used "
                     f"(the other videos are prepared and cached):\n" + "\n".join(lines))


def rebuilt_summary(report: PreparationReport, limit: int = 5) -> list[str]:
    """Lines saying which cache entries were not trusted and rebuilt (empty when none)."""
    reasons = list(report.rebuilt.values())
    if not reasons:
        return []
    lines = [f"{len(reasons)} cache entr{'y was' if len(reasons) == 1 else 'ies were'} not trusted and rebuilt:"]
    lines += [f"  {reason}" for reason in reasons[:limit]]
    return lines + ([f"  ... and {len(reasons) - limit} more"] if len(reasons) > limit else [])
