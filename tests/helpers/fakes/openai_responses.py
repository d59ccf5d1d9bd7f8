"""The OpenAI Responses API (``POST .../responses``): HELM's ``OpenAIResponseClient`` through the ``openai`` package.

Reasoning comes back as a reasoning item with a summary, the answer as one output message.
"""

from __future__ import annotations

import time
from typing import Any

from tests.helpers.fakes import openai_chat
from tests.helpers.fakes.exchange import Part, ProviderApi, Recorded, Reply, single_user_message, url_part

RESPONSES = "responses"


def user_messages(body: Any) -> list[Any]:
    return list(body["input"]) if isinstance(body["input"], list) else [body["input"]]


def content_parts(content: Any) -> list[Part]:
    """The parts of one input message's ``content`` (a string, or input_text / input_image items)."""
    if isinstance(content, str):
        return [Part(kind="text", text=content)]
    parts = []
    for item in content:
        kind = item["type"]
        if kind == "input_text":
            parts.append(Part(kind="text", text=item["text"]))
        elif kind == "input_image":
            parts.append(url_part("image", item["image_url"]))
        else:
            raise AssertionError(f"unexpected responses content part type {kind!r}")
    return parts


def media_parts(body: Any) -> list[Part]:
    return content_parts(single_user_message(user_messages(body))["content"])


def answer(recorded: Recorded, reply: Reply) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        output.append({"type": "reasoning", "id": f"rs_fake_{recorded.index}",
                       "summary": [{"type": "summary_text", "text": reply.reasoning}]})
    output.append({
        "type": "message", "id": f"msg_fake_{recorded.index}", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
    })
    return {
        "id": f"resp_fake_{recorded.index}",
        "object": "response",
        "created_at": int(time.time()),
        "model": recorded.model or "fake",
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {"input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens,
                  "total_tokens": reply.prompt_tokens + reply.completion_tokens,
                  # openai 2.x validates these two as required integers when HELM re-reads its cache entry
                  "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
    }


API = ProviderApi(name=RESPONSES, path_suffix="/responses", user_messages=user_messages, media_parts=media_parts,
                  answer=answer, error=openai_chat.error)
