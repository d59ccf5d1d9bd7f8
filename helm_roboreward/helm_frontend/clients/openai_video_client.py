"""Chat completions with video for OpenAI-compatible servers (vLLM); HELM 0.5.16's clients raise on video/mp4."""

import base64
import hashlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from helm.clients.client import CachingClient
from helm.common.cache import CacheConfig
from helm.common.media_object import MediaObject
from helm.common.request import GeneratedOutput, Request, RequestResult, wrap_request_time

from helm_roboreward.helm_frontend.clients import chat_replies as common
from helm_roboreward.helm_frontend.clients.chat_replies import decode_reply, media_parts, reply_problem, request_failure
from helm_roboreward.helm_frontend.clients.logprobs import record_choice_logprobs, trim_alternatives
from helm_roboreward.protocol.request_limits import PlannedRequest, RequestLimits, declared_limits, limit_failure
from helm_roboreward.protocol.rules import CHECKPOINT, CLIENT_DECODINGS, REQUEST
from helm_roboreward.protocol.safe_files import file_digest

DATA_URL, FILE_URL = "data_url", "file_url"
DEFAULT_TIMEOUT_SECONDS = 300.0  # one attempt's wait: the protocol's 5,000 tokens at about 17 tokens/s
DEFAULT_MAX_RETRIES = 2  # after the first attempt: at most about 15 minutes a row
CONNECT_TIMEOUT_SECONDS = 10.0  # an unreachable server fails fast, a slow answer does not
_SDK_LOCK = threading.Lock()
_SDK_CLIENTS: dict[tuple[Any, ...], Any] = {}


def shared_openai_client(base_url: str, api_key: str, max_retries: int, timeout_seconds: float,
                         connect_timeout_seconds: float) -> Any:
    """One ``openai.OpenAI`` per process and settings: HELM builds up to ``-n`` clients at once, each costly."""
    key = (os.getpid(), base_url, api_key, max_retries, timeout_seconds, connect_timeout_seconds)  # a fork: its own
    with _SDK_LOCK:
        if key not in _SDK_CLIENTS:
            from openai import OpenAI, Timeout

            _SDK_CLIENTS[key] = OpenAI(base_url=base_url, api_key=api_key, max_retries=max_retries,
                                       timeout=Timeout(timeout_seconds, connect=connect_timeout_seconds))
            _ = _SDK_CLIENTS[key].chat.completions  # the SDK imports its resources on first use: here, once
        return _SDK_CLIENTS[key]


class OpenAIVideoClient(CachingClient):
    """The video as a ``video_url`` part, frames as ``image_url`` parts; every failure one failed request."""

    def __init__(self, cache_config: CacheConfig, base_url: str | None = None, api_key: str | None = None,
                 served_model_name: str | None = None, video_transport: str = DATA_URL,
                 video_fps: float | None = None, video_min_frames: int | None = None,
                 video_max_frames: int | None = None, video_num_frames: int | None = None,
                 max_retries: int = DEFAULT_MAX_RETRIES, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
                 decoding: str = REQUEST, top_logprobs: int = 0, max_images_per_prompt: int | None = None,
                 max_videos_per_prompt: int | None = None, max_request_bytes: int | None = None) -> None:
        """Check the arguments (ValueError); ``base_url`` is the server's ``.../v1`` URL. Limits: None is no limit."""
        super().__init__(cache_config=cache_config)
        self.top_logprobs = common.check_top_logprobs(top_logprobs)
        if decoding not in CLIENT_DECODINGS:
            raise ValueError(f"decoding must be one of {', '.join(CLIENT_DECODINGS)}, got {decoding!r}")
        if video_transport not in (DATA_URL, FILE_URL):
            raise ValueError(f"video_transport must be {DATA_URL!r} or {FILE_URL!r}, got {video_transport!r}")
        if not base_url:
            raise ValueError("OpenAIVideoClient needs base_url: set <host>BaseUrl in prod_env/credentials.conf "
                             "(e.g. vllmBaseUrl: \"http://localhost:8000/v1\") or base_url in the deployment's "
                             "client_spec args")
        self.limits: Any = None  # the RequestLimits the deployment declares (a declared_limits.DeclaredLimits), if any
        if (max_images_per_prompt, max_videos_per_prompt, max_request_bytes) != (None, None, None):
            self.limits = DeclaredLimits.of(max_images_per_prompt, max_videos_per_prompt, max_request_bytes,
                                            video_by_url=video_transport == FILE_URL)
        self.client = shared_openai_client(base_url, api_key or "EMPTY", max_retries, timeout_seconds,
                                           min(CONNECT_TIMEOUT_SECONDS, timeout_seconds))
        self.base_url, self.served_model_name = base_url.rstrip("/"), served_model_name
        self.video_transport, self.decoding = video_transport, decoding
        self.video_io = {key: value for key, value in {"fps": video_fps, "min_frames": video_min_frames,
                         "max_frames": video_max_frames, "num_frames": video_num_frames}.items() if value is not None}

    def _part(self, kind: str, media: MediaObject) -> tuple[Callable[[], dict[str, Any]], dict[str, Any]]:
        """A content part's builder (base64 only when called) and its cache-key stand-in; each file read once."""
        if kind == "text":
            part = {"type": "text", "text": media.text or ""}
            return lambda: part, part
        location, field = str(media.location), f"{kind}_url"
        if kind == "video" and self.video_transport == FILE_URL:
            return file_url_part(location)
        with open(location, "rb") as handle:
            data = handle.read()
        key = {"type": field, "sha256": hashlib.sha256(data).hexdigest()}
        return (lambda: {"type": field, field: {"url": _data_url(media.content_type, data)}},
                {**key, "transport": self.video_transport} if kind == "video" else key)

    def _prepare(self, request: Request) -> tuple[Callable[[], dict[str, Any]], dict[str, Any]]:
        """A function building the body (media encoded only when called) and the cache key."""
        parts = None if request.multimodal_prompt is None else \
            [self._part(kind, media) for kind, media in common.media_parts(request, "OpenAIVideoClient")]
        fields: dict[str, Any] = {"model": self.served_model_name or request.model_engine,
                                  "max_tokens": request.max_tokens, "n": request.num_completions}
        if self.decoding != CHECKPOINT:  # checkpoint: no sampling parameter, the server's generation config
            fields["temperature"] = request.temperature if self.decoding == REQUEST else 0.0
        if request.stop_sequences:
            fields["stop"] = list(request.stop_sequences)
        if self.top_logprobs:  # absent when off: the request is exactly that of a client without the option
            fields.update(logprobs=True, top_logprobs=self.top_logprobs)
        extra = {"media_io_kwargs": {"video": dict(self.video_io)}} if self.video_io else {}
        key = {"server": self.base_url, **fields, "content": request.prompt if parts is None else
               [stand_in for _, stand_in in parts], "extra_body": extra, "decoding": self.decoding,
               "video_transport": self.video_transport}

        def make_body() -> dict[str, Any]:
            content: Any = request.prompt if parts is None else [build() for build, _ in parts]
            return {"model": fields["model"], "messages": [{"role": "user", "content": content}], **fields,
                    **({"extra_body": extra} if extra else {})}

        return make_body, dict(CachingClient.make_cache_key(key, request))

    def make_request(self, request: Request) -> RequestResult:
        """Send one chat completion (or serve it from the cache); every failure is one non-fatal failed request."""
        import openai

        try:
            make_body, cache_key = self._prepare(request)
        except (OSError, ValueError) as error:
            return common.failed_request(f"cannot build the request: {error}")
        over = None if self.limits is None else self.limits.failure(request)
        if over is not None:
            return common.failed_request(over)

        fresh: list[GeneratedOutput] = []

        def do_it() -> dict[str, Any]:

            raw = self.client.chat.completions.with_raw_response.create(**make_body())
            response = decode_reply(raw.headers.get("content-type", ""), raw.text)
            if any(choice.get("logprobs") for choice in response["choices"]):
                trim_alternatives(response)  # only digit tokens keep their alternatives in the cache
            fresh[:] = completions_of(response, self.top_logprobs > 0)  # raises before the cache writes it
            return response

        try:
            response, cached = self.cache.get(cache_key, wrap_request_time(do_it))
            completions = completions_of(response, self.top_logprobs > 0) if cached else fresh
            return common.succeeded(response, cached, completions)
        except (common.UnusableReplyError, openai.APIError) as error:
            return common.failed_request(request_failure(error, self.client.max_retries))


def _data_url(content_type: str, data: bytes) -> str:
    return f"data:{content_type};base64,{base64.b64encode(data).decode('ascii')}"


def completions_of(response: dict[str, Any], logprobs_requested: bool) -> list[GeneratedOutput]:
    """HELM completions from a response as cached; :class:`UnusableReplyError` when any part cannot be read."""
    problem = reply_problem(response)
    if problem is not None:
        raise common.UnusableReplyError(f"the reply is not a usable chat completion: {problem}")
    try:
        return [completion_from_choice(choice, response.get("usage"), logprobs_requested)
                for choice in response["choices"]]
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        raise common.UnusableReplyError(f"the reply cannot be read ({type(error).__name__}: {error})") from error


def completion_from_choice(choice: dict[str, Any], usage: dict[str, Any] | None,
                           logprobs_requested: bool = False) -> GeneratedOutput:
    """A HELM completion from one ``choice`` (as cached): answer, reasoning, usage, ``score_token_logprobs``."""
    message = choice.get("message") or {}
    finish: dict[str, Any] = {"reason": choice.get("finish_reason")}
    if usage:  # HELM's RequestResult has no usage field; finish_reason is the dict that reaches the metric
        finish.update(prompt_tokens=usage.get("prompt_tokens"), completion_tokens=usage.get("completion_tokens"))
    if logprobs_requested:
        record_choice_logprobs(finish, choice)
    return common.completion(message.get("content") or "", finish, [],
                             message.get("reasoning_content") or message.get("reasoning"))


@dataclass(frozen=True)
class DeclaredLimits(RequestLimits):
    """The declared limits, and whether the client sends its video by URL (not counted as base64)."""

    video_by_url: bool = False

    @classmethod
    def of(cls, max_images_per_prompt: int | None, max_videos_per_prompt: int | None, max_request_bytes: int | None,
           video_by_url: bool) -> "DeclaredLimits":
        """The limits of the declared (not None) arguments (ValueError: one is not a whole number >= 1)."""
        arguments = {"max_images_per_prompt": max_images_per_prompt, "max_videos_per_prompt": max_videos_per_prompt,
                     "max_request_bytes": max_request_bytes}
        fields = declared_limits({name: value for name, value in arguments.items() if value is not None},
                                 "OpenAIVideoClient")
        return cls(max_images=fields.get("max_images", 0), max_videos=fields.get("max_videos", 0),
                   max_request_bytes=fields.get("max_request_bytes", 0), video_by_url=video_by_url)

    def failure(self, request: Request) -> str | None:
        """Why ``request`` must not be sent under the limits (None: it fits); inline media count as base64."""
        if request.multimodal_prompt is None:
            return limit_failure(PlannedRequest(row="request", images=0, videos=0, media_file_bytes=(),
                                                text_bytes=len(request.prompt.encode("utf-8"))), self)
        parts = media_parts(request, "OpenAIVideoClient")
        by_url = [str(media.location) for kind, media in parts if kind == "video" and self.video_by_url]
        inline = [os.path.getsize(str(media.location)) for kind, media in parts
                  if kind != "text" and not (kind == "video" and self.video_by_url)]
        text = [media.text or "" for kind, media in parts if kind == "text"] + [file_url(path) for path in by_url]
        kinds = [kind for kind, _ in parts]
        return limit_failure(PlannedRequest(
            row="request", images=kinds.count("image"), videos=kinds.count("video"),
            media_file_bytes=tuple(size for size in inline if size),
            text_bytes=sum(len(piece.encode("utf-8")) for piece in text)), self)


def file_url(location: str) -> str:
    """The ``file://`` URL of a video a server on this machine reads itself."""
    return "file://" + os.path.abspath(location)


def file_url_part(location: str) -> tuple[Callable[[], dict[str, Any]], dict[str, Any]]:
    """A video part's builder and its cache-key stand-in (the file's SHA-256, never its path)."""
    return (lambda: {"type": "video_url", "video_url": {"url": file_url(location)}},
            {"type": "video_url", "sha256": file_digest(location), "transport": "file_url"})
