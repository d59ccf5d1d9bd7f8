"""What the package's clients share: the prompt's parts, the answer apart from its reasoning, HELM's results."""

from typing import Any

from helm.common.media_object import MediaObject
from helm.common.request import ErrorFlags, GeneratedOutput, Request, RequestResult, Thinking, Token

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


class UnusableReplyError(Exception):
    """A 200 reply that cannot become completions: the request fails, uncached, so a rerun sends it again."""


def check_top_logprobs(value: Any, client: str = "") -> int:
    """``top_logprobs`` checked (ValueError): a whole number, 0 for none."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{client}top_logprobs must be a whole number >= 0 (0: no log-probabilities), got {value!r}")
    return value


def media_parts(request: Request, client: str) -> list[tuple[str, MediaObject]]:
    """The prompt's parts in order as (text|image|video, media); ValueError for a part that cannot be sent."""
    parts = []
    for media in request.multimodal_prompt.media_objects if request.multimodal_prompt else []:
        kind = next((kind for kind in ("text", "image", "video") if media.is_type(kind)), None)
        if kind is None:
            raise ValueError(f"{client} cannot send {media.content_type} media")
        if kind != "text" and not media.location:
            raise ValueError(f"{media.content_type} media object without a location")
        parts.append((kind, media))
    return parts


def split_reasoning(text: str) -> tuple[str, str | None]:
    """The answer and the reasoning in ``<think>`` tags; no answer when the tag never closes (budget ran out)."""
    if THINK_CLOSE in text:
        head, _, tail = text.partition(THINK_CLOSE)
        return tail.lstrip(), head.strip().removeprefix(THINK_OPEN).strip() or None
    if text.lstrip().startswith(THINK_OPEN):
        return "", text.lstrip().removeprefix(THINK_OPEN).strip() or None
    return text, None


def completion(raw: str, finish: dict[str, Any], tokens: list[Token], reasoning: Any = None) -> GeneratedOutput:
    """One completion: the answer in ``text``; the reasoning returned apart, then in ``<think>`` tags, in thinking."""
    text, thinking = split_reasoning(raw)
    if reasoning:
        thinking = f"{reasoning}\n{thinking}" if thinking else str(reasoning)
    return GeneratedOutput(text=text, logprob=0.0, tokens=tokens, finish_reason=finish,
                           thinking=Thinking(text=thinking) if thinking else None)


def succeeded(response: dict[str, Any], cached: bool, completions: list[GeneratedOutput]) -> RequestResult:
    """HELM's result for a response from its cache (``wrap_request_time`` added the times)."""
    return RequestResult(success=True, cached=cached, request_time=response.get("request_time"),
                         request_datetime=response.get("request_datetime"), completions=completions, embedding=[])


def failed_request(message: str) -> RequestResult:
    """One failed request: not retried by HELM, not fatal (HELM records an empty completion and the run goes on)."""
    return RequestResult(success=False, cached=False, error=message, completions=[], embedding=[],
                         error_flags=ErrorFlags(is_retriable=False, is_fatal=False))
