"""A loopback fake of the model APIs RoboReward runs talk to, for offline tests of the real client libraries.

One ``http.server`` in a daemon thread on ``127.0.0.1`` (ephemeral port) answers

- ``POST .../chat/completions``: OpenAI-compatible chat completions, shaped like vLLM's answers
  (``message.reasoning_content`` when the reply has reasoning, ``usage`` with token counts);
- ``POST .../responses``: the OpenAI Responses API (HELM's ``OpenAIResponseClient``);
- ``POST .../messages``: the Anthropic Messages API (HELM's ``AnthropicMessagesClient``);
- ``POST .../models/<model>:generateContent``: the Gemini API (``google-genai``, HELM's ``GoogleGenAIClient``);
- ``GET .../models``: the served model list (OpenAI format).

Every request (method, path, headers, raw body and parsed JSON) is recorded in arrival order.
What to answer is decided per request by a *behaviour*: a function of the :class:`Recorded`
request returning a :class:`Reply` (answer text, reasoning, status code, extra headers, delay,
token counts). :class:`FailFirst` fails the first k requests, then delegates.

:func:`media_parts` turns a recorded request of any of the four APIs into one list of
:class:`Part` (text / image / video, in order, data URLs and inline base64 decoded), so tests can
compare what reached the "model" with the files on disk whatever the API.
"""

from __future__ import annotations

import base64
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

CHAT = "chat"
RESPONSES = "responses"
MESSAGES = "messages"
GEMINI = "gemini"
MODELS = "models"
UNKNOWN = "unknown"


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

    @property
    def model(self) -> str | None:
        """The model the request names (JSON ``model`` field, or the Gemini URL's model)."""
        if self.api == GEMINI:
            match = re.search(r"/models/([^/:]+):", self.path)
            return match.group(1) if match else None
        if isinstance(self.body, dict):
            return self.body.get("model")
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


# ---------------------------------------------------------------------------------------------
# Request parsing shared by the tests


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


def decode_data_url(url: str) -> tuple | None:
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


def _url_part(kind: str, url: str) -> Part:
    decoded = decode_data_url(url)
    if decoded is None:
        return Part(kind=kind, url=url)
    return Part(kind=kind, mime_type=decoded[0], data=decoded[1])


def _chat_parts(content: Any) -> list[Part]:
    if isinstance(content, str):
        return [Part(kind="text", text=content)]
    parts = []
    for item in content:
        kind = item["type"]
        if kind == "text":
            parts.append(Part(kind="text", text=item["text"]))
        elif kind == "image_url":
            parts.append(_url_part("image", item["image_url"]["url"]))
        elif kind == "video_url":
            parts.append(_url_part("video", item["video_url"]["url"]))
        else:
            raise AssertionError(f"unexpected chat content part type {kind!r}")
    return parts


def _responses_parts(content: Any) -> list[Part]:
    if isinstance(content, str):
        return [Part(kind="text", text=content)]
    parts = []
    for item in content:
        kind = item["type"]
        if kind == "input_text":
            parts.append(Part(kind="text", text=item["text"]))
        elif kind == "input_image":
            parts.append(_url_part("image", item["image_url"]))
        else:
            raise AssertionError(f"unexpected responses content part type {kind!r}")
    return parts


def _messages_parts(content: Any) -> list[Part]:
    if isinstance(content, str):
        return [Part(kind="text", text=content)]
    parts = []
    for block in content:
        kind = block["type"]
        if kind == "text":
            parts.append(Part(kind="text", text=block["text"]))
        elif kind == "image":
            source = block["source"]
            assert source["type"] == "base64", source["type"]
            parts.append(Part(kind="image", mime_type=source["media_type"],
                              data=b64decode(source["data"])))
        else:
            raise AssertionError(f"unexpected messages content block type {kind!r}")
    return parts


def gemini_inline(part: dict[str, Any]) -> dict[str, Any] | None:
    """The inline data of a Gemini part, accepting both JSON spellings (``inlineData`` / ``inline_data``)."""
    inline = part.get("inlineData", part.get("inline_data"))
    if inline is None:
        return None
    return {"mime_type": inline.get("mimeType", inline.get("mime_type")), "data": inline["data"]}


def _gemini_parts(contents: Sequence[dict[str, Any]]) -> list[Part]:
    parts = []
    for content in contents:
        for part in content.get("parts", []):
            inline = gemini_inline(part)
            if "text" in part:
                parts.append(Part(kind="text", text=part["text"]))
            elif inline is not None:
                mime = str(inline["mime_type"])
                parts.append(Part(kind=mime.split("/")[0], mime_type=mime,
                                  data=b64decode(inline["data"])))
            else:
                raise AssertionError(f"unexpected Gemini part {sorted(part)}")
    return parts


def user_messages(recorded: Recorded) -> list[Any]:
    """The messages (chat, messages), input items (responses) or contents (Gemini) of a request."""
    body = recorded.body
    if recorded.api in (CHAT, MESSAGES):
        return list(body["messages"])
    if recorded.api == RESPONSES:
        return list(body["input"]) if isinstance(body["input"], list) else [body["input"]]
    if recorded.api == GEMINI:
        return list(body["contents"])
    raise AssertionError(f"{recorded.api} requests carry no messages")


def media_parts(recorded: Recorded) -> list[Part]:
    """Every content part of a request's (single) user message, in order, media decoded."""
    body = recorded.body
    if recorded.api == GEMINI:
        return _gemini_parts(body["contents"])
    messages = user_messages(recorded)
    assert len(messages) == 1, f"expected one user message, got {len(messages)}"
    message = messages[0]
    assert message.get("role") == "user", message.get("role")
    if recorded.api == CHAT:
        return _chat_parts(message["content"])
    if recorded.api == RESPONSES:
        return _responses_parts(message["content"])
    return _messages_parts(message["content"])


def without_media_payloads(recorded: Recorded) -> str:
    """The JSON body as text with every base64 payload replaced by a marker (for leak searches)."""
    text = recorded.raw.decode("utf-8")
    text = re.sub(r"data:[^;\"]+;base64,[A-Za-z0-9+/=_-]+", "data:<payload>", text)
    return re.sub(r'("data"\s*:\s*")[A-Za-z0-9+/=_-]{64,}"', r'\1<payload>"', text)


# ---------------------------------------------------------------------------------------------
# Answer formats


def _chat_answer(recorded: Recorded, reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.reasoning is not None:
        message[reply.reasoning_key] = reply.reasoning
    return {
        "id": f"chatcmpl-fake-{recorded.index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": recorded.model or "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason, "logprobs": None}],
        "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                  "total_tokens": reply.prompt_tokens + reply.completion_tokens},
    }


def _responses_answer(recorded: Recorded, reply: Reply) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        output.append({"type": "reasoning", "id": f"rs_fake_{recorded.index}",
                       "summary": [{"type": "summary_text", "text": reply.reasoning}]})
    output.append({
        "type": "message", "id": f"msg_fake_{recorded.index}", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
    })
    return {
        "id": f"resp_fake_{recorded.index}",
        "object": "response",
        "created_at": int(time.time()),
        "model": recorded.model or "fake",
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {"input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens,
                  "total_tokens": reply.prompt_tokens + reply.completion_tokens,
                  # openai 2.x validates these two as required integers when HELM re-reads its cache entry
                  "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
    }


def _messages_answer(recorded: Recorded, reply: Reply) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        content.append({"type": "thinking", "thinking": reply.reasoning, "signature": "fake"})
    content.append({"type": "text", "text": reply.text})
    return {
        "id": f"msg_fake_{recorded.index}",
        "type": "message",
        "role": "assistant",
        "model": recorded.model or "fake",
        "content": content,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens},
    }


def _gemini_answer(recorded: Recorded, reply: Reply) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        parts.append({"text": reply.reasoning, "thought": True})
    parts.append({"text": reply.text})
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": reply.prompt_tokens, "candidatesTokenCount": reply.completion_tokens,
                          "totalTokenCount": reply.prompt_tokens + reply.completion_tokens},
        "modelVersion": recorded.model or "fake",
    }


_ANSWERS = {CHAT: _chat_answer, RESPONSES: _responses_answer, MESSAGES: _messages_answer, GEMINI: _gemini_answer}


def _error_body(api: str, reply: Reply) -> dict[str, Any]:
    if api == MESSAGES:
        return {"type": "error", "error": {"type": "invalid_request_error", "message": reply.error}}
    if api == GEMINI:
        return {"error": {"code": reply.status, "message": reply.error, "status": "INVALID_ARGUMENT"}}
    return {"error": {"message": reply.error, "type": "invalid_request_error", "param": None,
                      "code": str(reply.status)}}


def api_of(method: str, path: str) -> str:
    """Which API a request path belongs to."""
    if method == "GET" and path.rstrip("/").endswith("/models"):
        return MODELS
    if method != "POST":
        return UNKNOWN
    if path.endswith("/chat/completions"):
        return CHAT
    if path.endswith("/responses"):
        return RESPONSES
    if path.endswith("/messages"):
        return MESSAGES
    if path.endswith(":generateContent"):
        return GEMINI
    return UNKNOWN


# ---------------------------------------------------------------------------------------------
# The server


class FakeModelServer:
    """The fake: start it (or use it as a context manager), point clients at :attr:`base_url`, read :attr:`requests`."""

    def __init__(self, behaviour: Behaviour | None = None, served_models: Sequence[str] = ("fake-model",)) -> None:
        self.behaviour: Behaviour = behaviour or constant()
        self.served_models = list(served_models)
        self._requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle -----------------------------------------------------------------------------

    def start(self) -> FakeModelServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                fake._handle(self, "GET")

            def do_POST(self) -> None:  # noqa: N802
                fake._handle(self, "POST")

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-model-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # addresses -----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._server is not None, "the fake server is not running"
        return int(self._server.server_address[1])

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:<port>`` (Anthropic's and Gemini's base URL)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1`` (an OpenAI-compatible base URL)."""
        return self.root_url + "/v1"

    # records -------------------------------------------------------------------------------

    @property
    def requests(self) -> list[Recorded]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, api: str, model: str | None = None) -> list[Recorded]:
        return [r for r in self.requests if r.api == api and (model is None or r.model == model)]

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()

    # handling ------------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        split = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        api = api_of(method, split.path)
        with self._lock:
            recorded = Recorded(method=method, path=split.path, query=split.query,
                                headers={k.lower(): v for k, v in handler.headers.items()}, raw=raw, body=body,
                                api=api, index=len(self._requests))
            self._requests.append(recorded)
        if api == MODELS:
            self._send(handler, 200, {"object": "list", "data": [
                {"id": name, "object": "model", "created": 0, "owned_by": "fake"} for name in self.served_models]})
            return
        if api == UNKNOWN:
            self._send(handler, 404, {"error": {"message": f"no route for {method} {split.path}"}})
            return
        try:
            reply = self.behaviour(recorded)
        except Exception as error:  # a broken behaviour must show up in the test, not hang the client
            self._send(handler, 500, {"error": {"message": f"fake behaviour raised {error!r}"}})
            raise
        if reply.delay:
            time.sleep(reply.delay)
        if reply.status != 200:
            self._send(handler, reply.status, _error_body(api, reply), reply.headers)
            return
        self._send(handler, 200, _ANSWERS[api](recorded, reply), reply.headers)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any],
              headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout); nothing to answer


FakeOpenAIServer = FakeModelServer


def unused_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
