"""``roboreward serve`` run as a user runs it (issue 36): numeric options out of range stop it with one line, and it
says what it is loading before it listens.
"""

import base64
import http.client
import json
import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.helpers.fakes import FakeModelServer
from tests.helpers.harness import helm_environment, reap
from tests.helpers.reward import RR8B
from tests.helpers.sample import SAMPLE, sample_rows

ROW = sample_rows()[0]
HANG = 120  # seconds: only a hang takes this long


def serve(local: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "helm_roboreward.cli", "serve", "--model", RR8B, "--deployment",
            "vllm/roboreward-8b", "--local-path", str(local), "--no-cache", *extra]


@pytest.mark.parametrize(("option", "value", "allowed"), [
    ("--max-body-mb", "inf", "a number in (0, 65536]"),
    ("--max-body-mb", "nan", "a number in (0, 65536]"),
    ("--max-body-mb", "-1", "a number in (0, 65536]"),
    ("--max-body-mb", "0", "a number in (0, 65536]"),
    ("--max-body-mb", "lots", "a number in (0, 65536]"),
    ("--port", "70000", "a whole number in [0, 65535]"),
    ("--port", "-1", "a whole number in [0, 65535]"),
    ("--port", "80.5", "a whole number in [0, 65535]"),
    ("--max-concurrency", "0", "a whole number in [1, 1024]"),
    ("--max-concurrency", "1e9", "a whole number in [1, 1024]"),
    ("--max-queue", "-1", "a whole number in [0, 100000]"),
    ("--body-timeout", "0", "a number in (0, 3600]"),
    ("--body-timeout", "inf", "a number in (0, 3600]"),
])
def test_a_numeric_option_out_of_range_is_one_line(tmp_path: Path, option: str, value: str, allowed: str) -> None:
    done = subprocess.run(serve(tmp_path, f"{option}={value}"), capture_output=True, text=True, timeout=HANG,
                          env=helm_environment())
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith(f"roboreward serve: {option} {value}: must be {allowed}"), lines
    assert not (tmp_path / "roboreward_media").exists()  # refused before anything was built


def test_serve_says_what_it_loads_then_where_it_listens(reward_local_path: Path, fake: FakeModelServer,
                                                        tmp_path: Path) -> None:
    process = subprocess.Popen(serve(reward_local_path, "--port", "0", "--media-dir", str(tmp_path / "media"),
                                     "--max-concurrency", "3", "--max-queue", "5"),
                               env=helm_environment(fake), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in process.stderr or ():
            lines.put(line.rstrip("\n"))

    threading.Thread(target=read, daemon=True).start()
    try:
        seen = [lines.get(timeout=HANG)]
        assert seen[0].startswith("roboreward serve: loading "), seen  # the first line, before any slow import
        assert RR8B in seen[0]
        while not re.search(r"listening on http://127\.0\.0\.1:\d+ ", seen[-1]):
            seen.append(lines.get(timeout=HANG))
        assert "(3 slots, 5 waiting at most)" in seen[-1], seen
        assert any("vllm/roboreward-8b" in line for line in seen[1:-1]), seen  # the model's own progress lines
        port = int(re.findall(r":(\d+) ", seen[-1])[0])
        item = {"task": ROW["task"], "video": {"mp4_base64": base64.b64encode((SAMPLE / ROW["file_name"])
                                                                               .read_bytes()).decode()}}
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=HANG)
        connection.request("POST", "/v1/score", body=json.dumps(item), headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        assert response.status == 200 and json.loads(response.read())["score"] == 3.0
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=HANG)
        finally:
            reap([process])
