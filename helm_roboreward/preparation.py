"""Turning rollouts into the media files requests point to: native mp4 copies or JPEG frames.

Everything lands under one media folder (by default the scenario's output folder,
``benchmark_output/scenarios/roboreward``) with content-addressed names, so ``roboreward prepare``
and ``helm-run`` share the work, HELM's path-keyed request cache stays correct, the viewer can
show the files, and no original file name (which can carry the label) reaches a model.
"""

import multiprocessing
import os
import shutil
import time
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple, Union

from tqdm import tqdm

from helm_roboreward.dataset import Rollout
from helm_roboreward.extraction import FrameSet, VideoError, extract_frames
from helm_roboreward.frames import FrameOptions
from helm_roboreward.media_store import file_digest, remove_stale_temporaries, write_atomically

FRAMES_FOLDER = "frames"
VIDEOS_FOLDER = "videos"
VIDEO_CONTENT_TYPE = "video/mp4"
FRAME_CONTENT_TYPE = "image/jpeg"


@dataclass(frozen=True)
class PreparedMedia:
    """The media of one rollout as a request will carry it."""

    video_sha256: str
    content_type: str
    paths: Tuple[str, ...]
    """One mp4, or the JPEG frames in order."""

    frame_indices: Tuple[int, ...]
    """Source frame numbers of the frames (empty for native video)."""

    num_bytes: int
    cached: bool


@dataclass
class PreparationReport:
    """What a preparation pass did, for summaries and stats."""

    media: Dict[str, PreparedMedia] = field(default_factory=dict)
    """By video path (byte-identical videos at several paths share one entry's content)."""

    failures: Dict[str, str] = field(default_factory=dict)
    """Video path -> error message."""

    seconds: float = 0.0

    def _distinct(self) -> List[PreparedMedia]:
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


def store_video(video_path: str, video_sha256: str, media_dir: str) -> PreparedMedia:
    """Place a content-addressed copy of an mp4 under ``media_dir/videos`` (hard link when possible)."""
    target = os.path.join(media_dir, VIDEOS_FOLDER, video_sha256[:2], f"{video_sha256[:32]}.mp4")
    size = os.path.getsize(video_path)
    remove_stale_temporaries(os.path.dirname(target))
    if os.path.isfile(target) and os.path.getsize(target) == size:
        return PreparedMedia(video_sha256, VIDEO_CONTENT_TYPE, (target,), (), size, cached=True)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    temporary = os.path.join(os.path.dirname(target), f".tmp-{os.path.basename(target)}.{os.getpid()}.part")
    try:
        try:
            os.link(video_path, temporary)
        except OSError:
            shutil.copyfile(video_path, temporary)
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return PreparedMedia(video_sha256, VIDEO_CONTENT_TYPE, (target,), (), size, cached=False)


def prepare_one(
    video_path: str, media_dir: str, native: bool, options: FrameOptions, digest: Optional[str] = None
) -> PreparedMedia:
    """Produce one video's media (run inside worker processes); hashes the video unless ``digest`` is given."""
    digest = digest or file_digest(video_path)
    if native:
        try:
            return store_video(video_path, digest, media_dir)
        except OSError as error:
            raise VideoError(f"{video_path}: cannot copy to {media_dir} ({error.strerror or error})") from None
    frame_set: FrameSet = extract_frames(video_path, os.path.join(media_dir, FRAMES_FOLDER), options, digest)
    return PreparedMedia(
        video_sha256=digest,
        content_type=FRAME_CONTENT_TYPE,
        paths=frame_set.frame_files,
        frame_indices=frame_set.frame_indices,
        num_bytes=frame_set.total_bytes,
        cached=frame_set.cached,
    )


def _safe_prepare(
    video_path: str, media_dir: str, native: bool, options: FrameOptions, digest: str
) -> Union[PreparedMedia, str]:
    try:
        return prepare_one(video_path, media_dir, native, options, digest)
    except VideoError as error:
        return str(error)
    except OSError as error:
        return f"{video_path}: {error}"


def prepare_media(
    rollouts: Sequence[Rollout],
    media_dir: str,
    native: bool,
    options: FrameOptions,
    jobs: int = 1,
    progress: bool = True,
) -> PreparationReport:
    """Prepare the media of every distinct video, in parallel worker processes when ``jobs`` > 1.

    Failures do not stop the others: every video is attempted, finished ones stay cached, and the
    report lists each failure.
    """
    started = time.perf_counter()
    _check_writable(media_dir)
    report = PreparationReport()
    # Hash first and prepare each distinct content once: counterfactual rows reuse a success's bytes.
    paths_by_digest: Dict[str, List[str]] = {}
    for path in dict.fromkeys(rollout.video_path for rollout in rollouts):
        try:
            paths_by_digest.setdefault(file_digest(path), []).append(path)
        except OSError as error:
            report.failures[path] = f"{path}: cannot read ({error.strerror or error})"
    label = "videos" if native else "frames"
    bar = tqdm(total=len(paths_by_digest), desc=f"roboreward {label}", unit="video", disable=not progress)
    if jobs <= 1 or len(paths_by_digest) <= 1:
        for digest, paths in paths_by_digest.items():
            _record(report, paths, _safe_prepare(paths[0], media_dir, native, options, digest))
            bar.update(1)
    else:
        # "spawn": forking a process that runs threads (helm-run, tqdm's monitor) and FFmpeg can deadlock the child.
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures: List[Tuple[List[str], Future[Union[PreparedMedia, str]]]] = [
                (paths, pool.submit(_safe_prepare, paths[0], media_dir, native, options, digest))
                for digest, paths in paths_by_digest.items()
            ]
            for paths, future in futures:
                _record(report, paths, future.result())
                bar.update(1)
    bar.close()
    report.seconds = time.perf_counter() - started
    return report


def _record(report: PreparationReport, paths: List[str], outcome: Union[PreparedMedia, str]) -> None:
    for path in paths:
        if isinstance(outcome, PreparedMedia):
            report.media[path] = outcome
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


def failures_by_row(rollouts: Sequence[Rollout], report: PreparationReport) -> List[str]:
    """One line per failed row: metadata line, file name, the error and what to do."""
    lines: List[str] = []
    for rollout in rollouts:
        message: Optional[str] = report.failures.get(rollout.video_path)
        if message is not None:
            lines.append(
                f"metadata line {rollout.row.line} ({rollout.row.file_name}): {message}. Re-download the subset "
                f"{rollout.row.subset!r}, or remove the row from metadata.jsonl."
            )
    return lines
