"""Provider request limits (media count and request bytes) and the checks against them.

Pure, no I/O, no HELM import. Used by ``roboreward estimate`` for every planned row, and by the vLLM video client
for each request when its deployment declares limits; the documented limits and their sources: docs/clients.md,
"Provider request limits".
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from helm_roboreward.protocol.rules import DECLARED_LIMIT_ARGS

MEGABYTE = 1_000_000
"""Providers write limits in MB; counted as 10^6 bytes (the stricter reading of MB versus MiB)."""
SHOWN_ROWS = 10
"""Rows named in the error message (the count says how many more)."""


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


_SMALLER_FRAMES = "smaller frames with max_side=<pixels> (e.g. max_side=640) or fewer with max_frames="
_VIDEO_AS_FRAMES = "video=frames (with max_frames= / max_side= as needed)"


def _fewer_frames(limits: RequestLimits) -> str:
    return f"max_frames={limits.max_images} in the run entry (evenly spaced frames; or a lower fps=)"


def _fixes(requests: Sequence[PlannedRequest], limits: RequestLimits, over_images: bool, over_bytes: bool,
           over_videos: bool) -> list[str]:
    fixes = []
    if over_images:
        fixes.append(_fewer_frames(limits))
    if over_bytes and any(request.images for request in requests):
        fixes.append(_SMALLER_FRAMES)
    if (over_bytes or over_videos) and any(request.videos for request in requests):
        fixes.append(_VIDEO_AS_FRAMES)
    return fixes


def limit_failure(request: PlannedRequest, limits: RequestLimits) -> str | None:
    """Why one request must not be sent under ``limits``: what, which limit, by how much, the fix (None: it fits)."""
    problems = limit_problems(request, limits)
    if not problems:
        return None
    over, fixes = [], []
    if limits.max_images and request.images > limits.max_images:
        over.append(f"max_images_per_prompt={limits.max_images}, {request.images - limits.max_images} over")
        fixes.append(_fewer_frames(limits))
    if limits.max_videos and request.videos > limits.max_videos:
        over.append(f"max_videos_per_prompt={limits.max_videos}, {request.videos - limits.max_videos} over")
        fixes.append("video=frames")
    size = request_bytes(request, limits.inline_base64)
    if limits.max_request_bytes and size > limits.max_request_bytes:
        over.append(f"max_request_bytes={limits.max_request_bytes} ({format_bytes(limits.max_request_bytes)}), "
                    f"{format_bytes(size - limits.max_request_bytes)} over")
        fixes.append(_SMALLER_FRAMES if request.images else _VIDEO_AS_FRAMES)
    return (f"not sent: the request holds {', '.join(problems)}, over the deployment's declared limits "
            f"({'; '.join(over)}). Fix: {'; or '.join(dict.fromkeys(fixes))}")


def limit_report(requests: Sequence[PlannedRequest], limits: RequestLimits, deployment: str) -> str | None:
    """The rows whose request would exceed ``limits``, the limit and the fix, in one message (None: all fit).

    ``roboreward estimate`` prints it for every model before anything is sent.
    """
    if limits.is_empty:
        return None
    offending = [(request, problems) for request in requests if (problems := limit_problems(request, limits))]
    if not offending:
        return None
    shown = "; ".join(f"{request.row}: {', '.join(problems)}" for request, problems in offending[:SHOWN_ROWS])
    more = f"; and {len(offending) - SHOWN_ROWS} more" if len(offending) > SHOWN_ROWS else ""
    over_images = any(limits.max_images and r.images > limits.max_images for r, _ in offending)
    over_videos = any(limits.max_videos and r.videos > limits.max_videos for r, _ in offending)
    over_bytes = any(limits.max_request_bytes and request_bytes(r, limits.inline_base64) > limits.max_request_bytes
                     for r, _ in offending)
    fixes = _fixes([r for r, _ in offending], limits, over_images, over_bytes, over_videos)
    source = f" ({limits.source})" if limits.source else ""
    return (
        f"{len(offending)} of {len(requests)} row(s) would exceed the request limits of model deployment "
        f"{deployment!r}: {limits.describe()}{source}. Rows: {shown}{more}. "
        f"Fix: {'; or '.join(fixes) if fixes else 'send less media per request'}."
    )


ANTHROPIC_CLIENTS = ("helm.clients.anthropic_client.AnthropicMessagesClient",)
OPENAI_CLIENTS = (
    "helm.clients.openai_responses_client.OpenAIResponseClient",
    "helm.clients.openai_client.OpenAIClient",
)
GEMINI_API_CLIENTS = (
    "helm.clients.google_genai_client.GoogleGenAIClient",
    "helm_roboreward.helm_frontend.clients.gemini_client.OneMessageGoogleGenAIClient",
)

ANTHROPIC_DOCS = "https://platform.claude.com/docs/en/build-with-claude/vision"
OPENAI_DOCS = "https://platform.openai.com/docs/guides/images-vision"
GEMINI_DOCS = "https://ai.google.dev/gemini-api/docs/video-understanding"

ANTHROPIC_MAX_IMAGES = 100
ANTHROPIC_MAX_IMAGES_LONG_CONTEXT = 600
ANTHROPIC_LONG_CONTEXT = 200_000
"""Above this context window (tokens) Anthropic's image limit is the larger one."""
ANTHROPIC_MAX_REQUEST_BYTES = 32 * MEGABYTE
OPENAI_MAX_IMAGES = 500
OPENAI_MAX_REQUEST_BYTES = 50 * MEGABYTE
GEMINI_MAX_INLINE_BYTES = 100 * MEGABYTE

def documented_limits(client_class: str, client_args: Mapping[str, object],
                      max_sequence_length: int | None = None) -> RequestLimits:
    """The provider's documented limits for a deployment's client (empty when none are documented)."""
    inline = client_args.get("video_transport", "data_url") != "file_url"
    if client_class in ANTHROPIC_CLIENTS:
        long_context = (max_sequence_length or 0) > ANTHROPIC_LONG_CONTEXT
        images = ANTHROPIC_MAX_IMAGES_LONG_CONTEXT if long_context else ANTHROPIC_MAX_IMAGES
        return RequestLimits(max_images=images, max_request_bytes=ANTHROPIC_MAX_REQUEST_BYTES,
                             source=f"Anthropic Messages API, {ANTHROPIC_DOCS}")
    if client_class in OPENAI_CLIENTS:
        return RequestLimits(max_images=OPENAI_MAX_IMAGES, max_request_bytes=OPENAI_MAX_REQUEST_BYTES,
                             source=f"OpenAI API, {OPENAI_DOCS}")
    if client_class in GEMINI_API_CLIENTS and client_args.get("genai_use_vertexai") is not True:
        return RequestLimits(max_request_bytes=GEMINI_MAX_INLINE_BYTES,
                             source=f"Gemini API inline data, {GEMINI_DOCS}")
    return RequestLimits(inline_base64=inline)


def declared_limits(client_args: Mapping[str, object], owner: str) -> dict[str, int]:
    """The :data:`DECLARED_LIMIT_ARGS` a deployment's client arguments give, as :class:`RequestLimits` fields.

    A declared limit is what the server takes: a whole number >= 1 (0 is refused: vLLM reads it as "none allowed").

    Raises:
        ValueError: A declared value is not a whole number >= 1 (the message names ``owner`` and the argument).
    """
    values: dict[str, int] = {}
    for argument, field in DECLARED_LIMIT_ARGS.items():
        if argument not in client_args:
            continue
        value = client_args[argument]
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(
                f"roboreward: {owner} declares {argument}: {value!r}; it must be a whole number >= 1: what the "
                "server takes (for vLLM its --limit-mm-per-prompt value). Leave it out for no limit; 0 is refused "
                "because vLLM reads 0 as 'none allowed'. Fix it in the deployment's client_spec args "
                "(model_deployments.yaml under --local-path)."
            )
        values[field] = value
    return values


def deployment_limits(deployment: str, client_class: str, client_args: Mapping[str, object],
                      max_sequence_length: int | None = None) -> RequestLimits:
    """A deployment's limits: the provider's documented ones, overridden field by field by what it declares.

    Raises:
        ValueError: A declared limit is not a whole number >= 1 (the message names the deployment and the fix).
    """
    limits = documented_limits(client_class, client_args, max_sequence_length)
    declared = declared_limits(client_args, f"model deployment {deployment!r}")
    if not declared:
        return limits
    names = ", ".join(f"{argument}: {client_args[argument]}" for argument in DECLARED_LIMIT_ARGS
                      if argument in client_args)
    source = f"declared by deployment {deployment} ({names})"
    if limits.source:
        source += f"; otherwise {limits.source}"
    return RequestLimits(
        max_images=declared.get("max_images", limits.max_images),
        max_videos=declared.get("max_videos", limits.max_videos),
        max_request_bytes=declared.get("max_request_bytes", limits.max_request_bytes),
        inline_base64=limits.inline_base64,
        source=source,
    )
