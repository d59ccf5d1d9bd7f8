"""Hostile requests to ``roboreward serve``'s app over real loopback HTTP (issue 36): a stalled upload, a batch
whose items fail in different ways, bodies that break a parser, and paths that must not reveal the server's root.
"""

import base64
import hashlib
import json
import os
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helm_roboreward.reward import RewardModel
from helm_roboreward.reward.server import RewardServer, ServerLimits
from tests.helpers.fakes import CHAT, FakeModelServer
from tests.helpers.reward import RR8B
from tests.helpers.reward_server import Running, mp4_item, start
from tests.helpers.sample import SAMPLE, sample_rows

ROWS = sample_rows()
OTHER_VIDEO = SAMPLE / ROWS[1]["file_name"]


@pytest.fixture(scope="module")
def model(reward_local_path: Path) -> RewardModel:
    return RewardModel(RR8B, "vllm/roboreward-8b", local_path=str(reward_local_path), cache=False)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile-root")
    shutil.copyfile(SAMPLE / ROWS[0]["file_name"], root / "inside.mp4")
    (root / "clips").mkdir()
    (root / "empty.mp4").write_bytes(b"")
    (root / "garbage.mp4").write_bytes(b"not an mp4 at all")
    return root


@pytest.fixture(scope="module")
def served(model: RewardModel, root: Path) -> Iterator[Running]:
    yield from start(RewardServer(model, ServerLimits(max_concurrency=2, max_queue=6), allowed_root=str(root)))


def receive_until_closed(sock: socket.socket) -> bytes:
    sock.settimeout(30)  # a hang, not a timing: the answer comes after the body timeout (3 s)
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def test_a_stalled_upload_holds_no_slot_and_gets_408(model: RewardModel, fake: FakeModelServer) -> None:
    limits = ServerLimits(max_concurrency=1, max_queue=0, body_timeout_seconds=3)
    for running in start(RewardServer(model, limits)):
        with socket.create_connection(("127.0.0.1", running.port)) as stalled:
            stalled.sendall(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            b"Content-Length: 1000\r\n\r\n" + b'{"task": "')  # 10 bytes of 1000, then silence
            time.sleep(0.5)  # the stalled request has reached the app
            status, body, _ = running.call("POST", "/v1/score", mp4_item())
            assert status == 200 and body["score"] == 3.0, body  # capacity 1, yet served
            answer = receive_until_closed(stalled)  # the server closes the stalled connection after its 408
        head, _, payload = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408"), answer
        error = json.loads(payload)["error"]
        assert error["field"] == "body" and "3 s" in error["message"], error
        assert running.app.held == 0
        assert running.call("POST", "/v1/score", mp4_item())[0] == 200


def test_a_bad_task_in_a_batch_fails_that_item_only(served: Running, fake: FakeModelServer) -> None:
    surrogate = b"\xff".decode("utf-8", errors="surrogateescape")  # "\udcff": JSON can carry it, UTF-8 cannot
    items = [mp4_item("first task"), mp4_item(surrogate), mp4_item(""), "not an object", mp4_item("last task"),
             {"task": "t", "video": {"path": f"{surrogate}.mp4"}}]  # echoed in its message: must still encode
    raw = json.dumps({"items": items}).encode()  # ensure_ascii: the lone surrogate travels as \udcff
    assert b"\\udcff" in raw
    status, body, _ = served.call("POST", "/v1/score_batch", raw=raw)
    assert status == 200, body
    results = body["results"]
    assert [r["score"] for r in results] == [3.0, None, None, None, 3.0, None]
    assert [r["field"] for r in results] == [None, "items[1].task", "items[2].task", "items[3]", None,
                                             "items[5].video.path"]
    assert results[5]["error"] == f"{surrogate}.mp4 does not exist under the allowed root"
    assert all(r["failed"] for r in results[1:4]) and not results[0]["failed"] and not results[4]["failed"]
    assert len(fake.requests_to(CHAT)) == 2  # only the good items reached the model
    assert served.app.held == 0


def test_an_unexpected_item_error_fails_that_item_only(reward_local_path: Path, tmp_path: Path,
                                                        fake: FakeModelServer) -> None:
    media = tmp_path / "media"
    data = OTHER_VIDEO.read_bytes()
    blocked = media / "inputs" / hashlib.sha256(data).hexdigest()[:2]
    blocked.parent.mkdir(parents=True)
    blocked.write_text("a file where the inputs folder needs a folder")  # a damaged media folder: an OSError
    model = RewardModel(RR8B, "vllm/roboreward-8b", local_path=str(reward_local_path), media_dir=str(media),
                        cache=False)
    for running in start(RewardServer(model)):
        other = {"task": "other", "video": {"mp4_base64": base64.b64encode(data).decode()}}
        status, body, _ = running.call("POST", "/v1/score_batch", {"items": [mp4_item("a"), other, mp4_item("b")]})
        assert status == 200, body
        results = body["results"]
        assert [r["score"] for r in results] == [3.0, None, 3.0]
        assert results[1]["failed"] and results[1]["error"].startswith(("FileExistsError", "NotADirectoryError"))
        assert running.app.held == 0


def test_deep_json_and_an_overflowing_shape_get_400(served: Running, fake: FakeModelServer) -> None:
    status, answer, _ = served.call("POST", "/v1/score", raw=b"[" * 100_000 + b"]" * 100_000)
    assert status == 400 and answer["error"]["field"] == "body", answer
    assert "deep" in answer["error"]["message"]
    shape = [2 ** 32, 2 ** 32, 1, 3]  # 2**64 * 3 bytes: int64 arithmetic wraps to 0, the size of "" below
    item = {"task": "t", "fps": 5, "video": {"frames_base64": "", "shape": shape}}
    status, answer, _ = served.call("POST", "/v1/score", item)
    assert status == 400 and answer["error"]["field"] == "video.shape", answer
    assert "too large" in answer["error"]["message"]
    status, body, _ = served.call("POST", "/v1/score_batch", {"items": [item, mp4_item()]})
    assert status == 200 and body["results"][0]["field"] == "items[0].video.shape", body
    assert body["results"][1]["score"] == 3.0
    assert fake.requests_to(CHAT) and served.call("GET", "/healthz")[0] == 200


@pytest.mark.parametrize(("path", "field", "says"), [
    ("missing.mp4", "video.path", "missing.mp4 does not exist"),
    ("clips/missing.mp4", "video.path", "clips/missing.mp4 does not exist"),
    ("clips", "video.path", "clips is not a regular file"),
    ("empty.mp4", "video.path", "empty.mp4 is empty"),
    ("garbage.mp4", "video", "garbage.mp4"),
    ("../outside.mp4", "video.path", "../outside.mp4 lies outside the allowed root"),
    ("clips/../../outside.mp4", "video.path", "clips/../../outside.mp4 lies outside the allowed root"),
])
def test_path_errors_never_show_the_servers_root(served: Running, root: Path, fake: FakeModelServer, path: str,
                                                 field: str, says: str) -> None:
    secrets = {str(root), os.path.realpath(root)}
    status, answer, _ = served.call("POST", "/v1/score", {"task": "t", "video": {"path": path}})
    assert status == 400 and answer["error"]["field"] == field, answer
    message = answer["error"]["message"]
    assert says in message and not any(secret in message for secret in secrets), message
    status, body, _ = served.call("POST", "/v1/score_batch", {"items": [{"task": "t", "video": {"path": path}}]})
    result: dict[str, Any] = body["results"][0]
    assert status == 200 and result["failed"] and result["field"] == f"items[0].{field}", body
    assert says in result["error"] and not any(secret in result["error"] for secret in secrets), result
    absolute = str(root / path)  # as the client gave it: the client knows its own text
    status, answer, _ = served.call("POST", "/v1/score", {"task": "t", "video": {"path": absolute}})
    assert status == 400 and answer["error"]["field"] == field, answer
    assert fake.requests == []
