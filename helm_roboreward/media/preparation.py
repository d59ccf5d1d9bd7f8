"""Rollouts to the media requests carry: JPEG frames or mp4 copies, named by content (file names can hold labels)."""

import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from tqdm import tqdm

from helm_roboreward.core.files import file_digest, write_atomically
from helm_roboreward.data.rows import Rollout
from helm_roboreward.media.decoding import PreparedMedia, VideoError, cached_frames, extract_frames
from helm_roboreward.protocol import FrameOptions

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
        """The media prepared, once per video content (counterfactual copies of one video count once)."""
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
        from helm_roboreward.media.copies import prepared_copy  # native-video runs only

        return prepared_copy(video_path, digest, media_dir, full_check)
    return extract_frames(video_path, os.path.join(media_dir, FRAMES_FOLDER), options, digest, full_check)


def cached_media(video_path: str, media_dir: str, native: bool, options: FrameOptions, digest: str,
                 full_check: bool) -> tuple[PreparedMedia | None, str | None]:
    """The verified cached media of one video, or None and why an existing entry is not trusted."""
    if native:
        from helm_roboreward.media.copies import cached_copy  # native-video runs only

        return cached_copy(video_path, digest, media_dir, full_check)
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
        from helm_roboreward.media.workers import in_workers  # only runs with many videos to prepare

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
        from helm_roboreward.media.write_errors import unwritable_folder

        raise unwritable_folder(media_dir, error) from None
