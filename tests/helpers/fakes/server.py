"""The loopback fake model server: one ``http.server`` that speaks every provider API RoboReward runs talk to.

One ``ThreadingHTTPServer`` in a daemon thread on ``127.0.0.1`` (ephemeral port) answers each request in the
format of the API its path belongs to, each API in its own module:

- ``POST .../chat/completions``: :mod:`.openai_chat` (OpenAI-compatible, shaped like vLLM);
- ``POST .../responses``: :mod:`.openai_responses` (HELM's ``OpenAIResponseClient``);
- ``POST .../messages``: :mod:`.anthropic_messages` (HELM's ``AnthropicMessagesClient``);
- ``POST .../models/<model>:generateContent``: :mod:`.gemini` (``google-genai``, HELM's ``GoogleGenAIClient``);
- ``GET .../models``: the served model list (OpenAI format).

Every request (method, path, headers, raw body and parsed JSON) is recorded in arrival order. What to answer
is decided per request by a *behaviour*: a function of the :class:`Recorded` request returning a
:class:`Reply` (answer text, reasoning, status code, extra headers, delay, token counts).
:class:`FailFirst` fails the first k requests, then delegates. A :class:`RawReply` is sent as its exact bytes with
its own ``Content-Type`` (a malformed 200 answer: :func:`malformed`, from :data:`.openai_chat.MALFORMED_BODIES`).

:func:`media_parts` turns a recorded request of any of the four APIs into one list of :class:`Part`
(text / image / video, in order, data URLs and inline base64 decoded), so tests can compare what reached the
"model" with the files on disk whatever the API.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from tests.helpers.fakes import anthropic_messages, gemini, openai_chat, openai_responses
from tests.helpers.fakes.exchange import Behaviour, Part, ProviderApi, Recorded, Reply, constant

MODELS = openai_chat.MODELS
UNKNOWN = "unknown"

APIS: tuple[ProviderApi, ...] = (openai_chat.API, openai_responses.API, anthropic_messages.API, gemini.API)
"""Every provider API the server speaks, in routing order."""
API_BY_NAME = {api.name: api for api in APIS}


def api_of(method: str, path: str) -> str:
    """Which API a request path belongs to."""
    if method == "GET" and path.rstrip("/").endswith("/models"):
        return MODELS
    if method != "POST":
        return UNKNOWN
    return next((api.name for api in APIS if path.endswith(api.path_suffix)), UNKNOWN)


def _provider(recorded: Recorded) -> ProviderApi:
    api = API_BY_NAME.get(recorded.api)
    if api is None:
        raise AssertionError(f"{recorded.api} requests carry no messages")
    return api


def user_messages(recorded: Recorded) -> list[Any]:
    """The messages (chat, messages), input items (responses) or contents (Gemini) of a request."""
    return _provider(recorded).user_messages(recorded.body)


def media_parts(recorded: Recorded) -> list[Part]:
    """Every content part of a request's user turn(s), in order, media decoded (one user message, except Gemini)."""
    return _provider(recorded).media_parts(recorded.body)


def without_media_payloads(recorded: Recorded) -> str:
    """The JSON body as text with every base64 payload replaced by a marker (for leak searches)."""
    text = recorded.raw.decode("utf-8")
    text = re.sub(r"data:[^;\"]+;base64,[A-Za-z0-9+/=_-]+", "data:<payload>", text)
    return re.sub(r'("data"\s*:\s*")[A-Za-z0-9+/=_-]{64,}"', r'\1<payload>"', text)


@dataclass
class RawReply(Reply):
    """A reply sent as ``body``, byte for byte, with ``content_type`` (status, headers and delay as any reply)."""

    body: bytes = b""
    content_type: str = "application/json"


def malformed(kind: str, **kwargs: Any) -> RawReply:
    """A malformed 200 chat-completions answer of one :data:`.openai_chat.MALFORMED_BODIES` kind."""
    content_type, body = openai_chat.MALFORMED_BODIES[kind]
    return RawReply(body=body, content_type=content_type, **kwargs)


def unused_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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

    def __exit__(self, *exc: object) -> None:
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
        provider = API_BY_NAME.get(api)
        with self._lock:
            recorded = Recorded(method=method, path=split.path, query=split.query,
                                headers={k.lower(): v for k, v in handler.headers.items()}, raw=raw, body=body,
                                api=api, index=len(self._requests),
                                model_in_path=provider.model_in_path(split.path) if provider else None)
            self._requests.append(recorded)
        if api == MODELS:
            self._send(handler, 200, openai_chat.models_listing(self.served_models))
            return
        if provider is None:
            self._send(handler, 404, {"error": {"message": f"no route for {method} {split.path}"}})
            return
        try:
            reply = self.behaviour(recorded)
        except Exception as error:  # a broken behaviour must show up in the test, not hang the client
            self._send(handler, 500, {"error": {"message": f"fake behaviour raised {error!r}"}})
            raise
        if reply.delay:
            time.sleep(reply.delay)
        if isinstance(reply, RawReply):
            self._send(handler, reply.status, reply.body, reply.headers, reply.content_type)
            return
        if reply.status != 200:
            self._send(handler, reply.status, provider.error(reply), reply.headers)
            return
        self._send(handler, 200, provider.answer(recorded, reply), reply.headers)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any] | bytes,
              headers: dict[str, str] | None = None, content_type: str = "application/json") -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout); nothing to answer
