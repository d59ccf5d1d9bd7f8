"""Requests in flight: how ``helm-run -n N`` scales against a server with a fixed latency.

Starts its own loopback OpenAI-compatible server (a ``ThreadingHTTPServer`` in a thread of this process: one
thread per connection, HTTP/1.1 keep-alive, ``TCP_NODELAY``, a listen backlog of 1,024; it checks first that N
simultaneous requests come back in one latency) that answers every chat completion with ``ANSWER: 3`` and a
``usage`` block after a fixed latency (``--latency``, default 2 s, see :data:`LATENCY`), then times
``helm-run`` over the bundled sample (58 requests) for each ``-n`` in ``--threads`` (default 1, 8, 32) on two paths:

- ``frames``: ``model=meta/llama-4-scout-17b-16e-instruct`` (OpenAIVideoClient, JPEG frames as ``image_url``
  data URLs);
- ``native``: ``model=teetone/roboreward-8b,model_deployment=vllm/roboreward-8b`` (OpenAIVideoClient, the mp4
  as a ``video_url`` data URL).

Every run gets a fresh ``--local-path`` (prod_env/'s YAML files and a ``credentials.conf`` with
``vllmBaseUrl: "http://127.0.0.1:<port>/v1"``), hence a fresh HELM request cache (``<local path>/cache/``):
every request really reaches the server (checked: the server's count must equal HELM's). The output folder is
shared, so frames are extracted once, by an untimed warm-up run per path. Repeats are interleaved over N.

What is timed: HELM's executor, read from helm-run's log: ``Parallelizing computation on R items over N
threads {`` ... ``} [T s]`` right after ``Executor.execute {`` (``helm.common.general.parallel_map``, the block
that sends every request; 1-ms resolution). Process start, scenario construction, metrics and file writing are not
in it. Per N: seconds (median), speedup over N=1, the ideal speedup for a fixed latency (R / ceil(R / N): N
threads need ceil(R / N) rounds), speedup / ideal with MET or MISSED against ``--target`` (0.9); the same for the
block minus the one-time set-up (the first-request delay at N=1: HELM builds the client on the first request,
importing the openai SDK, about a second, once per process); the delay before the first request at each N, and
what the server saw (peak requests in flight, connections opened, mean body size).

``--profile`` adds where the time goes in the client: the requests of the N=1 run (read back from its
``scenario_state.json``) sent straight through one client from N threads (no helm-run, the server in this
process), with milliseconds per request in the client's preparation (media read and hashed for the cache key),
HELM's or this package's cache around the request, the request's own work outside the ``openai`` call, the call
itself (latency included), and this process's CPU per request (the server's excluded).

``--client-class module.Class`` times another client class in the two deployments (importable by helm-run: set
``PYTHONPATH``); note that routing sends the mp4 only to the client classes it knows.

    python benchmarks/requests_in_flight.py [--latency 0.5] [--threads 1 8 32] [--paths frames native]
        [--repeat 1] [--work-dir DIR] [--profile] [--keep] [--client-class module.Class]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PROD_ENV = REPO / "prod_env"
TARGET = 0.9
LATENCY = 2.0
"""Default server latency: the low end of a real video request (thousands of media tokens of prefill, then the
answer). Each request costs the helm-run process about 4-5 ms of CPU (the openai SDK about 2 ms of it) and this
server about 1 ms, on the same two cores: at 32 threads a round of requests needs about 0.1 s of CPU, which a
0.5-s latency cannot hide (measured there: 8 threads 0.99-1.01 of ideal, 32 threads 0.80-0.89)."""
PATHS = {
    "frames": "roboreward:subset=all,data=sample,model=meta/llama-4-scout-17b-16e-instruct",
    "native": "roboreward:subset=all,data=sample,model=teetone/roboreward-8b,model_deployment=vllm/roboreward-8b",
}
DEPLOYMENTS = {"frames": "vllm/llama-4-scout-17b-16e-instruct", "native": "vllm/roboreward-8b"}
_BLOCK_OPEN = re.compile(r"^(?P<indent>\s*)Parallelizing computation on (?P<items>\d+) items over (?P<n>\d+) "
                         r"threads \{")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LOG_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:,\d+)? +\w+ +")


# ---------------------------------------------------------------------------------------------------------------
# The loopback server


@dataclass
class ServerStats:
    """What the server saw since the last :meth:`LatencyServer.reset`."""

    requests: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    connections: int = 0
    body_bytes: int = 0
    first_received: float | None = None
    last_answered: float | None = None
    cpu_seconds: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the client may reuse its connections
    disable_nagle_algorithm = True  # TCP_NODELAY, as uvicorn (vLLM) sets: no 40-ms delayed-ACK stall per answer
    server: LatencyServer

    def setup(self) -> None:
        super().setup()
        stats = self.server.stats
        with stats.lock:
            stats.connections += 1

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self._reply(200, {"object": "list", "data": [{"id": name, "object": "model"} for name in self.server.models]})

    def do_POST(self) -> None:  # noqa: N802
        cpu = time.thread_time()
        cpu_before_sleep = 0.0
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        stats = self.server.stats
        now = time.time()  # wall clock: compared with helm-run's log timestamps
        with stats.lock:
            stats.requests += 1
            stats.in_flight += 1
            stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)
            stats.body_bytes += len(body)
            stats.first_received = now if stats.first_received is None else min(stats.first_received, now)
        try:
            request = json.loads(body)
            parts = request["messages"][0]["content"]
            media = sum(1 for part in parts if isinstance(part, dict) and part.get("type") != "text")
            cpu_before_sleep = time.thread_time() - cpu
            time.sleep(self.server.latency)
            cpu = time.thread_time()
            answer = {
                "id": f"chatcmpl-{stats.requests}", "object": "chat.completion", "created": 0,
                "model": request.get("model", "unknown"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "ANSWER: 3"},
                             "finish_reason": "stop", "logprobs": None}],
                "usage": {"prompt_tokens": 100 + 64 * media, "completion_tokens": 3, "total_tokens": 103 + 64 * media},
            }
            self._reply(200, answer)
        finally:
            done = time.time()
            with stats.lock:
                stats.in_flight -= 1
                stats.last_answered = done if stats.last_answered is None else max(stats.last_answered, done)
                stats.cpu_seconds += cpu_before_sleep + time.thread_time() - cpu

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self._headers_buffer.append(b"\r\n")  # end_headers() without its flush: headers and body in one write
        self.wfile.write(b"".join(self._headers_buffer) + data)
        self._headers_buffer = []


class LatencyServer(ThreadingHTTPServer):
    """An OpenAI-compatible chat-completions server that answers every request after ``latency`` seconds.

    One thread per connection (so N concurrent requests wait their latency in parallel); the listen backlog is
    1,024 (``socketserver``'s default of 5 makes a burst of connections wait for SYN retransmits).
    """

    daemon_threads = True
    request_queue_size = 1024

    def __init__(self, latency: float, models: Sequence[str] = ()) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.latency = latency
        self.models = list(models)
        self.stats = ServerStats()
        self._thread = threading.Thread(target=self.serve_forever, name="latency-server", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def start(self) -> LatencyServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def reset(self) -> ServerStats:
        """The stats so far; counting starts again."""
        stats, self.stats = self.stats, ServerStats()
        return stats


def check_server_parallel(server: LatencyServer, concurrency: int) -> float:
    """Seconds for ``concurrency`` simultaneous requests (each on its own connection): about one latency."""
    import http.client

    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}]})
    port = server.server_address[1]

    def one(_: int) -> int:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"})
        status = connection.getresponse().status
        connection.close()
        return status

    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        statuses = list(pool.map(one, range(concurrency)))
    elapsed = time.perf_counter() - start
    server.reset()
    assert all(status == 200 for status in statuses), statuses
    return elapsed


# ---------------------------------------------------------------------------------------------------------------
# helm-run


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "ANTHROPIC_", "GOOGLE_", "GEMINI_")) and k.lower() not in ("http_proxy",
                                                                                                    "https_proxy")}
    loopback = "127.0.0.1,localhost"
    env.update({"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONWARNINGS": "ignore",
                "NO_PROXY": loopback, "no_proxy": loopback})
    return env


def local_path(folder: Path, base_url: str, client_class: str | None = None) -> Path:
    """A fresh ``--local-path``: prod_env/'s YAML files, credentials pointing at the server, no cache yet.

    With ``client_class``, the benchmark's two deployments use that class instead (to time another client).
    """
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "model_metadata.yaml").symlink_to(PROD_ENV / "model_metadata.yaml")
    deployments = PROD_ENV / "model_deployments.yaml"
    if client_class is None:
        (folder / "model_deployments.yaml").symlink_to(deployments)
    else:
        import yaml

        config = yaml.safe_load(deployments.read_text(encoding="utf-8"))
        for deployment in config["model_deployments"]:
            if deployment["name"] in DEPLOYMENTS.values():
                deployment["client_spec"]["class_name"] = client_class
        (folder / "model_deployments.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    (folder / "credentials.conf").write_text(f'vllmBaseUrl: "{base_url}"\nvllmApiKey: "benchmark"\n', encoding="utf-8")
    return folder


def parse_seconds(text: str) -> float:
    """HELM's ``format_time`` (``1h2m3.456s``, ``2m0.5s``, ``6.123s``) back to seconds."""
    match = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?([\d.]+)s", text.strip())
    if not match:
        raise ValueError(f"not a HELM time: {text!r}")
    hours, minutes, seconds = match.groups()
    return int(hours or 0) * 3600 + int(minutes or 0) * 60 + float(seconds)


def log_time(line: str) -> float:
    """The wall-clock time of a helm-run log line (``2026-12-01 10:38:00,918 INFO ...``, local time, ms)."""
    stamp = _ANSI.sub("", line)[:23]
    return time.mktime(time.strptime(stamp[:19], "%Y-%m-%d %H:%M:%S")) + int(stamp[20:23]) / 1000


def executor_block(log: str) -> tuple[int, int, float, float]:
    """``(requests, threads, seconds, start)`` of the executor's parallel_map block in a helm-run log (one run).

    The block is HELM's ``Parallelizing computation on R items over N threads {`` right after ``Executor.execute {``
    (the adapter and the metrics use parallel_map too); ``seconds`` is what HELM prints when it closes
    (``} [T s]``, 1-ms resolution), ``start`` the wall-clock time of its opening line.
    """
    raw = log.splitlines()
    lines = [_LOG_PREFIX.sub("", _ANSI.sub("", line)) for line in raw]
    found: list[tuple[int, int, float, float]] = []
    for index, line in enumerate(lines):
        opened = _BLOCK_OPEN.match(line)
        if not opened or index == 0 or lines[index - 1].strip() != "Executor.execute {":
            continue
        close = re.compile(re.escape(opened["indent"]) + r"\} \[(?P<t>[^\]]+)\]\s*$")
        for later in lines[index + 1:]:
            closed = close.match(later)
            if closed:
                found.append((int(opened["items"]), int(opened["n"]), parse_seconds(closed["t"]), log_time(raw[index])))
                break
    if len(found) != 1:
        raise RuntimeError("expected one executor block ('Executor.execute {' then 'Parallelizing computation') "
                           f"in the helm-run log, found {len(found)}")
    return found[0]


@dataclass
class Timing:
    """One timed helm-run."""

    path: str
    threads: int
    requests: int
    seconds: float
    """HELM's executor block."""
    setup: float
    """From the block's start to the first request reaching the server (building the client: SDK import, ...)."""
    server: ServerStats
    suite: str


def helm_run(work: Path, server: LatencyServer, path: str, threads: int, suite: str,
             client_class: str | None = None) -> Timing:
    """One helm-run with a fresh request cache; the executor's seconds from its log."""
    local = local_path(work / "local" / suite, server.base_url, client_class)
    command = [str(BIN / "helm-run"), "--run-entries", PATHS[path], "--suite", suite, "-m", "100",
               "-n", str(threads), "--local-path", str(local), "-o", "benchmark_output"]
    server.reset()
    done = subprocess.run(command, cwd=work, env=environment(), capture_output=True, text=True, timeout=1800)
    stats = server.reset()
    log = done.stdout + done.stderr
    log_file = work / f"{suite}.log"
    log_file.write_text(log, encoding="utf-8")
    if done.returncode != 0:
        raise RuntimeError(f"helm-run exited with {done.returncode}; log: {log_file}\n{log[-3000:]}")
    if "Non-fatal error" in log:
        raise RuntimeError(f"some requests failed; log: {log_file}")
    requests, logged_threads, seconds, start = executor_block(log)
    assert logged_threads == threads, (logged_threads, threads)
    if stats.requests != requests or stats.first_received is None:
        raise RuntimeError(f"the server answered {stats.requests} requests, HELM sent {requests}: "
                           "a request was served from a cache")
    setup = max(0.0, stats.first_received - start)
    return Timing(path, threads, requests, seconds, setup, stats, suite)


def ideal_speedup(requests: int, threads: int) -> float:
    """Fixed latency: N threads need ceil(R / N) rounds where one thread needs R."""
    return requests / math.ceil(requests / threads)


# ---------------------------------------------------------------------------------------------------------------
# Client profile (no helm-run)


def load_requests(run_dir: Path, work: Path) -> list[Any]:
    """A run's requests from its ``scenario_state.json`` (media paths are relative to helm-run's folder, ``work``)."""
    from helm.common.codec import from_json  # noqa: TID251 (a benchmark of HELM's request path)
    from helm.common.request import Request  # noqa: TID251

    state = json.loads((run_dir / "scenario_state.json").read_text(encoding="utf-8"))
    requests = []
    for item in state["request_states"]:
        request = item["request"]
        for media in (request.get("multimodal_prompt") or {}).get("media_objects", []):
            if media.get("location") and not os.path.isabs(media["location"]):
                media["location"] = str(work / media["location"])
        requests.append(from_json(json.dumps(request), Request))
    return requests


def make_client(path: str, base_url: str, cache_dir: Path, client_class: str | None) -> Any:
    """The deployment's client as HELM builds it (its args from prod_env, a fresh SQLite cache)."""
    import importlib

    import yaml
    from helm.common.cache import SqliteCacheConfig  # noqa: TID251

    deployments = yaml.safe_load((PROD_ENV / "model_deployments.yaml").read_text(encoding="utf-8"))
    spec = next(d for d in deployments["model_deployments"] if d["name"] == DEPLOYMENTS[path])["client_spec"]
    module, _, name = (client_class or spec["class_name"]).rpartition(".")
    if cache_dir.exists():
        shutil.rmtree(cache_dir)
    cache_dir.mkdir(parents=True)
    return getattr(importlib.import_module(module), name)(
        cache_config=SqliteCacheConfig(str(cache_dir / "vllm.sqlite")), base_url=base_url, api_key="benchmark",
        **spec.get("args", {}))


class StageClock:
    """Thread-safe sums of wall seconds per stage."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seconds: dict[str, float] = {}

    def wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.add(name, time.perf_counter() - start)
        return timed

    def add(self, name: str, seconds: float) -> None:
        with self.lock:
            self.seconds[name] = self.seconds.get(name, 0.0) + seconds


def profile_client(work: Path, server: LatencyServer, path: str, run_dir: Path, threads: Sequence[int],
                   client_class: str | None) -> None:
    """Send a run's requests straight through one client from N threads (no helm-run); time each stage."""
    requests = load_requests(run_dir, work)
    print(f"\n{path}: client profile: the {len(requests)} requests of {run_dir.name} sent through one client from N "
          "threads (no helm-run; HELM's AutoClient also shares one client between its threads)")
    print(f"  {'N':>3} {'seconds':>8} {'speedup':>8} {'ideal':>6} {'ratio':>6}   ms per request: {'prepare':>7} "
          f"{'cache':>6} {'encode':>6} {'openai':>7} {'client CPU':>10}")
    base = None
    for n in threads:
        client = make_client(path, server.base_url, work / "profile-cache" / f"{path}-{n}", client_class)
        completions = client.client.chat.completions
        clock = StageClock()
        cache_get = client.cache.get

        def timed_get(request: Any, compute: Callable[[], Any], clock: StageClock = clock,
                      cache_get: Callable[..., Any] = cache_get) -> Any:
            return clock.wrap("cache.get", cache_get)(request, clock.wrap("compute", compute))

        client.cache.get = timed_get
        completions.create = clock.wrap("openai", type(completions).create.__get__(completions))
        make_request = clock.wrap("make_request", client.make_request)
        server.reset()
        cpu = time.process_time()
        start = time.perf_counter()
        try:
            with ThreadPoolExecutor(n) as pool:
                results = list(pool.map(make_request, requests))
        finally:
            del completions.create  # the openai client may be shared by the next client
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu - server.reset().cpu_seconds
        assert all(r.success and not r.cached for r in results), [r.error for r in results if not r.success][:3]
        base = base or elapsed
        count = len(requests)
        ms = {k: 1000 * v / count for k, v in clock.seconds.items()}
        ideal = ideal_speedup(count, n)
        print(f"  {n:>3} {elapsed:8.3f} {base / elapsed:7.2f}x {ideal:5.2f}x {base / elapsed / ideal:6.3f}   "
              f"{'':16}{ms['make_request'] - ms['cache.get']:7.1f} {ms['cache.get'] - ms['compute']:6.1f} "
              f"{ms['compute'] - ms['openai']:6.1f} {ms['openai']:7.1f} {1000 * cpu / count:10.1f}")
    print("  prepare: make_request outside the cache (media read and hashed for the key; the committed client also "
          "built the base64 body here); cache: the client's cache around the request (SQLite); encode: the request's "
          "work outside the openai call (the base64 body, the response to JSON); openai: chat.completions.create (the "
          "server's latency included); client CPU: this process's CPU per request, the server's excluded")


# ---------------------------------------------------------------------------------------------------------------


def verdict(ratio: float, threads: int, target: float) -> str:
    return "" if threads == 1 else ("MET" if ratio >= target else "MISSED")


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def report(path: str, runs: dict[int, list[Timing]], target: float) -> bool:
    """Print one path's table (medians over the repeats); True when every ratio is met."""
    block = {n: median([t.seconds for t in ts]) for n, ts in runs.items()}
    first = {n: median([t.setup for t in ts]) for n, ts in runs.items()}
    phase = {n: median([t.seconds - t.setup for t in ts]) for n, ts in runs.items()}
    requests = runs[1][0].requests
    print(f"\n{path}: {PATHS[path]}")
    print(f"  {'':3} {'executor block':^34}  {'first':>6}  {'from the first request on':^32}  {'server':^16}")
    print(f"  {'N':>3} {'seconds':>8} {'speedup':>8} {'ideal':>6} {'ratio':>5} {'':4}  {'req. s':>6}  {'seconds':>7} "
          f"{'speedup':>8} {'ratio':>5} {'':8}  {'peak':>4} {'conns':>5} {'KB/req':>6}")
    met = True
    for n in sorted(runs):
        ideal = ideal_speedup(requests, n)
        speedup, speedup_phase = block[1] / block[n], phase[1] / phase[n]
        ratio, ratio_phase = speedup / ideal, speedup_phase / ideal
        met &= n == 1 or ratio_phase >= target  # the steady state: see LEGEND
        s = runs[n][len(runs[n]) // 2].server
        print(f"  {n:>3} {block[n]:8.3f} {speedup:7.2f}x {ideal:5.2f}x {ratio:5.3f} {verdict(ratio, n, target):<6}"
              f"{first[n]:6.3f}  {phase[n]:7.3f} {speedup_phase:7.2f}x {ratio_phase:5.3f} "
              f"{verdict(ratio_phase, n, target):<8}  {s.peak_in_flight:>4} {s.connections:>5} "
              f"{s.body_bytes / 1024 / max(s.requests, 1):6.0f}")
    return met


LEGEND = """
executor block: HELM's executor (helm-run's "Parallelizing computation on R items over N threads" under
"Executor.execute", 1-ms resolution), median over the repeats; ideal: R / ceil(R / N) (N threads need ceil(R / N)
rounds of the fixed latency); ratio: speedup / ideal, target {target}. first req.: from the block's start to the
first request reaching the server: HELM builds the deployment's client on the first request (importing the openai
SDK and building its client, once per helm-run process; its AutoClient builds up to N clients at once, and work
that serialises those N constructions shows here). from the first request on: each run's block minus its own
first-request delay (medians): the steady state a long run lives in, and what the summary judges (the one-time
setup, about a second once per helm-run process, is a fraction of a percent of a full 2,831-row run). peak:
requests in flight at the server at once; conns: TCP connections the server accepted; KB/req: mean request body."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=LATENCY,
                        help=f"server latency per request, seconds ({LATENCY})")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 8, 32], help="values of -n (1 8 32)")
    parser.add_argument("--paths", nargs="+", choices=sorted(PATHS), default=["frames", "native"])
    parser.add_argument("--repeat", type=int, default=1, help="timed helm-runs per (path, N); the median is used")
    parser.add_argument("--target", type=float, default=TARGET, help="speedup / ideal to meet (0.9)")
    parser.add_argument("--work-dir", type=Path, help="where runs go (default: a temporary folder)")
    parser.add_argument("--profile", action="store_true", help="also profile the client without helm-run")
    parser.add_argument("--client-class", help="time another client class (dotted path, importable by helm-run: "
                                               "set PYTHONPATH) in the two deployments")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args(argv)
    threads = sorted(set(args.threads) | {1})

    work = args.work_dir or Path(tempfile.mkdtemp(prefix="roboreward-in-flight-"))
    work.mkdir(parents=True, exist_ok=True)
    server = LatencyServer(args.latency).start()
    met = True
    try:
        check = check_server_parallel(server, max(threads))
        print(f"server: {server.base_url}, latency {args.latency} s; {max(threads)} simultaneous requests answered "
              f"in {check:.3f} s (parallel: about one latency)")
        print(f"client: {args.client_class or 'the deployments in prod_env/model_deployments.yaml'}; work folder: "
              f"{work}; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; median of {args.repeat}")
        for path in args.paths:
            helm_run(work, server, path, 8, f"warmup-{path}", args.client_class)  # frames extracted, files cached
            runs: dict[int, list[Timing]] = {n: [] for n in threads}
            for repeat in range(args.repeat):  # interleaved, so slow phases of a noisy machine hit every N
                for n in threads:
                    runs[n].append(helm_run(work, server, path, n, f"{path}-n{n}-{repeat}", args.client_class))
            met &= report(path, runs, args.target)
            if args.profile:
                runs_dir = work / "benchmark_output" / "runs" / runs[1][0].suite
                profile_client(work, server, path, runs_dir / only_run(runs_dir), threads, args.client_class)
        print(LEGEND.format(target=args.target))
        print(f"load average at the end {os.getloadavg()[0]:.2f}")
    finally:
        server.stop()
        if args.keep:
            print(f"kept: {work}")
        elif args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    print("summary:", "every ratio MET" if met else "some ratio MISSED", f"(target {args.target})")
    return 0 if met else 1


def only_run(suite_dir: Path) -> str:
    runs = [p.name for p in suite_dir.iterdir() if (p / "scenario_state.json").exists()]
    assert len(runs) == 1, runs
    return runs[0]


if __name__ == "__main__":
    sys.exit(main())
