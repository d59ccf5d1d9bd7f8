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
- ``server xN``: ``POST /v1/score`` with the mp4 as base64 to ``roboreward serve --workers N`` (a subprocess,
  ``--max-concurrency`` and ``--max-queue`` = callers), for each N of ``--workers`` (default 1 and this machine's
  cores).

Throughput is calls / wall; the ideal is callers / latency. Added latency is the path's p50 (p95) minus
direct's p50 (p95), measured in the same block. Goal (issues 28, 37): at least 0.9x the ideal; added p50 at most
30 ms. A last table puts the servers' figures side by side; the load average is printed before and after.

The harness shares the machine's cores with what it measures, so it is kept cheap: each caller posts one body
encoded once per block (no per-call base64 or JSON), and the backend reads the body without parsing it. The last
column says where the CPU went during the timed calls, in ms per call (Linux ``/proc``): the server's processes
(HELM's client path included) / this process (the callers; for ``api``, the API itself) / the backend. Measured
at rest, the harness's own share is about 0.6 + 0.6 ms of a server call's 15 (docs/reward_api.md, "Figures").

With ``--label-episodes N`` it times ``roboreward label --model baseline/constant-3`` instead, on a LeRobot v3.0
dataset of N episodes (the layout writer of tests/helpers/lerobot_datasets.py): cold (a fresh request cache and
working folder), then again (the copy and the media reused; the offline baseline computes its answers again, it
uses no request cache). With ``--label-baseline DIR`` (the
package before label moved onto the reward API, e.g. ``git archive a76a811 helm_roboreward | tar -x -C DIR``), the
same command of that version runs first, cold and again, with ``PYTHONPATH=DIR`` (import, ``helm-run`` in a
pseudo-terminal subprocess, outputs), and today's label then reruns into its ``--out`` and ``--local-path`` (a
model served over HTTP would answer from the cache the old path wrote; the baseline, which uses none, recomputes).

    python benchmarks/reward_api.py [--latencies 0.5 2] [--callers 1 8 32] [--rounds 4] [--workers 1 2]
                                    [--no-api] [--quick]
    python benchmarks/reward_api.py --label-episodes 200 [--label-baseline DIR]
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import resource
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

from helm_roboreward.reward.worker_processes import machine_cores

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


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (Linux ``/proc``; just ``pid`` elsewhere): a server and its workers."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, index = [pid], 0
    while index < len(found):
        found += children.get(found[index], [])
        index += 1
    return found


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of these processes so far (Linux ``/proc``; 0 elsewhere or when gone)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def own_cpu_seconds() -> float:
    """This process's user + system CPU seconds (the callers' threads; for ``api``, the API itself)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def start_server(local: Path, media: Path, callers: int, log: Path,
                 workers: int = 1) -> tuple[subprocess.Popen[bytes], int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [str(Path(sys.executable).parent / "roboreward"), "serve", "--model", MODEL, "--deployment",
               DEPLOYMENT, "--local-path", str(local), "--media-dir", str(media), "--no-cache", "--port", str(port),
               "--max-concurrency", str(callers), "--max-queue", str(callers),
               "--workers", str(workers)]
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
    parser.add_argument("--workers", type=int, nargs="+", default=sorted({1, machine_cores()}),
                        help="roboreward serve --workers for the server rows (default: 1 and this machine's cores)")
    parser.add_argument("--no-api", action="store_true", help="leave out the in-process API rows")
    parser.add_argument("--quick", action="store_true", help="0.5 s only, 2 rounds")
    parser.add_argument("--label-episodes", type=int, default=0, help="time labelling N episodes instead")
    parser.add_argument("--label-baseline", help="with --label-episodes: a checkout of the package before label "
                        "moved onto the API (its helm_roboreward/ inside), timed first")
    parser.add_argument("--backend", type=float, help=argparse.SUPPRESS)  # the backend process
    args = parser.parse_args()
    if args.backend is not None:
        run_backend(args.backend)
        return
    if args.label_episodes:
        label_timings(args.label_episodes, args.label_baseline)
        return
    if args.quick:
        args.latencies, args.rounds = [0.5], 2
    from helm_roboreward.reward import RewardModel

    work = Path(tempfile.mkdtemp(prefix="reward-api-"))
    try:
        clip = work / "clip.mp4"
        make_clip(clip)
        summary: list[dict[str, Any]] = []
        item = json.dumps({"task": TASK, "video": {"mp4_base64": base64.b64encode(clip.read_bytes()).decode()}})
        print(f"clip: {clip.stat().st_size:,} bytes; cores: {machine_cores()}; load average "
              f"{' '.join(f'{load:.2f}' for load in os.getloadavg())}")
        print(f"{'latency':>7} {'callers':>7} {'path':>9} {'calls/s':>8} {'ideal':>6} {'of ideal':>8} "
              f"{'p50 ms':>8} {'p95 ms':>8} {'+p50 ms':>8} {'+p95 ms':>8} {'CPU ms/call s/c/b':>16}")
        for latency in args.latencies:
            backend = Backend(latency)
            local = local_path(work / "local", backend)
            model = RewardModel(MODEL, DEPLOYMENT, local_path=str(local), media_dir=str(work / "media"), cache=False)
            model.score(TASK, str(clip))  # prepares the media once, as any repeat finds it
            body = backend.last_body()
            try:
                for callers in args.callers:
                    summary.append(measure(latency, callers, args.rounds, backend, body, model, clip, item, local,
                                           work, args.workers, not args.no_api))
            finally:
                backend.stop()
        print(f"{args.rounds} calls per caller; p50/p95 over every call; +: over direct's; load average after: "
              f"{' '.join(f'{load:.2f}' for load in os.getloadavg())}")
        print_side_by_side(summary, args.workers)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(latency: float, callers: int, rounds: int, backend: Backend, body: bytes, model: Any, clip: Path,
            item: str, local: Path, work: Path, workers: list[int], api: bool = True) -> dict[str, Any]:
    """One table block: direct, api and the server with each number of workers, at this latency and callers.

    Returns each path's (of ideal, +p50 ms, +p95 ms) for the side-by-side table.
    """
    paths: dict[str, Callable[[], tuple[Callable[[int], None], Callable[[], None], list[int]]]] = {
        "direct": lambda: (poster(backend.port, "/v1/chat/completions", body, callers), lambda: None, [])}
    if api:
        paths["api"] = lambda: (lambda index: check_reward(model.score(TASK, str(clip))), lambda: None, [])
    for count in workers:
        paths[f"server x{count}"] = lambda count=count: served_poster(local, work, callers, item, count)
    base = (0.0, 0.0)
    figures: dict[str, Any] = {"latency": latency, "callers": callers}
    for name, make in paths.items():
        call, stop, server = make()
        try:
            timed_calls(callers, 1, call)  # warm-up: connections, worker threads, first-use imports
            server = [pid for parent in server for pid in process_tree(parent)]
            before = cpu_seconds(server), own_cpu_seconds(), cpu_seconds([backend.process.pid])
            wall, latencies = timed_calls(callers, rounds, call)
            after = cpu_seconds(server), own_cpu_seconds(), cpu_seconds([backend.process.pid])
        finally:
            stop()
        cpu = "/".join(f"{(end - start) * 1000 / len(latencies):.1f}" for start, end in zip(before, after, strict=True))
        p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
        if name == "direct":
            base = (p50, p95)
        rate, ideal = len(latencies) / wall, callers / latency
        added = "" if name == "direct" else f"{(p50 - base[0]) * 1000:>8.1f} {(p95 - base[1]) * 1000:>8.1f}"
        figures[name] = (rate / ideal, (p50 - base[0]) * 1000, (p95 - base[1]) * 1000)
        print(f"{latency:>7g} {callers:>7} {name:>9} {rate:>8.2f} {ideal:>6.1f} {rate / ideal:>8.2f} "
              f"{p50 * 1000:>8.1f} {p95 * 1000:>8.1f} {added or ' ' * 17} {cpu:>16}", flush=True)
    return figures


def served_poster(local: Path, work: Path, callers: int, item: str,
                  workers: int) -> tuple[Callable[[int], None], Callable[[], None], list[int]]:
    """A server with ``workers`` processes, a poster to it, what stops it, and its pid."""
    server, port = start_server(local, work / "media", callers, work / f"serve-{callers}-{workers}.log", workers)

    def stop() -> None:
        server.terminate()
        server.wait(timeout=30)

    try:
        return poster(port, "/v1/score", item.encode(), callers), stop, [server.pid]
    except BaseException:
        stop()
        raise


def print_side_by_side(summary: list[dict[str, Any]], workers: list[int]) -> None:
    """The servers' figures per number of workers, side by side (of ideal, +p50 / +p95 ms over direct's)."""
    names = [f"server x{count}" for count in workers]
    print("\n| latency | callers | " + " | ".join(f"{name}: of ideal | {name}: +p50 / +p95 ms" for name in names)
          + " |")
    print("|---|---|" + "---|---|" * len(names))
    for row in summary:
        cells = [f"{row[name][0]:.2f} | {row[name][1]:.0f} / {row[name][2]:.0f}" for name in names]
        print(f"| {row['latency']:g} s | {row['callers']} | " + " | ".join(cells) + " |")


def run_label(dataset: Path, out: Path, local: Path, pythonpath: str | None = None) -> tuple[float, str]:
    """One ``roboreward label`` (``pythonpath``: that checkout's package): wall seconds and its summary lines."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "helm_roboreward.cli", "label", str(dataset), "--model",
                           "baseline/constant-3", "--local-path", str(local), "--out", str(out), "--quiet"],
                          cwd=out.parent, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"roboreward label failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip().startswith(("roboreward label:",
                                                                                         "seconds:"))]
    return seconds, " | ".join(line.split(" scored by baseline/constant-3 ")[-1] for line in lines)


def label_timings(episodes: int, baseline: str | None) -> None:
    """``roboreward label`` before and after it moved onto the reward API (one machine, one run)."""
    sys.path.insert(0, str(REPO))
    from tests.helpers.lerobot_datasets import EpisodeSpec, write_v3

    if baseline and not (Path(baseline) / "helm_roboreward" / "robot_data" / "helm_process.py").is_file():
        raise SystemExit(f"--label-baseline {baseline}: expected the package before label moved onto the API "
                         "(helm_roboreward/robot_data/helm_process.py inside)")
    work = Path(tempfile.mkdtemp(prefix="reward-api-label-"))
    try:
        tasks = ("put the red cube in the bowl", "open the top drawer", "stack the green block on the blue one")
        specs = [EpisodeSpec(60 + index % 5, tasks[index % len(tasks)], index % 2 == 1) for index in range(episodes)]
        dataset = write_v3(work / "dataset", specs, fps=30, width=160, height=120, episodes_per_file=10)
        for name in ("before", "after"):
            (work / name).mkdir()
            local = work / name / "local"
            local.mkdir()
            for file in ("model_metadata.yaml", "model_deployments.yaml"):
                (local / file).symlink_to(REPO / "prod_env" / file)
        print(f"label, {episodes} episodes (60-64 frames, 160x120, AV1 at 30 fps), baseline/constant-3, cpus "
              f"{os.cpu_count()}, load average {os.getloadavg()[0]:.1f}:")
        if baseline:
            for what in ("cold", "again"):
                seconds, said = run_label(dataset, work / "before" / "labels", work / "before" / "local", baseline)
                print(f"  before (helm-run subprocess), {what}: {seconds:.1f} s in all ({said})")
        for what in ("cold", "again"):
            seconds, said = run_label(dataset, work / "after" / "labels", work / "after" / "local")
            print(f"  after (reward API in process), {what}: {seconds:.1f} s in all ({said})")
        if baseline:
            seconds, said = run_label(dataset, work / "before" / "labels", work / "before" / "local")
            print(f"  after, rerun over the before run's --out and --local-path: {seconds:.1f} s in all ({said})")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_reward(reward: Any) -> None:
    if reward.failed or reward.score != 3.0:
        raise RuntimeError(f"api: {reward}")


if __name__ == "__main__":
    main()
