"""One ``openai.OpenAI`` client per server and settings, shared by every OpenAIVideoClient of the process.

HELM 0.5.16's AutoClient builds a deployment's client on its first request and keeps it, without a lock: the
``-n`` threads that start together build up to N clients, and each ``openai.OpenAI`` builds its own ``httpx``
client (a TLS context read from the CA bundle, a connection pool), tens of milliseconds of CPU under the GIL each.
:func:`shared_openai_client` builds one per server, API key, retry and timeout setting, under a lock, and loads
the SDK's chat-completions resources there once (``openai`` imports them on first use). The ``openai`` client is
safe to share between threads (``httpcore``'s connection pool guards its state with a lock), and its default pool
(1,000 connections, 100 kept alive) does not limit ``-n`` up to 100. ``benchmarks/requests_in_flight.py``
measures what it saves (variant c against b).
"""

from __future__ import annotations

import os
import threading
from typing import Any

_LOCK = threading.Lock()
_CLIENTS: dict[tuple[Any, ...], Any] = {}


def shared_openai_client(base_url: str, api_key: str, max_retries: int, timeout_seconds: float,
                         connect_timeout_seconds: float) -> Any:
    """The process's ``openai.OpenAI`` client for these settings (built on first use, then shared by every thread).

    Returns:
        ``OpenAI(base_url=..., api_key=..., max_retries=..., timeout=httpx.Timeout(timeout_seconds,
        connect=connect_timeout_seconds))``: the same requests, byte for byte, as a client of one's own.
    """
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


__all__ = ["shared_openai_client"]
