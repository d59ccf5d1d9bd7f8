"""``roboreward serve``: a reward model over HTTP (Starlette on uvicorn), with the benchmark's exact protocol.

``POST /v1/score`` and ``POST /v1/score_batch`` (JSON: task and an mp4 or frames as base64, or a path under
``--allowed-root``), ``GET /v1/model`` and ``GET /healthz``; OpenRLHF's ``POST /get_reward`` and Robometer's
``POST /evaluate_batch`` read their framework's body into the same items (framework_routes.py). Model calls run in
threads, at most ``max_concurrency`` at once; beyond that ``max_queue`` items wait, and more get 503 with
``Retry-After``. A request takes its place only once its body has arrived; a body that stops arriving for
``body_timeout_seconds`` gets 408. Bodies over ``max_body_bytes`` get 413, bad fields 400 naming the field, and a
failed model request ``failed: true`` (never a score); in a batch every item stands alone. With a token every
route but ``/healthz`` needs ``Authorization: Bearer <token>``. With ``workers`` > 1 the server is that many
forked processes, each on its own socket on the one port, the places counted for all of them
(worker_processes.py). Formats, errors and security: docs/reward_api.md.
"""

import base64
import binascii
import hmac
import ipaddress
import json
import math
import os
import re
import socket
import stat
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any

import anyio
import numpy as np
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from helm_roboreward.protocol.safe_files import is_inside
from helm_roboreward.reward import framework_routes as routes
from helm_roboreward.reward.api import Reward, RewardModel, failed_reward
from helm_roboreward.reward.inputs import (
    Frames,
    RewardInputError,
    check_frame_shape,
    check_frames,
    check_task,
    decode_images,
)
from helm_roboreward.reward.worker_processes import Places, serve_in_workers

DEFAULT_PORT = 8100
MEBIBYTE = 1 << 20
DEFAULT_BODY_TIMEOUT = 30.0
"""Seconds a request body may pause (nginx's client_body_timeout is 60 s; a local client does not pause)."""


@dataclass(frozen=True)
class ServerLimits:
    """Back-pressure and size limits."""

    max_concurrency: int = 8
    """Model requests in flight at once in each process (each a worker thread)."""
    max_queue: int = 64
    """Items waiting beyond ``max_concurrency``, for the whole server; beyond them a request gets 503 and
    ``Retry-After``."""
    max_body_bytes: int = 256 * MEBIBYTE
    retry_after_seconds: int = 2
    body_timeout_seconds: float = DEFAULT_BODY_TIMEOUT
    """A body that stops arriving for this long gets 408 (the connection is closed)."""

    def __post_init__(self) -> None:
        for name in ("max_concurrency", "max_body_bytes", "retry_after_seconds"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_queue < 0:
            raise ValueError(f"max_queue must be 0 or more, got {self.max_queue}")
        if not (math.isfinite(self.body_timeout_seconds) and self.body_timeout_seconds > 0):
            raise ValueError(f"body_timeout_seconds must be a number > 0, got {self.body_timeout_seconds}")

    @property
    def capacity(self) -> int:
        """Items the server holds at once (running and waiting), in all its processes together."""
        return self.max_concurrency + self.max_queue


class _RefusedError(Exception):
    """An HTTP error answer: status, the field at fault (or None) and the message."""

    def __init__(self, status: int, field: str | None, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.field, self.message, self.headers = status, field, message, headers or {}


class _AsciiJSON(JSONResponse):
    """JSON with every non-ASCII character escaped (a lone surrogate a client sent comes back escaped).

    A lone surrogate (in a path, a field name) cannot be encoded as UTF-8: Starlette's rendering failed, and the
    whole answer (a batch's every result) was lost.
    """

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def _error(status: int, field: str | None, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return _AsciiJSON({"error": {"field": field, "message": message}}, status_code=status, headers=headers)


def _b64(value: object, field: str) -> bytes:
    if not isinstance(value, str):
        raise RewardInputError(field, "must be a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise RewardInputError(field, "is not valid base64") from None


def _parse_json(data: bytes) -> Any:
    """A request body as JSON (``RewardInputError`` naming ``body`` when it is not)."""
    try:
        return json.loads(data)
    except RecursionError:
        raise RewardInputError("body", "is nested too deeply to read; an item is {task, video[, fps]}, a few "
                                       "levels deep") from None
    except ValueError as error:
        raise RewardInputError("body", f"is not JSON ({error})") from None


class ItemReader:
    """Turns one JSON item into ``(task, video, fps)`` for :meth:`RewardModel.score`; paths stay under a root."""

    VIDEO_KEYS = ("mp4_base64", "path", "frames_base64", "images_base64")

    def __init__(self, allowed_root: str | None) -> None:
        self.allowed_root = os.path.realpath(allowed_root) if allowed_root else None
        roots = sorted({os.path.realpath(allowed_root), os.path.abspath(allowed_root)} if allowed_root else (),
                       key=len, reverse=True)  # as given and resolved; the longer first
        self._roots = [re.compile(rf"(?<![\w./-]){re.escape(root)}(?:/|(?![\w.-]))") for root in roots]

    def public(self, message: str) -> str:
        """``message`` with the allowed root's own location taken out: paths read relative to the root."""
        for root in self._roots:
            message = root.sub(lambda found: "" if found.group().endswith("/") else ".", message)
        return message

    def read(self, item: object) -> tuple[str, Any, float | None]:
        """Raises :class:`RewardInputError` naming the field."""
        if not isinstance(item, dict):
            raise RewardInputError("body", "must be a JSON object with task and video")
        unknown = sorted(set(item) - {"task", "video", "fps"})
        if unknown:
            raise RewardInputError(unknown[0], "is not a field; give task, video (and fps for frames)")
        task = check_task(item.get("task"))
        video = item.get("video")
        if not isinstance(video, dict):
            raise RewardInputError("video", f"must be an object with one of {', '.join(self.VIDEO_KEYS)}")
        given = [key for key in self.VIDEO_KEYS if key in video]
        extra = sorted(set(video) - {*self.VIDEO_KEYS, "shape"})
        if len(given) != 1 or extra:
            raise RewardInputError("video", f"must hold exactly one of {', '.join(self.VIDEO_KEYS)} (got "
                                            f"{', '.join(sorted(video)) or 'none'})")
        kind, fps = given[0], item.get("fps")
        if kind in ("mp4_base64", "path") and fps is not None:
            raise RewardInputError("fps", "applies to frames only; an mp4 carries its own frame rate")
        if kind == "mp4_base64":
            return task, _b64(video[kind], "video.mp4_base64"), None
        if kind == "path":
            return task, self._path(video[kind]), None
        if kind == "frames_base64":
            return task, self._raw_frames(video, fps), None
        images = video[kind]
        if not isinstance(images, list):
            raise RewardInputError("video.images_base64", "must be a list of base64 PNG or JPEG images")
        encoded = [_b64(data, f"video.images_base64[{i}]") for i, data in enumerate(images)]
        return task, decode_images(encoded, fps, "video.images_base64"), None  # sizes checked before decoding

    def _raw_frames(self, video: dict[str, Any], fps: object) -> Frames:
        shape = check_frame_shape(video.get("shape"), "video.shape")  # in Python ints, within the pixel limits
        data = _b64(video["frames_base64"], "video.frames_base64")
        expected = math.prod(shape)
        if len(data) != expected:
            raise RewardInputError("video.frames_base64", f"holds {len(data):,} bytes; shape {shape} needs "
                                                          f"{expected:,} (uint8 RGB, C order)")
        return check_frames(np.frombuffer(data, dtype=np.uint8).reshape(shape), fps)

    def _path(self, value: object) -> str:
        if self.allowed_root is None:
            raise RewardInputError("video.path", "paths are not accepted: start the server with --allowed-root DIR "
                                                 "to read videos under DIR, or send mp4_base64")
        if not isinstance(value, str) or not value or "\x00" in value:
            raise RewardInputError("video.path", "must be a non-empty path")
        path = value if os.path.isabs(value) else os.path.join(self.allowed_root, value)
        if not is_inside(path, self.allowed_root):  # links and '..' resolved: a link out of the root is refused
            raise RewardInputError("video.path", f"{value} lies outside the allowed root (links and '..' are "
                                                 "followed); give a path under it")
        real = os.path.realpath(path)
        try:  # messages name the path as the client gave it, never the root's own location
            info = os.stat(real)
        except FileNotFoundError:
            raise RewardInputError("video.path", f"{value} does not exist under the allowed root") from None
        except OSError as error:
            raise RewardInputError("video.path", f"{value} cannot be read ({error.strerror or error})") from None
        if not stat.S_ISREG(info.st_mode):
            raise RewardInputError("video.path", f"{value} is not a regular file; give an mp4 file")
        if info.st_size == 0:
            raise RewardInputError("video.path", f"{value} is empty (0 bytes)")
        return real


class RewardServer:
    """The ASGI app around one :class:`RewardModel`."""

    def __init__(self, model: RewardModel, limits: ServerLimits = ServerLimits(), allowed_root: str | None = None,
                 token: str | None = None, places: Places | None = None, workers: int = 1, worker: int = 0) -> None:
        self.model = model
        self.limits = limits
        self.reader = ItemReader(allowed_root)
        self.token = token
        self.places = places if places is not None else Places(limits.capacity)
        """Items admitted and not yet answered (running or waiting), in every worker process."""
        self.workers, self.worker = workers, worker
        self._limiter: anyio.CapacityLimiter | None = None  # made inside the event loop, on first use
        self.app = Starlette(routes=[
            Route("/healthz", self.healthz, methods=["GET"]),
            Route("/v1/model", self._guarded(self.describe), methods=["GET"]),
            Route("/v1/score", self._guarded(self.score), methods=["POST"]),
            Route("/v1/score_batch", self._guarded(self.score_batch), methods=["POST"]),
            Route("/get_reward", self._guarded(self.openrlhf), methods=["POST"]),
            Route("/evaluate_batch", self._guarded(self.robometer), methods=["POST"]),
        ])

    @property
    def held(self) -> int:
        """Items admitted and not yet answered, in all the server's processes."""
        return self.places.held

    def _guarded(self, handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        async def guarded(request: Request) -> Response:
            if self.token is not None and not _bearer_matches(request, self.token):
                return _error(401, "Authorization", "missing or wrong bearer token",
                              {"WWW-Authenticate": 'Bearer realm="roboreward"'})
            try:
                return await handler(request)
            except RewardInputError as error:
                return _error(400, error.field, self.reader.public(error.message))
            except _RefusedError as refused:
                return _error(refused.status, refused.field, refused.message, refused.headers)
            except ClientDisconnect:
                return Response(status_code=400)  # nobody reads it; the server goes on
            except Exception as error:  # e.g. a full disk under the media folder: the server goes on
                return _error(500, None, self.reader.public(f"{type(error).__name__}: {error}"))
        return guarded

    async def healthz(self, request: Request) -> Response:
        """``GET /healthz``: the process answers (no token needed)."""
        return _AsciiJSON({"status": "ok"})

    async def describe(self, request: Request) -> Response:
        """``GET /v1/model``: model, deployment, protocol version, settings and the server's limits."""
        return _AsciiJSON({**self.model.settings, "server": {**asdict(self.limits), "held": self.held,
                                                              "paths": self.reader.allowed_root is not None,
                                                              "workers": self.workers, "worker": self.worker}})

    async def _json(self, request: Request) -> Any:
        """The body as JSON: at most ``max_body_bytes`` (413), no pause over ``body_timeout_seconds`` (408)."""
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.limits.max_body_bytes:
            raise _RefusedError(413, "body", f"{int(length):,} bytes, over the limit of "
                                             f"{self.limits.max_body_bytes:,}; send fewer or smaller videos")
        chunks, size, stream = [], 0, request.stream()
        while True:
            chunk: bytes | None = None
            with anyio.move_on_after(self.limits.body_timeout_seconds) as waited:
                chunk = await anext(stream, None)
            if waited.cancelled_caught:  # a stalled upload: answered, and its connection closed
                pause = self.limits.body_timeout_seconds
                raise _RefusedError(408, "body", f"stopped arriving: no bytes for {pause:g} s after {size:,} bytes "
                                                 "(--body-timeout); send the body without pausing",
                                    {"Connection": "close"})
            if chunk is None:
                break
            size += len(chunk)
            if size > self.limits.max_body_bytes:
                raise _RefusedError(413, "body", f"over the limit of {self.limits.max_body_bytes:,} bytes; send "
                                                 "fewer or smaller videos")
            chunks.append(chunk)
        # parsed in a worker thread: a 700 KB body takes about 1 ms, in which the event loop would read no other
        return await anyio.to_thread.run_sync(_parse_json, chunks[0] if len(chunks) == 1 else b"".join(chunks))


    def _refuse_when_full(self) -> None:
        """503 at once, before reading a body, when every place is taken (nothing is reserved here)."""
        if self.held >= self.limits.capacity:
            raise self._busy()

    def _busy(self) -> _RefusedError:
        return _RefusedError(503, None, f"busy: {self.held} items held, capacity {self.limits.capacity}; retry "
                                        "later", {"Retry-After": str(self.limits.retry_after_seconds)})

    def _admit(self, count: int) -> None:
        """Take ``count`` places: only once the body has arrived, so a slow upload holds none."""
        if not self.places.take(count):
            raise self._busy()

    def _release(self, count: int) -> None:
        self.places.give_back(count)

    async def _score_one(self, item: object) -> Reward:
        """One item read (base64, images) and scored in one worker thread, at most ``max_concurrency`` at once.

        One hand-off, not two: each costs the event loop a wake-up and the GIL twice over.
        """
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.limits.max_concurrency)
        return await anyio.to_thread.run_sync(self._read_and_score, item, limiter=self._limiter)

    def _read_and_score(self, item: object) -> Reward:
        return self.model.score(*self.reader.read(item))

    async def score(self, request: Request) -> Response:
        """``POST /v1/score``: one item."""
        self._refuse_when_full()
        body = await self._json(request)
        self._admit(1)
        try:
            reward = await self._score_one(body)
        finally:
            self._release(1)
        return _AsciiJSON(reward.to_json())

    async def score_batch(self, request: Request) -> Response:
        """``POST /v1/score_batch``: ``{"items": [...]}``, answered in order; an item that fails fails alone."""
        self._refuse_when_full()
        body = await self._json(request)
        items = body.get("items") if isinstance(body, dict) else None
        if not isinstance(items, list) or not items:
            raise RewardInputError("items", "must be a non-empty list of {task, video[, fps]} objects")
        rewards = await self._score_items(routes.Translated(items, (), "items"))
        return _AsciiJSON({"results": [reward.to_json() for reward in rewards]})

    async def openrlhf(self, request: Request) -> Response:
        """``POST /get_reward``: OpenRLHF's ``--remote_rm_url`` body.

        ``?value=`` picks the reward (default ``score``), ``?on_failure=`` the number of one without (default 0).
        """
        value = routes.check_value(request.query_params.get("value", "score"))
        on_failure = routes.check_on_failure(request.query_params.get("on_failure", "0"))
        self._refuse_when_full()
        translated = routes.openrlhf_items(await self._json(request))
        rewards = await self._score_items(translated) if translated.items else []  # its sharding sends empty lists
        return _AsciiJSON(routes.openrlhf_answer(rewards, value, on_failure))

    async def robometer(self, request: Request) -> Response:
        """``POST /evaluate_batch``: Robometer's eval-server body (progress samples)."""
        self._refuse_when_full()
        translated = routes.robometer_items(await self._json(request))
        rewards = await self._score_items(translated) if translated.items else []
        return _AsciiJSON(routes.robometer_answer(rewards, [routes.frame_count(item) for item in translated.items]))

    async def _score_items(self, translated: routes.Translated) -> list[Reward]:
        """Every item scored, in order, each failing alone; at most the capacity per request (400)."""
        items = translated.items
        if len(items) > self.limits.capacity:
            raise RewardInputError(translated.prefix, f"holds {len(items)} items; at most {self.limits.capacity} "
                                                      "per request")
        self._admit(len(items))
        results: list[Reward | None] = [None] * len(items)
        try:
            async with anyio.create_task_group() as group:
                for index, item in enumerate(items):
                    group.start_soon(self._batch_item, results, index, item, translated)
        finally:
            self._release(len(items))
        return [result for result in results if result is not None]

    async def _batch_item(self, results: list[Reward | None], index: int, item: object,
                          translated: routes.Translated) -> None:
        """One item's reward, or its failure (an input error naming ``items[i].<field>``, or a server error)."""
        try:
            if isinstance(item, RewardInputError):  # an entry the route could not read
                raise item
            results[index] = await self._score_one(item)
        except RewardInputError as error:  # a bad field, a video that does not decode: this item only
            field = error.field if isinstance(item, RewardInputError) else translated.field(index, error.field)
            results[index] = failed_reward(self.reader.public(error.message), field)
        except Exception as error:  # a server error (a damaged media folder): this item only, as a 500 would say
            results[index] = failed_reward(self.reader.public(f"{type(error).__name__}: {error}"))


def _bearer_matches(request: Request, token: str) -> bool:
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_token_file(path: str) -> str:
    """The bearer token in ``path`` (stripped); the file must be private to its owner and not empty."""
    info = os.stat(path)
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ValueError(f"--token-file {path} can be read by others (mode {stat.S_IMODE(info.st_mode):o}); "
                         f"run: chmod 600 {path}")
    with open(path, encoding="utf-8") as handle:
        token = handle.read().strip()
    if len(token) < 16 or any(character.isspace() for character in token):
        raise ValueError(f"--token-file {path}: the token must be one word of at least 16 characters (e.g. "
                         "python -c 'import secrets; print(secrets.token_urlsafe(32))')")
    return token


def check_bind(host: str, token: str | None) -> None:
    """A non-loopback bind needs a token."""
    if not is_loopback(host) and token is None:
        raise ValueError(f"--host {host} is reachable from other machines: give --token-file FILE (requests then "
                         "need 'Authorization: Bearer <token>'), or bind 127.0.0.1")


def uvicorn_server(app: Any, host: str = "127.0.0.1", port: int = DEFAULT_PORT, log_level: str = "info") -> Any:
    """A uvicorn server for the app (``.run()`` it, or ``.run(sockets=[...])`` on a bound socket)."""
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=10,
                            server_header=False, date_header=False)
    return uvicorn.Server(config)


def bound_socket(host: str, port: int, reuse_port: bool = False) -> socket.socket:
    """A listening TCP socket (port 0: any free port) to hand to :func:`uvicorn_server`'s ``run``.

    ``reuse_port``: ``SO_REUSEPORT``, so that each worker process listens on a socket of its own on the same port
    (Linux spreads new connections over them by a hash of their addresses).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on such sockets' connections; without it uvicorn's answer
    # (headers, then body) waited for the client's delayed ACK, 40 ms a call
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        sock.listen(1024)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def worker_sockets(host: str, port: int, workers: int) -> list[socket.socket]:
    """The listening sockets of ``workers`` processes: one each on Linux (``SO_REUSEPORT``), else one shared.

    One socket shared by the workers gave every connection opened at once to one worker: the first to wake accepts
    all that are pending (asyncio's accept loop takes up to the backlog per wake-up), and keep-alive callers then
    stay there (benchmarks/reward_api.py: 32 callers, 32 and 0). With a socket per worker the kernel spreads the
    connections when they arrive; the parent holds every socket, so a worker's restart loses none queued on its
    own. Only processes of the same user can join the port (the kernel's rule for ``SO_REUSEPORT``).
    """
    if workers == 1 or not sys.platform.startswith("linux"):  # elsewhere SO_REUSEPORT does not spread connections
        return [bound_socket(host, port)]
    sockets = [bound_socket(host, port, reuse_port=True)]
    try:
        port = sockets[0].getsockname()[1]
        sockets += [bound_socket(host, port, reuse_port=True) for _ in range(workers - 1)]
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def serve(model: RewardModel, host: str, port: int, limits: ServerLimits, allowed_root: str | None,
          token: str | None, log_level: str = "info", workers: int = 1) -> None:
    """Serve ``model`` until interrupted (Ctrl-C, SIGTERM); says where it listens (port 0: a free port) on stderr.

    ``workers`` > 1: that many processes forked now, each on its own socket on the port (:func:`worker_sockets`),
    sharing the places (worker_processes.py).
    """
    check_bind(host, token)
    if workers > 1 and threading.active_count() > 1:
        raise RuntimeError(f"--workers {workers}: other threads run in this process ({threading.enumerate()}); "
                           "forking it could copy a held lock. Serve from a process of its own (roboreward serve)")
    sockets = worker_sockets(host, port, workers)
    port = sockets[0].getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    print(f"roboreward serve: listening on http://{shown}:{port} ({limits.max_concurrency} slots, "
          f"{limits.max_queue} waiting at most), {workers} worker process{'es' if workers > 1 else ''}",
          file=sys.stderr, flush=True)

    def run(places: Places | None = None, worker: int = 0) -> None:
        server = RewardServer(model, limits, allowed_root, token, places, workers, worker)
        uvicorn_server(server.app, host, port, log_level).run(sockets=[sockets[worker % len(sockets)]])

    try:
        if workers == 1:
            run()
        else:
            serve_in_workers(lambda places: run(places, places.index), workers, limits.capacity,
                             lambda line: print(f"roboreward serve: {line}", file=sys.stderr, flush=True))
    finally:
        for sock in sockets:
            sock.close()
