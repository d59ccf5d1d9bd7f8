"""A reward server on a loopback port for the tests (tests/reward/test_server.py, test_hostile_server.py): uvicorn in a
thread over a socket bound to port 0, and a client that returns the status, the JSON answer and the headers.
"""

import base64
import http.client
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from helm_roboreward.reward.server import RewardServer, bound_socket, uvicorn_server
from tests.helpers.sample import SAMPLE, sample_rows

ROW = sample_rows()[0]
VIDEO = SAMPLE / ROW["file_name"]


@dataclass
class Running:
    port: int
    app: RewardServer

    def call(self, method: str, path: str, body: Any = None, token: str | None = None,
             raw: bytes | None = None) -> tuple[int, dict[str, Any], dict[str, str]]:
        return http_call(self.port, method, path, body, token, raw)


def http_call(port: int, method: str, path: str, body: Any = None, token: str | None = None,
              raw: bytes | None = None, timeout: float = 30) -> tuple[int, dict[str, Any], dict[str, str]]:
    """One request to the server on ``port``: its status, JSON answer and headers (``raw``: the body as bytes)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    connection.request(method, path, body=data, headers=headers)
    response = connection.getresponse()
    payload = response.read()
    connection.close()
    return response.status, (json.loads(payload) if payload else {}), dict(response.getheaders())


def start(app: RewardServer) -> Iterator[Running]:
    sock = bound_socket("127.0.0.1", 0)
    server = uvicorn_server(app.app, log_level="warning")
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    try:
        yield Running(sock.getsockname()[1], app)
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


def mp4_item(task: str = ROW["task"]) -> dict[str, Any]:
    return {"task": task, "video": {"mp4_base64": base64.b64encode(VIDEO.read_bytes()).decode()}}


