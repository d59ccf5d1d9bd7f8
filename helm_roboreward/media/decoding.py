"""Decoding the selected frames of a video with PyAV and storing them as JPEGs in a content-addressed cache.

Design (see FINDINGS and the frame-extraction issue):

- One demux pass (no decoding) lists every packet's timestamp and keyframe flag: the exact frame
  count (header counts can be wrong), presentation order, and the keyframe index.
- Decoding goes forward; it seeks only when the next wanted frame's keyframe lies beyond the
  current decode position, so it decodes no more than needed and frames stay pixel-identical to
  sequential decoding. Only kept frames are converted (and resized by swscale).
- Frames go to ``<cache>/<key[:2]>/<key>/NNNN.jpg`` where ``key`` hashes the video bytes and every
  sampling setting (:mod:`helm_roboreward.media.frame_cache`); each file is written to a temporary name and
  renamed, and the manifest (with every file's SHA-256) is written last, so a reader never sees a
  partial file and a cache hit needs no decoding. Identical inputs give identical names and bytes, so
  many machines can share one cache without locks. An entry is used only after
  :func:`helm_roboreward.media.frame_cache.check_entry` accepts it; otherwise it is rebuilt.
- Nothing holds more than one decoded frame (plus the last one seen) in memory.
"""

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from io import BytesIO

import av
from av.video.reformatter import VideoReformatter
from PIL import Image

from helm_roboreward.core.files import file_digest, write_atomically
from helm_roboreward.media.frame_cache import (
    EXTRACTOR_VERSION,
    EntryCheck,
    check_entry,
    frames_directory,
    frames_key,
)
from helm_roboreward.media.store import MANIFEST_FILE, STAMP_FILE, is_disk_full, remove_stale_temporaries, write_stamps
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
    reason = "the disk is full" if is_disk_full(error) else "cannot write"
    return MediaWriteError(f"{path}: {reason}: {target} ({error.strerror or error})")


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


def validate_video(path: str) -> VideoProbe:
    """Demux the whole video and decode its first frame, as frames mode does before using a video.

    Native-video mode calls this before copying a video for a model, so a file that is not a playable
    video fails with the same messages in both modes.

    Raises:
        VideoError: The file is not a video, has no video stream, has no frames, or no frame decodes.
    """
    try:
        with av.open(path) as container:
            probe = _probe_open(path, container)
            if next(_decode_open(container, [0], probe, rewind=True), None) is None:
                raise VideoError(f"{path}: no frame could be decoded")
            return probe
    except av.FFmpegError as error:
        raise VideoError(f"{path}: cannot be read as a video ({error})") from None


def probe_video(path: str) -> VideoProbe:
    """Demux a video once (no decoding) to count frames and find keyframes.

    Raises:
        VideoError: The file is not a video, has no video stream, or has no frames.
    """
    try:
        with av.open(path) as container:
            return _probe_open(path, container)
    except av.FFmpegError as error:
        raise VideoError(f"{path}: cannot be read as a video ({error})") from None


def _probe_open(path: str, container: "av.container.InputContainer") -> VideoProbe:
    """The demux pass on an open container (which is left at its end)."""
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
    """Yield ``(index, frame)`` for the wanted presentation-order indices, decoding as little as possible.

    Seeks forward only when the wanted frame's keyframe is past the current decode position;
    otherwise decodes on, skipping non-reference frames nobody wants (their pixels cannot affect
    a later frame). After the last wanted frame it stops. If the video ends early (its packets do
    not all decode), the missing indices are simply not yielded.
    """
    with av.open(path) as container:
        yield from _decode_open(container, indices, probe, rewind=False)


def _decode_open(
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
        keyframe = _keyframe_at_or_before(probe.keyframes, wanted[cursor])
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
            # The demuxer put us elsewhere (seen with B-frames in variable-frame-rate files). Before the
            # keyframe: decoding on reaches it. After it: wanted frames may be behind us, so start over.
            # Either way stop seeking in this file, which would otherwise repeat the miss forever.
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
    """Frames from the demuxer's current position; unwanted non-reference frames are not decoded.

    ``skip_frame="NONREF"`` drops only frames no other frame predicts from, so every decoded frame
    is pixel-identical to a sequential decode (the stricter ``BIDIR`` is not: x264's B-pyramid uses
    B-frames as references).
    """
    context = stream.codec_context
    for packet in container.demux(stream):
        wanted = packet.pts is None or packet.pts in wanted_stamps
        context.skip_frame = "DEFAULT" if wanted else "NONREF"
        yield from context.decode(packet)


def _keyframe_at_or_before(keyframes: Sequence[int], index: int) -> int:
    best = keyframes[0]
    low, high = 0, len(keyframes) - 1
    while low <= high:
        middle = (low + high) // 2
        if keyframes[middle] <= index:
            best = keyframes[middle]
            low = middle + 1
        else:
            high = middle - 1
    return best


_REFORMATTER = VideoReformatter()


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
    rotation = frame.rotation % 360 if frame.rotation else 0
    if rotation == 90:
        image = image.transpose(Image.Transpose.ROTATE_90)
    elif rotation == 180:
        image = image.transpose(Image.Transpose.ROTATE_180)
    elif rotation == 270:
        image = image.transpose(Image.Transpose.ROTATE_270)
    return image


def encode_jpeg(image: Image.Image, quality: int) -> bytes:
    """JPEG bytes of an image (deterministic for identical pixels and settings)."""
    buffer = BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def extract_frames(
    video_path: str, cache_dir: str, options: FrameOptions, video_sha256: str | None = None, full_check: bool = False
) -> FrameSet:
    """The frames of one video under ``options``, from the cache or freshly extracted.

    Args:
        video_path: The mp4 (any format FFmpeg reads).
        cache_dir: Root of the content-addressed frame cache.
        options: Sampling settings.
        video_sha256: The video's digest when already known.
        full_check: Check a cached entry's digests and the video even when its stamps match.

    Raises:
        VideoError: The video cannot be decoded, or the frames cannot be written.
    """
    digest = video_sha256 or file_digest(video_path)
    key = frames_key(digest, options)
    directory = frames_directory(cache_dir, key)
    checked = cached_entry(video_path, cache_dir, directory, digest, options, full_check)
    if checked.manifest is not None:
        return frame_set_from(key, directory, checked.manifest, cached=True)
    try:
        _make_real_folder(directory)
        remove_stale_temporaries(directory)
        with av.open(video_path) as container:  # one open for the probe and the decoding
            manifest = _extract_into(video_path, container, directory, options, digest)
    except OSError as error:
        raise write_error(video_path, directory, error) from None
    except av.FFmpegError as error:
        raise VideoError(f"{video_path}: cannot be read as a video ({error})") from None
    return frame_set_from(key, directory, manifest, cached=False, rebuilt_because=checked.problem)


def cached_entry(video_path: str, cache_dir: str, directory: str, digest: str, options: FrameOptions,
                 full: bool) -> EntryCheck:
    """:func:`helm_roboreward.media.frame_cache.check_entry` for this video (probing it only if a full check runs)."""

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
) -> dict[str, object]:
    probe = _probe_open(video_path, container)
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
    manifest: dict[str, object] = {
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
    """Delete frame files the final selection does not list (left by a first pass over a stream that ended early).

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

    Returns ``(index, file name, SHA-256)`` triples and, when the stream ended before a wanted frame,
    the number of frames that did decode.
    """
    written: list[tuple[int, str, str]] = []
    for sequence, (index, frame) in enumerate(_decode_open(container, indices, probe, rewind=True)):
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


def frame_set_from(key: str, directory: str, manifest: dict[str, object], cached: bool,
               rebuilt_because: str | None = None) -> FrameSet:
    """The :class:`FrameSet` a manifest describes (files under ``directory``)."""
    files = [str(name) for name in manifest["files"]]  # type: ignore[attr-defined]
    sizes = [int(size) for size in manifest["sizes"]]  # type: ignore[attr-defined]
    return FrameSet(
        key=key,
        directory=directory,
        frame_files=tuple(os.path.join(directory, name) for name in files),
        frame_indices=tuple(int(i) for i in manifest["frame_indices"]),  # type: ignore[attr-defined]
        num_frames=int(manifest["num_frames"]),  # type: ignore[call-overload]
        native_fps=float(manifest["native_fps"]),  # type: ignore[arg-type]
        width=int(manifest["width"]),  # type: ignore[call-overload]
        height=int(manifest["height"]),  # type: ignore[call-overload]
        total_bytes=sum(sizes),
        cached=cached,
        rebuilt_because=rebuilt_because,
    )
