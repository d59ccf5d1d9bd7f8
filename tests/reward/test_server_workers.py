"""``roboreward serve --workers 2`` run as a user runs it: the hostile cases of one process hold (bad bodies, the
token, saturation, a stalled upload, SIGTERM with requests in flight), the places and HELM's request cache are
shared by the workers, and no worker outlives the server (``/proc`` after SIGTERM, and after SIGKILL of the parent).
"""

import asyncio
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from helm_roboreward.reward.server import bound_socket
from tests.helpers import reward
from tests.helpers.fakes import CHAT, FakeModelServer
from tests.helpers.fakes.exchange import constant
from tests.helpers.fakes.silent import SilentServer
from tests.helpers.harness import helm_environment, reap
from tests.helpers.reward_server import http_call, mp4_item

TOKEN = "t0ken-for-the-worker-tests-0123456789"
HANG = 120  # seconds: only a hang takes this long


@dataclass
class Served:
    """A ``roboreward serve --workers 2`` subprocess, its port and what it said on stderr."""

    process: "subprocess.Popen[str]"
    port: int
    lines: list[str] = field(default_factory=list)

    def call(self, method: str, path: str, body: Any = None, token: str | None = TOKEN,
             raw: bytes | None = None) -> tuple[int, dict[str, Any], dict[str, str]]:
        return http_call(self.port, method, path, body, token, raw, timeout=HANG)

    def held(self) -> int:
        return int(self.call("GET", "/v1/model")[1]["server"]["held"])

    def workers(self) -> list[int]:
        return children_of(self.process.pid)


def children_of(pid: int) -> list[int]:
    """Live processes whose parent is ``pid`` (from /proc/<pid>/stat)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None and stat[1] == pid and stat[0] != "Z":
            found.append(int(entry))
    return found


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    state, ppid = text.rsplit(")", 1)[1].split()[:2]
    return state, int(ppid)


def gone(pid: int) -> bool:
    stat = _stat(pid)
    return stat is None or stat[0] == "Z"  # a zombie has ended (its new parent may not reap it)


def wait_until(condition: Any, what: str, limit: float = 30) -> None:
    deadline = time.monotonic() + limit  # a hang, not a timing
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def start_serving(local: Path, fake: FakeModelServer, tmp: Path, *extra: str) -> Served:
    token_file = tmp / "token"
    token_file.write_text(TOKEN)
    token_file.chmod(0o600)
    command = [sys.executable, "-m", "helm_roboreward.cli", "serve", "--model", reward.RR8B, "--deployment",
               "vllm/roboreward-8b", "--local-path", str(local), "--media-dir", str(tmp / "media"), "--port", "0",
               "--token-file", str(token_file), "--workers", "2", *extra]
    process = subprocess.Popen(command, env=helm_environment(fake), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    said: list[str] = []

    def read() -> None:
        for line in process.stderr or ():
            said.append(line.rstrip("\n"))
            lines.put(said[-1])

    threading.Thread(target=read, daemon=True).start()
    try:
        line = lines.get(timeout=HANG)
        while "listening on" not in line:
            line = lines.get(timeout=HANG)
    except queue.Empty:
        reap([process])
        raise AssertionError(f"roboreward serve did not start: {said}") from None
    assert line.endswith(", 2 worker processes"), line
    served = Served(process, int(re.findall(r":(\d+) ", line)[0]), said)
    wait_until(lambda: len(served.workers()) == 2, f"two workers: {said}")
    return served


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, reward_fake: FakeModelServer, silent_backend: SilentServer,
           tiny_qwen3vl: Path) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("workers")
    local = reward.reward_local_path(tmp / "local", reward_fake, silent_backend, tiny_qwen3vl)  # its own cache
    running = start_serving(local, reward_fake, tmp, "--max-concurrency", "2", "--max-queue", "2",
                            "--max-body-mb", "2", "--body-timeout", "3")
    try:
        yield running
    finally:
        running.process.send_signal(signal.SIGTERM)
        try:
            running.process.wait(timeout=HANG)
        finally:
            reap([running.process])


def test_bad_bodies_and_the_token_hold_in_every_worker(served: Served, fake: FakeModelServer) -> None:
    assert served.call("GET", "/healthz", token=None)[:2] == (200, {"status": "ok"})
    assert served.call("GET", "/v1/model", token=None)[0] == 401
    assert served.call("GET", "/v1/model", token="wrong-token-wrong-token")[0] == 401
    workers = {served.call("GET", "/v1/model")[1]["server"]["worker"] for _ in range(40)}
    assert workers <= {0, 1} and workers, workers
    for raw, status, field_name in ((b"{not json", 400, "body"), (b"[" * 100_000 + b"]" * 100_000, 400, "body"),
                                    (b" " * (3 << 20), 413, "body"),
                                    (json.dumps({"task": "t", "colour": "red"}).encode(), 400, "colour")):
        answer_status, answer, _ = served.call("POST", "/v1/score", raw=raw)
        assert answer_status == status and answer["error"]["field"] == field_name, answer
    status, body, _ = served.call("POST", "/v1/score_batch", {"items": [mp4_item("first"), mp4_item("")]})
    assert status == 200 and [r["field"] for r in body["results"]] == [None, "items[1].task"], body
    status, body, _ = served.call("POST", "/get_reward", {"query": ["q"], "prompts": ["p"], "labels": [mp4_item()]},
                                  token=None)
    assert status == 401
    assert served.held() == 0


def test_connections_opened_at_once_spread_over_the_workers(served: Served) -> None:
    """Keep-alive connections opened together (as a trainer's callers open them) reach both workers, fairly.

    With one shared listening socket, the worker that woke first accepted every pending connection in its accept
    loop (asyncio accepts up to the backlog per wake-up): benchmarks/reward_api.py's 32 callers all went to one
    worker (32 and 0, 31 and 1) while the other idled. The workers are stopped while the clients connect, so every
    connection is pending when they wake.
    """
    pids = served.workers()
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        connections = [socket.create_connection(("127.0.0.1", served.port), timeout=HANG) for _ in range(32)]
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    workers = []
    try:
        for sock in connections:
            sock.sendall(f"GET /v1/model HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode())
            answer = b""
            while not (answer.endswith(b"}") and b"\r\n\r\n" in answer):
                chunk = sock.recv(65536)
                assert chunk, answer
                answer += chunk
            workers.append(json.loads(answer.split(b"\r\n\r\n", 1)[1])["server"]["worker"])
    finally:
        for sock in connections:
            sock.close()
    # the kernel spreads connections by a hash of their addresses: 32 over two workers gives each at least 6
    # (a chance of 1 in 15,000 of fewer)
    assert min(workers.count(0), workers.count(1)) >= 6, workers


def test_a_full_server_is_full_in_every_worker(served: Served, fake: FakeModelServer) -> None:
    fake.behaviour = constant(delay=2.0)
    with ThreadPoolExecutor(max_workers=4) as pool:
        running = [pool.submit(served.call, "POST", "/v1/score", mp4_item(f"held {i}")) for i in range(4)]
        wait_until(lambda: served.held() == 4, "four items held")  # 2 running + 2 waiting, whichever worker
        refused = [served.call("POST", "/v1/score", mp4_item("one more")) for _ in range(6)]  # new connections
        assert [status for status, _, _ in refused] == [503] * 6, refused
        assert all(headers["retry-after"] == "2" for _, _, headers in refused)
        assert [future.result()[0] for future in running] == [200] * 4
    assert served.held() == 0
    assert served.call("POST", "/v1/score", mp4_item())[0] == 200


def test_a_stalled_upload_holds_no_place(served: Served, fake: FakeModelServer) -> None:
    with socket.create_connection(("127.0.0.1", served.port)) as stalled:
        stalled.sendall(("POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         f"Authorization: Bearer {TOKEN}\r\nContent-Length: 1000\r\n\r\n").encode() + b'{"task": "')
        time.sleep(0.5)
        assert served.held() == 0
        assert served.call("POST", "/v1/score", mp4_item())[0] == 200
        stalled.settimeout(HANG)
        answer = b""
        while chunk := stalled.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 408"), answer


def test_the_request_cache_is_shared_by_the_workers(served: Served, fake: FakeModelServer) -> None:
    tasks = [f"cached task {i}" for i in range(4)]
    with ThreadPoolExecutor(max_workers=4) as pool:  # four writers at once, in either worker
        first = list(pool.map(lambda task: served.call("POST", "/v1/score", mp4_item(task)), tasks))
        again = list(pool.map(lambda task: served.call("POST", "/v1/score", mp4_item(task)), tasks))
    assert [(status, body["cached"]) for status, body, _ in first] == [(200, False)] * 4, first
    assert [(status, body["cached"]) for status, body, _ in again] == [(200, True)] * 4, again
    assert len(fake.requests_to(CHAT)) == 4


@pytest.mark.slow
def test_sigterm_finishes_requests_in_flight_and_ends_every_worker(reward_local_path: Path, fake: FakeModelServer,
                                                                    tmp_path: Path) -> None:
    running = start_serving(reward_local_path, fake, tmp_path, "--no-cache", "--max-concurrency", "2",
                            "--max-queue", "2")
    workers = running.workers()
    try:
        fake.behaviour = constant("ANSWER: 4", delay=1.5)
        with ThreadPoolExecutor(max_workers=3) as pool:
            calls = [pool.submit(running.call, "POST", "/v1/score", mp4_item(f"in flight {i}")) for i in range(3)]
            wait_until(lambda: running.held() == 3, "three items held")
            running.process.send_signal(signal.SIGTERM)
            answers = [future.result() for future in calls]
        assert [(status, body["score"]) for status, body, _ in answers] == [(200, 4.0)] * 3, answers
        assert running.process.wait(timeout=HANG) == -signal.SIGTERM
        wait_until(lambda: all(gone(pid) for pid in workers), f"workers {workers} ended")
    finally:
        reap([running.process])


@pytest.mark.slow
def test_no_worker_outlives_a_parent_killed_by_sigkill(reward_local_path: Path, fake: FakeModelServer,
                                                       tmp_path: Path) -> None:
    running = start_serving(reward_local_path, fake, tmp_path, "--no-cache")
    workers = running.workers()
    try:
        assert running.call("POST", "/v1/score", mp4_item())[0] == 200
        running.process.kill()
        running.process.wait(timeout=HANG)
        wait_until(lambda: all(gone(pid) for pid in workers), f"workers {workers} ended after the parent's SIGKILL")
    finally:
        reap([running.process])
        for pid in workers:  # only if the test failed: never leave one behind
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("value", ["0", "257", "1.5", "many"])
def test_workers_out_of_range_is_one_line(tmp_path: Path, value: str) -> None:
    done = subprocess.run([sys.executable, "-m", "helm_roboreward.cli", "serve", "--model", reward.RR8B,
                           "--local-path", str(tmp_path), "--workers", value], capture_output=True, text=True,
                          timeout=HANG, env=helm_environment())
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        f"roboreward serve: --workers {value}: must be a whole number in [1, 256] (worker processes), e.g. --workers "
        f"{os.cpu_count() and len(os.sched_getaffinity(0))}"], done.stderr


def test_accepted_connections_send_without_nagle() -> None:
    """The server's listening socket makes connections asyncio sets ``TCP_NODELAY`` on.

    asyncio sets it only on sockets whose proto is ``IPPROTO_TCP`` (``base_events._set_nodelay``); a socket made with
    proto 0 left Nagle on, and uvicorn's answer (headers, then body: two writes) waited for the client's delayed ACK:
    40 ms added to every call (benchmarks/reward_api.py, one caller).
    """
    async def accept_one() -> int:
        accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        with bound_socket("127.0.0.1", 0) as listening:
            server = await asyncio.get_running_loop().create_server(Probe, sock=listening)
            async with server:
                _, writer = await asyncio.open_connection("127.0.0.1", listening.getsockname()[1])
                nodelay = await asyncio.wait_for(accepted, HANG)
                writer.close()
            return nodelay

    assert asyncio.run(accept_one()) != 0
