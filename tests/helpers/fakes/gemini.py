"""The Gemini API (``POST .../models/<model>:generateContent``): ``google-genai``, HELM's ``GoogleGenAIClient``.

The model is named in the URL. Media arrive as inline base64 parts, in either JSON spelling
(``inlineData`` / ``inline_data``); reasoning comes back as a ``thought`` part before the answer.
"""

from __future__ import annotations

import re
from typing import Any

from tests.helpers.fakes.exchange import Part, ProviderApi, Recorded, Reply, b64decode

GEMINI = "gemini"
_MODEL_IN_PATH = re.compile(r"/models/([^/:]+):")


def model_in_path(path: str) -> str | None:
    match = _MODEL_IN_PATH.search(path)
    return match.group(1) if match else None


def user_messages(body: Any) -> list[Any]:
    """The request's ``contents`` (HELM's client sends one user turn per part)."""
    return list(body["contents"])


def gemini_inline(part: dict[str, Any]) -> dict[str, Any] | None:
    """The inline data of a Gemini part, accepting both JSON spellings (``inlineData`` / ``inline_data``)."""
    inline = part.get("inlineData", part.get("inline_data"))
    if inline is None:
        return None
    return {"mime_type": inline.get("mimeType", inline.get("mime_type")), "data": inline["data"]}


def media_parts(body: Any) -> list[Part]:
    """Every part of every content, in order (whatever the turn layout)."""
    parts = []
    for content in user_messages(body):
        for part in content.get("parts", []):
            inline = gemini_inline(part)
            if "text" in part:
                parts.append(Part(kind="text", text=part["text"]))
            elif inline is not None:
                mime = str(inline["mime_type"])
                parts.append(Part(kind=mime.split("/")[0], mime_type=mime, data=b64decode(inline["data"])))
            else:
                raise AssertionError(f"unexpected Gemini part {sorted(part)}")
    return parts


def answer(recorded: Recorded, reply: Reply) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        parts.append({"text": reply.reasoning, "thought": True})
    parts.append({"text": reply.text})
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": reply.prompt_tokens, "candidatesTokenCount": reply.completion_tokens,
                          "totalTokenCount": reply.prompt_tokens + reply.completion_tokens},
        "modelVersion": recorded.model or "fake",
    }


def error(reply: Reply) -> dict[str, Any]:
    return {"error": {"code": reply.status, "message": reply.error, "status": "INVALID_ARGUMENT"}}


API = ProviderApi(name=GEMINI, path_suffix=":generateContent", user_messages=user_messages, media_parts=media_parts,
                  answer=answer, error=error, model_in_path=model_in_path)
