"""The timed passes of the frame-extraction benchmark: the OpenCV reference, ours, the decode floor, a profile.

The reference mirrors the official RoboRewardBench frame path: ``cv2.VideoCapture``, read every
frame, keep every ``int(fps)``-th frame from frame 0, ``cv2.imwrite`` a JPEG at native size
(OpenCV's default quality, 95). It exists only here, as a yardstick.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import cv2

from helm_roboreward.protocol.frame_cache import (
    cached_entry,
    extract_frames,
    frames_directory,
    frames_key,
    read_manifest,
)
from helm_roboreward.protocol.media_preparation import PreparationReport, prepare_media
from helm_roboreward.protocol.rows import MetadataRow, Rollout
from helm_roboreward.protocol.rules import FrameOptions, select_frame_indices
from helm_roboreward.protocol.safe_files import file_digest, write_atomically
from helm_roboreward.protocol.video_decoding import decode_frames, encode_jpeg, probe_video, to_image

OPTIONS = FrameOptions()
"""The official rule: 1 frame per second from frame 0, native size, JPEG quality 95."""

STAGES = ("hash", "probe", "decode", "convert", "encode", "write")


@dataclass
class Video:
    """One corpus video as the passes see it."""

    path: str
    kind: str
    width: int
    height: int
    num_frames: int


@dataclass
class PassResult:
    """Seconds of one pass split by video kind, plus what it produced per video."""

    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    cpu: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    """CPU seconds of this process (all its threads; worker processes are not counted)."""

    indices: dict[str, list[int]] = field(default_factory=dict)
    """Video path -> kept source frame indices."""

    files: dict[str, list[str]] = field(default_factory=dict)
    """Video path -> written JPEG paths."""

    @property
    def total(self) -> float:
        return sum(self.seconds.values())

    @property
    def cpu_total(self) -> float:
        return sum(self.cpu.values())


# --- the official-style OpenCV reference -------------------------------------------------------------------------


def reference_extract(video_path: str, out_dir: str, single_thread: bool = False) -> tuple[list[int], list[str]]:
    """Read every frame with OpenCV, keep every ``int(fps)``-th from 0 and ``imwrite`` it (the official path)."""
    if single_thread:
        capture = cv2.VideoCapture(video_path, cv2.CAP_FFMPEG, [cv2.CAP_PROP_N_THREADS, 1])
    else:
        capture = cv2.VideoCapture(video_path)
    stride = max(int(capture.get(cv2.CAP_PROP_FPS)), 1)
    kept: list[int] = []
    files: list[str] = []
    index = 0
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        if index % stride == 0:
            name = os.path.join(out_dir, f"{len(kept):04d}.jpg")
            cv2.imwrite(name, frame)
            kept.append(index)
            files.append(name)
        index += 1
    capture.release()
    return kept, files


@contextmanager
def opencv_threads(count: int | None) -> Iterator[None]:
    """Temporarily ``cv2.setNumThreads(count)`` (None: leave OpenCV's default)."""
    previous = cv2.getNumThreads()
    if count is not None:
        cv2.setNumThreads(count)
    try:
        yield
    finally:
        cv2.setNumThreads(previous)


def run_reference(videos: Sequence[Video], out_root: str, variant: str) -> PassResult:
    """One reference pass; ``variant`` is ``default``, ``setNumThreads1`` or ``capThreads1``."""
    result = PassResult()
    with opencv_threads(1 if variant == "setNumThreads1" else None):
        for number, video in enumerate(videos):
            out_dir = os.path.join(out_root, f"{number:04d}")
            started, cpu = time.perf_counter(), time.process_time()
            os.makedirs(out_dir)  # timed: ours creates its cache folders inside its own timing too
            kept, files = reference_extract(video.path, out_dir, single_thread=variant == "capThreads1")
            result.seconds[video.kind] += time.perf_counter() - started
            result.cpu[video.kind] += time.process_time() - cpu
            result.indices[video.path], result.files[video.path] = kept, files
    return result


# --- ours ------------------------------------------------------------------------------------------------------------


def make_rollouts(videos: Sequence[Video]) -> list[Rollout]:
    """Benchmark rows for the corpus videos (only ``video_path`` matters to ``prepare_media``)."""
    rollouts = []
    for line, video in enumerate(videos, start=1):
        stem = os.path.splitext(os.path.basename(video.path))[0]
        row = MetadataRow(line=line, file_name=f"{video.kind}/{stem}.mp4", task="benchmark", gold_score=3)
        rollouts.append(Rollout(row=row, video_path=video.path, kind="natural", episode=stem, robot="synthetic"))
    return rollouts


def run_ours(videos: Sequence[Video], media_dir: str, jobs: int = 1, by_kind: bool = True,
             full_check: bool = False) -> PassResult:
    """``prepare_media`` with the official options; one call per kind (for per-kind seconds) or one in all."""
    result = PassResult()
    groups: dict[str, list[Video]] = defaultdict(list)
    for video in videos:
        groups[video.kind if by_kind else "all"].append(video)
    for kind, group in groups.items():
        started, cpu = time.perf_counter(), time.process_time()
        report: PreparationReport = prepare_media(make_rollouts(group), media_dir, False, OPTIONS, jobs=jobs,
                                                  progress=False, full_check=full_check)
        result.seconds[kind] += time.perf_counter() - started
        result.cpu[kind] += time.process_time() - cpu
        if report.failures:
            raise RuntimeError(f"prepare_media failed: {report.failures}")
        for path, media in report.media.items():
            result.indices[path], result.files[path] = list(media.frame_indices), list(media.paths)
    return result


def run_cache_lookups(videos: Sequence[Video], media_dir: str) -> dict[str, PassResult]:
    """What verifying a warm cache entry costs: three lookups of every video's entry, timed in one loop.

    - ``lookup_trusting``: what the cache did before entries were verified (the reference): hash the video,
      read the manifest, check that the listed files have the recorded sizes;
    - ``lookup_fast``: the same with the checks helm-run makes (folder, manifest against the selection
      rule, one ``lstat`` per file against the verification stamps);
    - ``lookup_full``: with ``roboreward prepare``'s full check (every file's digest, a probe of the video).
    """
    results = {name: PassResult() for name in ("lookup_trusting", "lookup_fast", "lookup_full")}
    frames_dir = os.path.join(media_dir, "frames")
    for video in videos:
        for name, look in (("lookup_trusting", None), ("lookup_fast", False), ("lookup_full", True)):
            started, cpu = time.perf_counter(), time.process_time()
            digest = file_digest(video.path)
            directory = frames_directory(frames_dir, frames_key(digest, OPTIONS))
            if look is None:
                found = read_manifest(directory) is not None
            else:
                found = cached_entry(video.path, frames_dir, directory, digest, OPTIONS, look).manifest is not None
            results[name].seconds[video.kind] += time.perf_counter() - started
            results[name].cpu[video.kind] += time.process_time() - cpu
            if not found:
                raise RuntimeError(f"{video.path}: not a verified cache hit ({name})")
    return results


# --- the decode floor -----------------------------------------------------------------------------------------------


def frames_to_decode(keyframes: Sequence[int], indices: Sequence[int]) -> int:
    """How many frames the keyframe-seek strategy decodes (presentation order; B-frame reordering aside)."""
    position, count = -1, 0
    for index in sorted(set(indices)):
        keyframe = max(k for k in keyframes if k <= index) if keyframes[0] <= index else keyframes[0]
        start = keyframe if keyframe > position + 1 else position + 1
        count += index - start + 1
        position = index
    return count


def run_floor(videos: Sequence[Video]) -> tuple[PassResult, PassResult, int, int]:
    """Probe, then decode exactly the frames the strategy decodes, without conversion or writing.

    Returns the probe seconds, the decode seconds, the frames decoded and the frames in the corpus.
    """
    probe_pass, decode_pass = PassResult(), PassResult()
    decoded = total = 0
    for video in videos:
        started, cpu_started = time.perf_counter(), time.process_time()
        probe = probe_video(video.path)
        probed, cpu_probed = time.perf_counter(), time.process_time()
        indices = select_frame_indices(probe.num_frames, probe.native_fps, OPTIONS)
        kept = [index for index, _ in decode_frames(video.path, indices, probe)]
        finished, cpu_finished = time.perf_counter(), time.process_time()
        probe_pass.seconds[video.kind] += probed - started
        probe_pass.cpu[video.kind] += cpu_probed - cpu_started
        decode_pass.seconds[video.kind] += finished - probed
        decode_pass.cpu[video.kind] += cpu_finished - cpu_probed
        decode_pass.indices[video.path] = kept
        decoded += frames_to_decode(probe.keyframes, indices)
        total += probe.num_frames
    return probe_pass, decode_pass, decoded, total


# --- where ours spends its time ---------------------------------------------------------------------------------


def profile_stages(videos: Sequence[Video], cache_dir: str) -> tuple[dict[str, dict[str, float]], dict[str, int]]:
    """Replay ``extract_frames``' steps with a timer around each: seconds per kind per stage, kept frames per kind."""
    seconds: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(STAGES, 0.0))
    frames: dict[str, int] = defaultdict(int)
    for number, video in enumerate(videos):
        stage = seconds[video.kind]
        clock = time.perf_counter()
        file_digest(video.path)
        stage["hash"] += (now := time.perf_counter()) - clock
        probe = probe_video(video.path)
        stage["probe"] += (clock := time.perf_counter()) - now
        out_dir = os.path.join(cache_dir, f"{number:04d}")
        os.makedirs(out_dir)
        indices = select_frame_indices(probe.num_frames, probe.native_fps, OPTIONS)
        for sequence, (_, frame) in enumerate(decode_frames(video.path, indices, probe)):
            stage["decode"] += (now := time.perf_counter()) - clock
            image = to_image(frame, OPTIONS)
            stage["convert"] += (clock := time.perf_counter()) - now
            data = encode_jpeg(image, OPTIONS.jpeg_quality)
            stage["encode"] += (now := time.perf_counter()) - clock
            write_atomically(os.path.join(out_dir, f"{sequence:04d}.jpg"), data)
            stage["write"] += (clock := time.perf_counter()) - now
            frames[video.kind] += 1
        stage["decode"] += time.perf_counter() - clock  # the generator's tail (closing the container)
    return {kind: dict(values) for kind, values in seconds.items()}, dict(frames)


# --- peak memory of one worker --------------------------------------------------------------------------------------


def _status_kb(field_name: str) -> int:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field_name}")


def memory_child(video_path: str, cache_dir: str) -> None:
    """Inside a fresh process: extract one video and print the peak RSS over the post-import baseline (JSON)."""
    import resource

    try:  # reset the high-water mark to the current RSS, so the import's transient peak does not hide ours
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
        baseline_kb = _status_kb("VmRSS")
    except OSError:
        baseline_kb = _status_kb("VmHWM")
    extract_frames(video_path, cache_dir, OPTIONS)
    peak_kb = _status_kb("VmHWM")
    maxrss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"baseline_kb": baseline_kb, "peak_kb": peak_kb, "ru_maxrss_kb": maxrss_kb}))
    sys.stdout.flush()
