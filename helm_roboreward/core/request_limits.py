"""Provider request limits (media count and request bytes) and the pre-flight check against them. Pure, no I/O.

A provider that gets more images, or a larger request, than it takes rejects the request; HELM's OpenAI,
Anthropic and Google clients treat that as fatal, so a long run would stop halfway. The scenario resolves its
run's deployment and :class:`RequestLimits` (``helm_roboreward.helm_layer.routing.run_request_limits``), checks
every instance after preparing its media (:func:`check_requests`) and raises :class:`RequestLimitError` before
any instance reaches HELM, so no request is sent.

Inline media travel base64-encoded (OpenAI data URLs, Anthropic ``base64`` sources, Gemini ``inline_data``), so
a request's size counts each file at 4/3 of its bytes (:func:`base64_length`).
"""

from collections.abc import Sequence
from dataclasses import dataclass

MEGABYTE = 1_000_000
"""Providers write limits in MB; counted as 10^6 bytes (the stricter reading of MB versus MiB)."""
SHOWN_ROWS = 10
"""Rows named in the error message (the count says how many more)."""


class RequestLimitError(ValueError):
    """Some instances would exceed their deployment's request limits; nothing was sent."""


@dataclass(frozen=True)
class RequestLimits:
    """What one request to a deployment may hold; 0 means no limit."""

    max_images: int = 0
    max_videos: int = 0
    max_request_bytes: int = 0
    """Bytes of the request body the provider accepts (media counted as sent: base64 when inline)."""

    inline_base64: bool = True
    """The client inlines media as base64 (4/3 of the bytes in the request)."""

    source: str = ""
    """Who sets the limits and where that is written (shown in the error)."""

    def __post_init__(self) -> None:
        for name in ("max_images", "max_videos", "max_request_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"request limit {name}={value!r} must be a whole number >= 0 (0: no limit)")

    @property
    def is_empty(self) -> bool:
        """True when nothing is limited."""
        return not (self.max_images or self.max_videos or self.max_request_bytes)

    def describe(self) -> str:
        """``at most 100 images and 32 MB per request`` (for messages and tables)."""
        parts = []
        if self.max_images:
            parts.append(f"{self.max_images} images")
        if self.max_videos:
            parts.append(f"{self.max_videos} video{'s' if self.max_videos != 1 else ''}")
        if self.max_request_bytes:
            parts.append(format_bytes(self.max_request_bytes))
        return "no limit" if not parts else f"at most {' and '.join(parts)} per request"


@dataclass(frozen=True)
class PlannedRequest:
    """What one instance's request will carry."""

    row: str
    """How to name the row in a message: ``metadata line 12``."""

    images: int
    videos: int
    media_file_bytes: tuple[int, ...]
    """Bytes of each media file, in order."""

    text_bytes: int
    """UTF-8 bytes of the prompt text."""


def base64_length(num_bytes: int) -> int:
    """Characters of the standard base64 encoding of ``num_bytes`` bytes (padded): ``4 * ceil(n / 3)``."""
    return 4 * ((num_bytes + 2) // 3)


def request_bytes(request: PlannedRequest, inline_base64: bool = True) -> int:
    """Bytes the request body carries for its text and media (envelope and JSON keys not counted)."""
    media = sum(base64_length(size) if inline_base64 else size for size in request.media_file_bytes)
    return request.text_bytes + media


def format_bytes(num_bytes: int) -> str:
    """``32 MB``, ``1.5 MB``, ``812 kB``, ``90 B`` (decimal units, as providers write their limits)."""
    if num_bytes >= MEGABYTE:
        value = num_bytes / MEGABYTE
        return f"{value:.0f} MB" if value.is_integer() else f"{value:.1f} MB"
    if num_bytes >= 1000:
        return f"{num_bytes / 1000:.0f} kB"
    return f"{num_bytes} B"


def limit_problems(request: PlannedRequest, limits: RequestLimits) -> list[str]:
    """What in one request exceeds ``limits`` (``["130 images", "45.1 MB with base64"]``; empty: it fits)."""
    found = []
    if limits.max_images and request.images > limits.max_images:
        found.append(f"{request.images} images")
    if limits.max_videos and request.videos > limits.max_videos:
        found.append(f"{request.videos} videos")
    size = request_bytes(request, limits.inline_base64)
    if limits.max_request_bytes and size > limits.max_request_bytes:
        found.append(f"{format_bytes(size)}{' with base64' if limits.inline_base64 else ''}")
    return found


def _fixes(requests: Sequence[PlannedRequest], limits: RequestLimits, over_images: bool, over_bytes: bool,
           over_videos: bool) -> list[str]:
    fixes = []
    if over_images:
        fixes.append(f"max_frames={limits.max_images} in the run entry (evenly spaced frames; or a lower fps=)")
    if over_bytes and any(request.images for request in requests):
        fixes.append("smaller frames with max_side=<pixels> (e.g. max_side=640) or fewer with max_frames=")
    if (over_bytes or over_videos) and any(request.videos for request in requests):
        fixes.append("video=frames (with max_frames= / max_side= as needed)")
    return fixes


def check_requests(requests: Sequence[PlannedRequest], limits: RequestLimits, deployment: str) -> None:
    """Stop when any request would exceed ``limits``, naming the rows, the limit and the fix.

    Raises:
        RequestLimitError: One message for every offending row (the first :data:`SHOWN_ROWS` named).
    """
    if limits.is_empty:
        return
    offending = [(request, problems) for request in requests if (problems := limit_problems(request, limits))]
    if not offending:
        return
    shown = "; ".join(f"{request.row}: {', '.join(problems)}" for request, problems in offending[:SHOWN_ROWS])
    more = f"; and {len(offending) - SHOWN_ROWS} more" if len(offending) > SHOWN_ROWS else ""
    over_images = any(limits.max_images and r.images > limits.max_images for r, _ in offending)
    over_videos = any(limits.max_videos and r.videos > limits.max_videos for r, _ in offending)
    over_bytes = any(limits.max_request_bytes and request_bytes(r, limits.inline_base64) > limits.max_request_bytes
                     for r, _ in offending)
    fixes = _fixes([r for r, _ in offending], limits, over_images, over_bytes, over_videos)
    source = f" ({limits.source})" if limits.source else ""
    raise RequestLimitError(
        f"roboreward: {len(offending)} of {len(requests)} row(s) would exceed the request limits of model "
        f"deployment {deployment!r}: {limits.describe()}{source}. Nothing was sent. Rows: {shown}{more}. "
        f"Fix: {'; or '.join(fixes) if fixes else 'send less media per request'}."
    )
