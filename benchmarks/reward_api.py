"""Reward API and server: throughput against the ideal, and the latency they add over the backend itself.

A loopback OpenAI-compatible backend (a ``ThreadingHTTPServer`` in its own process, listen backlog 1,024,
``TCP_NODELAY``) answers every chat completion with ``ANSWER: 3`` after a fixed latency. The model is
``teetone/roboreward-8b`` on ``vllm/roboreward-8b`` (the mp4 goes as a ``video_url``), the clip a 10-s 10-fps
224x224 H.264 mp4, HELM's request cache off (every call reaches the backend). For each latency (``--latencies``,
default 0.5 s and 2 s) and number of concurrent callers (``--callers``, default 1, 8 and 32; one caller gives the
latency added at rest), each caller makes one untimed call (warm-up), then ``--rounds`` calls back to back through:

- ``direct``: the exact body the API sends, posted straight to the backend (``http.client``, one connection per
  caller): the floor;
- ``api``: ``RewardModel.score(task, mp4 path)`` in this process (one thread per caller);
- ``server``: ``POST /v1/score`` with the mp4 as base64 to ``roboreward serve`` (a subprocess,
  ``--max-concurrency`` = callers).

Throughput is calls / wall; the ideal is callers / latency. Added latency is the path's p50 (p95) minus
direct's p50 (p95). Goal (issue 28): at least 0.9x the ideal; added p50 at most 30 ms.

With ``--label-episodes N`` it times labelling instead: a LeRobot v3.0 dataset of N episodes (the layout writer of
tests/helpers/lerobot_datasets.py) labelled by ``roboreward label --model baseline/constant-3`` (today: import, then
``helm-run`` in a pseudo-terminal subprocess, then the outputs), and the same working copy's rows scored through
``RewardModel.score_many`` (what label's helm-run step becomes on the API), both cold (fresh request caches).

    python benchmarks/reward_api.py [--latencies 0.5 2] [--callers 1 8 32] [--rounds 4] [--quick]
    python benchmarks/reward_api.py --label-episodes 200
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
MODEL, DEPLOYMENT = "teetone/roboreward-8b", "vllm/roboreward-8b"
TASK = "put the red block in the bowl"


class Backend:
    """The fixed-latency chat-completions backend, in its own process (a real backend does not share our GIL).

    ``GET /last`` returns the last body it received.
    """

    def __init__(self, latency: float) -> None:
        self.process = subprocess.Popen([sys.executable, __file__, "--backend", str(latency)], stdout=subprocess.PIPE)
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())

    def last_body(self) -> bytes:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        connection.request("GET", "/last")
        return connection.getresponse().read()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def run_backend(latency: float) -> None:
    """The backend process: prints its port, then serves until terminated."""
    last = [b""]
    answer = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": "ANSWER: 3"},
                                      "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in two writes: without TCP_NODELAY the body waits for a delayed ACK (40 ms).
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            self._send(last[0])

        def do_POST(self) -> None:  # noqa: N802
            last[0] = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            time.sleep(latency)
            self._send(answer)

        def _send(self, data: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    class Server(ThreadingHTTPServer):
        request_queue_size = 1024
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


def make_clip(path: Path) -> None:
    from helm_roboreward.reward.inputs import Frames, encode_mp4

    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, (224, 224, 3), dtype=np.uint8)
    frames = np.stack([np.roll(base, shift * 3, axis=1) for shift in range(100)])  # 10 s at 10 fps
    path.write_bytes(encode_mp4(Frames(frames, 10.0)))


def local_path(folder: Path, backend: Backend) -> Path:
    """The --local-path (one per process: HELM's registries load once); credentials point at ``backend``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("model_metadata.yaml", "model_deployments.yaml"):
        if not (folder / name).exists():
            (folder / name).symlink_to(REPO / "prod_env" / name)
    (folder / "credentials.conf").write_text(f'vllmBaseUrl: "http://127.0.0.1:{backend.port}/v1"\n'
                                             'vllmApiKey: "benchmark"\n', encoding="utf-8")
    return folder


def timed_calls(callers: int, rounds: int, call: Callable[[int], None]) -> tuple[float, list[float]]:
    """``callers`` threads, each making ``rounds`` calls: (wall seconds, every call's latency)."""
    latencies: list[float] = []
    lock = threading.Lock()

    def caller(index: int) -> None:
        for _ in range(rounds):
            started = time.perf_counter()
            call(index)
            with lock:
                latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=callers) as pool:
        list(pool.map(caller, range(callers)))
    return time.perf_counter() - started, latencies


def poster(port: int, path: str, body: bytes, callers: int) -> Callable[[int], None]:
    """A call posting ``body`` on the caller's own keep-alive connection."""
    connections = [http.client.HTTPConnection("127.0.0.1", port, timeout=120) for _ in range(callers)]
    for connection in connections:
        connection.connect()
        connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as httpx (the API's client) does

    def call(index: int) -> None:
        connection = connections[index]
        connection.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        data = response.read()
        if response.status != 200 or b"ANSWER: 3" not in data and b'"score": 3.0' not in data:
            raise RuntimeError(f"{path}: {response.status} {data[:200]!r}")

    return call


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def start_server(local: Path, media: Path, callers: int, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [str(Path(sys.executable).parent / "roboreward"), "serve", "--model", MODEL, "--deployment",
               DEPLOYMENT, "--local-path", str(local), "--media-dir", str(media), "--no-cache", "--port", str(port),
               "--max-concurrency", str(callers), "--max-queue", str(callers)]
    process = subprocess.Popen(command, stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 600  # start-up imports HELM: minutes on a busy 2-core machine
    while time.monotonic() < deadline and process.poll() is None:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/healthz")
            if connection.getresponse().status == 200:
                return process, port
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"roboreward serve did not start:\n{log.read_text()[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latencies", type=float, nargs="+", default=[0.5, 2.0])
    parser.add_argument("--callers", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--quick", action="store_true", help="0.5 s only, 2 rounds")
    parser.add_argument("--label-episodes", type=int, default=0, help="time labelling N episodes instead")
    parser.add_argument("--backend", type=float, help=argparse.SUPPRESS)  # the backend process
    args = parser.parse_args()
    if args.backend is not None:
        run_backend(args.backend)
        return
    if args.label_episodes:
        label_timings(args.label_episodes)
        return
    if args.quick:
        args.latencies, args.rounds = [0.5], 2
    from helm_roboreward.reward import RewardModel

    work = Path(tempfile.mkdtemp(prefix="reward-api-"))
    try:
        clip = work / "clip.mp4"
        make_clip(clip)
        item = json.dumps({"task": TASK, "video": {"mp4_base64": base64.b64encode(clip.read_bytes()).decode()}})
        print(f"clip: {clip.stat().st_size:,} bytes; cpus: {os.cpu_count()}")
        print(f"{'latency':>7} {'callers':>7} {'path':>6} {'calls/s':>8} {'ideal':>6} {'of ideal':>8} "
              f"{'p50 ms':>8} {'p95 ms':>8} {'+p50 ms':>8} {'+p95 ms':>8}")
        for latency in args.latencies:
            backend = Backend(latency)
            local = local_path(work / "local", backend)
            model = RewardModel(MODEL, DEPLOYMENT, local_path=str(local), media_dir=str(work / "media"), cache=False)
            model.score(TASK, str(clip))  # prepares the media once, as any repeat finds it
            body = backend.last_body()
            try:
                for callers in args.callers:
                    measure(latency, callers, args.rounds, backend, body, model, clip, item, local, work)
            finally:
                backend.stop()
        print(f"{args.rounds} calls per caller; p50/p95 over every call; +: over direct's")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(latency: float, callers: int, rounds: int, backend: Backend, body: bytes, model: Any, clip: Path,
            item: str, local: Path, work: Path) -> None:
    """One table block: direct, api and server at this latency and number of callers."""
    server, port = start_server(local, work / "media", callers, work / f"serve-{callers}.log")
    try:
        paths: dict[str, Callable[[int], None]] = {
            "direct": poster(backend.port, "/v1/chat/completions", body, callers),
            "api": lambda index: check_reward(model.score(TASK, str(clip))),
            "server": poster(port, "/v1/score", item.encode(), callers),
        }
        base = (0.0, 0.0)
        for name, call in paths.items():
            timed_calls(callers, 1, call)  # warm-up: connections, worker threads, first-use imports
            wall, latencies = timed_calls(callers, rounds, call)
            p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
            if name == "direct":
                base = (p50, p95)
            rate, ideal = len(latencies) / wall, callers / latency
            added = "" if name == "direct" else f"{(p50 - base[0]) * 1000:>8.1f} {(p95 - base[1]) * 1000:>8.1f}"
            print(f"{latency:>7g} {callers:>7} {name:>6} {rate:>8.2f} {ideal:>6.1f} {rate / ideal:>8.2f} "
                  f"{p50 * 1000:>8.1f} {p95 * 1000:>8.1f} {added}", flush=True)
    finally:
        server.terminate()
        server.wait(timeout=30)


def label_timings(episodes: int) -> None:
    """``roboreward label`` today against scoring its working copy through the API (one machine, one run)."""
    import re

    sys.path.insert(0, str(REPO))
    from helm_roboreward.reward import RewardModel
    from tests.helpers.lerobot_datasets import EpisodeSpec, write_v3

    work = Path(tempfile.mkdtemp(prefix="reward-api-label-"))
    try:
        tasks = ("put the red cube in the bowl", "open the top drawer", "stack the green block on the blue one")
        specs = [EpisodeSpec(60 + index % 5, tasks[index % len(tasks)], index % 2 == 1) for index in range(episodes)]
        dataset = write_v3(work / "dataset", specs, fps=30, width=160, height=120, episodes_per_file=10)
        label_local, api_local = work / "label-local", work / "api-local"
        for folder in (label_local, api_local):
            folder.mkdir()
            for name in ("model_metadata.yaml", "model_deployments.yaml"):
                (folder / name).symlink_to(REPO / "prod_env" / name)
        started = time.monotonic()
        done = subprocess.run([str(Path(sys.executable).parent / "roboreward"), "label", str(dataset), "--model",
                               "baseline/constant-3", "--local-path", str(label_local), "--out",
                               str(work / "labels"), "--quiet"], cwd=work, capture_output=True, text=True)
        label_seconds = time.monotonic() - started
        if done.returncode != 0:
            raise RuntimeError(f"roboreward label failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
        parts = re.search(r"seconds: (.*)", done.stdout)
        copy = work / "labels" / "work" / "copy" / "test"
        rows = [json.loads(line) for line in (copy / "metadata.jsonl").read_text().splitlines() if line.strip()]
        items = [(row["task"], str(copy / row["file_name"])) for row in rows]
        started = time.monotonic()
        model = RewardModel("baseline/constant-3", local_path=str(api_local), media_dir=str(work / "api-media"))
        built = time.monotonic() - started
        done_count = [0]
        rewards = model.score_many(items, max_workers=4, on_result=lambda index, reward: done_count.__setitem__(
            0, done_count[0] + 1))
        api_seconds = time.monotonic() - started
        assert done_count[0] == len(items) and all(r.score == 3.0 for r in rewards)
        print(f"label, {episodes} episodes (60-64 frames, 160x120, AV1 at 30 fps), baseline/constant-3, cpus "
              f"{os.cpu_count()}:")
        print(f"  roboreward label today: {label_seconds:.1f} s in all ({parts.group(1) if parts else '?'})")
        print(f"  its helm-run step through the API: {api_seconds:.1f} s ({built:.1f} s building the model, "
              f"{len(items)} rows scored with 4 workers)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_reward(reward: Any) -> None:
    if reward.failed or reward.score != 3.0:
        raise RuntimeError(f"api: {reward}")


if __name__ == "__main__":
    main()
