"""One ``openai.OpenAI`` client per server and settings, shared by every OpenAIVideoClient of the process.

HELM builds up to ``-n`` clients of a deployment at once, and each ``openai.OpenAI`` costs a TLS context and a
connection pool under the GIL; one shared client is thread-safe (docs/clients.md, "The shared SDK client").
"""

from __future__ import annotations

import os
import threading
from typing import Any

_LOCK = threading.Lock()
_CLIENTS: dict[tuple[Any, ...], Any] = {}


def shared_openai_client(base_url: str, api_key: str, max_retries: int, timeout_seconds: float,
                         connect_timeout_seconds: float) -> Any:
    """The process's ``openai.OpenAI`` client for these settings: built on first use, then shared by every thread."""
    key = (os.getpid(), base_url, api_key, max_retries, timeout_seconds, connect_timeout_seconds)  # a fork: its own
    with _LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            import httpx
            from openai import OpenAI

            client = OpenAI(base_url=base_url, api_key=api_key, max_retries=max_retries,
                            timeout=httpx.Timeout(timeout_seconds, connect=connect_timeout_seconds))
            _ = client.chat.completions  # the SDK imports its resources on first use: here, once
            _CLIENTS[key] = client
    return client

