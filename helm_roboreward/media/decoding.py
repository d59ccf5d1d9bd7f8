"""Decoding only a video's selected frames with PyAV, converted as the official OpenCV path does (docs/media.md)."""

import bisect
import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from io import BytesIO

import av
from av.video.reformatter import ColorRange, Colorspace, VideoReformatter
from PIL import Image

from helm_roboreward.core.files import file_digest, write_atomically
from helm_roboreward.media import frame_cache as cache
from helm_roboreward.protocol import FrameOptions, scaled_size, select_frame_indices


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
    """The media of one rollout as a request will carry it: the JPEG frames, or an mp4 copy (media/copies.py)."""

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


def extract_frames(video_path: str, cache_dir: str, options: FrameOptions, video_sha256: str | None = None,
                   full_check: bool = False) -> PreparedMedia:
    """One video's frames, cached (``full_check``: bytes re-read) or extracted now; else :class:`VideoError`."""
    digest = video_sha256 or file_digest(video_path)
    found, problem = cached_frames(video_path, cache_dir, options, digest, full_check)
    if found is not None:
        return found
    directory = cache.frames_directory(cache_dir, cache.frames_key(digest, options))
    try:
        existed = os.path.lexists(directory) or os.path.islink(os.path.dirname(directory))
        if existed:  # a killed writer's folder, or something planted at its place
            from helm_roboreward.media.maintenance import tidy_entry_folder

            tidy_entry_folder(directory)
        os.makedirs(directory, exist_ok=True)
        with av.open(video_path) as container:  # one open for the probe and the decoding
            manifest = _extract_into(video_path, container, directory, options, digest, existed)
    except OSError as error:  # first: PyAV's errors for missing or unreadable files are OSErrors too
        from helm_roboreward.media.write_errors import write_error

        raise write_error(video_path, directory, error) from None
    except av.FFmpegError as error:
        raise VideoError(f"{video_path}: cannot be read as a video ({error})") from None
    return frames_media(directory, manifest, cached=False, rebuilt_because=problem)


def cached_frames(video_path: str, cache_dir: str, options: FrameOptions, digest: str,
                  full_check: bool) -> tuple[PreparedMedia | None, str | None]:
    """The verified cached frames of one video, or None and why an existing entry is not trusted."""
    directory = cache.frames_directory(cache_dir, cache.frames_key(digest, options))
    if not os.path.lexists(directory):
        return None, None  # nothing cached: nothing to verify
    from helm_roboreward.media.verification import cached_frame_set  # only where something is cached

    return cached_frame_set(video_path, cache_dir, directory, digest, options, full_check)


def _extract_into(video_path: str, container: "av.container.InputContainer", directory: str, options: FrameOptions,
                  digest: str, existed: bool) -> cache.Manifest:
    """Decode and store the selected frames, then write the manifest (last: it marks the entry complete)."""
    probe = probe_container(video_path, container)
    indices = select_frame_indices(probe.num_frames, probe.native_fps, options)
    written = write_selected(container, directory, probe, indices, options)
    num_frames, tidy = probe.num_frames, existed
    if len(written) < len(set(indices)):  # the stream ended before a wanted frame
        from helm_roboreward.media.short_streams import reselect

        (written, num_frames), tidy = reselect(video_path, container, directory, probe, written, options), True
    if not written:
        raise VideoError(f"{video_path}: no frame could be decoded")
    files = [name for _, name, _ in written]
    if tidy:
        from helm_roboreward.media.maintenance import remove_unlisted_frames

        remove_unlisted_frames(directory, files)
    with Image.open(os.path.join(directory, files[0])) as first:  # reads the header only
        stored_width, stored_height = first.size
    manifest: cache.Manifest = {
        "extractor": cache.EXTRACTOR_VERSION, "video_sha256": digest, "options": asdict(options), "files": files,
        "frame_indices": [index for index, _, _ in written],
        "sizes": [os.path.getsize(os.path.join(directory, name)) for name in files],
        "sha256": [sha for _, _, sha in written], "num_frames": num_frames, "probed_frames": probe.num_frames,
        "native_fps": probe.native_fps, "width": stored_width, "height": stored_height,
        "source_width": probe.width, "source_height": probe.height, "codec": probe.codec,
    }
    write_atomically(os.path.join(directory, cache.MANIFEST_FILE), json.dumps(manifest, sort_keys=True).encode())
    cache.write_stamps(directory, files + [cache.MANIFEST_FILE], os.path.join(directory, cache.STAMP_FILE))
    return manifest


def write_selected(container: "av.container.InputContainer", directory: str, probe: VideoProbe,
                   indices: Sequence[int], options: FrameOptions) -> list[tuple[int, str, str]]:
    """Decode and store the wanted frames that decode: ``(index, file name, SHA-256)`` of each."""
    written: list[tuple[int, str, str]] = []
    for sequence, (index, frame) in enumerate(decode_container(container, indices, probe, rewind=True)):
        name = f"{sequence:04d}.jpg"
        data = encode_jpeg(to_image(frame, options), options.jpeg_quality)
        write_atomically(os.path.join(directory, name), data)
        written.append((index, name, hashlib.sha256(data).hexdigest()))
    return written


def frames_media(directory: str, manifest: cache.Manifest, cached: bool, rebuilt_because: str | None) -> PreparedMedia:
    """The frames a manifest describes (files under ``directory``), as a request carries them."""
    return PreparedMedia(str(manifest["video_sha256"]), FRAME_CONTENT_TYPE,
                         tuple(os.path.join(directory, str(name)) for name in manifest["files"]),
                         tuple(int(i) for i in manifest["frame_indices"]), sum(int(size) for size in manifest["sizes"]),
                         cached, rebuilt_because)
