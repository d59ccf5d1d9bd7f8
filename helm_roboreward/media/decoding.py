"""Decoding a video's selected frames with PyAV and storing them as JPEGs in the frame cache.

Stored frames are pixel-identical to a sequential decode, yet only what the selection needs is decoded;
how (one demux pass, forward decoding, seeks, skipped frames): docs/media.md.
"""

import bisect
import errno
import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from io import BytesIO

import av
from av.video.reformatter import VideoReformatter
from PIL import Image

from helm_roboreward.core.files import file_digest, write_atomically
from helm_roboreward.media.frame_cache import (
    EXTRACTOR_VERSION,
    MANIFEST_FILE,
    STAMP_FILE,
    EntryCheck,
    Manifest,
    check_entry,
    frames_directory,
    frames_key,
)
from helm_roboreward.media.store import remove_stale_temporaries, write_stamps
from helm_roboreward.protocol import FrameOptions, scaled_size, select_frame_indices


class VideoError(Exception):
    """A video that cannot be decoded or whose media cannot be stored; the message names the file."""

    fix = "Re-download the subset, or remove the row from metadata.jsonl."
    """What to do about it (for row-level reports)."""


class MediaWriteError(VideoError):
    """The media folder cannot take the files (full disk, permissions): the video is fine."""

    fix = ("Free space on the disk holding the media folder, or choose another output folder (helm-run -o / "
           "roboreward prepare --output-path); the videos already prepared stay cached.")


def write_error(path: str, target: str, error: OSError) -> MediaWriteError:
    """The error for a failed write of ``path``'s media into ``target``, saying plainly when the disk is full."""
    reason = "the disk is full" if error.errno in (errno.ENOSPC, errno.EDQUOT) else "cannot write"
    return MediaWriteError(f"{path}: {reason}: {target} ({error.strerror or error})")


@contextmanager
def video_errors(path: str) -> Iterator[None]:
    """Turns FFmpeg's errors inside the block into a :class:`VideoError` naming ``path``."""
    try:
        yield
    except av.FFmpegError as error:
        raise VideoError(f"{path}: cannot be read as a video ({error})") from None


@dataclass(frozen=True)
class VideoProbe:
    """What one demux pass tells about a video, without decoding."""

    num_frames: int
    native_fps: float
    width: int
    height: int
    codec: str
    keyframes: tuple[int, ...]
    """Presentation-order indices of keyframes."""

    timestamps: tuple[int, ...]
    """Presentation timestamps in presentation order (index = frame number)."""


@dataclass(frozen=True)
class FrameSet:
    """The stored frames of one video under one set of options."""

    key: str
    directory: str
    frame_files: tuple[str, ...]
    """Absolute paths, in presentation order."""

    frame_indices: tuple[int, ...]
    num_frames: int
    native_fps: float
    width: int
    """Width of the stored frames (after rotation and ``max_side``)."""

    height: int
    total_bytes: int
    cached: bool
    """True when nothing was decoded (a complete, verified entry already existed)."""

    rebuilt_because: str | None = None
    """Why an existing entry was not trusted and was rebuilt (None: it was fine, or there was none)."""


def probe_video(path: str) -> VideoProbe:
    """Demux a video once (no decoding) to count frames and find keyframes; :class:`VideoError` if it cannot."""
    with video_errors(path), av.open(path) as container:
        return probe_container(path, container)


def probe_container(path: str, container: "av.container.InputContainer") -> VideoProbe:
    """The demux pass on an open container (left at its end); header frame counts can be wrong, packets cannot."""
    if not container.streams.video:
        raise VideoError(f"{path}: no video stream (is it an audio or data file?)")
    stream = container.streams.video[0]
    entries: list[tuple[int, bool]] = []
    for packet in container.demux(stream):
        if packet.size == 0:
            continue
        stamp = packet.pts if packet.pts is not None else packet.dts
        entries.append((stamp if stamp is not None else len(entries), bool(packet.is_keyframe)))
    if not entries:
        raise VideoError(f"{path}: the video stream has no frames")
    rate = stream.average_rate or stream.guessed_rate or stream.base_rate
    entries.sort(key=lambda entry: entry[0])
    keyframes = tuple(index for index, (_, is_key) in enumerate(entries) if is_key)
    return VideoProbe(
        num_frames=len(entries),
        native_fps=float(rate) if rate else 0.0,
        width=stream.codec_context.width,
        height=stream.codec_context.height,
        codec=stream.codec_context.name,
        keyframes=keyframes or (0,),
        timestamps=tuple(stamp for stamp, _ in entries),
    )


def decode_frames(path: str, indices: Sequence[int], probe: VideoProbe) -> Iterator[tuple[int, av.VideoFrame]]:
    """Yield ``(index, frame)`` for the wanted presentation-order indices, in order, decoding as little as possible.

    Indices the stream never delivers (past its end, or after damage) are not yielded.
    """
    with av.open(path) as container:
        yield from decode_container(container, indices, probe, rewind=False)


def decode_container(
    container: "av.container.InputContainer", indices: Sequence[int], probe: VideoProbe, rewind: bool
) -> Iterator[tuple[int, av.VideoFrame]]:
    """:func:`decode_frames` on an open container; ``rewind`` when a probe already read it to the end."""
    wanted = sorted(set(indices))
    wanted_stamps = {probe.timestamps[i] for i in wanted if 0 <= i < probe.num_frames}
    index_of = {stamp: i for i, stamp in enumerate(probe.timestamps)}
    stream = container.streams.video[0]
    if not stream.codec_context.is_open:
        stream.thread_count = 1  # parallelism comes from worker processes; decoder threads are slower on 2 cores
    frames: Iterator[av.VideoFrame] | None = None
    position = -1  # presentation index of the last decoded frame
    cursor = 0  # next wanted index
    seeking = True  # cleared when a seek misses its keyframe: the rest is decoded sequentially
    target: int | None = None  # the keyframe the last seek aimed at, until its first frame arrives
    while cursor < len(wanted):
        # The last keyframe at or before the wanted frame (the first keyframe when none is).
        keyframe = probe.keyframes[max(bisect.bisect_right(probe.keyframes, wanted[cursor]) - 1, 0)]
        if frames is None or (seeking and keyframe > position + 1):
            if frames is not None or keyframe > 0 or rewind:
                container.seek(probe.timestamps[keyframe], stream=stream, backward=True, any_frame=False)
                target = keyframe
            frames = _decoded(container, stream, wanted_stamps)
            position = keyframe - 1
        try:
            frame = next(frames, None)
        except av.FFmpegError:
            frame = None  # a damaged packet ends the stream, as it ends a sequential read
        if frame is None:
            return  # the stream ended before the remaining wanted frames
        landed = index_of.get(frame.pts, position + 1) if frame.pts is not None else position + 1
        if target is not None and landed != target:
            # The seek landed elsewhere (B-frames in variable-frame-rate files). Before the keyframe, decoding on
            # reaches it; after it, wanted frames may be behind, so restart. Either way stop seeking in this file.
            seeking = False
            if landed > target:
                container.seek(0)
                frames = _decoded(container, stream, wanted_stamps)
                position, target = -1, None
                continue
        target = None
        position = landed
        while cursor < len(wanted) and wanted[cursor] < position:
            cursor += 1  # a wanted frame that never decoded (damaged stream) or was skipped
        if cursor < len(wanted) and wanted[cursor] == position:
            yield position, frame
            cursor += 1


def _decoded(
    container: "av.container.InputContainer", stream: "av.video.stream.VideoStream", wanted_stamps: set[int]
) -> Iterator[av.VideoFrame]:
    """Frames from the demuxer's current position; unwanted frames that nothing references are not decoded.

    ``NONREF`` keeps every decoded frame pixel-identical; the stricter ``BIDIR`` would not (x264's B-pyramid).
    """
    context = stream.codec_context
    for packet in container.demux(stream):
        wanted = packet.pts is None or packet.pts in wanted_stamps
        context.skip_frame = "DEFAULT" if wanted else "NONREF"
        yield from context.decode(packet)


_REFORMATTER = VideoReformatter()
_ROTATIONS = {90: Image.Transpose.ROTATE_90, 180: Image.Transpose.ROTATE_180, 270: Image.Transpose.ROTATE_270}


def to_image(frame: av.VideoFrame, options: FrameOptions) -> Image.Image:
    """Convert (and downscale, via swscale) one decoded frame, applying the rotation the file asks for.

    One shared swscale context and a zero-copy view of the RGB plane: about 5x cheaper than
    ``VideoFrame.to_image()``, with identical pixels.
    """
    width, height = scaled_size(frame.width, frame.height, options.max_side)
    if (width, height) == (frame.width, frame.height):
        rgb = _REFORMATTER.reformat(frame, format="rgb24")
    else:
        rgb = _REFORMATTER.reformat(frame, width=width, height=height, format="rgb24", interpolation="AREA")
    plane = rgb.planes[0]
    image = Image.frombuffer(
        "RGB", (rgb.width, rgb.height), plane, "raw", "RGB", plane.line_size, 1  # type: ignore[arg-type]
    )
    rotation = _ROTATIONS.get(frame.rotation % 360 if frame.rotation else 0)
    return image.transpose(rotation) if rotation is not None else image


def encode_jpeg(image: Image.Image, quality: int) -> bytes:
    """JPEG bytes of an image (deterministic for identical pixels and settings)."""
    buffer = BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def extract_frames(
    video_path: str, cache_dir: str, options: FrameOptions, video_sha256: str | None = None, full_check: bool = False
) -> FrameSet:
    """The frames of one video under ``options``, from the cache or freshly extracted.

    ``full_check``: check a cached entry's digests and the video even when its stamps match.
    Raises :class:`VideoError` when the video cannot be decoded or the frames cannot be written.
    """
    digest = video_sha256 or file_digest(video_path)
    found, problem = cached_frames(video_path, cache_dir, options, digest, full_check)
    if found is not None:
        return found
    key = frames_key(digest, options)
    directory = frames_directory(cache_dir, key)
    try:
        _make_real_folder(directory)
        remove_stale_temporaries(directory)
        with av.open(video_path) as container:  # one open for the probe and the decoding
            manifest = _extract_into(video_path, container, directory, options, digest)
    except OSError as error:
        raise write_error(video_path, directory, error) from None
    except av.FFmpegError as error:
        raise VideoError(f"{video_path}: cannot be read as a video ({error})") from None
    return frame_set_from(key, directory, manifest, cached=False, rebuilt_because=problem)


def cached_frames(video_path: str, cache_dir: str, options: FrameOptions, digest: str,
                  full_check: bool) -> tuple[FrameSet | None, str | None]:
    """The verified cached frames of one video, or None and why an existing entry is not trusted."""
    key = frames_key(digest, options)
    directory = frames_directory(cache_dir, key)
    checked = cached_entry(video_path, cache_dir, directory, digest, options, full_check)
    if checked.manifest is None:
        return None, checked.problem
    return frame_set_from(key, directory, checked.manifest, cached=True), None


def cached_entry(video_path: str, cache_dir: str, directory: str, digest: str, options: FrameOptions,
                 full: bool) -> EntryCheck:
    """:func:`helm_roboreward.media.frame_cache.check_entry` for this video (probed only if a full check runs)."""

    def facts() -> tuple[int, float]:
        probe = probe_video(video_path)
        return probe.num_frames, probe.native_fps

    return check_entry(cache_dir, directory, digest, options, full, facts,
                       lambda: _count_decodable_frames(video_path))


def _make_real_folder(directory: str) -> None:
    """Create the entry folder, replacing whatever else stands at its place (a link, a file); never its target."""
    if os.path.islink(directory) or (os.path.lexists(directory) and not os.path.isdir(directory)):
        os.unlink(directory)
    parent = os.path.dirname(directory)
    if os.path.islink(parent):
        os.unlink(parent)
    os.makedirs(directory, exist_ok=True)


def _extract_into(
    video_path: str, container: "av.container.InputContainer", directory: str, options: FrameOptions, digest: str
) -> Manifest:
    """Decode and store the selected frames, then write the manifest (last: it marks the entry complete)."""
    probe = probe_container(video_path, container)
    indices = select_frame_indices(probe.num_frames, probe.native_fps, options)
    written, decoded_count = _write_selected(video_path, container, directory, probe, indices, options)
    if decoded_count is not None and decoded_count < probe.num_frames:
        # The stream ended early: the true frame count decides the selection (as a full read would).
        corrected = select_frame_indices(decoded_count, probe.native_fps, options)
        if corrected != [index for index, _, _ in written]:
            written, _ = _write_selected(video_path, container, directory, probe, corrected, options)
    if not written:
        raise VideoError(f"{video_path}: no frame could be decoded")
    files = [name for _, name, _ in written]
    _remove_unlisted_frames(directory, files)
    with Image.open(os.path.join(directory, files[0])) as first:  # reads the header only
        stored_width, stored_height = first.size
    manifest: Manifest = {
        "extractor": EXTRACTOR_VERSION,
        "video_sha256": digest,
        "options": asdict(options),
        "files": files,
        "frame_indices": [index for index, _, _ in written],
        "sizes": [os.path.getsize(os.path.join(directory, name)) for name in files],
        "sha256": [sha for _, _, sha in written],
        "num_frames": decoded_count if decoded_count is not None else probe.num_frames,
        "probed_frames": probe.num_frames,
        "native_fps": probe.native_fps,
        "width": stored_width,
        "height": stored_height,
        "source_width": probe.width,
        "source_height": probe.height,
        "codec": probe.codec,
    }
    write_atomically(os.path.join(directory, MANIFEST_FILE), json.dumps(manifest, sort_keys=True).encode("utf-8"))
    write_stamps(directory, files + [MANIFEST_FILE], os.path.join(directory, STAMP_FILE))
    return manifest


def _remove_unlisted_frames(directory: str, files: Sequence[str]) -> None:
    """Delete frame files the final selection does not list (a first pass over a stream that ended early).

    Safe next to a concurrent writer of the same key: identical inputs give identical final lists.
    """
    listed = set(files)
    for name in os.listdir(directory):
        if name.endswith(".jpg") and name[:-4].isdigit() and name not in listed:
            try:
                os.unlink(os.path.join(directory, name))
            except FileNotFoundError:
                pass  # another writer removed it first


def _write_selected(
    video_path: str,
    container: "av.container.InputContainer",
    directory: str,
    probe: VideoProbe,
    indices: Sequence[int],
    options: FrameOptions,
) -> tuple[list[tuple[int, str, str]], int | None]:
    """Decode and store the wanted frames.

    Returns ``(index, file name, SHA-256)`` of each, and the number of frames that decode when the stream
    ended before a wanted frame (else None).
    """
    written: list[tuple[int, str, str]] = []
    for sequence, (index, frame) in enumerate(decode_container(container, indices, probe, rewind=True)):
        name = f"{sequence:04d}.jpg"
        data = encode_jpeg(to_image(frame, options), options.jpeg_quality)
        write_atomically(os.path.join(directory, name), data)
        written.append((index, name, hashlib.sha256(data).hexdigest()))
    if len(written) == len(set(indices)):
        return written, None
    return written, _count_decodable_frames(video_path)


def _count_decodable_frames(video_path: str) -> int:
    with av.open(video_path) as container:
        stream = container.streams.video[0]
        count = 0
        try:
            for _ in container.decode(stream):
                count += 1
        except av.FFmpegError:
            pass  # a damaged tail: the frames before it are what a full read gets
        return count


def frame_set_from(key: str, directory: str, manifest: Manifest, cached: bool,
                   rebuilt_because: str | None = None) -> FrameSet:
    """The :class:`FrameSet` a manifest describes (files under ``directory``)."""
    files = [str(name) for name in manifest["files"]]
    return FrameSet(
        key=key,
        directory=directory,
        frame_files=tuple(os.path.join(directory, name) for name in files),
        frame_indices=tuple(int(i) for i in manifest["frame_indices"]),
        num_frames=int(manifest["num_frames"]),
        native_fps=float(manifest["native_fps"]),
        width=int(manifest["width"]),
        height=int(manifest["height"]),
        total_bytes=sum(int(size) for size in manifest["sizes"]),
        cached=cached,
        rebuilt_because=rebuilt_because,
    )
