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
- Transient failures (connection errors, 408/409/429/5xx) are retried by the ``openai`` package
  with backoff (``max_retries``); a request that still fails, or fails permanently (other 4xx, e.g.
  a video too long for the context), returns a non-fatal failure: the run goes on and the metric
  counts it in ``failed_request``.
"""

import base64
import os
import re
from typing import Any

from helm.clients.client import CachingClient
from helm.common.cache import CacheConfig
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

DATA_URL = "data_url"
FILE_URL = "file_url"
REQUEST_DECODING = "request"
CHECKPOINT_DECODING = "checkpoint"
GREEDY_DECODING = "greedy"
DECODINGS = (REQUEST_DECODING, CHECKPOINT_DECODING, GREEDY_DECODING)
_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"
_THINK_OPEN_AT_START = re.compile(r"^\s*<think>")


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
    ) -> None:
        """Args: see the module docstring; ``base_url`` is the server's ``.../v1`` URL."""
        super().__init__(cache_config=cache_config)
        if decoding not in DECODINGS:
            raise ValueError(f"decoding must be one of {', '.join(DECODINGS)}, got {decoding!r}")
        if video_transport not in (DATA_URL, FILE_URL):
            raise ValueError(f"video_transport must be {DATA_URL!r} or {FILE_URL!r}, got {video_transport!r}")
        if not base_url:
            raise ValueError(
                "OpenAIVideoClient needs base_url: set <host>BaseUrl in prod_env/credentials.conf "
                "(e.g. vllmBaseUrl: \"http://localhost:8000/v1\") or base_url in the deployment's client_spec args"
            )
        from openai import OpenAI

        self.client = OpenAI(base_url=base_url, api_key=api_key or "EMPTY", max_retries=max_retries,
                             timeout=timeout_seconds)
        self.served_model_name = served_model_name
        self.video_transport = video_transport
        self.video_io: dict[str, Any] = {
            key: value for key, value in (("fps", video_fps), ("min_frames", video_min_frames),
                                          ("max_frames", video_max_frames), ("num_frames", video_num_frames))
            if value is not None
        }
        self.decoding = decoding

    def _part(self, media: MediaObject) -> tuple[dict[str, Any], dict[str, Any]]:
        """The content part for one media object and its cache-key stand-in (no bytes, no paths)."""
        if media.is_type("text"):
            part = {"type": "text", "text": media.text or ""}
            return part, part
        if not media.location:
            raise ValueError(f"media object without a location: {media.content_type}")
        digest = file_digest(media.location)
        if media.is_type("video"):
            if self.video_transport == FILE_URL:
                url = "file://" + os.path.abspath(media.location)
            else:
                url = self._data_url(media)
            return ({"type": "video_url", "video_url": {"url": url}},
                    {"type": "video_url", "sha256": digest, "transport": self.video_transport})
        if media.is_type("image"):
            return ({"type": "image_url", "image_url": {"url": self._data_url(media)}},
                    {"type": "image_url", "sha256": digest})
        raise ValueError(f"OpenAIVideoClient cannot send {media.content_type} media")

    @staticmethod
    def _data_url(media: MediaObject) -> str:
        assert media.location is not None
        with open(media.location, "rb") as handle:
            encoded = base64.b64encode(handle.read()).decode("ascii")
        return f"data:{media.content_type};base64,{encoded}"

    def _extra_body(self) -> dict[str, Any]:
        return {"media_io_kwargs": {"video": dict(self.video_io)}} if self.video_io else {}

    def _build(self, request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
        """The request body and its cache key."""
        if request.multimodal_prompt is not None:
            pairs = [self._part(media) for media in request.multimodal_prompt.media_objects]
            content: Any = [part for part, _ in pairs]
            key_content: Any = [key for _, key in pairs]
        else:
            content = key_content = request.prompt
        body: dict[str, Any] = {
            "model": self.served_model_name or request.model_engine,
            "messages": [{"role": "user", "content": content}],
            "max_tokens": request.max_tokens,
            "n": request.num_completions,
        }
        if self.decoding == REQUEST_DECODING:
            body["temperature"] = request.temperature
        elif self.decoding == GREEDY_DECODING:
            body["temperature"] = 0.0
        if request.stop_sequences:
            body["stop"] = list(request.stop_sequences)
        extra = self._extra_body()
        key = {**{k: v for k, v in body.items() if k != "messages"}, "content": key_content, "extra_body": extra,
               **({} if self.decoding == REQUEST_DECODING else {"decoding": self.decoding})}
        return {**body, **({"extra_body": extra} if extra else {})}, dict(CachingClient.make_cache_key(key, request))

    def make_request(self, request: Request) -> RequestResult:
        """Send one chat completion (or serve it from the cache)."""
        import openai

        try:
            body, cache_key = self._build(request)
        except (OSError, ValueError) as error:
            return _failure(f"cannot build the request: {error}", retriable=False)

        def do_it() -> dict[str, Any]:
            response: dict[str, Any] = self.client.chat.completions.create(**body).model_dump(mode="json")
            return response

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
            completions=[_completion(choice, response.get("usage")) for choice in response.get("choices", [])],
            embedding=[],
        )


def _completion(choice: dict[str, Any], usage: dict[str, Any] | None) -> GeneratedOutput:
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
    return GeneratedOutput(text=text, logprob=0.0, tokens=[], finish_reason=finish,
                           thinking=Thinking(text=thinking) if thinking else None)


def _failure(message: str, retriable: bool) -> RequestResult:
    return RequestResult(success=False, cached=False, error=message, completions=[], embedding=[],
                         error_flags=ErrorFlags(is_retriable=retriable, is_fatal=False))


__all__: list[str] = ["OpenAIVideoClient", "split_reasoning", "DATA_URL", "FILE_URL"]
