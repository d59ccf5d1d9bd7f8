"""A chat reply, read: whether it is usable and its answer apart from its reasoning; the failed request otherwise.

docs/clients.md, "Failures" and "Reasoning".
"""

import json
import re
from typing import Any

from helm.common.request import ErrorFlags, RequestResult

REPLY_QUOTE = 120
"""Characters of an unusable reply quoted in the error."""
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
_THINK_OPEN_AT_START = re.compile(r"^\s*<think>")


def split_reasoning(text: str) -> tuple[str, str | None]:
    """The answer and the reasoning in ``<think>`` tags; no answer when the tag never closes (budget ran out)."""
    if THINK_CLOSE in text:
        head, _, tail = text.partition(THINK_CLOSE)
        return tail.lstrip(), _THINK_OPEN_AT_START.sub("", head).strip() or None
    if text.lstrip().startswith(THINK_OPEN):
        return "", text.lstrip()[len(THINK_OPEN):].strip() or None
    return text, None


class UnusableReplyError(Exception):
    """A 200 reply that cannot be turned into completions (never cached: the request fails, a rerun sends it again)."""


def failed_request(message: str) -> RequestResult:
    """One failed request: not retried by HELM, not fatal (HELM records an empty completion and the run goes on)."""
    return RequestResult(success=False, cached=False, error=message, completions=[], embedding=[],
                         error_flags=ErrorFlags(is_retriable=False, is_fatal=False))


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
    """Why a decoded chat-completions reply cannot be turned into completions (None: it can)."""
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
    """A 200 reply's body as a usable chat completion; :class:`UnusableReplyError` when it is not JSON or not usable."""
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
