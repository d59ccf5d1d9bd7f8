"""A chat-completions reply, read: whether it is usable, the answer and its reasoning, the answer's digit tokens.

Pure functions over decoded JSON and text, no I/O. :class:`~.openai_video_client.OpenAIVideoClient` checks
every 200 reply with :func:`decode_reply` before HELM's cache may store it (an unusable reply is one failed
request, never cached), splits reasoning from the answer (:func:`split_reasoning`) and records the answer's digit
tokens with their alternatives (:func:`score_token_logprobs`); the in-process transformers client uses the same
answer split and token alignment for its own generations.
"""

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

REPLY_QUOTE = 120
"""Characters of an unusable reply quoted in the error."""
_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"
_THINK_OPEN_AT_START = re.compile(r"^\s*<think>")
_DIGIT = re.compile(r"\d")
LOGPROB_FLOOR = -9999.0
"""What a log-probability of -inf (or NaN) is recorded as: the cache is JSON, and vLLM floors at the same value."""


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


class UnusableReplyError(Exception):
    """A 200 reply that cannot be turned into completions (never cached: the request fails, a rerun sends it again)."""


def _quote(text: str) -> str:
    return repr(text[:REPLY_QUOTE]) + ("..." if len(text) > REPLY_QUOTE else "")


def _json(value: Any) -> str:
    text = json.dumps(value)
    return text[:REPLY_QUOTE] + ("..." if len(text) > REPLY_QUOTE else "")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)


def reply_problem(reply: Any) -> str | None:
    """Why a decoded chat-completions reply cannot be turned into completions (None: it can).

    Usable: an object with a non-empty ``choices`` list, each an object with a ``message`` object whose
    ``content`` (and ``reasoning_content`` / ``reasoning``, when present) is text or null, ``logprobs`` null or an
    object, and ``usage`` (when present) an object.
    """
    if not isinstance(reply, dict):
        return f"the reply is {_kind(reply)}, not a chat completion object"
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices:
        error = reply.get("error")
        return "the reply has no choices" + (f" (it holds an error: {_json(error)})" if error else "")
    for index, choice in enumerate(choices):
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            return f"choice {index} has no message object"
        for field in ("content", "reasoning_content", "reasoning"):
            value = message.get(field)
            if value is not None and not isinstance(value, str):
                return f"choice {index}'s message {field} is {_kind(value)} ({_json(value)}), not text"
        if choice.get("logprobs") is not None and not isinstance(choice["logprobs"], dict):
            return f"choice {index}'s logprobs is {_kind(choice['logprobs'])}, not an object"
    if reply.get("usage") is not None and not isinstance(reply["usage"], dict):
        return f"the reply's usage is {_kind(reply['usage'])}, not an object"
    return None


def decode_reply(content_type: str, text: str) -> dict[str, Any]:
    """A 200 reply's body as a usable chat completion.

    Raises:
        UnusableReplyError: The body is not JSON or not a usable chat completion (:func:`reply_problem`).
    """
    try:
        reply = json.loads(text)
    except ValueError as error:
        raise UnusableReplyError(f"the server answered 200 with a body that is not JSON (Content-Type "
                            f"{content_type or 'absent'}, {len(text)} characters: {_quote(text)}; {error})") from error
    problem = reply_problem(reply)
    if problem is not None:
        raise UnusableReplyError(f"the server answered 200 with a reply that is not a usable chat completion: "
                                 f"{problem} (reply: {_quote(text)})")
    return dict(reply)


__all__ = ["LOGPROB_FLOOR", "UnusableReplyError", "answer_digit_tokens", "answer_start", "decode_reply",
           "merge_logprob", "reply_problem", "score_token_logprobs", "split_reasoning", "trim_alternatives"]
