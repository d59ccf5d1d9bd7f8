"""A HELM client for OpenAI-compatible chat servers that take video (vLLM serving Qwen3-VL, RoboReward, Qwen2.5-VL).

HELM 0.5.16's OpenAI and vLLM chat clients raise on ``video/mp4`` media; this client sends it as
a ``video_url`` content part, the format vLLM's OpenAI-compatible server accepts for Qwen-VL
models, and sends JPEG frames as ``image_url`` parts (their bytes unchanged). One user message,
the text first, then the media in order; max_tokens from the request (the protocol's budget under the
``roboreward`` run spec).

- ``decoding``: ``request`` (default) sends the request's temperature (0 under the run spec);
  ``checkpoint`` sends no sampling parameter at all, so the server applies the checkpoint's
  generation config (vLLM's default ``--generation-config auto``), as the official in-process client
  for Qwen3-VL and RoboReward did (it passed only ``max_new_tokens``); ``greedy`` sends temperature 0.

- ``video_transport``: ``data_url`` (default) inlines the mp4 as ``data:video/mp4;base64,...``;
  ``file_url`` sends ``file://<absolute path>`` for a server on the same machine (start vLLM with
  ``--allowed-local-media-path``).
- ``video_fps`` / ``video_min_frames`` / ``video_max_frames``: the frame sampling vLLM's video loader
  should apply, sent per request as ``media_io_kwargs`` (``{"video": {"fps", "min_frames",
  "max_frames"}}``). The package's Qwen3-VL and RoboReward deployments send the checkpoint processor's
  own rule (2 fps, clamped to 4..768 frames, transformers' ``Qwen3VLVideoProcessor``) instead of trusting
  each server version's default. Checked against vLLM's source: per-request ``media_io_kwargs`` exist
  from vLLM 0.18.0 (``ChatCompletionRequest.media_io_kwargs``); from 0.24.0 vLLM's ``qwen3_vl`` video
  loader (``vllm/multimodal/video.py``, ``Qwen3VLVideoBackend``) applies exactly that formula with these
  keys. ``video_num_frames`` asks the generic loader for a fixed frame count instead. Nothing is sent
  in ``mm_processor_kwargs``: frame-sampling keys there clash with frames the loader already sampled.
  Unset (the default for other deployments), the server's defaults apply.
- Reasoning returned separately (``reasoning_content`` / ``reasoning``, or ``<think>`` tags, see
  :func:`split_reasoning`) goes to ``GeneratedOutput.thinking``; only the answer is in ``text``.
- ``top_logprobs``: 0 (default) asks for no log-probabilities (the request and its cache key are exactly
  those of a client without the option). N > 0 sends the OpenAI chat-completions fields ``"logprobs": true,
  "top_logprobs": N`` (part of the cache key) and records the answer's digit tokens with their top-N
  alternatives in ``finish_reason["score_token_logprobs"]`` (see :func:`score_token_logprobs`), which
  ``score=expected`` turns into a distribution over the scores 1..5
  (:func:`helm_roboreward.core.score_probabilities.score_distribution`). vLLM's OpenAI-compatible server
  (``vllm/entrypoints/openai/chat_completion/protocol.py``, ``ChatCompletionRequest``; ``serving.py``,
  ``_create_chat_logprobs``) accepts both fields (``top_logprobs`` needs ``logprobs: true``), caps N at the
  server's ``--max-logprobs`` (default 20, as OpenAI's API; a larger N is rejected with a 400, a non-fatal
  failure here) and returns one ``logprobs.content`` entry per GENERATED token (prompt tokens only under
  vLLM's own ``prompt_logprobs``), reasoning tokens included even when a reasoning parser moves their text
  to ``reasoning``. Its values are the model's log-probabilities before temperature, top-k/top-p and
  penalties (``--logprobs-mode raw_logprobs``, the default). The cached response keeps every token's text
  and log-probability but the alternatives of digit tokens only (:func:`trim_alternatives`).
- Failures, each ONE failed request (``success=False``, ``error_flags`` non-retriable and non-fatal: HELM records
  an empty completion, the metric counts it in ``failed_request`` and charges it per the run's ``failed=``
  policy, the run goes on), never cached, so a rerun sends the request again:

  - transient errors (connection errors, timeouts, 408/409/429/5xx) are retried by the ``openai`` package with
    backoff, ``max_retries`` times (default :data:`DEFAULT_MAX_RETRIES`); a request that still fails, or fails
    permanently (other 4xx, e.g. a video too long for the context), is failed;
  - a 200 reply that cannot be turned into completions (not JSON, e.g. truncated or ``text/plain``; not an
    object; no ``choices``; a choice without a ``message``; content that is not text, e.g. a number): the
    error says what was wrong and quotes the reply's start (:func:`reply_problem`);
  - a request over the limits the deployment declares (``max_images_per_prompt``, ``max_videos_per_prompt``,
    ``max_request_bytes``, mirroring vLLM's ``--limit-mm-per-prompt`` and a proxy's body limit; 0 or absent: no
    limit) is not sent; the error names the limit, by how much it is exceeded and the fix (``max_frames=``,
    ``max_side=``, ``video=frames``). Media sent inline count as base64 (4/3 of their bytes), a ``file://``
    video as its URL.

- Time limits: ``timeout_seconds`` (default :data:`DEFAULT_TIMEOUT_SECONDS`, 5 minutes) bounds each attempt's
  wait for the answer (connecting: at most :data:`CONNECT_TIMEOUT_SECONDS`), and ``max_retries`` (default 2) the
  attempts after the first, so a server that never answers holds a row for at most about 15 minutes (3 x 5 min
  plus seconds of backoff; the previous defaults, 600 s and 4 retries, made that about 50 minutes). 5 minutes
  leaves room for the protocol's 5,000-token answer at about 17 tokens/s; raise ``timeout_seconds`` for slower
  servers (a long reasoning budget), lower both to fail fast. The rows run in parallel (``-n``), so a server
  that hangs holds up to N rows at a time.
- Cache key: HELM's request cache (``helm.common.cache.Cache``, one file per host organization, so every
  ``vllm/*`` deployment shares ``vllm.sqlite``) keyed by what decides the answer: the server (``base_url``), the
  served model name, the decoding, the video transport, ``media_io_kwargs``, ``top_logprobs``, max_tokens,
  stop sequences, ``n``, and the request's content (the text, each media file's SHA-256, never its path, so
  changed content is never served from the cache). Two deployments on two servers never
  share answers, even under the same served model name; two deployments that send the same request to the same
  server do. Entries written before the server was part of the key are not served to any deployment: their
  keys differ, so they miss and the request is sent again.
"""

import base64
import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from helm.clients.client import CachingClient
from helm.common.cache import CacheConfig
from helm.common.hierarchical_logger import hwarn
from helm.common.media_object import MediaObject
from helm.common.request import (
    ErrorFlags,
    GeneratedOutput,
    Request,
    RequestResult,
    Thinking,
    wrap_request_time,
)

from helm_roboreward.clients.chat_reply import (
    LOGPROB_FLOOR,
    UnusableReplyError,
    answer_digit_tokens,
    answer_start,
    decode_reply,
    merge_logprob,
    reply_problem,
    score_token_logprobs,
    split_reasoning,
    trim_alternatives,
)
from helm_roboreward.clients.openai_sdk import shared_openai_client
from helm_roboreward.core.files import file_digest
from helm_roboreward.core.request_limits import (
    PlannedRequest,
    RequestLimits,
    declared_limits,
    format_bytes,
    limit_problems,
    request_bytes,
)
from helm_roboreward.core.score_probabilities import SCORE_TOKEN_LOGPROBS
from helm_roboreward.protocol import CLIENT_DECODINGS, DECLARED_LIMIT_ARGS, GREEDY, REQUEST

DATA_URL = "data_url"
FILE_URL = "file_url"
DEFAULT_TIMEOUT_SECONDS = 300.0
"""Seconds one attempt waits for its answer (the protocol's 5,000 tokens at about 17 tokens/s)."""
DEFAULT_MAX_RETRIES = 2
"""Attempts after the first for transient errors and timeouts (3 in all: at most about 15 minutes a row)."""
CONNECT_TIMEOUT_SECONDS = 10.0
"""Seconds to open a connection (an unreachable server fails fast, a slow answer does not)."""
_WARNED: set[str] = set()


def warn_once(reason: str, message: str) -> None:
    """Log ``message`` the first time ``reason`` comes up in this process."""
    if reason not in _WARNED:
        _WARNED.add(reason)
        hwarn(message)


def completions_of(response: dict[str, Any], logprobs_requested: bool) -> list[GeneratedOutput]:
    """HELM completions from a usable response (as cached).

    Raises:
        UnusableReplyError: Any part of it cannot be read.
    """
    problem = reply_problem(response)
    if problem is not None:
        raise UnusableReplyError(f"the reply is not a usable chat completion: {problem}")
    try:
        return [completion_from_choice(choice, response.get("usage"), logprobs_requested)
                for choice in response["choices"]]
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        raise UnusableReplyError(f"the reply cannot be read ({type(error).__name__}: {error})") from error


def request_limits(values: Mapping[str, Any]) -> RequestLimits:
    """The limits the constructor arguments declare (:data:`DECLARED_LIMIT_ARGS`; None: no limit).

    Raises:
        ValueError: A value is not a whole number >= 1 (the message names the argument and where to fix it).
    """
    fields = declared_limits({k: v for k, v in values.items() if v is not None}, "OpenAIVideoClient")
    return RequestLimits(max_images=fields.get("max_images", 0), max_videos=fields.get("max_videos", 0),
                         max_request_bytes=fields.get("max_request_bytes", 0))


def limit_failure(planned: PlannedRequest, limits: RequestLimits) -> str | None:
    """Why ``planned`` must not be sent under ``limits``: what, which limit, by how much, the fix (None: it fits)."""
    problems = limit_problems(planned, limits)
    if not problems:
        return None
    over, fixes = [], []
    if limits.max_images and planned.images > limits.max_images:
        over.append(f"max_images_per_prompt={limits.max_images}, {planned.images - limits.max_images} over")
        fixes.append(f"max_frames={limits.max_images} in the run entry (evenly spaced frames; or a lower fps=)")
    if limits.max_videos and planned.videos > limits.max_videos:
        over.append(f"max_videos_per_prompt={limits.max_videos}, {planned.videos - limits.max_videos} over")
        fixes.append("video=frames")
    size = request_bytes(planned)
    if limits.max_request_bytes and size > limits.max_request_bytes:
        over.append(f"max_request_bytes={limits.max_request_bytes} ({format_bytes(limits.max_request_bytes)}), "
                    f"{format_bytes(size - limits.max_request_bytes)} over")
        fixes.append("smaller frames with max_side=<pixels> (e.g. max_side=640) or fewer with max_frames="
                     if planned.images else "video=frames (with max_frames= / max_side= as needed)")
    unique_fixes = list(dict.fromkeys(fixes))
    return (f"not sent: the request holds {', '.join(problems)}, over the deployment's declared limits "
            f"({'; '.join(over)}). Fix: {'; or '.join(unique_fixes)}")


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

    Time limits: each attempt waits at most ``timeout_seconds`` (default 300) for its answer and
    :data:`CONNECT_TIMEOUT_SECONDS` (10) to connect; transient errors and time-outs are retried ``max_retries``
    times (default 2) by the ``openai`` package, so a server that never answers holds a row about 15 minutes, then
    the row is one non-fatal failed request and the run goes on. Request limits: ``max_images_per_prompt``,
    ``max_videos_per_prompt``, ``max_request_bytes`` (None: no limit; anything but a whole number >= 1 is a
    ValueError naming the argument: vLLM reads 0 as "none allowed"); a request over them is not sent. Every
    failure is one failed request, never cached; the cache key holds the server and every setting that changes
    the request (module docstring).
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
        """Args: see the module docstring; ``base_url`` is the server's ``.../v1`` URL."""
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
        self.limits = request_limits({"max_images_per_prompt": max_images_per_prompt,
                                      "max_videos_per_prompt": max_videos_per_prompt,
                                      "max_request_bytes": max_request_bytes})
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

    def _extra_body(self) -> dict[str, Any]:
        return {"media_io_kwargs": {"video": dict(self.video_io)}} if self.video_io else {}

    def _build(self, request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
        """The request body and its cache key."""
        make_body, key, _ = self._prepare(request)
        return make_body(), key

    def _prepare(self, request: Request) -> tuple[Callable[[], dict[str, Any]], dict[str, Any], PlannedRequest]:
        """A function building the body (media encoded only when called), the cache key, what the body holds."""
        if request.multimodal_prompt is not None:
            parts: list[_Part] | None = [self._part(media) for media in request.multimodal_prompt.media_objects]
            key_content: Any = [part.key for part in parts or []]
        else:
            parts, key_content = None, request.prompt
        planned = PlannedRequest(
            row="request", images=sum(p.kind == "image" for p in parts or []),
            videos=sum(p.kind == "video" for p in parts or []),
            media_file_bytes=tuple(p.inline_bytes for p in parts or [] if p.inline_bytes),
            text_bytes=sum(p.text_bytes for p in parts) if parts is not None else len(request.prompt.encode("utf-8")))
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
        extra = self._extra_body()
        key = {"server": self.base_url, **fields, "content": key_content, "extra_body": extra,
               "decoding": self.decoding, "video_transport": self.video_transport}

        def make_body() -> dict[str, Any]:
            content: Any = [part.build() for part in parts] if parts is not None else request.prompt
            body = {"model": fields["model"], "messages": [{"role": "user", "content": content}],
                    **{k: v for k, v in fields.items() if k != "model"}}
            return {**body, **({"extra_body": extra} if extra else {})}

        return make_body, dict(CachingClient.make_cache_key(key, request)), planned

    def make_request(self, request: Request) -> RequestResult:
        """Send one chat completion (or serve it from the cache); every failure is one non-fatal failed request."""
        import openai

        try:
            make_body, cache_key, planned = self._prepare(request)
        except (OSError, ValueError) as error:
            return _failure(f"cannot build the request: {error}")
        over = limit_failure(planned, self.limits)
        if over is not None:
            return _failure(over)

        fresh: list[GeneratedOutput] = []

        def do_it() -> dict[str, Any]:
            raw = self.client.chat.completions.with_raw_response.create(**make_body())
            response = trim_alternatives(decode_reply(raw.headers.get("content-type", ""), raw.text))
            fresh.extend(completions_of(response, self.top_logprobs > 0))  # raises before the cache writes it
            return response

        try:
            response, cached = self.cache.get(cache_key, wrap_request_time(do_it))
            completions = completions_of(response, self.top_logprobs > 0) if cached else fresh
        except UnusableReplyError as error:
            return _failure(f"{error}; not cached, a rerun sends the request again")
        except openai.APIStatusError as error:
            return _failure(f"server answered {error.status_code}: {error.message}")
        except openai.APIError as error:  # connection errors and timeouts, after the openai package's retries
            return _failure(f"request failed after {self.client.max_retries} retries: {error}")
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

    Args:
        choice: One element of the response's ``choices``.
        usage: The response's ``usage``.
        logprobs_requested: Whether the request asked for log-probabilities; then ``finish_reason`` gets
            ``score_token_logprobs`` when the choice's tokens line up with its answer (a warning, once per
            process, when the server returned none or they do not line up).
    """
    message = choice.get("message") or {}
    text, thinking = split_reasoning(message.get("content") or "")
    separate = message.get("reasoning_content") or message.get("reasoning")
    if separate:
        thinking = f"{separate}\n{thinking}" if thinking else str(separate)
    finish: dict[str, Any] = {"reason": choice.get("finish_reason")}
    if usage:
        # HELM's RequestResult has no usage field; finish_reason is the dict that reaches the metric.
        finish["prompt_tokens"] = usage.get("prompt_tokens")
        finish["completion_tokens"] = usage.get("completion_tokens")
    if logprobs_requested:
        entries = score_token_logprobs(choice)
        if entries is not None:
            finish[SCORE_TOKEN_LOGPROBS] = entries
        elif not isinstance((choice.get("logprobs") or {}).get("content"), list):
            warn_once("no_logprobs", "OpenAIVideoClient: top_logprobs was asked for, but the server returned no "
                                     "log-probabilities: no score_token_logprobs (score=expected has no distribution)")
        else:
            warn_once("unaligned", "OpenAIVideoClient: the log-probability tokens of a completion do not line up with "
                                   "its answer text: no score_token_logprobs for it (logged once)")
    return GeneratedOutput(text=text, logprob=0.0, tokens=[], finish_reason=finish,
                           thinking=Thinking(text=thinking) if thinking else None)


def _data_url(content_type: str, data: bytes) -> str:
    return f"data:{content_type};base64,{base64.b64encode(data).decode('ascii')}"


def _failure(message: str) -> RequestResult:
    """One failed request: not retried by HELM, not fatal (HELM records an empty completion and the run goes on)."""
    return RequestResult(success=False, cached=False, error=message, completions=[], embedding=[],
                         error_flags=ErrorFlags(is_retriable=False, is_fatal=False))


__all__: list[str] = [
    "CONNECT_TIMEOUT_SECONDS", "DATA_URL", "DEFAULT_MAX_RETRIES", "DEFAULT_TIMEOUT_SECONDS", "FILE_URL",
    "OpenAIVideoClient", "completion_from_choice", "completions_of", "limit_failure", "request_limits", "warn_once",
    # read from chat_reply and core, importable from here as before (the transformers client and the tests use them)
    "DECLARED_LIMIT_ARGS", "LOGPROB_FLOOR", "SCORE_TOKEN_LOGPROBS", "UnusableReplyError", "answer_digit_tokens",
    "answer_start", "decode_reply", "merge_logprob", "reply_problem", "score_token_logprobs", "split_reasoning",
    "trim_alternatives",
]
