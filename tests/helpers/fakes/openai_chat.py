"""The OpenAI-compatible chat completions API (``POST .../chat/completions``), shaped like vLLM's answers.

Clients: this package's ``OpenAIVideoClient`` (vLLM deployments) through the ``openai`` package. Answers
carry ``message.reasoning_content`` when the reply has reasoning, ``logprobs.content`` when it has log
probabilities, and ``usage`` with token counts. ``GET .../models`` (the served model list) is answered too.
:data:`MALFORMED_BODIES` are 200 answers no client can turn into a completion (sent by
:func:`tests.helpers.fakes.server.malformed`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from tests.helpers.fakes.exchange import Part, ProviderApi, Recorded, Reply, single_user_message, url_part

CHAT = "chat"
MODELS = "models"


_NUMBER_CONTENT = {
    "id": "chatcmpl-fake-number", "object": "chat.completion", "created": 0, "model": "fake",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": 3}, "finish_reason": "stop",
                 "logprobs": None}],
    "usage": {"prompt_tokens": 11, "completion_tokens": 1, "total_tokens": 12},
}
_VALID = json.dumps({**_NUMBER_CONTENT, "choices": [{"index": 0, "message": {"role": "assistant",
                                                                           "content": "ANSWER: 3"}}]})
MALFORMED_BODIES: dict[str, tuple[str, bytes]] = {
    "truncated-json": ("application/json", _VALID[: len(_VALID) // 2].encode()),
    "text-plain": ("text/plain; charset=utf-8", b"upstream worker crashed, please retry"),
    "empty-object": ("application/json", b"{}"),
    "number-content": ("application/json", json.dumps(_NUMBER_CONTENT).encode()),
    "empty-choices": ("application/json", json.dumps({**_NUMBER_CONTENT, "choices": []}).encode()),
    "json-list": ("application/json", b"[]"),
}
"""Malformed 200 answers by kind: ``(Content-Type, body)``. A truncated body (the first half of a valid answer, its
Content-Length right), plain text, ``{}``, a number as the message content, no choices, a JSON list."""


def user_messages(body: Any) -> list[Any]:
    return list(body["messages"])


def content_parts(content: Any) -> list[Part]:
    """The parts of one chat message's ``content`` (a string, or text / image_url / video_url items)."""
    if isinstance(content, str):
        return [Part(kind="text", text=content)]
    parts = []
    for item in content:
        kind = item["type"]
        if kind == "text":
            parts.append(Part(kind="text", text=item["text"]))
        elif kind == "image_url":
            parts.append(url_part("image", item["image_url"]["url"]))
        elif kind == "video_url":
            parts.append(url_part("video", item["video_url"]["url"]))
        else:
            raise AssertionError(f"unexpected chat content part type {kind!r}")
    return parts


def media_parts(body: Any) -> list[Part]:
    return content_parts(single_user_message(user_messages(body))["content"])


def answer(recorded: Recorded, reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.reasoning is not None:
        message[reply.reasoning_key] = reply.reasoning
    logprobs = None if reply.logprobs is None else {"content": reply.logprobs}
    return {
        "id": f"chatcmpl-fake-{recorded.index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": recorded.model or "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason, "logprobs": logprobs}],
        "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                  "total_tokens": reply.prompt_tokens + reply.completion_tokens},
    }


def error(reply: Reply) -> dict[str, Any]:
    """OpenAI's error body (the Responses API uses the same)."""
    return {"error": {"message": reply.error, "type": "invalid_request_error", "param": None,
                      "code": str(reply.status)}}


def models_listing(served_models: Sequence[str]) -> dict[str, Any]:
    """The answer to ``GET .../models``."""
    return {"object": "list",
            "data": [{"id": name, "object": "model", "created": 0, "owned_by": "fake"} for name in served_models]}


API = ProviderApi(name=CHAT, path_suffix="/chat/completions", user_messages=user_messages, media_parts=media_parts,
                  answer=answer, error=error)
