"""A HELM client for OpenAI-compatible chat servers that take video (vLLM serving Qwen3-VL, RoboReward, Qwen2.5-VL).

HELM's own OpenAI and vLLM chat clients raise on ``video/mp4``; this one sends it as a ``video_url`` part. What it
sends, decoding, log-probabilities, failures, limits and cache key: docs/clients.md, "OpenAIVideoClient".
"""

import base64
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from helm.clients.client import CachingClient
from helm.common.cache import CacheConfig
from helm.common.media_object import MediaObject
from helm.common.request import GeneratedOutput, Request, RequestResult, Thinking, wrap_request_time

from helm_roboreward.clients.chat_reply import (
    UnusableReplyError,
    decode_reply,
    failed_request,
    reply_problem,
    split_reasoning,
)
from helm_roboreward.clients.openai_sdk import shared_openai_client
from helm_roboreward.core.files import file_digest
from helm_roboreward.protocol import CLIENT_DECODINGS, GREEDY, REQUEST

if TYPE_CHECKING:
    from helm_roboreward.core.request_limits import RequestLimits

DATA_URL = "data_url"
FILE_URL = "file_url"
DEFAULT_TIMEOUT_SECONDS = 300.0
"""Seconds one attempt waits for its answer (the protocol's 5,000 tokens at about 17 tokens/s)."""
DEFAULT_MAX_RETRIES = 2
"""Attempts after the first for transient errors and timeouts (3 in all: at most about 15 minutes a row)."""
CONNECT_TIMEOUT_SECONDS = 10.0
"""Seconds to open a connection (an unreachable server fails fast, a slow answer does not)."""


def completions_of(response: dict[str, Any], logprobs_requested: bool) -> list[GeneratedOutput]:
    """HELM completions from a response as cached; :class:`UnusableReplyError` when any part cannot be read."""
    problem = reply_problem(response)
    if problem is not None:
        raise UnusableReplyError(f"the reply is not a usable chat completion: {problem}")
    try:
        return [completion_from_choice(choice, response.get("usage"), logprobs_requested)
                for choice in response["choices"]]
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        raise UnusableReplyError(f"the reply cannot be read ({type(error).__name__}: {error})") from error


@dataclass(frozen=True)
class _Part:
    """One content part: how to build it (base64 only when called), its cache-key stand-in, what it weighs."""

    build: Callable[[], dict[str, Any]]
    key: dict[str, Any]
    kind: str
    """text, image or video."""
    inline_bytes: int = 0
    """Bytes of a media file sent inline (base64 in the body)."""
    text_bytes: int = 0
    """UTF-8 bytes sent as text (the prompt, a ``file://`` URL)."""


class OpenAIVideoClient(CachingClient):
    """Chat completions with native video (``video_url``) and frames (``image_url``) for OpenAI-compatible servers.

    Every failure is one non-fatal failed request, never cached; a request over the deployment's declared limits
    is not sent.
    """

    def __init__(
        self,
        cache_config: CacheConfig,
        base_url: str | None = None,
        api_key: str | None = None,
        served_model_name: str | None = None,
        video_transport: str = DATA_URL,
        video_fps: float | None = None,
        video_min_frames: int | None = None,
        video_max_frames: int | None = None,
        video_num_frames: int | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        decoding: str = REQUEST,
        top_logprobs: int = 0,
        max_images_per_prompt: int | None = None,
        max_videos_per_prompt: int | None = None,
        max_request_bytes: int | None = None,
    ) -> None:
        """Check the arguments (ValueError); ``base_url`` is the server's ``.../v1`` URL. Limits: None is no limit."""
        super().__init__(cache_config=cache_config)
        if isinstance(top_logprobs, bool) or not isinstance(top_logprobs, int) or top_logprobs < 0:
            raise ValueError(f"top_logprobs must be a whole number >= 0 (0: no log-probabilities), "
                             f"got {top_logprobs!r}")
        if decoding not in CLIENT_DECODINGS:
            raise ValueError(f"decoding must be one of {', '.join(CLIENT_DECODINGS)}, got {decoding!r}")
        if video_transport not in (DATA_URL, FILE_URL):
            raise ValueError(f"video_transport must be {DATA_URL!r} or {FILE_URL!r}, got {video_transport!r}")
        if not base_url:
            raise ValueError(
                "OpenAIVideoClient needs base_url: set <host>BaseUrl in prod_env/credentials.conf "
                "(e.g. vllmBaseUrl: \"http://localhost:8000/v1\") or base_url in the deployment's client_spec args"
            )
        declared = {argument: value for argument, value in (("max_images_per_prompt", max_images_per_prompt),
                                                            ("max_videos_per_prompt", max_videos_per_prompt),
                                                            ("max_request_bytes", max_request_bytes))
                    if value is not None}
        self.limits: RequestLimits | None = None
        """The limits the deployment declares; None: it declares none."""
        if declared:
            from helm_roboreward.core import request_limits

            fields = request_limits.declared_limits(declared, "OpenAIVideoClient")
            self.limits = request_limits.RequestLimits(max_images=fields.get("max_images", 0),
                                                       max_videos=fields.get("max_videos", 0),
                                                       max_request_bytes=fields.get("max_request_bytes", 0))
        self.client = shared_openai_client(base_url, api_key or "EMPTY", max_retries, timeout_seconds,
                                           min(CONNECT_TIMEOUT_SECONDS, timeout_seconds))
        self.base_url = base_url.rstrip("/")
        self.served_model_name = served_model_name
        self.video_transport = video_transport
        self.video_io: dict[str, Any] = {
            key: value for key, value in (("fps", video_fps), ("min_frames", video_min_frames),
                                          ("max_frames", video_max_frames), ("num_frames", video_num_frames))
            if value is not None
        }
        self.decoding = decoding
        self.top_logprobs = top_logprobs

    def _part(self, media: MediaObject) -> _Part:
        """One media object's content part; each file is read once (the key's SHA-256 and the data URL share it)."""
        if media.is_type("text"):
            part = {"type": "text", "text": media.text or ""}
            return _Part(lambda: part, part, "text", text_bytes=len(part["text"].encode("utf-8")))
        if not media.location:
            raise ValueError(f"media object without a location: {media.content_type}")
        if media.is_type("video") and self.video_transport == FILE_URL:
            url = "file://" + os.path.abspath(media.location)
            return _Part(lambda: {"type": "video_url", "video_url": {"url": url}},
                         {"type": "video_url", "sha256": file_digest(media.location), "transport": FILE_URL},
                         "video", text_bytes=len(url.encode("utf-8")))
        with open(media.location, "rb") as handle:
            data = handle.read()
        digest = hashlib.sha256(data).hexdigest()
        content_type = media.content_type
        if media.is_type("video"):
            return _Part(lambda: {"type": "video_url", "video_url": {"url": _data_url(content_type, data)}},
                         {"type": "video_url", "sha256": digest, "transport": self.video_transport},
                         "video", inline_bytes=len(data))
        if media.is_type("image"):
            return _Part(lambda: {"type": "image_url", "image_url": {"url": _data_url(content_type, data)}},
                         {"type": "image_url", "sha256": digest}, "image", inline_bytes=len(data))
        raise ValueError(f"OpenAIVideoClient cannot send {media.content_type} media")

    def _build(self, request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
        """The request body and its cache key."""
        make_body, key, _ = self._prepare(request)
        return make_body(), key

    def _prepare(self, request: Request) -> tuple[Callable[[], dict[str, Any]], dict[str, Any], list[_Part] | None]:
        """A function building the body (media encoded only when called), the cache key, the content parts."""
        if request.multimodal_prompt is not None:
            parts: list[_Part] | None = [self._part(media) for media in request.multimodal_prompt.media_objects]
            key_content: Any = [part.key for part in parts or []]
        else:
            parts, key_content = None, request.prompt
        fields: dict[str, Any] = {
            "model": self.served_model_name or request.model_engine,
            "max_tokens": request.max_tokens,
            "n": request.num_completions,
        }
        if self.decoding == REQUEST:
            fields["temperature"] = request.temperature
        elif self.decoding == GREEDY:
            fields["temperature"] = 0.0
        if request.stop_sequences:
            fields["stop"] = list(request.stop_sequences)
        if self.top_logprobs:  # absent when off: the request is exactly that of a client without the option
            fields["logprobs"] = True
            fields["top_logprobs"] = self.top_logprobs
        extra = {"media_io_kwargs": {"video": dict(self.video_io)}} if self.video_io else {}
        key = {"server": self.base_url, **fields, "content": key_content, "extra_body": extra,
               "decoding": self.decoding, "video_transport": self.video_transport}

        def make_body() -> dict[str, Any]:
            content: Any = [part.build() for part in parts] if parts is not None else request.prompt
            return {"model": fields["model"], "messages": [{"role": "user", "content": content}], **fields,
                    **({"extra_body": extra} if extra else {})}

        return make_body, dict(CachingClient.make_cache_key(key, request)), parts

    def _over_limits(self, limits: "RequestLimits", request: Request, parts: list[_Part] | None) -> str | None:
        """Why the request must not be sent under the declared ``limits`` (None: it fits)."""
        from helm_roboreward.core.request_limits import PlannedRequest, limit_failure

        planned = PlannedRequest(
            row="request", images=sum(p.kind == "image" for p in parts or []),
            videos=sum(p.kind == "video" for p in parts or []),
            media_file_bytes=tuple(p.inline_bytes for p in parts or [] if p.inline_bytes),
            text_bytes=sum(p.text_bytes for p in parts) if parts is not None else len(request.prompt.encode("utf-8")))
        return limit_failure(planned, limits)

    def make_request(self, request: Request) -> RequestResult:
        """Send one chat completion (or serve it from the cache); every failure is one non-fatal failed request."""
        import openai

        try:
            make_body, cache_key, parts = self._prepare(request)
        except (OSError, ValueError) as error:
            return failed_request(f"cannot build the request: {error}")
        over = self._over_limits(self.limits, request, parts) if self.limits is not None else None
        if over is not None:
            return failed_request(over)

        fresh: list[GeneratedOutput] = []

        def do_it() -> dict[str, Any]:
            raw = self.client.chat.completions.with_raw_response.create(**make_body())
            response = decode_reply(raw.headers.get("content-type", ""), raw.text)
            if any(choice.get("logprobs") for choice in response["choices"]):
                from helm_roboreward.clients.logprobs import trim_alternatives

                trim_alternatives(response)  # only digit tokens keep their alternatives in the cache
            fresh.extend(completions_of(response, self.top_logprobs > 0))  # raises before the cache writes it
            return response

        try:
            response, cached = self.cache.get(cache_key, wrap_request_time(do_it))
            completions = completions_of(response, self.top_logprobs > 0) if cached else fresh
        except UnusableReplyError as error:
            return failed_request(f"{error}; not cached, a rerun sends the request again")
        except openai.APIStatusError as error:
            return failed_request(f"server answered {error.status_code}: {error.message}")
        except openai.APIError as error:  # connection errors and timeouts, after the openai package's retries
            return failed_request(f"request failed after {self.client.max_retries} retries: {error}")
        return RequestResult(
            success=True,
            cached=cached,
            request_time=response.get("request_time"),
            request_datetime=response.get("request_datetime"),
            completions=completions,
            embedding=[],
        )


def completion_from_choice(choice: dict[str, Any], usage: dict[str, Any] | None,
                           logprobs_requested: bool = False) -> GeneratedOutput:
    """A HELM completion from one chat-completions ``choice`` (as cached): answer, reasoning, usage, log-probabilities.

    With ``logprobs_requested``, ``finish_reason`` gets ``score_token_logprobs`` when the choice's tokens line up
    with its answer (a warning, once per process, when they do not or the server returned none).
    """
    message = choice.get("message") or {}
    text, thinking = split_reasoning(message.get("content") or "")
    separate = message.get("reasoning_content") or message.get("reasoning")
    if separate:
        thinking = f"{separate}\n{thinking}" if thinking else str(separate)
    finish: dict[str, Any] = {"reason": choice.get("finish_reason")}
    if usage:  # HELM's RequestResult has no usage field; finish_reason is the dict that reaches the metric
        finish["prompt_tokens"] = usage.get("prompt_tokens")
        finish["completion_tokens"] = usage.get("completion_tokens")
    if logprobs_requested:
        from helm_roboreward.clients.logprobs import record_choice_logprobs

        record_choice_logprobs(finish, choice)
    return GeneratedOutput(text=text, logprob=0.0, tokens=[], finish_reason=finish,
                           thinking=Thinking(text=thinking) if thinking else None)


def _data_url(content_type: str, data: bytes) -> str:
    return f"data:{content_type};base64,{base64.b64encode(data).decode('ascii')}"

