"""What every provider fake shares: one recorded request, the reply to render, content parts, the API interface.

A provider API module (:mod:`.openai_chat`, :mod:`.openai_responses`, :mod:`.anthropic_messages`,
:mod:`.gemini`) describes itself as one :class:`ProviderApi`: which requests are its own, how to read the
user messages and content parts out of a request body, and how to render an answer and an error in its
format. :mod:`.server` routes each request to the API that claims it.
"""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Recorded:
    """One request as the fake received it."""

    method: str
    path: str
    """Path of the URL, without the query string."""
    query: str
    headers: dict[str, str]
    """Header names in lower case."""
    raw: bytes
    body: Any
    """Parsed JSON body (None when empty or not JSON)."""
    api: str
    """Which API the path belongs to: chat, responses, messages, gemini, models or unknown."""
    index: int
    """0-based arrival number over all requests to this server."""
    model_in_path: str | None = None
    """The model the URL names (Gemini: ``/models/<model>:generateContent``), else None."""

    @property
    def model(self) -> str | None:
        """The model the request names (the URL's model, else the JSON ``model`` field)."""
        if self.model_in_path is not None:
            return self.model_in_path
        if isinstance(self.body, dict):
            model = self.body.get("model")
            return None if model is None else str(model)
        return None


@dataclass
class Reply:
    """What the fake answers to one request."""

    text: str = "ANSWER: 3"
    reasoning: str | None = None
    """Returned separately: ``reasoning_content`` (chat), a reasoning summary (responses), a thinking
    block (messages) or a ``thought`` part (Gemini)."""
    reasoning_key: str = "reasoning_content"
    """Chat completions only: the message key of the reasoning (vLLM: ``reasoning_content``; newer: ``reasoning``)."""
    status: int = 200
    error: str = "fake server error"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds to wait before answering."""
    prompt_tokens: int = 11
    completion_tokens: int = 3
    finish_reason: str = "stop"
    logprobs: list[dict[str, Any]] | None = None
    """Chat completions only: the choice's ``logprobs.content`` entries (vLLM's shape), or None for no logprobs."""


Behaviour = Callable[[Recorded], Reply]


def constant(text: str = "ANSWER: 3", **kwargs: Any) -> Behaviour:
    """Answer every request the same way."""
    return lambda recorded: Reply(text=text, **kwargs)


class FailFirst:
    """Fail the first ``count`` requests with ``status`` (and ``headers``), then behave like ``then``."""

    def __init__(self, count: int, then: Behaviour, status: int = 503,
                 headers: dict[str, str] | None = None) -> None:
        self.count = count
        self.then = then
        self.status = status
        self.headers = dict(headers if headers is not None else {"retry-after-ms": "10"})
        self.failed = 0
        self._lock = threading.Lock()

    def __call__(self, recorded: Recorded) -> Reply:
        with self._lock:
            if self.failed < self.count:
                self.failed += 1
                return Reply(status=self.status, error=f"fake failure {self.failed} of {self.count}",
                             headers=dict(self.headers))
        return self.then(recorded)


@dataclass(frozen=True)
class Part:
    """One content part of a request, whatever the API: text, or media as bytes (data) or a URL."""

    kind: str
    """text, image or video."""
    text: str | None = None
    mime_type: str | None = None
    data: bytes | None = None
    """Decoded bytes of a data URL or of inline base64 data."""
    url: str | None = None
    """The URL when it is not a data URL (e.g. ``file://...``)."""


_DATA_URL = re.compile(r"^data:(?P<mime>[^;,]+);base64,(?P<data>.*)$", re.DOTALL)


def decode_data_url(url: str) -> tuple[str, bytes] | None:
    """``(mime type, bytes)`` of a base64 data URL, or None for any other URL."""
    match = _DATA_URL.match(url)
    if match is None:
        return None
    return match.group("mime"), base64.b64decode(match.group("data"), validate=True)


def b64decode(data: str) -> bytes:
    """Standard or URL-safe base64 (google-genai may send either), strictly validated."""
    if "-" in data or "_" in data:
        return base64.urlsafe_b64decode(data.encode("ascii"))
    return base64.b64decode(data, validate=True)


def url_part(kind: str, url: str) -> Part:
    """A media part given by URL: decoded bytes for a data URL, the URL itself otherwise."""
    decoded = decode_data_url(url)
    if decoded is None:
        return Part(kind=kind, url=url)
    return Part(kind=kind, mime_type=decoded[0], data=decoded[1])


def single_user_message(messages: list[Any]) -> dict[str, Any]:
    """The one user message of a request (the layout every non-Gemini client here sends)."""
    assert len(messages) == 1, f"expected one user message, got {len(messages)}"
    (message,) = messages
    assert message.get("role") == "user", message.get("role")
    return dict(message)


@dataclass(frozen=True)
class ProviderApi:
    """One provider API the fake server speaks: which requests are its own, how to read them, how to answer."""

    name: str
    """The :attr:`Recorded.api` value of its requests."""
    path_suffix: str
    """A ``POST`` whose path ends with this belongs to the API."""
    user_messages: Callable[[Any], list[Any]]
    """Request body -> its messages / input items / contents."""
    media_parts: Callable[[Any], list[Part]]
    """Request body -> every content part of its user turn(s), in order, media decoded."""
    answer: Callable[[Recorded, Reply], dict[str, Any]]
    """The JSON body of a successful answer."""
    error: Callable[[Reply], dict[str, Any]]
    """The JSON body of an error answer (``reply.status`` != 200)."""
    model_in_path: Callable[[str], str | None] = lambda path: None
    """The model a request path names, for APIs that put it in the URL."""
