"""The OpenAI-compatible chat completions API (``POST .../chat/completions``), shaped like vLLM's answers.

Clients: this package's ``OpenAIVideoClient`` (vLLM deployments) through the ``openai`` package. Answers
carry ``message.reasoning_content`` when the reply has reasoning, ``logprobs.content`` when it has log
probabilities, and ``usage`` with token counts. ``GET .../models`` (the served model list) is answered too.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from tests.helpers.fakes.exchange import Part, ProviderApi, Recorded, Reply, single_user_message, url_part

CHAT = "chat"
MODELS = "models"


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
