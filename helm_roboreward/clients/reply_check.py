"""Whether a chat-completions reply can become completions, and if not, why (the vLLM client, every reply)."""

import json
from typing import Any

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
    from helm_roboreward.clients.reply_errors import unusable_body

    raise unusable_body(content_type, text)
