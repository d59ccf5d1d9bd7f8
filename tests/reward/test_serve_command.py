"""``roboreward serve`` as a user runs it: start, score over HTTP, stop on SIGTERM; refusals before it serves."""

import base64
import http.client
import json
import signal
import subprocess
import time
from pathlib import Path

from tests.helpers.fakes import CHAT, FakeModelServer
from tests.helpers.fakes.server import unused_port
from tests.helpers.harness import cli, helm_environment, reap
from tests.helpers.reward import RR8B
from tests.helpers.sample import SAMPLE, sample_rows

ROW = sample_rows()[0]


def serve_command(local: Path, port: int, *extra: str) -> list[str]:
    return [cli("roboreward"), "serve", "--model", RR8B, "--deployment", "vllm/roboreward-8b", "--local-path",
            str(local), "--port", str(port), "--no-cache", *extra]


def test_serve_scores_and_stops_on_sigterm(reward_local_path: Path, fake: FakeModelServer, tmp_path: Path) -> None:
    port = unused_port()
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        process = subprocess.Popen(serve_command(reward_local_path, port, "--media-dir", str(tmp_path / "media")),
                                   env=helm_environment(fake), stdout=out, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                connection.request("GET", "/healthz")
                if connection.getresponse().status == 200:
                    break
            except OSError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        item = {"task": ROW["task"], "video": {"mp4_base64": base64.b64encode((SAMPLE / ROW["file_name"])
                                                                               .read_bytes()).decode()}}
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.request("POST", "/v1/score", body=json.dumps(item), headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        assert response.status == 200 and json.loads(response.read())["score"] == 3.0
        assert len(fake.requests_to(CHAT)) == 1
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            status = process.wait(timeout=60)
        finally:  # killed and waited for if SIGTERM did not end it
            reap([process])
    output = log.read_text()
    # uvicorn shuts down gracefully, then re-raises the signal it caught (its default action ends the process)
    assert status in (0, -signal.SIGTERM) and "Application shutdown complete" in output, output
    assert "vllm/roboreward-8b" in output and ROW["task"] not in output  # no task (or body) in the logs


def test_non_loopback_bind_without_token_is_refused_at_once(reward_local_path: Path) -> None:
    done = subprocess.run(serve_command(reward_local_path, unused_port(), "--host", "0.0.0.0"), capture_output=True,
                          text=True, timeout=120, env=helm_environment())
    assert done.returncode == 2 and "--token-file" in done.stderr


def test_missing_credentials_stop_it_at_start(tmp_path: Path) -> None:
    local = tmp_path / "local"
    local.mkdir()
    done = subprocess.run([cli("roboreward"), "serve", "--model", "openai/gpt-5-mini-2025-08-07", "--local-path",
                           str(local), "--port", str(unused_port())], capture_output=True, text=True, timeout=120,
                          env=helm_environment())
    assert done.returncode == 2, done.stderr[-2000:]
    assert "credentials.conf (openaiApiKey" in done.stderr
