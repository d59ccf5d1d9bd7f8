"""What the package's clients share: the prompt's parts, the answer apart from its reasoning, HELM's results.

Also whether a chat-completions reply can become completions, and if not, why (every reply of the vLLM client,
cached ones too), and why a request failed, in words.
"""

import json
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


TEXT_FIELDS = ("content", "reasoning_content", "reasoning")

REPLY_QUOTE = 120
"""Characters of an unusable reply quoted in the error."""
_KINDS = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list", dict: "an object"}


def _clip(text: str) -> str:
    return text[:REPLY_QUOTE] + ("..." if len(text) > REPLY_QUOTE else "")


def _kind(value: Any) -> str:
    return "null" if value is None else _KINDS.get(type(value), type(value).__name__)


def reply_problem(reply: Any) -> str | None:
    """Why a decoded chat-completions reply cannot be turned into completions (None: it can)."""
    if not isinstance(reply, dict):
        return f"the reply is {_kind(reply)}, not a chat completion object"
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices:
        error = reply.get("error")
        return "the reply has no choices" + (f" (it holds an error: {_clip(json.dumps(error))})" if error else "")
    for index, choice in enumerate(choices):
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            return f"choice {index} has no message object"
        for field in TEXT_FIELDS:
            value = message.get(field)
            if value is not None and not isinstance(value, str):
                return f"choice {index}'s message {field} is {_kind(value)} ({_clip(json.dumps(value))}), not text"
        if choice.get("logprobs") is not None and not isinstance(choice["logprobs"], dict):
            return f"choice {index}'s logprobs is {_kind(choice['logprobs'])}, not an object"
    if reply.get("usage") is not None and not isinstance(reply["usage"], dict):
        return f"the reply's usage is {_kind(reply['usage'])}, not an object"
    return None


def decode_reply(content_type: str, text: str) -> dict[str, Any]:
    """A 200 reply's body as a usable chat completion; :class:`UnusableReplyError` saying why when it is not."""
    try:
        reply = json.loads(text)
    except ValueError:
        reply = None  # not JSON: the error says so
    if reply_problem(reply) is None:
        return dict(reply)

    raise unusable_body(content_type, text)


def unusable_body(content_type: str, text: str) -> UnusableReplyError:
    """The error for a 200 body that is not JSON or not a usable chat completion, quoting the body's start."""
    quote = repr(text[:REPLY_QUOTE]) + ("..." if len(text) > REPLY_QUOTE else "")
    try:
        problem = reply_problem(json.loads(text))
    except ValueError as error:
        return UnusableReplyError(f"the server answered 200 with a body that is not JSON (Content-Type "
                                  f"{content_type or 'absent'}, {len(text)} characters: {quote}; {error})")
    return UnusableReplyError(f"the server answered 200 with a reply that is not a usable chat completion: "
                              f"{problem} (reply: {quote})")


def request_failure(error: Exception, retries: int) -> str:
    """The failed request's message for an unusable reply or an ``openai`` error raised after ``retries`` retries."""
    import openai

    if isinstance(error, UnusableReplyError):
        return f"{error}; not cached, a rerun sends the request again"
    if isinstance(error, openai.APIStatusError):
        return f"server answered {error.status_code}: {error.message}"
    return f"request failed after {retries} retries: {error}"  # connection errors and timeouts
