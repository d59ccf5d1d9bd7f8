"""What a reward call takes, checked: the task, and the video as an mp4 path, mp4 bytes or frames with their fps.

Every check raises :class:`RewardInputError` naming the field and what to do. A video in memory (bytes, frames)
becomes a content-addressed mp4 under the model's inputs folder (``inputs/``), so the same input is the same file:
the media cache and HELM's request cache then serve a repeat. Pure apart from that file; no HELM.
"""

import hashlib
import math
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from helm_roboreward.protocol.safe_files import write_atomically
from helm_roboreward.protocol.validation import MAX_FPS

MAX_TASK_CHARACTERS = 1000
"""The benchmark's tasks have 4..207 characters; a much longer one is a mistake (a transcript, a file)."""
MIN_FRAME_SIDE = 16
"""Smaller frames cannot be encoded as H.264 (and show nothing a rubric could judge)."""
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
    """The task, verbatim (the prompt takes it as given)."""
    if not isinstance(task, str):
        raise RewardInputError("task", f"must be text, got {type(task).__name__}")
    if not task.strip():
        raise RewardInputError("task", "is empty; give the instruction the robot was following")
    if len(task) > MAX_TASK_CHARACTERS:
        raise RewardInputError("task", f"has {len(task):,} characters, more than {MAX_TASK_CHARACTERS:,}; give the "
                                       "instruction alone (the benchmark's tasks have 4..207 characters)")
    if "\x00" in task:
        raise RewardInputError("task", "holds a NUL character; remove it")
    return task


def check_fps(fps: object) -> float:
    """A positive, finite frame rate."""
    if isinstance(fps, bool) or not isinstance(fps, int | float):
        raise RewardInputError("fps", f"must be a number of frames per second, got {type(fps).__name__}")
    if not (math.isfinite(fps) and 0 < fps <= MAX_FPS):
        raise RewardInputError("fps", f"must be a number in (0, {MAX_FPS:g}], got {fps!r}: the rate the frames "
                                      "were recorded at (10 for the benchmark's clips)")
    return float(fps)


def check_frames(frames: object, fps: object) -> Frames:
    """Frames as one uint8 ``(T, H, W, 3)`` array with a valid fps."""
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
        array = np.stack([np.asarray(frame) for frame in frames])
    else:
        raise RewardInputError("video", f"must be an mp4 path, mp4 bytes or frames, got {type(frames).__name__}")
    if array.dtype != np.uint8:
        raise RewardInputError("video", f"frames must be uint8 RGB, got dtype {array.dtype}; convert with "
                                        "(frames * 255).clip(0, 255).astype('uint8') if they are floats in 0..1")
    if array.ndim != 4 or array.shape[-1] != 3:
        raise RewardInputError("video", f"frames must have shape (T, H, W, 3), got {array.shape}")
    if array.shape[0] == 0:
        raise RewardInputError("video", "has zero frames; give at least one")
    if min(array.shape[1:3]) < MIN_FRAME_SIDE:
        raise RewardInputError("video", f"frames of {array.shape[2]}x{array.shape[1]} pixels are too small; each "
                                        f"side needs at least {MIN_FRAME_SIDE}")
    return Frames(np.ascontiguousarray(array), rate)


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
    return _in_inputs_folder(inputs_folder, hashlib.sha256(data).hexdigest()[:32] + ".mp4", lambda: data)


def frames_file(frames: Frames, inputs_folder: str) -> str:
    """The content-addressed mp4 of these frames (H.264 at their fps), encoded on first use."""
    digest = hashlib.sha256()
    digest.update(repr((frames.array.shape, frames.fps, ENCODE_CRF)).encode("ascii"))
    digest.update(frames.array.tobytes())
    return _in_inputs_folder(inputs_folder, "frames-" + digest.hexdigest()[:32] + ".mp4", lambda: encode_mp4(frames))


def encode_mp4(frames: Frames) -> bytes:
    """H.264 mp4 bytes of the frames at their fps (yuv420p where both sides are even, else yuv444p)."""
    import io
    from fractions import Fraction

    import av

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
