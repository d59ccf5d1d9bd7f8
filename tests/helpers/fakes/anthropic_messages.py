"""The Anthropic Messages API (``POST .../messages``): HELM's ``AnthropicMessagesClient`` (the ``anthropic`` package).

Images arrive as base64 image blocks; reasoning comes back as a thinking block before the text.
"""

from __future__ import annotations

from typing import Any

from tests.helpers.fakes.exchange import Part, ProviderApi, Recorded, Reply, b64decode, single_user_message

MESSAGES = "messages"


def user_messages(body: Any) -> list[Any]:
    return list(body["messages"])


def content_parts(content: Any) -> list[Part]:
    """The parts of one message's ``content`` (a string, or text / base64 image blocks)."""
    if isinstance(content, str):
        return [Part(kind="text", text=content)]
    parts = []
    for block in content:
        kind = block["type"]
        if kind == "text":
            parts.append(Part(kind="text", text=block["text"]))
        elif kind == "image":
            source = block["source"]
            assert source["type"] == "base64", source["type"]
            parts.append(Part(kind="image", mime_type=source["media_type"], data=b64decode(source["data"])))
        else:
            raise AssertionError(f"unexpected messages content block type {kind!r}")
    return parts


def media_parts(body: Any) -> list[Part]:
    return content_parts(single_user_message(user_messages(body))["content"])


def answer(recorded: Recorded, reply: Reply) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        content.append({"type": "thinking", "thinking": reply.reasoning, "signature": "fake"})
    content.append({"type": "text", "text": reply.text})
    return {
        "id": f"msg_fake_{recorded.index}",
        "type": "message",
        "role": "assistant",
        "model": recorded.model or "fake",
        "content": content,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens},
    }


def error(reply: Reply) -> dict[str, Any]:
    return {"type": "error", "error": {"type": "invalid_request_error", "message": reply.error}}


API = ProviderApi(name=MESSAGES, path_suffix="/messages", user_messages=user_messages, media_parts=media_parts,
                  answer=answer, error=error)
