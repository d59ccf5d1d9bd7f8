"""Reading videos with PyAV: the demux probe, only the selected frames, converted as the official OpenCV path does.

Also what a stream that ends early decodes, and the errors of a media folder that cannot take the files
(docs/media.md). ``PreparedMedia`` is the one record of a video's media, frames or a native mp4.
"""

import bisect
import errno
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from io import BytesIO

import av
from av.video.reformatter import ColorRange, Colorspace, VideoReformatter
from PIL import Image

from helm_roboreward.protocol.rules import FrameOptions, scaled_size


class VideoError(Exception):
    """A video that cannot be used (the message names it); ``fix`` says what to do (write_errors: a full disk)."""

    fix = "Re-download the subset, or remove the row from metadata.jsonl."


@dataclass(frozen=True)
class VideoProbe:
    """What one demux pass tells about a video, without decoding."""

    num_frames: int
    native_fps: float
    width: int
    height: int
    codec: str
    keyframes: tuple[int, ...]  # presentation-order indices
    timestamps: tuple[int, ...]  # presentation timestamps in presentation order (index = frame number)


FRAME_CONTENT_TYPE = "image/jpeg"


@dataclass(frozen=True)
class PreparedMedia:
    """The media of one rollout as a request will carry it: the JPEG frames, or its native mp4 (native_videos.py)."""

    video_sha256: str
    content_type: str
    paths: tuple[str, ...]  # one mp4, or the JPEG frames in order
    frame_indices: tuple[int, ...]  # source frame numbers of the frames (empty for native video)
    num_bytes: int
    cached: bool  # nothing was made: a complete, verified entry existed
    rebuilt_because: str | None = None  # why an existing cache entry was not trusted and was rebuilt


def probe_container(path: str, container: "av.container.InputContainer") -> VideoProbe:
    """The demux pass on an open container (left at its end); header frame counts can be wrong, packets cannot."""
    if not container.streams.video:
        raise VideoError(f"{path}: no video stream (is it an audio or data file?)")
    stream = container.streams.video[0]
    entries: list[tuple[int, bool]] = []
    for packet in container.demux(stream):
        if packet.size:
            stamp = packet.pts if packet.pts is not None else packet.dts
            entries.append((stamp if stamp is not None else len(entries), bool(packet.is_keyframe)))
    if not entries:
        raise VideoError(f"{path}: the video stream has no frames")
    rate = stream.average_rate or stream.guessed_rate or stream.base_rate
    entries.sort(key=lambda entry: entry[0])
    context = stream.codec_context
    return VideoProbe(len(entries), float(rate) if rate else 0.0, context.width, context.height, context.name,
                      tuple(i for i, (_, key) in enumerate(entries) if key) or (0,), tuple(s for s, _ in entries))


def decode_container(container: "av.container.InputContainer", indices: Sequence[int], probe: VideoProbe,
                     rewind: bool) -> Iterator[tuple[int, av.VideoFrame]]:
    """``(index, frame)`` of the wanted indices the stream delivers, decoding the least (``rewind``: after a probe)."""
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


def _decoded(container: "av.container.InputContainer", stream: "av.video.stream.VideoStream",
             wanted_stamps: set[int]) -> Iterator[av.VideoFrame]:
    """Frames from the demuxer's position, skipping unwanted ones no frame predicts from (``BIDIR`` would not do)."""
    context = stream.codec_context
    for packet in container.demux(stream):
        context.skip_frame = "DEFAULT" if packet.pts is None or packet.pts in wanted_stamps else "NONREF"
        yield from context.decode(packet)


_REFORMATTER = VideoReformatter()
_ROTATIONS = {90: Image.Transpose.ROTATE_90, 180: Image.Transpose.ROTATE_180, 270: Image.Transpose.ROTATE_270}


def to_image(frame: av.VideoFrame, options: FrameOptions) -> Image.Image:
    """One decoded frame as RGB (downscaled, rotated as the file asks), through one shared swscale context."""
    width, height = scaled_size(frame.width, frame.height, options.max_side)
    # As the official path (OpenCV 4): YUV is BT.601 whatever the colour tags, full range only in "yuvj" formats.
    yuv, jpeg_range = frame.format.name.startswith("yuv"), frame.format.name.startswith("yuvj")
    rgb = _REFORMATTER.reformat(frame, width, height, "rgb24", src_colorspace=Colorspace.ITU601 if yuv else None,
                                src_color_range=(ColorRange.JPEG if jpeg_range else ColorRange.MPEG) if yuv else None,
                                interpolation="AREA" if (width, height) != (frame.width, frame.height) else None)
    plane = rgb.planes[0]
    image = Image.frombuffer("RGB", (rgb.width, rgb.height), plane, "raw", "RGB", plane.line_size, 1)  # type: ignore[arg-type]
    rotation = _ROTATIONS.get(frame.rotation % 360 if frame.rotation else 0)
    return image.transpose(rotation) if rotation is not None else image


def encode_jpeg(image: Image.Image, quality: int) -> bytes:
    """JPEG bytes of an image (deterministic for identical pixels and settings)."""
    buffer = BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def probe_video(path: str) -> VideoProbe:
    """Demux a video once (no decoding) to count frames and find keyframes; :class:`VideoError` if it cannot."""
    try:
        with av.open(path) as container:
            return probe_container(path, container)
    except av.FFmpegError as error:
        raise VideoError(f"{path}: cannot be read as a video ({error})") from None


def decode_frames(path: str, indices: Sequence[int], probe: VideoProbe) -> Iterator[tuple[int, av.VideoFrame]]:
    """``(index, frame)`` for the wanted presentation-order indices the stream delivers, decoding the least."""
    with av.open(path) as container:
        yield from decode_container(container, indices, probe, rewind=False)


def count_decodable_frames(video_path: str) -> int:
    """How many frames a sequential read decodes (a damaged packet ends it, as it ends any sequential reader)."""
    count = 0
    with av.open(video_path) as container:
        try:
            for _ in container.decode(container.streams.video[0]):
                count += 1
        except av.FFmpegError:
            pass
    return count


class MediaWriteError(VideoError):
    """Media that could not be written; the message names the video and the folder."""

    fix = ("Free space on the disk holding the media folder, or choose another output folder (helm-run -o / "
           "roboreward prepare --output-path); the videos already prepared stay cached.")


def write_error(path: str, target: str, error: OSError) -> MediaWriteError:
    """The error for a failed write of ``path``'s media into ``target``, saying plainly when the disk is full."""
    reason = "the disk is full" if error.errno in (errno.ENOSPC, errno.EDQUOT) else "cannot write"
    return MediaWriteError(f"{path}: {reason}: {target} ({error.strerror or error})")


def unwritable_folder(media_dir: str, error: OSError) -> PermissionError:
    """The error when the media folder cannot be created or written at all (checked before any video)."""
    return PermissionError(
        f"cannot write to the media folder {media_dir} ({error.strerror or error}). "
        "Choose a writable output folder (helm-run -o / roboreward prepare --output-path)."
    )
