"""What a reward call takes, checked: the task, and the video as an mp4 path, mp4 bytes or frames with their fps.

Every check raises :class:`RewardInputError` naming the field and what to do. A video in memory (bytes, frames)
becomes a content-addressed mp4 under the model's inputs folder (``inputs/``), so the same input is the same file:
the media cache and HELM's request cache then serve a repeat. An mp4 given is verified (an ISO BMFF mp4 whose
media data holds its samples only) or remuxed there. Decoded sizes are bounded from shapes and image headers before
anything is allocated or decoded (docs/reward_api.md, "Limits"). Pure apart from those files; no HELM.
"""

import functools
import hashlib
import io
import math
import numbers
import os
import stat
import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import av
import numpy as np
from PIL import Image

from helm_roboreward.protocol.native_videos import remux_atomically, top_level_boxes
from helm_roboreward.protocol.safe_files import file_digest, write_atomically
from helm_roboreward.protocol.validation import MAX_FPS, has_visible_character, is_number, text_problem
from helm_roboreward.protocol.video_decoding import VideoError

MAX_TASK_CHARACTERS = 1000
"""The benchmark's tasks have 4..207 characters; a much longer one is a mistake (a transcript, a file)."""
MIN_FRAME_SIDE = 16
"""Smaller frames cannot be encoded as H.264 (and show nothing a rubric could judge)."""
MAX_FRAME_PIXELS = 3840 * 2160
"""Pixels of one frame: 4K UHD, 27 times the benchmark's largest frames (bridge, 640x480)."""
MAX_FRAMES = 10_000
"""Frames of one video given as frames: 1,000 s at 10 fps (the benchmark's longest clip has 401)."""
MAX_VIDEO_PIXELS = 1 << 27
"""Pixels of one video given as frames (134,217,728; 384 MiB as uint8 RGB): 2.3 times the benchmark's longest clip
(robo_arena, 401 frames of 512x288 = 59.1 million). A longer video goes as an mp4 (decoded a frame at a time)."""
IMAGE_FORMATS = ("PNG", "JPEG", "WEBP")
"""What ``images_base64`` may hold; PIL opens no other format (each of its many readers is attack surface)."""
MP4_CODECS = ("h264", "hevc", "av1", "vp9", "mpeg4")
"""Video codecs an mp4 given may hold: what model servers decode; not image codecs (png, mjpeg), whose frames carry
text chunks through a remux."""
INPUTS_FOLDER = "inputs"
ENCODE_CRF = "17"
"""x264 quality of frames encoded to mp4: visually lossless (the frames then follow an mp4's path exactly)."""


class RewardInputError(ValueError):
    """An input a reward call cannot use; ``field`` names it (``task``, ``video``, ``fps``, ``items[3].video``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message

    def within(self, prefix: str) -> "RewardInputError":
        """The same error with its field inside ``prefix`` (``items[3]`` + ``video`` -> ``items[3].video``)."""
        return RewardInputError(f"{prefix}.{self.field}", self.message)


class RewardModelError(ValueError):
    """The model cannot be used as asked (unknown model or deployment, bad option, missing credentials)."""


@dataclass(frozen=True, eq=False)  # arrays do not compare to one truth value
class Frames:
    """Decoded frames, uint8 RGB ``(T, H, W, 3)``, shown at ``fps`` frames per second."""

    array: np.ndarray[Any, np.dtype[np.uint8]]
    fps: float


Video = str | os.PathLike[str] | bytes | Frames | np.ndarray[Any, Any] | Sequence[np.ndarray[Any, Any]]
"""An mp4 path, mp4 bytes, :class:`Frames`, or frames (an array or a list of ``(H, W, 3)`` arrays) with ``fps``."""


def check_task(task: object) -> str:
    """The task, verbatim (the prompt takes it as given): valid text (UTF-8), visible, no NUL, not too long."""
    if not isinstance(task, str):
        raise RewardInputError("task", f"must be text, got {type(task).__name__}")
    if not has_visible_character(task):
        raise RewardInputError("task", "is empty (or only whitespace and zero-width characters); give the "
                                       "instruction the robot was following")
    problem = text_problem(task)
    if problem is not None:
        raise RewardInputError("task", problem)
    if len(task) > MAX_TASK_CHARACTERS:
        raise RewardInputError("task", f"has {len(task):,} characters, more than {MAX_TASK_CHARACTERS:,}; give the "
                                       "instruction alone (the benchmark's tasks have 4..207 characters)")
    if "\x00" in task:
        raise RewardInputError("task", "holds a NUL character; remove it")
    return task


def check_count(value: object, field: str, minimum: int = 1) -> int:
    """A whole number (Python's or numpy's, not a bool) of at least ``minimum``."""
    if not (isinstance(value, numbers.Integral) and is_number(value) and int(value) >= minimum):
        raise RewardInputError(field, f"must be a whole number >= {minimum}, got {value!r}")
    return int(value)


def check_fps(fps: object) -> float:
    """A positive, finite frame rate (any real number but a bool)."""
    if not is_number(fps):
        raise RewardInputError("fps", f"must be a number of frames per second, got {type(fps).__name__}")
    try:
        rate = float(fps)  # type: ignore[arg-type]  # a numbers.Real
    except OverflowError:  # an int over 1e308
        rate = math.inf
    if not (math.isfinite(rate) and 0 < rate <= MAX_FPS):
        raise RewardInputError("fps", f"must be a number in (0, {MAX_FPS:g}], got {fps!r}: the rate the frames "
                                      "were recorded at (10 for the benchmark's clips)")
    return rate


def check_frame_budget(frames: int, height: int, width: int, field: str = "video",
                       max_pixels: int = MAX_VIDEO_PIXELS) -> None:
    """``frames`` frames of ``height`` x ``width`` are at least one, not too small, within the limits (Python ints)."""
    if frames == 0:
        raise RewardInputError(field, "has zero frames; give at least one")
    _check_frame_pixels(height, width, field)
    if min(height, width) < MIN_FRAME_SIDE:
        raise RewardInputError(field, f"frames of {width}x{height} pixels are too small; each side needs at least "
                                      f"{MIN_FRAME_SIDE}")
    if frames > MAX_FRAMES:
        raise RewardInputError(field, f"has {frames:,} frames, more than {MAX_FRAMES:,}; send fewer frames, or "
                                      "the video as an mp4")
    if frames * height * width > max_pixels:
        raise RewardInputError(field, f"has {frames:,} frames of {width}x{height}: {frames * height * width:,} "
                                      f"pixels, more than {max_pixels:,} per video; send fewer or smaller "
                                      "frames, or the video as an mp4")


def _check_frame_pixels(height: int, width: int, field: str) -> None:
    if height * width > MAX_FRAME_PIXELS:
        raise RewardInputError(field, f"frames of {width}x{height} pixels are too large: at most "
                                      f"{MAX_FRAME_PIXELS:,} pixels each (3840x2160); downscale them")


def check_frame_shape(shape: object, field: str, max_pixels: int = MAX_VIDEO_PIXELS) -> tuple[int, int, int, int]:
    """A ``[T, H, W, 3]`` shape (of raw frame bytes) within the limits, as Python ints: check it before allocating."""
    if not (isinstance(shape, list | tuple) and len(shape) == 4
            and all(isinstance(n, numbers.Integral) and is_number(n) and int(n) >= 0 for n in shape)
            and shape[3] == 3):
        text = repr(shape)
        raise RewardInputError(field, f"must be [T, H, W, 3]: four whole numbers, the last 3 (uint8 RGB), got "
                                      f"{text if len(text) <= 60 else text[:57] + '...'}")
    # Python ints: numpy's product of [2**32, 2**32, 1, 3] wraps to 0
    frames, height, width, channels = (int(n) for n in shape)
    check_frame_budget(frames, height, width, field, max_pixels)
    return frames, height, width, channels


def check_frames(frames: object, fps: object) -> Frames:
    """Frames as one uint8 ``(T, H, W, 3)`` array with a valid fps, within the limits (checked before copying)."""
    if isinstance(frames, Frames):
        given = frames
        frames, fps = given.array, given.fps
    if fps is None:
        raise RewardInputError("fps", "is required with frames: the rate the frames were recorded at")
    rate = check_fps(fps)
    if isinstance(frames, np.ndarray):
        array = frames
    elif isinstance(frames, Sequence) and not isinstance(frames, str | bytes):
        if not frames:
            raise RewardInputError("video", "has zero frames; give at least one")
        shapes = [getattr(frame, "shape", None) for frame in frames]
        for index, shape in enumerate(shapes):
            if shape != shapes[0]:
                raise RewardInputError("video", f"frames of mixed shapes: frame {index} is {shape}, frame 0 is "
                                                f"{shapes[0]}; resize them to one (H, W, 3) shape")
        if isinstance(shapes[0], tuple) and len(shapes[0]) == 3:
            check_frame_budget(len(frames), int(shapes[0][0]), int(shapes[0][1]))  # before np.stack copies them
        array = np.stack([np.asarray(frame) for frame in frames])
    else:
        raise RewardInputError("video", f"must be an mp4 path, mp4 bytes or frames, got {type(frames).__name__}")
    if array.dtype != np.uint8:
        raise RewardInputError("video", f"frames must be uint8 RGB, got dtype {array.dtype}; convert with "
                                        "(frames * 255).clip(0, 255).astype('uint8') if they are floats in 0..1")
    if array.ndim != 4 or array.shape[-1] != 3:
        raise RewardInputError("video", f"frames must have shape (T, H, W, 3), got {array.shape}")
    check_frame_budget(int(array.shape[0]), int(array.shape[1]), int(array.shape[2]))  # before a view is copied
    return Frames(np.ascontiguousarray(array), rate)


@contextmanager
def _image(data: bytes, field: str) -> Iterator[Image.Image]:
    """The image, opened lazily (PIL reads its header only), limited to :data:`IMAGE_FORMATS`."""
    try:
        image = Image.open(io.BytesIO(data), formats=IMAGE_FORMATS)
    except Image.DecompressionBombError:
        raise RewardInputError(field, f"declares more pixels than PIL decodes; frames may have at most "
                                      f"{MAX_FRAME_PIXELS:,} pixels each") from None
    except (OSError, ValueError, SyntaxError, struct.error) as error:  # PIL's readers raise all of these
        raise RewardInputError(field, f"cannot be decoded: not a PNG, JPEG or WebP image PIL can read ({error})"
                               ) from None
    with image:
        yield image


def decode_images(images: Sequence[bytes], fps: object, field: str = "video.images_base64",
                  max_pixels: int = MAX_VIDEO_PIXELS) -> Frames:
    """PNG, JPEG or WebP images as frames: every size is read from its header and checked before any is decoded.

    ``field`` names the list (``images[i]`` in errors); ``max_pixels`` is what the video may decode to (a server
    can pass what is left of a request's budget).
    """
    if fps is None:
        raise RewardInputError("fps", "is required with frames: the rate the frames were recorded at")
    rate = check_fps(fps)
    if not images:
        raise RewardInputError(field, "has zero frames; give at least one")
    size = (0, 0)
    for index, data in enumerate(images):
        with _image(data, f"{field}[{index}]") as image:
            if index and image.size != size:
                raise RewardInputError(f"{field}[{index}]", f"is {image.width}x{image.height} pixels, image 0 is "
                                                            f"{size[0]}x{size[1]}: frames of mixed sizes; resize "
                                                            "them to one size")
            size = image.size
        check_frame_budget(index + 1, size[1], size[0], f"{field}[{index}]", max_pixels)
    array = np.empty((len(images), size[1], size[0], 3), np.uint8)
    for index, data in enumerate(images):
        with _image(data, f"{field}[{index}]") as image:
            try:
                array[index] = np.asarray(image.convert("RGB"))
            except (OSError, ValueError, SyntaxError, struct.error) as error:
                raise RewardInputError(f"{field}[{index}]", f"cannot be decoded ({error})") from None
    return check_frames(array, rate)


def check_video_path(path: str | os.PathLike[str], field: str = "video") -> str:
    """An existing regular file's absolute path (links followed)."""
    text = os.fspath(path)
    if not text or "\x00" in text:
        raise RewardInputError(field, "is not a usable path")
    real = os.path.realpath(text)
    try:
        info = os.stat(real)
    except OSError as error:
        raise RewardInputError(field, f"{text} cannot be read ({error.strerror or error})") from None
    if not stat.S_ISREG(info.st_mode):
        raise RewardInputError(field, f"{text} is not a regular file")
    if info.st_size == 0:
        raise RewardInputError(field, f"{text} is empty")
    return real


def _in_inputs_folder(inputs_folder: str, name: str, make: "Any") -> str:
    """``<inputs folder>/<name[:2]>/<name>``, written by ``make()`` (bytes) unless it is there already."""
    target = os.path.join(inputs_folder, name[:2], name)
    if not os.path.isfile(target):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        write_atomically(target, make())
    return target


def mp4_bytes_file(data: bytes, inputs_folder: str) -> str:
    """The content-addressed file holding these mp4 bytes."""
    if not data:
        raise RewardInputError("video", "is empty (0 bytes); give the mp4's bytes")
    _check_mp4_start(data[:12], "the video given ")  # before anything is written
    return _in_inputs_folder(inputs_folder, hashlib.sha256(data).hexdigest()[:32] + ".mp4", lambda: data)


def frames_file(frames: Frames, inputs_folder: str) -> str:
    """The content-addressed mp4 of these frames (H.264 at their fps), encoded on first use."""
    digest = hashlib.sha256()
    digest.update(repr((frames.array.shape, frames.fps, ENCODE_CRF)).encode("ascii"))
    digest.update(frames.array.tobytes())
    return _in_inputs_folder(inputs_folder, "frames-" + digest.hexdigest()[:32] + ".mp4", lambda: encode_mp4(frames))


def encode_mp4(frames: Frames) -> bytes:
    """H.264 mp4 bytes of the frames at their fps (yuv420p where both sides are even, else yuv444p)."""
    _, height, width, _ = frames.array.shape
    buffer = io.BytesIO()
    rate = Fraction(frames.fps).limit_denominator(1001)
    with av.open(buffer, "w", format="mp4", options={"fflags": "+bitexact"}) as container:
        stream = container.add_stream("libx264", rate=rate)
        stream.width, stream.height = width, height
        stream.pix_fmt = "yuv420p" if width % 2 == 0 and height % 2 == 0 else "yuv444p"
        stream.options = {"crf": ENCODE_CRF, "preset": "fast", "threads": "1"}  # one thread: the same bytes every time
        for image in frames.array:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")))
        container.mux(stream.encode())
    return buffer.getvalue()


def video_file(video: object, inputs_folder: str) -> str:
    """The mp4 file a checked video input stands for (a path as given; bytes and frames stored in ``inputs_folder``)."""
    if isinstance(video, bytes | bytearray | memoryview):
        return mp4_bytes_file(bytes(video), inputs_folder)
    if isinstance(video, str | os.PathLike):
        return check_video_path(video)
    return frames_file(check_frames(video, None), inputs_folder)  # Frames carry their fps


_SIGNATURES = ((b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image"),
               (b"\x1a\x45\xdf\xa3", "Matroska or WebM"), (b"RIFF", "RIFF (AVI or WebP)"), (b"OggS", "Ogg"),
               (b"FLV", "FLV"))


def verified_mp4(path: str, digest: str, inputs_folder: str, shown: str) -> tuple[str, str]:
    """The mp4 to send for an mp4 given to the API, and its digest: the file itself, verified, or its remux.

    The remux (of its streams, by this package) is written to ``inputs_folder`` once per content. Verified: an
    ISO BMFF mp4 (an ``ftyp`` box first, read by FFmpeg's mp4 demuxer) whose video streams are in
    :data:`MP4_CODECS` with frames within :data:`MAX_FRAME_PIXELS`, and whose ``mdat`` boxes hold its samples and
    nothing else. What the native path checks next (tags, other streams, other boxes) it remuxes away as for any
    video. ``shown`` names the input in messages (its path, or "the video given").

    Raises:
        RewardInputError: Anything else (``video``), saying what to send instead.
    """
    try:
        found = _verified_mp4(path, digest, inputs_folder)
        if not os.path.isfile(found[0]):  # a remux removed since: make it again
            _verified_mp4.cache_clear()
            found = _verified_mp4(path, digest, inputs_folder)
    except RewardInputError as error:
        raise RewardInputError("video", f"{shown} {error.message}") from None
    return found


@functools.lru_cache(maxsize=4096)
def _verified_mp4(path: str, digest: str, inputs_folder: str) -> tuple[str, str]:
    with open(path, "rb") as handle:
        _check_mp4_start(handle.read(12), "")
    try:
        with av.open(path) as container:
            if "mp4" not in container.format.name.split(","):
                raise RewardInputError("video", f"cannot be read as a video: FFmpeg reads it as "
                                                f"{container.format.name}, not as an mp4; {_SEND}")
            if not container.streams.video:
                raise RewardInputError("video", f"has no video stream; {_SEND}")
            for stream in container.streams.video:
                codec = stream.codec_context.codec.canonical_name
                if codec not in MP4_CODECS:
                    raise RewardInputError("video", f"holds {codec} video, not one of {', '.join(MP4_CODECS)}; "
                                                    + _SEND)
                _check_frame_pixels(stream.codec_context.height, stream.codec_context.width, "video")
            samples = sum(packet.size for packet in container.demux())
    except av.FFmpegError as error:
        raise RewardInputError("video", f"cannot be read as a video ({error})") from None
    if _mdat_bytes(path) == samples:
        return path, digest
    target = os.path.join(inputs_folder, digest[:2], f"remux-{digest[:32]}.mp4")
    if not os.path.isfile(target):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        try:
            remux_atomically(path, target)
        except VideoError as error:
            raise RewardInputError("video", f"holds bytes no sample uses and cannot be remuxed without them "
                                            f"({str(error).replace(path, 'it')})") from None
    return target, file_digest(target)


def _check_mp4_start(head: bytes, shown: str) -> None:
    """An mp4's first bytes: an ``ftyp`` box (what else the bytes look like, in the message)."""
    if head[4:8] != b"ftyp":
        kind = next((name for magic, name in _SIGNATURES if head.startswith(magic)), None)
        raise RewardInputError("video", f"{shown}cannot be read as a video: it is not an mp4 ("
                               + (f"its bytes are {kind}" if kind else "no ftyp box at its start") + "); " + _SEND)


_SEND = ("send an mp4 (H.264, e.g. ffmpeg -i IN -an -c:v libx264 -pix_fmt yuv420p OUT.mp4), or the decoded frames "
         "with fps")


def _mdat_bytes(path: str) -> int:
    """The payload bytes of an mp4's top-level ``mdat`` boxes (headers read, nothing else).

    -1 for a damaged file: never equal to the samples' bytes, so the file is remuxed.
    """
    total = end = 0
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        for kind, position, box_size, header_size in top_level_boxes(handle, size):
            if kind == b"mdat":
                total += min(box_size, size - position) - header_size
            end = position + box_size
    return total if end == size else -1
