"""Which frames a frame-based model sees (docs/protocol.md, section 4). Pure functions, no I/O.

The official rule keeps every ``max(int(native_fps // 1), 1)``-th frame starting at frame 0, at
native resolution, with no cap and without forcing the final frame in (a 73-frame 10-fps clip
gives frames 0, 10, ..., 70). Every deviation is a named option of :class:`FrameOptions`.
"""

import math
from dataclasses import dataclass

OFFICIAL_FRAMES_PER_SECOND = 1.0

_INTEGRAL_DIGITS_LIMIT = 1e16
"""Integral values below this are written as integers (``2``); larger ones by ``repr`` (``1e+16``)."""


def exact_number(value: float) -> str:
    """A number as run names show it: exactly, so that ``float(text) == value``.

    Integral values read like integers (``2``, not ``2.0``, as ``%g`` wrote them before); every other value is
    written by ``repr``, the shortest text that reads back as the same float (``0.25``, ``0.2500001``,
    ``1e-07``). ``%g`` kept six digits, so ``fps=0.25`` and ``fps=0.2500001`` shared one run folder.
    """
    number = float(value)
    if number.is_integer() and abs(number) < _INTEGRAL_DIGITS_LIMIT:
        return str(int(number))
    return repr(number)


@dataclass(frozen=True)
class FrameOptions:
    """How frames are sampled and stored. The defaults are the official rule."""

    frames_per_second: float = OFFICIAL_FRAMES_PER_SECOND
    """Frames kept per second of video: every ``floor(native_fps / frames_per_second)``-th frame."""

    include_last_frame: bool = False
    """Append the final decodable frame when the stride skips it (the rubric judges the final state)."""

    max_frames: int = 0
    """Keep at most this many frames, evenly spaced over the selected ones; 0 means no cap."""

    max_side: int = 0
    """Downscale so the longer side is at most this many pixels (aspect kept); 0 means native size."""

    jpeg_quality: int = 95
    """JPEG quality; 95 is what OpenCV's ``imwrite`` (the official path) uses by default."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.frames_per_second) and self.frames_per_second > 0):
            raise ValueError(f"fps must be a positive number, got {self.frames_per_second!r}: frames kept per "
                             "second of video (1 is the official rule)")
        if self.max_frames < 0:
            raise ValueError(f"max_frames must be 0 (no cap) or positive, got {self.max_frames!r}: 0 is the "
                             "official rule")
        if self.max_side < 0 or 0 < self.max_side < 16:
            raise ValueError(f"max_side must be 0 (native size) or at least 16 pixels, got {self.max_side!r}: 0 is "
                             "the official rule")
        if not 1 <= self.jpeg_quality <= 100:
            raise ValueError(f"jpeg_quality must be in 1..100, got {self.jpeg_quality!r}")

    @property
    def is_official(self) -> bool:
        """True when these options reproduce the official frames."""
        return self == FrameOptions()

    def run_name_options(self) -> list[str]:
        """The non-default options as run-name parts (``fps=0.5``, ``last_frame=1``, ...), in a fixed order.

        Every value appears exactly (:func:`exact_number`), so different options never share a run name.
        """
        parts = []
        if self.frames_per_second != OFFICIAL_FRAMES_PER_SECOND:
            parts.append(f"fps={exact_number(self.frames_per_second)}")
        if self.include_last_frame:
            parts.append("last_frame=1")
        if self.max_frames:
            parts.append(f"max_frames={self.max_frames}")
        if self.max_side:
            parts.append(f"max_side={self.max_side}")
        return parts

    def cache_key_fields(self) -> dict[str, object]:
        """Every setting that changes the stored frames, for content-addressed names."""
        return {
            "frames_per_second": self.frames_per_second,
            "include_last_frame": self.include_last_frame,
            "max_frames": self.max_frames,
            "max_side": self.max_side,
            "jpeg_quality": self.jpeg_quality,
        }


def frame_stride(native_fps: float, frames_per_second: float = OFFICIAL_FRAMES_PER_SECOND) -> int:
    """The stride between kept frames: ``max(floor(native_fps / frames_per_second), 1)``.

    For the official 1 frame per second this is exactly ``max(int(native_fps // 1), 1)``.
    A missing or broken native frame rate (0, NaN) keeps every frame.
    """
    if not math.isfinite(native_fps) or native_fps <= 0:
        return 1
    if frames_per_second == OFFICIAL_FRAMES_PER_SECOND:
        return max(int(native_fps // 1), 1)
    # The epsilon keeps 3.0 / 0.1 = 29.999... from flooring to 29.
    return max(int(math.floor(native_fps / frames_per_second + 1e-9)), 1)


def select_frame_indices(num_frames: int, native_fps: float, options: FrameOptions = FrameOptions()) -> list[int]:
    """The frame indices (0-based, presentation order) to keep from a video.

    Args:
        num_frames: Number of decodable frames.
        native_fps: The video's frame rate.
        options: Sampling options.

    Returns:
        Strictly increasing indices in ``[0, num_frames)``; empty when the video has no frames.
    """
    if num_frames <= 0:
        return []
    indices = list(range(0, num_frames, frame_stride(native_fps, options.frames_per_second)))
    if options.include_last_frame and indices[-1] != num_frames - 1:
        indices.append(num_frames - 1)
    if options.max_frames and len(indices) > options.max_frames:
        indices = _evenly_spaced(indices, options.max_frames, keep_last=options.include_last_frame)
    return indices


def _evenly_spaced(indices: list[int], count: int, keep_last: bool) -> list[int]:
    """``count`` items spread evenly over ``indices``.

    The first is always kept, and the last too when ``count`` > 1 (or ``keep_last``).
    """
    if count == 1:
        return [indices[-1] if keep_last else indices[0]]
    span = len(indices) - 1
    positions = sorted({round(i * span / (count - 1)) for i in range(count)})
    return [indices[p] for p in positions]


def scaled_size(width: int, height: int, max_side: int) -> tuple[int, int]:
    """The output size for ``max_side`` (0 = native size).

    Keeps the aspect ratio and never upscales.
    """
    if max_side <= 0 or max(width, height) <= max_side:
        return width, height
    scale = max_side / max(width, height)
    return max(2, int(round(width * scale))), max(2, int(round(height * scale)))
