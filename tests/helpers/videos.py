"""Build small test videos with PyAV, inside the tests (no binary fixtures in the repository).

Every frame carries its own frame number in its pixels so that the source index of a decoded
frame can be recovered, even after lossy encoding and downscaling:

- the top third of the frame holds a 16-bit binary code: two rows of eight cells, each cell
  pure black (bit 0) or pure white (bit 1), most significant bit first;
- below it a vertical bar moves one cell-width step per frame and the background gray level
  changes with the frame number (for the eye, and so that consecutive frames always differ).

:func:`frame_number_of` reads the code back from an RGB (or gray) array of any size with the
same aspect ratio. Builders for broken files live at the end of this module.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Union

import av
import numpy as np

PathLike = Union[str, "os.PathLike[str]"]

CODE_BITS = 16
CELLS_PER_ROW = 8
CODE_ROWS = CODE_BITS // CELLS_PER_ROW
ROW_FRACTION = 1 / 6
"""Height of one code row as a fraction of the frame height."""

MAX_FRAME_NUMBER = (1 << CODE_BITS) - 1


def _as_fraction(fps: int | float | Fraction) -> Fraction:
    if isinstance(fps, Fraction):
        return fps
    if isinstance(fps, float) and abs(fps - 29.97) < 1e-9:
        return Fraction(30000, 1001)
    return Fraction(fps).limit_denominator(100000)


def draw_frame(number: int, width: int = 64, height: int = 48) -> np.ndarray:
    """An RGB frame (height x width x 3, uint8) that encodes ``number``."""
    if not 0 <= number <= MAX_FRAME_NUMBER:
        raise ValueError(f"frame number {number} does not fit in {CODE_BITS} bits")
    gray = 40 + (number * 37) % 150
    image = np.full((height, width), gray, dtype=np.uint8)
    # Moving bar in the lower part.
    code_height = int(round(height * ROW_FRACTION * CODE_ROWS))
    bar_width = max(1, width // 16)
    bar_x = (number * bar_width) % max(1, width - bar_width)
    image[code_height:, bar_x : bar_x + bar_width] = 255 - gray
    # The binary code.
    for bit in range(CODE_BITS):
        row, column = divmod(bit, CELLS_PER_ROW)
        value = (number >> (CODE_BITS - 1 - bit)) & 1
        y0, y1 = _span(row, height * ROW_FRACTION)
        x0, x1 = _span(column, width / CELLS_PER_ROW)
        image[y0:y1, x0:x1] = 255 if value else 0
    return np.repeat(image[:, :, None], 3, axis=2)


def draw_colour_frame(number: int, width: int = 96, height: int = 64) -> np.ndarray:
    """:func:`draw_frame` with saturated colour gradients below the code (colour conversions differ there)."""
    image = draw_frame(number, width, height).astype(np.int64)
    top = int(round(height * ROW_FRACTION * CODE_ROWS))
    y, x = np.mgrid[0 : height - top, 0:width]
    image[top:, :, 0] = (x * 255 // max(1, width - 1) + number * 9) % 256
    image[top:, :, 1] = (y * 255 // max(1, height - top - 1) + number * 5) % 256
    image[top:, :, 2] = ((x + y) * 4 + number * 13) % 256
    return image.astype(np.uint8)


def _span(index: int, size: float) -> tuple:
    return int(round(index * size)), int(round((index + 1) * size))


def frame_number_of(image: np.ndarray) -> int:
    """The frame number drawn by :func:`draw_frame`, read from a decoded (possibly resized) frame.

    Accepts an RGB/RGBA array (H x W x C) or a gray array (H x W). Each cell is read from its
    central half and thresholded at mid-gray.
    """
    array = np.asarray(image, dtype=np.float64)
    if array.ndim == 3:
        array = array[:, :, :3].mean(axis=2)
    height, width = array.shape
    cell_height = height * ROW_FRACTION
    cell_width = width / CELLS_PER_ROW
    number = 0
    for bit in range(CODE_BITS):
        row, column = divmod(bit, CELLS_PER_ROW)
        y0 = int(row * cell_height + cell_height / 4)
        y1 = max(y0 + 1, int(row * cell_height + 3 * cell_height / 4))
        x0 = int(column * cell_width + cell_width / 4)
        x1 = max(x0 + 1, int(column * cell_width + 3 * cell_width / 4))
        value = array[y0:y1, x0:x1].mean()
        number = (number << 1) | int(value >= 128)
    return number


def make_video(
    path: PathLike,
    num_frames: int,
    fps: int | float | Fraction = 10,
    width: int = 64,
    height: int = 48,
    codec: str = "libx264",
    gop: int = 30,
    pix_fmt: str = "yuv420p",
    rotation: int | None = None,
    bframes: int | None = None,
    crf: int = 18,
    container_format: str | None = None,
    first_number: int = 0,
    timestamps_ms: Sequence[int] | None = None,
    colour: bool = False,
    colour_tag: int | None = None,
    colour_range: int | None = None,
) -> Path:
    """Encode ``num_frames`` frames numbered ``first_number, first_number + 1, ...``.

    Args:
        path: Output file (the container follows the extension unless ``container_format``).
        num_frames: Frames to encode.
        fps: Frame rate (29.97 is stored as 30000/1001).
        width, height: Frame size.
        codec: FFmpeg encoder name (``libx264``, ``mpeg4``, ...).
        gop: Keyframe interval; for libx264 scene-cut keyframes are switched off so it is exact.
        pix_fmt: Encoder pixel format.
        rotation: Display rotation in degrees counter-clockwise (stored as a display matrix).
        bframes: Number of B-frames for libx264 (None: encoder default, which reorders frames).
        crf: libx264 quality.
        container_format: Force a muxer (e.g. ``"mp4"``).
        first_number: Number drawn on the first frame.
        timestamps_ms: Presentation time of each frame in milliseconds, for a variable frame rate
            (``fps`` then only sets the stream's nominal rate); None: constant ``fps``.
        colour: Draw :func:`draw_colour_frame` frames instead of gray ones.
        colour_tag: FFmpeg's code for the colour space, primaries and transfer written into the stream
            (1: BT.709, 6: SMPTE 170M / BT.601); None: untagged.
        colour_range: FFmpeg's colour range tag (1: limited "tv", 2: full "pc"); None: untagged.

    Returns:
        The path written.
    """
    path = Path(path)
    rate = _as_fraction(fps)
    options: dict[str, str] = {}
    if codec == "libx264":
        params = f"keyint={gop}:min-keyint={gop}:scenecut=0"
        if bframes is not None:
            params += f":bframes={bframes}"
        options = {"crf": str(crf), "preset": "veryfast", "threads": "1", "x264-params": params}
    with av.open(str(path), mode="w", format=container_format) as container:
        stream = container.add_stream(codec, rate=rate, options=options)
        stream.width, stream.height, stream.pix_fmt = width, height, pix_fmt
        stream.codec_context.thread_count = 1
        if codec != "libx264":
            stream.codec_context.gop_size = gop
        if rotation is not None:
            stream.set_display_rotation(rotation)
        if colour_tag is not None:
            context = stream.codec_context
            context.colorspace = context.color_primaries = context.color_trc = colour_tag
        if colour_range is not None:
            stream.codec_context.color_range = colour_range
        if timestamps_ms is not None:
            assert len(timestamps_ms) == num_frames, "one timestamp per frame"
            stream.codec_context.time_base = Fraction(1, 1000)
        for index in range(num_frames):
            draw = draw_colour_frame if colour else draw_frame
            frame = av.VideoFrame.from_ndarray(draw(first_number + index, width, height), format="rgb24")
            if timestamps_ms is not None:
                frame.pts, frame.time_base = timestamps_ms[index], Fraction(1, 1000)
            else:
                frame.pts, frame.time_base = index, 1 / rate
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return path


# --------------------------------------------------------------------------- reading


def decode_all(path: PathLike) -> list[np.ndarray]:
    """Every frame of the first video stream, decoded sequentially, as RGB arrays (the reference)."""
    frames: list[np.ndarray] = []
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.thread_count = 1
        try:
            for frame in container.decode(stream):
                frames.append(frame.to_ndarray(format="rgb24"))
        except av.FFmpegError:
            pass  # a damaged tail: what a sequential reader gets is what came before it
    return frames


def count_video_packets(path: PathLike) -> int:
    """Non-empty packets of the first video stream (what a demux pass counts as frames)."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return sum(1 for packet in container.demux(stream) if packet.size > 0)


def header_frame_count(path: PathLike) -> int:
    """The frame count the container header reports for the first video stream."""
    with av.open(str(path)) as container:
        return int(container.streams.video[0].frames)


# --------------------------------------------------------------------------- broken files


def make_truncated(path: PathLike, source: PathLike | None = None, num_frames: int = 30) -> Path:
    """An mp4 cut to half its bytes (the moov atom at the end is lost)."""
    path = Path(path)
    if source is None:
        source = make_video(path.with_name(path.stem + "-full.mp4"), num_frames)
    data = Path(source).read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def make_zero_byte(path: PathLike) -> Path:
    """An empty file with a video extension."""
    path = Path(path)
    path.write_bytes(b"")
    return path


def make_text_file(path: PathLike) -> Path:
    """A text file with a video extension."""
    path = Path(path)
    path.write_text("this is not a video\n" * 20, encoding="utf-8")
    return path


def make_audio_only(path: PathLike, seconds: float = 1.0, codec: str = "aac") -> Path:
    """An mp4 holding one audio stream (a sine tone) and no video stream."""
    path = Path(path)
    sample_rate = 16000
    with av.open(str(path), mode="w", format="mp4") as container:
        stream = container.add_stream(codec, rate=sample_rate)
        stream.layout = "mono"
        frame_size = stream.codec_context.frame_size or 1024
        total = int(seconds * sample_rate)
        time = np.arange(total, dtype=np.float32) / sample_rate
        tone = (0.2 * np.sin(2 * np.pi * 440 * time)).astype(np.float32)
        fmt = stream.codec_context.format.name
        for start in range(0, total, frame_size):
            chunk = tone[start : start + frame_size]
            if len(chunk) < frame_size:
                chunk = np.pad(chunk, (0, frame_size - len(chunk)))
            data: np.ndarray = (chunk * 32767).astype(np.int16)[None, :] if fmt == "s16" else chunk[None, :]
            frame = av.AudioFrame.from_ndarray(data, format=fmt, layout="mono")
            frame.sample_rate = sample_rate
            frame.pts = start
            frame.time_base = Fraction(1, sample_rate)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return path


END_OF_SEQUENCE_NAL = b"\x0a"
"""An H.264 end-of-sequence NAL unit: well-formed, decodes to no picture and no error."""

GARBAGE_SLICE_NAL = b"\x41" + bytes((i * 131 + 7) % 256 or 1 for i in range(100))
"""A non-IDR slice NAL header followed by noise: a damaged sample the decoder rejects."""


def _nal_packet(nal: bytes, length_prefixed: bool) -> bytes:
    if length_prefixed:
        return len(nal).to_bytes(4, "big") + nal
    return b"\x00\x00\x00\x01" + nal


def make_one_frame_too_many(
    path: PathLike,
    num_frames: int,
    fps: int | float | Fraction = 10,
    tail: str = "eos",
    width: int = 64,
    height: int = 48,
    gop: int = 30,
) -> Path:
    """An mp4 whose container lists ``num_frames + 1`` video samples but only ``num_frames`` decode.

    The ``num_frames`` encoded packets are muxed as usual, then one more non-empty packet with a
    later timestamp that cannot produce a picture:

    - ``tail="eos"``: a lone end-of-sequence NAL unit (well-formed: the decoder silently
      produces nothing, no error);
    - ``tail="garbage"``: a slice NAL unit full of noise (a damaged last sample: sending it to
      the decoder raises ``av.InvalidDataError`` after the ``num_frames`` good frames).

    The payload is written in the stream's own NAL framing (Annex B start codes when the
    encoder has no avcC extradata, which is what the mp4 muxer then converts), because the mp4
    muxer silently stores 0 bytes for a payload it cannot parse as Annex B.

    The helper checks what it built: the demuxer must count ``num_frames + 1`` non-empty
    packets (the header ``num_frames + 1`` frames) while a sequential decode yields exactly
    ``num_frames`` frames. It raises AssertionError when this FFmpeg build does not reproduce that.
    """
    path = Path(path)
    rate = _as_fraction(fps)
    if tail == "eos":
        nal = END_OF_SEQUENCE_NAL
    elif tail == "garbage":
        nal = GARBAGE_SLICE_NAL
    else:
        raise ValueError(f"unknown tail {tail!r}")
    with av.open(str(path), mode="w", format="mp4") as container:
        stream = container.add_stream(
            "libx264",
            rate=rate,
            options={
                "crf": "18",
                "preset": "veryfast",
                "threads": "1",
                # No B-frames: pts == dts and no decoder delay, so the extra sample simply comes last.
                "x264-params": f"keyint={gop}:min-keyint={gop}:scenecut=0:bframes=0",
            },
        )
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.codec_context.thread_count = 1
        packets: list[av.Packet] = []
        for index in range(num_frames):
            frame = av.VideoFrame.from_ndarray(draw_frame(index, width, height), format="rgb24")
            frame.pts, frame.time_base = index, 1 / rate
            packets.extend(stream.encode(frame))
        packets.extend(stream.encode(None))
        extradata = stream.codec_context.extradata or b""
        length_prefixed = bool(extradata) and extradata[0] == 1  # avcC, not Annex B
        last = packets[-1]
        assert last.pts is not None and last.dts is not None, "the encoder left the last packet without timestamps"
        step = last.duration or 1
        extra = av.Packet(_nal_packet(nal, length_prefixed))
        extra.pts, extra.dts = last.pts + step, last.dts + step
        extra.duration = step
        extra.time_base = last.time_base
        extra.stream = stream
        for packet in packets:
            container.mux(packet)
        container.mux(extra)
    packets_counted = count_video_packets(path)
    decoded = len(decode_all(path))
    assert packets_counted == num_frames + 1, f"demux counts {packets_counted} packets, expected {num_frames + 1}"
    assert header_frame_count(path) == num_frames + 1, "header frame count is not num_frames + 1"
    assert decoded == num_frames, f"sequential decode gives {decoded} frames, expected {num_frames}"
    return path


def decode_error_after(path: PathLike) -> str | None:
    """The FFmpeg error a plain sequential decode ends with (None when it ends cleanly)."""
    with av.open(str(path)) as container:
        try:
            for _ in container.decode(container.streams.video[0]):
                pass
        except av.FFmpegError as error:
            return type(error).__name__
    return None


def frame_numbers(arrays: Sequence[np.ndarray]) -> list[int]:
    """The frame number of each array."""
    return [frame_number_of(array) for array in arrays]


def make_tagged_copy(source: PathLike, target: PathLike, **tags: str) -> Path:
    """``source`` remuxed by stream copy with container tags set: the same video stream, other metadata."""
    with av.open(str(source)) as inp, av.open(str(target), "w", format="mp4") as out:
        stream = out.add_stream_from_template(inp.streams.video[0])
        for key, value in tags.items():
            out.metadata[key] = value
        for packet in inp.demux(inp.streams.video[0]):
            if packet.dts is None:
                continue
            packet.stream = stream
            out.mux(packet)
    return Path(target)
