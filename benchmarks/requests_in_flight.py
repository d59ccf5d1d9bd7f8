"""Requests in flight: what OpenAIVideoClient's request cache and SDK client cost under ``helm-run -n N``.

Starts its own loopback OpenAI-compatible server (a ``ThreadingHTTPServer`` in a thread of this process: one
thread per connection, HTTP/1.1 keep-alive, ``TCP_NODELAY``, a listen backlog of 1,024; it checks first that N
simultaneous requests come back in one latency) that answers every chat completion with ``ANSWER: 3`` and a
``usage`` block after a fixed latency, then times ``helm-run`` cells. A cell is one helm-run of two run entries over
the bundled sample (58 rows each, 116 requests; two runs, as a leaderboard has one run per subset), with a fresh
``--local-path`` (so a fresh HELM request cache: every request reaches the server, checked):

- ``frames``: ``model=meta/llama-4-scout-17b-16e-instruct`` (JPEG frames as ``image_url`` data URLs, ~100 KB);
- ``native``: ``model=teetone/roboreward-8b,model_deployment=vllm/roboreward-8b`` (the mp4 as a ``video_url``).

For each latency (``--latencies``, default 2 s and 0.5 s), each ``-n`` (``--threads``, default 8 and 32) and each
client variant (the deployments' class replaced by one of this module's, declared to the routing as a video client
through ``--plugins requests_in_flight``):

- ``a``: the private SQLite cache the package had (``ProcessSqliteCache``: one ``sqlite3`` connection per cache file
  and process, HELM's rows; the module is read from git, ``--before-rev``) + one ``openai`` client per server;
- ``b``: HELM's own ``helm.common.cache.Cache`` (a ``SqliteDict`` opened per request) + one ``openai`` client per
  server;
- ``c``: HELM's ``Cache`` + one ``openai`` client per client instance (what a plain HELM client does; HELM's
  AutoClient builds a deployment's client on its first request without a lock, so up to N at once).

Variants are interleaved (their order rotates from repeat to repeat). What is timed: HELM's executor blocks, read
from helm-run's log (``Parallelizing computation on R items over N threads {`` right after ``Executor.execute {``,
``} [T s]``, 1-ms resolution), summed over the cell's two runs. The ideal is ``ceil(R / N)`` rounds of the latency
per run; "of ideal" is ideal / wall. "first req." is the time from each block's start to its first request reaching
the server (building the client), summed; "steady" is wall minus that.

Then the request body: the cell's requests sent again straight through one client per deployment from N threads
(no helm-run), every one a cache hit, with the body built only on a miss (the package's client) and built for every
request (``_prepare`` made eager), in ms per request.

    python benchmarks/requests_in_flight.py [--latencies 2 0.5] [--threads 8 32] [--variants a b c] [--repeat 3]
        [--before-rev REV] [--work-dir DIR] [--keep] [--quick]
"""

from __future__ import annotations

import argparse
import functools
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
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PROD_ENV = REPO / "prod_env"
ENTRIES = {
    "frames": "roboreward:subset=all,data=sample,model=meta/llama-4-scout-17b-16e-instruct",
    "native": "roboreward:subset=all,data=sample,model=teetone/roboreward-8b,model_deployment=vllm/roboreward-8b",
}
DEPLOYMENTS = {"frames": "vllm/llama-4-scout-17b-16e-instruct", "native": "vllm/roboreward-8b"}
BEFORE_REV = "5ac660f278fb71c2b1cfa69b50cc9f64ee8001f5"
"""The commit that added the private SQLite cache (``helm_roboreward/helm_layer/clients/concurrency.py``, unchanged
until it was removed)."""
BEFORE_PATH = "helm_roboreward/helm_layer/clients/concurrency.py"
BEFORE_MODULE = "roboreward_before_cache"
PLUGIN_ENV = "ROBOREWARD_IN_FLIGHT_PLUGIN"


@dataclass(frozen=True)
class Variant:
    key: str
    label: str
    class_name: str


VARIANTS = {v.key: v for v in (
    Variant("a", "private SQLite cache + shared SDK client (before)", "PrivateCacheSharedSdkClient"),
    Variant("b", "HELM's Cache + shared SDK client", "HelmCacheSharedSdkClient"),
    Variant("c", "HELM's Cache + SDK client per client instance", "HelmCacheOwnSdkClient"),
)}
_BLOCK_OPEN = re.compile(r"^(?P<indent>\s*)Parallelizing computation on (?P<items>\d+) items over (?P<n>\d+) "
                         r"threads \{")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LOG_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:,\d+)? +\w+ +")


# ---------------------------------------------------------------------------------------------------------------
# The client variants (imported by helm-run: this module on PYTHONPATH, ``--plugins requests_in_flight``)


@functools.cache
def _client_classes() -> dict[str, type]:
    from helm.common.cache import Cache, SqliteCacheConfig  # noqa: TID251 (a benchmark of HELM's request path)
    from openai import OpenAI

    from helm_roboreward.helm_frontend.clients.openai_video_client import OpenAIVideoClient

    class HelmCacheSharedSdkClient(OpenAIVideoClient):
        """The package's client with HELM's own cache (the SDK client as the package builds it: shared)."""

        def __init__(self, cache_config: Any, base_url: str | None = None, api_key: str | None = None,
                     **kwargs: Any) -> None:
            super().__init__(cache_config=cache_config, base_url=base_url, api_key=api_key, **kwargs)
            self.cache = Cache(cache_config)

    class PrivateCacheSharedSdkClient(HelmCacheSharedSdkClient):
        """... with the private SQLite cache of :data:`BEFORE_REV`."""

        def __init__(self, cache_config: Any, base_url: str | None = None, api_key: str | None = None,
                     **kwargs: Any) -> None:
            super().__init__(cache_config=cache_config, base_url=base_url, api_key=api_key, **kwargs)
            if isinstance(cache_config, SqliteCacheConfig):
                self.cache = __import__(BEFORE_MODULE).ProcessSqliteCache(cache_config)

    class HelmCacheOwnSdkClient(HelmCacheSharedSdkClient):
        """... with an ``openai`` client of its own, built in the constructor as a plain HELM client does."""

        def __init__(self, cache_config: Any, base_url: str | None = None, api_key: str | None = None,
                     **kwargs: Any) -> None:
            super().__init__(cache_config=cache_config, base_url=base_url, api_key=api_key, **kwargs)
            shared = self.client
            self.client = OpenAI(base_url=str(shared.base_url), api_key=shared.api_key,
                                 max_retries=shared.max_retries, timeout=shared.timeout)

    return {cls.__name__: cls for cls in (HelmCacheSharedSdkClient, PrivateCacheSharedSdkClient,
                                          HelmCacheOwnSdkClient)}


def __getattr__(name: str) -> Any:
    """The variant classes, built on first use (HELM's ``get_class_by_name`` reads them with ``getattr``)."""
    if name in {variant.class_name for variant in VARIANTS.values()}:
        return _client_classes()[name]
    raise AttributeError(name)


def _declare_video_clients() -> None:
    """Let the routing send the mp4 to the variant classes (it sends it only to client classes it knows)."""
    from helm_roboreward.helm_frontend import routing

    routing.VIDEO_CLIENT_CLASSES += tuple(f"{__name__}.{v.class_name}" for v in VARIANTS.values())


if __name__ != "__main__" and os.environ.get(PLUGIN_ENV):  # imported by helm-run as --plugins
    _declare_video_clients()


# ---------------------------------------------------------------------------------------------------------------
# The loopback server


@dataclass
class ServerStats:
    """What the server saw since the last :meth:`LatencyServer.reset`."""

    requests: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    arrivals: list[float] = field(default_factory=list)
    """Wall-clock arrival times (compared with helm-run's log timestamps)."""
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the client may reuse its connections
    disable_nagle_algorithm = True  # TCP_NODELAY, as uvicorn (vLLM) sets: no 40-ms delayed-ACK stall per answer
    server: LatencyServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        stats = self.server.stats
        with stats.lock:
            stats.requests += 1
            stats.in_flight += 1
            stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)
            stats.arrivals.append(time.time())
        try:
            request = json.loads(body)
            time.sleep(self.server.latency)
            answer = {
                "id": f"chatcmpl-{stats.requests}", "object": "chat.completion", "created": 0,
                "model": request.get("model", "unknown"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "ANSWER: 3"},
                             "finish_reason": "stop", "logprobs": None}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 3, "total_tokens": 103},
            }
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self._headers_buffer.append(b"\r\n")  # end_headers() without its flush: headers and body in one write
            self.wfile.write(b"".join(self._headers_buffer) + data)
            self._headers_buffer = []
        finally:
            with stats.lock:
                stats.in_flight -= 1


class LatencyServer(ThreadingHTTPServer):
    """An OpenAI-compatible chat-completions server that answers every request after ``latency`` seconds."""

    daemon_threads = True
    request_queue_size = 1024  # socketserver's 5 makes a burst of connections wait for SYN retransmits

    def __init__(self, latency: float) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.latency = latency
        self.stats = ServerStats()
        threading.Thread(target=self.serve_forever, name="latency-server", daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

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

    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]})
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
# helm-run cells


def before_module(work: Path, rev: str) -> Path:
    """The private cache module of ``rev`` (git), written as :data:`BEFORE_MODULE` into a folder for PYTHONPATH."""
    folder = work / "before"
    folder.mkdir(parents=True, exist_ok=True)
    source = subprocess.run(["git", "show", f"{rev}:{BEFORE_PATH}"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout
    (folder / f"{BEFORE_MODULE}.py").write_text(source, encoding="utf-8")
    return folder


def environment(before: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "ANTHROPIC_", "GOOGLE_", "GEMINI_")) and k.lower() not in ("http_proxy",
                                                                                                    "https_proxy")}
    loopback = "127.0.0.1,localhost"
    path = [str(REPO), str(REPO / "benchmarks"), str(before), env.get("PYTHONPATH", "")]
    env.update({"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONWARNINGS": "ignore",
                "NO_PROXY": loopback, "no_proxy": loopback, "PYTHONPATH": os.pathsep.join(filter(None, path)),
                PLUGIN_ENV: "1"})
    return env


def local_path(folder: Path, base_url: str, client_class: str) -> Path:
    """A fresh ``--local-path``: prod_env/'s YAML files (the two deployments on ``client_class``), no cache yet."""
    import yaml

    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "model_metadata.yaml").symlink_to(PROD_ENV / "model_metadata.yaml")
    config = yaml.safe_load((PROD_ENV / "model_deployments.yaml").read_text(encoding="utf-8"))
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


def executor_blocks(log: str) -> list[tuple[int, int, float, float]]:
    """``(requests, threads, seconds, start)`` of each run's executor block in a helm-run log."""
    raw = log.splitlines()
    lines = [_LOG_PREFIX.sub("", _ANSI.sub("", line)) for line in raw]
    found: list[tuple[int, int, float, float]] = []
    for index, line in enumerate(lines):
        opened = _BLOCK_OPEN.match(line)
        if not opened or index == 0 or lines[index - 1].strip() != "Executor.execute {":
            continue  # the adapter and the metrics use parallel_map too
        close = re.compile(re.escape(opened["indent"]) + r"\} \[(?P<t>[^\]]+)\]\s*$")
        closed = next((m for later in lines[index + 1:] if (m := close.match(later))), None)
        if closed:
            found.append((int(opened["items"]), int(opened["n"]), parse_seconds(closed["t"]), log_time(raw[index])))
    return found


@dataclass
class Cell:
    """One timed helm-run (two runs)."""

    latency: float
    threads: int
    variant: str
    requests: int
    seconds: float
    """HELM's executor blocks, summed."""
    ideal: float
    first_request: float
    """Summed over the blocks: from a block's start to its first request reaching the server."""
    peak_in_flight: int


def helm_run(work: Path, server: LatencyServer, threads: int, variant: Variant, suite: str, before: Path) -> Cell:
    """One helm-run of both entries with a fresh request cache; the executor's seconds from its log."""
    local = local_path(work / "local" / suite, server.base_url, f"requests_in_flight.{variant.class_name}")
    command = [str(BIN / "helm-run"), "--run-entries", *ENTRIES.values(), "--suite", suite, "-m", "100",
               "-n", str(threads), "--local-path", str(local), "-o", "benchmark_output",
               "--plugins", "requests_in_flight"]
    server.reset()
    done = subprocess.run(command, cwd=work, env=environment(before), capture_output=True, text=True, timeout=1800)
    stats = server.reset()
    log = done.stdout + done.stderr
    log_file = work / f"{suite}.log"
    log_file.write_text(log, encoding="utf-8")
    if done.returncode != 0:
        raise RuntimeError(f"helm-run exited with {done.returncode}; log: {log_file}\n{log[-3000:]}")
    if "Non-fatal error" in log:
        raise RuntimeError(f"some requests failed; log: {log_file}")
    blocks = executor_blocks(log)
    if len(blocks) != len(ENTRIES) or any(n != threads for _, n, _, _ in blocks):
        raise RuntimeError(f"expected {len(ENTRIES)} executor blocks over {threads} threads; log: {log_file}")
    requests = sum(items for items, _, _, _ in blocks)
    if stats.requests != requests:
        raise RuntimeError(f"the server answered {stats.requests} requests, HELM sent {requests}: "
                           "a request was served from a cache")
    arrivals = sorted(stats.arrivals)
    first = sum(max(0.0, next(t for t in arrivals if t >= start - 0.001) - start) for _, _, _, start in blocks)
    ideal = sum(math.ceil(items / threads) * server.latency for items, _, _, _ in blocks)
    return Cell(server.latency, threads, variant.key, requests, sum(s for _, _, s, _ in blocks), ideal, first,
                stats.peak_in_flight)


def report(cells: Sequence[Cell], latency: float, threads: Sequence[int], variants: Sequence[str]) -> None:
    """One latency's table: per (N, variant) medians over the repeats; ratios against variant a."""
    print(f"\nlatency {latency:g} s")
    print(f"  {'N':>3} {'variant':<52} {'req':>4} {'wall s (min-max)':>22} {'ideal':>6} {'of ideal':>8} "
          f"{'first req.':>10} {'steady':>7} {'wall/a':>7} {'steady/a':>8} {'peak':>5}")
    for n in threads:
        medians: dict[str, tuple[float, float]] = {}
        for key in variants:
            mine = [c for c in cells if c.latency == latency and c.threads == n and c.variant == key]
            if not mine:
                continue
            wall = statistics.median(c.seconds for c in mine)
            first = statistics.median(c.first_request for c in mine)
            steady = statistics.median(c.seconds - c.first_request for c in mine)
            medians[key] = (wall, steady)
            base = medians.get("a")
            versus = (f"{wall / base[0]:7.3f} {steady / base[1]:8.3f}" if base else f"{'-':>7} {'-':>8}")
            spread = f"{wall:7.3f} ({min(c.seconds for c in mine):.3f}-{max(c.seconds for c in mine):.3f})"
            print(f"  {n:>3} {key} {VARIANTS[key].label:<50} {mine[0].requests:>4} {spread:>22} {mine[0].ideal:6.1f} "
                  f"{mine[0].ideal / wall:8.3f} {first:10.3f} {steady:7.3f} {versus} "
                  f"{max(c.peak_in_flight for c in mine):>5}")


# ---------------------------------------------------------------------------------------------------------------
# The request body on cache hits (no helm-run)


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


def package_client(path: str, base_url: str, cache_path: Path, eager: bool) -> Any:
    """The deployment's client as HELM builds it (its args from prod_env); ``eager`` builds every body."""
    import yaml
    from helm.common.cache import SqliteCacheConfig  # noqa: TID251

    from helm_roboreward.helm_frontend.clients.openai_video_client import OpenAIVideoClient

    class EagerBodyClient(OpenAIVideoClient):
        def _prepare(self, request: Any) -> Any:
            make_body, *rest = super()._prepare(request)
            body = make_body()
            return (lambda: body), *rest

    deployments = yaml.safe_load((PROD_ENV / "model_deployments.yaml").read_text(encoding="utf-8"))
    spec = next(d for d in deployments["model_deployments"] if d["name"] == DEPLOYMENTS[path])["client_spec"]
    cls = EagerBodyClient if eager else OpenAIVideoClient
    return cls(cache_config=SqliteCacheConfig(str(cache_path)), base_url=base_url, api_key="benchmark",
               **spec.get("args", {}))


def large_video_requests(folder: Path, template: Any, count: int, size: int) -> list[Any]:
    """``count`` copies of a request with its video replaced by a distinct ``size``-byte file (random bytes)."""
    import dataclasses

    from helm.common.media_object import MediaObject, MultimediaObject  # noqa: TID251

    folder.mkdir(parents=True, exist_ok=True)
    requests = []
    for index in range(count):
        path = folder / f"{index:03d}.mp4"
        path.write_bytes(os.urandom(size))
        media = [MediaObject(location=str(path), content_type="video/mp4") if m.is_type("video") else m
                 for m in template.multimodal_prompt.media_objects]
        requests.append(dataclasses.replace(template, multimodal_prompt=MultimediaObject(media)))
    return requests


def time_hits(server: LatencyServer, batches: dict[str, tuple[str, list[Any]]], cache: Path, threads: int,
              repeat: int) -> dict[bool, tuple[float, float]]:
    """eager -> (wall, CPU) ms per cache hit, medians over ``repeat`` interleaved passes."""
    timings: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    total = sum(len(batch) for _, batch in batches.values())
    for index in range(repeat):
        for eager in (index % 2 == 1, index % 2 == 0):
            clients = {label: package_client(path, server.base_url, cache / f"{label}.sqlite", eager)
                       for label, (path, _) in batches.items()}
            pairs = [(clients[label], request) for label, (_, batch) in batches.items() for request in batch]
            cpu, start = time.process_time(), time.perf_counter()
            with ThreadPoolExecutor(threads) as pool:
                results = list(pool.map(lambda pair: pair[0].make_request(pair[1]), pairs))
            timings[eager].append((time.perf_counter() - start, time.process_time() - cpu))
            assert all(r.success and r.cached for r in results)
    return {eager: (1000 * statistics.median(t[0] for t in ts) / total, 1000 * statistics.median(t[1] for t in ts)
                    / total) for eager, ts in timings.items()}


def measure_body(work: Path, server: LatencyServer, suite: str, threads: Sequence[int], repeat: int) -> None:
    """ms per cache hit with the body built only on a miss (the package) and for every request (eager)."""
    runs_dir = work / "benchmark_output" / "runs" / suite
    sample: dict[str, tuple[str, list[Any]]] = {}
    for run in sorted(p for p in runs_dir.iterdir() if (p / "scenario_state.json").exists()):
        path = "native" if "roboreward-8b" in run.name else "frames"
        sample[path] = (path, load_requests(run, work))
    large = {"native-4MB": ("native", large_video_requests(work / "large-videos", sample["native"][1][0], 16,
                                                           4_000_000))}
    cache = work / "body-cache"
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir()
    latency, server.latency = server.latency, 0.0
    try:
        for label, (path, batch) in {**sample, **large}.items():  # warm the caches
            client = package_client(path, server.base_url, cache / f"{label}.sqlite", eager=False)
            with ThreadPoolExecutor(8) as pool:
                assert all(r.success for r in pool.map(client.make_request, batch))
    finally:
        server.latency = latency
    server.reset()
    print(f"\nrequest body on cache hits (HELM's Cache, one client per deployment, N threads, every request a hit), "
          f"ms per request, wall / CPU of this process, median of {repeat}: built only on a miss (the package) "
          "vs built for every request")
    for name, batches in (("sample (frames ~100 KB, mp4 ~40 KB)", sample), ("16 distinct 4-MB mp4s", large)):
        total = sum(len(batch) for _, batch in batches.values())
        for n in threads:
            hits = time_hits(server, batches, cache, n, repeat)
            (lazy_wall, lazy_cpu), (eager_wall, eager_cpu) = hits[False], hits[True]
            print(f"  {name:<36} {total:>4} req  N={n:>3}: on a miss {lazy_wall:7.2f} / {lazy_cpu:7.2f}; always "
                  f"{eager_wall:7.2f} / {eager_cpu:7.2f}; always / on a miss {eager_wall / lazy_wall:5.2f}x wall")
    assert server.reset().requests == 0, "a cache hit reached the server"


# ---------------------------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--latencies", type=float, nargs="+", default=[2.0, 0.5], help="server latencies (2 0.5)")
    parser.add_argument("--threads", type=int, nargs="+", default=[8, 32], help="values of -n (8 32)")
    parser.add_argument("--variants", nargs="+", choices=sorted(VARIANTS), default=sorted(VARIANTS))
    parser.add_argument("--repeat", type=int, default=3, help="timed helm-runs per cell; medians are shown (3)")
    parser.add_argument("--before-rev", default=BEFORE_REV, help="git revision holding the private cache (a)")
    parser.add_argument("--work-dir", type=Path, help="where runs go (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--quick", action="store_true", help="smoke run: latency 0.2 s, -n 8, one repeat")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))  # this checkout's package, as the helm-runs get (PYTHONPATH)
    if args.quick:
        args.latencies, args.threads, args.repeat = [0.2], [8], 1

    work = args.work_dir or Path(tempfile.mkdtemp(prefix="roboreward-in-flight-"))
    work.mkdir(parents=True, exist_ok=True)
    before = before_module(work, args.before_rev)
    server = LatencyServer(args.latencies[0])
    cells: list[Cell] = []
    started = time.monotonic()
    try:
        check = check_server_parallel(server, max(args.threads))
        print(f"server {server.base_url}: {max(args.threads)} simultaneous requests answered in {check:.3f} s at "
              f"{server.latency:g} s latency; work folder {work}; load average {os.getloadavg()[0]:.2f} on "
              f"{os.cpu_count()} CPUs; (a) from {args.before_rev[:12]}:{BEFORE_PATH}")
        helm_run(work, server, 8, VARIANTS["b"], "warmup", before)  # frames extracted once (shared output folder)
        for latency in args.latencies:
            server.latency = latency
            for repeat in range(args.repeat):
                for n in args.threads:
                    shift = repeat % len(args.variants)
                    for key in args.variants[shift:] + args.variants[:shift]:
                        cells.append(helm_run(work, server, n, VARIANTS[key], f"l{latency:g}-n{n}-{key}-{repeat}",
                                              before))
            report(cells, latency, args.threads, args.variants)
        measure_body(work, server, "warmup", args.threads, max(args.repeat, 3))
        print(f"\nload average at the end {os.getloadavg()[0]:.2f}; {time.monotonic() - started:.0f} s in all")
    finally:
        server.stop()
        if args.keep:
            print(f"kept: {work}")
        elif args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
