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
- The cache key holds each media file's SHA-256, not its path, so changed content is never served
  from the cache.
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
- Transient failures (connection errors, 408/409/429/5xx) are retried by the ``openai`` package
  with backoff (``max_retries``); a request that still fails, or fails permanently (other 4xx, e.g.
  a video too long for the context), returns a non-fatal failure: the run goes on and the metric
  counts it in ``failed_request``.
"""

import base64
import hashlib
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
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

from helm_roboreward.core.files import file_digest
from helm_roboreward.core.score_probabilities import SCORE_TOKEN_LOGPROBS
from helm_roboreward.helm_layer.clients.concurrency import request_cache, shared_openai_client

DATA_URL = "data_url"
FILE_URL = "file_url"
REQUEST_DECODING = "request"
CHECKPOINT_DECODING = "checkpoint"
GREEDY_DECODING = "greedy"
DECODINGS = (REQUEST_DECODING, CHECKPOINT_DECODING, GREEDY_DECODING)
_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"
_THINK_OPEN_AT_START = re.compile(r"^\s*<think>")
_DIGIT = re.compile(r"\d")
LOGPROB_FLOOR = -9999.0
"""What a log-probability of -inf (or NaN) is recorded as: the cache is JSON, and vLLM floors at the same value."""
_WARNED: set[str] = set()


def split_reasoning(text: str) -> tuple[str, str | None]:
    """Separate reasoning in ``<think>`` tags (Qwen3 thinking models) from the answer.

    - ``<think>...</think> answer`` and ``... </think> answer`` (the chat template opened the tag in
      the prompt, and vLLM ran without a reasoning parser): the answer is what follows ``</think>``.
    - ``<think>...`` never closed (the budget ran out while reasoning): there is no answer, so the
      text is empty and the completion counts as unparseable, not as an answer the model was weighing.
    """
    if _THINK_CLOSE in text:
        head, _, tail = text.partition(_THINK_CLOSE)
        return tail.lstrip(), _THINK_OPEN_AT_START.sub("", head).strip() or None
    if text.lstrip().startswith(_THINK_OPEN):
        return "", text.lstrip()[len(_THINK_OPEN):].strip() or None
    return text, None


def answer_start(text: str) -> int | None:
    """Where the answer :func:`split_reasoning` keeps starts in ``text`` (``text[start:]`` is that answer).

    Returns:
        The character offset, or None when ``text`` has no answer (a ``<think>`` block never closed).
    """
    if _THINK_CLOSE in text:
        close = text.index(_THINK_CLOSE) + len(_THINK_CLOSE)
        tail = text[close:]
        return close + len(tail) - len(tail.lstrip())
    if text.lstrip().startswith(_THINK_OPEN):
        return None
    return 0


def merge_logprob(top: dict[str, float], token: str, logprob: Any) -> None:
    """Add one alternative to a ``top`` map; alternatives with the same text add their probabilities.

    A log-probability that is not a finite number (None, -inf, NaN) is recorded as :data:`LOGPROB_FLOOR`.
    """
    value = float(logprob) if isinstance(logprob, (int, float)) and math.isfinite(logprob) else LOGPROB_FLOOR
    value = max(value, LOGPROB_FLOOR)
    if token in top:
        high, low = max(top[token], value), min(top[token], value)
        value = high + math.log1p(math.exp(low - high))
    top[token] = value


def answer_digit_tokens(spans: Iterable[tuple[int, str, Mapping[str, float]]], answer: str,
                        start: int) -> list[dict[str, Any]] | None:
    """The ``score_token_logprobs`` entries of the generated tokens that fall in the answer and hold a digit.

    Args:
        spans: ``(offset, token text, top alternatives)`` per generated token, in generation order; the
            offsets count in a text in which ``answer`` starts at ``start``.
        answer: The final answer (``GeneratedOutput.text``).
        start: Where ``answer`` starts in the text the offsets count in.

    Returns:
        One ``{"offset", "text", "top"}`` entry per token with a decimal digit that starts inside the answer
        (offsets into ``answer``); tokens before the answer (reasoning, ``</think>``, and one that straddles
        the answer's first character) are left out. None when a digit token does not sit at its offset in
        the answer: the token texts do not line up with the answer, and no offset is guessed.
    """
    entries: list[dict[str, Any]] = []
    for offset, token, top in spans:
        at = offset - start
        if at < 0 or not _DIGIT.search(token):
            continue
        if answer[at:at + len(token)] != token:
            return None
        entries.append({"offset": at, "text": token, "top": dict(top)})
    return entries


def score_token_logprobs(choice: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The answer's digit tokens and their top log-probabilities from one chat-completions ``choice``.

    ``choice["logprobs"]["content"]`` lists every generated token (``token``, ``logprob``, ``top_logprobs``).
    Offsets: normally the token texts concatenate to the message content followed only by tokens without a
    digit (vLLM lists the end-of-turn token, whose text is not in the content); each token's offset is then
    its position in that concatenation, re-based to the answer :func:`split_reasoning` keeps (tokens of a
    ``<think>`` block are left out). Otherwise (a reasoning parser moved the reasoning to
    ``reasoning_content``, so the tokens start with it), the answer is aligned on its LAST occurrence in the
    concatenation, which must be followed by no digit. Either way every entry is checked against the answer
    text (:func:`answer_digit_tokens`).

    Returns:
        The entries (empty when the answer has no digit), or None when the choice carries no
        log-probabilities or its tokens cannot be aligned with the answer.
    """
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    if not isinstance(content, list):
        return None
    tokens = [str(item.get("token") or "") for item in content]
    raw = str((choice.get("message") or {}).get("content") or "")
    answer = split_reasoning(raw)[0]
    joined = "".join(tokens)
    start = answer_start(raw)
    if start is None or not answer:
        return []  # no answer (or an empty one): no answer token to describe
    if not joined.startswith(raw) or _DIGIT.search(joined[len(raw):]):
        start = joined.rfind(answer)
        if start < 0 or _DIGIT.search(joined[start + len(answer):]):
            return None
    spans: list[tuple[int, str, dict[str, float]]] = []
    offset = 0
    for item, token in zip(content, tokens, strict=True):
        if _DIGIT.search(token):
            top: dict[str, float] = {}
            for alternative in item.get("top_logprobs") or []:
                merge_logprob(top, str(alternative.get("token") or ""), alternative.get("logprob"))
            if token not in top:  # the chosen token is always among the alternatives
                merge_logprob(top, token, item.get("logprob"))
            spans.append((offset, token, top))
        offset += len(token)
    return answer_digit_tokens(spans, answer, start)


def trim_alternatives(response: dict[str, Any]) -> dict[str, Any]:
    """Drop the alternatives of tokens without a digit from a response before it is cached.

    Every generated token keeps its text and log-probability (the offsets need them all), but only digit
    tokens keep ``top_logprobs``: a long reasoning would otherwise cache N alternatives per token.
    """
    for choice in response.get("choices") or []:
        logprobs = choice.get("logprobs") if isinstance(choice, dict) else None
        for item in (logprobs.get("content") or []) if isinstance(logprobs, dict) else []:
            if isinstance(item, dict) and not _DIGIT.search(str(item.get("token") or "")):
                item["top_logprobs"] = []
    return response


def warn_once(reason: str, message: str) -> None:
    """Log ``message`` the first time ``reason`` comes up in this process."""
    if reason not in _WARNED:
        _WARNED.add(reason)
        hwarn(message)


class OpenAIVideoClient(CachingClient):
    """Chat completions with native video (``video_url``) and frames (``image_url``) for OpenAI-compatible servers."""

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
        max_retries: int = 4,
        timeout_seconds: float = 600.0,
        decoding: str = REQUEST_DECODING,
        top_logprobs: int = 0,
    ) -> None:
        """Args: see the module docstring; ``base_url`` is the server's ``.../v1`` URL."""
        super().__init__(cache_config=None)  # type: ignore[arg-type]  # HELM's: None is no cache; ours follows
        if cache_config is not None:  # HELM's SQLite cache over one connection per file and process (concurrency.py)
            self.cache = request_cache(cache_config)
        if isinstance(top_logprobs, bool) or not isinstance(top_logprobs, int) or top_logprobs < 0:
            raise ValueError(f"top_logprobs must be a whole number >= 0 (0: no log-probabilities), "
                             f"got {top_logprobs!r}")
        if decoding not in DECODINGS:
            raise ValueError(f"decoding must be one of {', '.join(DECODINGS)}, got {decoding!r}")
        if video_transport not in (DATA_URL, FILE_URL):
            raise ValueError(f"video_transport must be {DATA_URL!r} or {FILE_URL!r}, got {video_transport!r}")
        if not base_url:
            raise ValueError(
                "OpenAIVideoClient needs base_url: set <host>BaseUrl in prod_env/credentials.conf "
                "(e.g. vllmBaseUrl: \"http://localhost:8000/v1\") or base_url in the deployment's client_spec args"
            )
        self.client = shared_openai_client(base_url, api_key or "EMPTY", max_retries, timeout_seconds)
        self.served_model_name = served_model_name
        self.video_transport = video_transport
        self.video_io: dict[str, Any] = {
            key: value for key, value in (("fps", video_fps), ("min_frames", video_min_frames),
                                          ("max_frames", video_max_frames), ("num_frames", video_num_frames))
            if value is not None
        }
        self.decoding = decoding
        self.top_logprobs = top_logprobs

    def _part(self, media: MediaObject) -> tuple[Callable[[], dict[str, Any]], dict[str, Any]]:
        """How to build the content part for one media object, and its cache-key stand-in (no bytes, no paths).

        Each file is read once: its SHA-256 (the key) comes from the bytes in memory, and the base64 data URL is
        built from the same bytes only when the part is built (a cache miss).
        """
        if media.is_type("text"):
            part = {"type": "text", "text": media.text or ""}
            return lambda: part, part
        if not media.location:
            raise ValueError(f"media object without a location: {media.content_type}")
        if media.is_type("video") and self.video_transport == FILE_URL:
            url = "file://" + os.path.abspath(media.location)
            return (lambda: {"type": "video_url", "video_url": {"url": url}},
                    {"type": "video_url", "sha256": file_digest(media.location), "transport": FILE_URL})
        with open(media.location, "rb") as handle:
            data = handle.read()
        digest = hashlib.sha256(data).hexdigest()
        content_type = media.content_type
        if media.is_type("video"):
            return (lambda: {"type": "video_url", "video_url": {"url": _data_url(content_type, data)}},
                    {"type": "video_url", "sha256": digest, "transport": self.video_transport})
        if media.is_type("image"):
            return (lambda: {"type": "image_url", "image_url": {"url": _data_url(content_type, data)}},
                    {"type": "image_url", "sha256": digest})
        raise ValueError(f"OpenAIVideoClient cannot send {media.content_type} media")

    def _extra_body(self) -> dict[str, Any]:
        return {"media_io_kwargs": {"video": dict(self.video_io)}} if self.video_io else {}

    def _build(self, request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
        """The request body and its cache key."""
        make_body, key = self._prepare(request)
        return make_body(), key

    def _prepare(self, request: Request) -> tuple[Callable[[], dict[str, Any]], dict[str, Any]]:
        """A function building the request body (media encoded only when called) and the request's cache key."""
        if request.multimodal_prompt is not None:
            pairs = [self._part(media) for media in request.multimodal_prompt.media_objects]
            parts: list[Callable[[], dict[str, Any]]] | None = [part for part, _ in pairs]
            key_content: Any = [key for _, key in pairs]
        else:
            parts, key_content = None, request.prompt
        fields: dict[str, Any] = {
            "model": self.served_model_name or request.model_engine,
            "max_tokens": request.max_tokens,
            "n": request.num_completions,
        }
        if self.decoding == REQUEST_DECODING:
            fields["temperature"] = request.temperature
        elif self.decoding == GREEDY_DECODING:
            fields["temperature"] = 0.0
        if request.stop_sequences:
            fields["stop"] = list(request.stop_sequences)
        if self.top_logprobs:  # absent when off: the request and its cache key stay those of before the option
            fields["logprobs"] = True
            fields["top_logprobs"] = self.top_logprobs
        extra = self._extra_body()
        key = {**fields, "content": key_content, "extra_body": extra,
               **({} if self.decoding == REQUEST_DECODING else {"decoding": self.decoding})}

        def make_body() -> dict[str, Any]:
            content: Any = [part() for part in parts] if parts is not None else request.prompt
            body = {"model": fields["model"], "messages": [{"role": "user", "content": content}],
                    **{k: v for k, v in fields.items() if k != "model"}}
            return {**body, **({"extra_body": extra} if extra else {})}

        return make_body, dict(CachingClient.make_cache_key(key, request))

    def make_request(self, request: Request) -> RequestResult:
        """Send one chat completion (or serve it from the cache)."""
        import openai

        try:
            make_body, cache_key = self._prepare(request)
        except (OSError, ValueError) as error:
            return _failure(f"cannot build the request: {error}", retriable=False)

        def do_it() -> dict[str, Any]:
            response: dict[str, Any] = self.client.chat.completions.create(**make_body()).model_dump(mode="json")
            return trim_alternatives(response)

        try:
            response, cached = self.cache.get(cache_key, wrap_request_time(do_it))
        except openai.APIStatusError as error:
            return _failure(f"server answered {error.status_code}: {error.message}", retriable=False)
        except openai.APIError as error:  # connection errors and timeouts, after the openai package's retries
            return _failure(f"request failed after retries: {error}", retriable=False)
        return RequestResult(
            success=True,
            cached=cached,
            request_time=response.get("request_time"),
            request_datetime=response.get("request_datetime"),
            completions=[completion_from_choice(choice, response.get("usage"), self.top_logprobs > 0)
                         for choice in response.get("choices", [])],
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


def _failure(message: str, retriable: bool) -> RequestResult:
    return RequestResult(success=False, cached=False, error=message, completions=[], embedding=[],
                         error_flags=ErrorFlags(is_retriable=retriable, is_fatal=False))


__all__: list[str] = ["OpenAIVideoClient", "split_reasoning", "answer_start", "answer_digit_tokens",
                      "score_token_logprobs", "completion_from_choice", "trim_alternatives", "SCORE_TOKEN_LOGPROBS",
                      "DATA_URL", "FILE_URL"]
