"""``roboreward serve``'s app on uvicorn, on a loopback port, over real HTTP: formats, errors, limits, the token."""

import base64
import io
import json
import os
import shutil
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from helm_roboreward.reward import RewardModel
from helm_roboreward.reward.server import (
    RewardServer,
    ServerLimits,
    check_bind,
    read_token_file,
)
from tests.helpers.fakes import CHAT, FakeModelServer, Reply
from tests.helpers.fakes.exchange import constant
from tests.helpers.reward import RR8B, SILENT_DEPLOYMENT
from tests.helpers.reward_server import ROW, VIDEO, Running, mp4_item, start

TOKEN = "t0ken-for-the-tests-0123456789"


@pytest.fixture(scope="module")
def model(reward_local_path: Path) -> RewardModel:
    return RewardModel(RR8B, "vllm/roboreward-8b", local_path=str(reward_local_path), cache=False)


@pytest.fixture(scope="module")
def served(model: RewardModel, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    root = tmp_path_factory.mktemp("allowed")
    shutil.copyfile(VIDEO, root / "inside.mp4")
    os.symlink(root / "inside.mp4", root / "link-inside.mp4")  # a link within the root is fine
    os.symlink(VIDEO, root / "escape.mp4")  # a link out of it is not, even to a real video
    limits = ServerLimits(max_concurrency=2, max_queue=2, max_body_bytes=2 << 20)
    yield from start(RewardServer(model, limits, allowed_root=str(root)))


def png(array: np.ndarray) -> str:
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def test_health_and_model(served: Running) -> None:
    assert served.call("GET", "/healthz")[:2] == (200, {"status": "ok"})
    status, body, _ = served.call("GET", "/v1/model")
    assert status == 200 and body["model"] == RR8B and body["deployment"] == "vllm/roboreward-8b"
    assert body["prompt_version"] == "1" and body["server"]["max_concurrency"] == 2


def test_score_every_video_format(served: Running, fake: FakeModelServer) -> None:
    fake.behaviour = constant("ANSWER: 4")
    frames = np.random.default_rng(1).integers(0, 256, (6, 32, 48, 3), dtype=np.uint8)
    items = [
        mp4_item(),
        {"task": ROW["task"], "video": {"path": "inside.mp4"}},
        {"task": ROW["task"], "video": {"path": "link-inside.mp4"}},
        {"task": "t", "fps": 5, "video": {"frames_base64": base64.b64encode(frames.tobytes()).decode(),
                                          "shape": list(frames.shape)}},
        {"task": "t", "fps": 5, "video": {"images_base64": [png(frame) for frame in frames]}},
    ]
    for item in items:
        status, body, _ = served.call("POST", "/v1/score", item)
        assert status == 200, body
        assert body == {"score": 4.0, "progress": 0.75, "success": False, "expected_score": None,
                        "output": "ANSWER: 4", "failed": False, "error": None, "field": None, "cached": False}
    sent = fake.requests_to(CHAT)
    assert sent[0].raw == sent[1].raw == sent[2].raw and sent[3].raw == sent[4].raw  # same mp4; frames, PNG


def test_batch_answers_in_order_with_per_item_failures(served: Running, fake: FakeModelServer) -> None:
    fake.behaviour = lambda recorded: Reply(text="ANSWER: 5" if "first" in recorded.raw.decode() else "ANSWER: 1")
    items = [mp4_item("first task"), mp4_item("second task"),
             {"task": "bad video", "video": {"mp4_base64": base64.b64encode(b"garbage").decode()}}]
    status, body, _ = served.call("POST", "/v1/score_batch", {"items": items})
    assert status == 200
    results = body["results"]
    assert [r["score"] for r in results] == [5.0, 1.0, None]
    assert results[2]["failed"] and results[2]["field"] == "items[2].video"


@pytest.mark.parametrize(("body", "field"), [
    ({"task": "", "video": {"path": "inside.mp4"}}, "task"),
    ({"task": "x" * 10_000, "video": {"path": "inside.mp4"}}, "task"),
    ({"task": "t"}, "video"),
    ({"task": "t", "video": {"mp4_base64": "%%%"}}, "video.mp4_base64"),
    ({"task": "t", "video": {"mp4_base64": base64.b64encode(b"not an mp4").decode()}}, "video"),
    ({"task": "t", "video": {"path": "escape.mp4"}}, "video.path"),
    ({"task": "t", "video": {"path": "../../etc/hostname"}}, "video.path"),
    ({"task": "t", "video": {"path": "/etc/hostname"}}, "video.path"),
    ({"task": "t", "fps": 0, "video": {"images_base64": [png(np.zeros((32, 32, 3), np.uint8))]}}, "fps"),
    ({"task": "t", "fps": 5, "video": {"images_base64": []}}, "video.images_base64"),
    ({"task": "t", "fps": 5, "video": {"images_base64": [png(np.zeros((32, 32, 3), np.uint8)),
                                                          png(np.zeros((48, 32, 3), np.uint8))]}},
     "video.images_base64[1]"),
    ({"task": "t", "fps": 5, "video": {"frames_base64": "AAAA", "shape": [1, 32, 32, 3]}}, "video.frames_base64"),
    ({"task": "t", "colour": "red", "video": {"path": "inside.mp4"}}, "colour"),
    ({"items": []}, "items"),
])
def test_bad_bodies_get_400_naming_the_field(served: Running, fake: FakeModelServer, body: dict[str, Any],
                                             field: str) -> None:
    path = "/v1/score_batch" if "items" in body else "/v1/score"
    status, answer, _ = served.call("POST", path, body)
    assert status == 400 and answer["error"]["field"] == field, answer
    assert fake.requests == []
    assert served.call("POST", "/v1/score", mp4_item())[0] == 200  # still serving


def test_not_json_and_batch_field_prefix(served: Running) -> None:
    status, answer, _ = served.call("POST", "/v1/score", raw=b"{not json")
    assert status == 400 and answer["error"]["field"] == "body"
    # A bad item fails alone (issue 36, A5): the batch answers 200 with that item failed and its field named.
    status, answer, _ = served.call("POST", "/v1/score_batch", {"items": [mp4_item(), {"task": "", "video": {}}]})
    assert status == 200, answer
    results = answer["results"]
    assert results[1]["failed"] and results[1]["field"] == "items[1].task" and not results[0]["failed"]


def test_body_over_the_limit_gets_413(served: Running) -> None:
    status, answer, _ = served.call("POST", "/v1/score", raw=b" " * (3 << 20))
    assert status == 413 and answer["error"]["field"] == "body"
    assert served.call("POST", "/v1/score", mp4_item())[0] == 200


def test_full_queue_gets_503_with_retry_after(served: Running, fake: FakeModelServer) -> None:
    fake.behaviour = constant(delay=1.5)
    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(lambda i: served.call("POST", "/v1/score", mp4_item(f"task {i}")), range(6)))
    statuses = sorted(status for status, _, _ in answers)
    assert statuses.count(200) == 4 and statuses.count(503) == 2  # 2 running + 2 waiting
    refused = next(headers for status, _, headers in answers if status == 503)
    assert refused["retry-after"] == "2"
    assert served.app.held == 0


def test_a_failed_model_request_is_failed_never_a_score(served: Running, fake: FakeModelServer) -> None:
    fake.behaviour = constant(status=500, error="upstream exploded")
    status, body, _ = served.call("POST", "/v1/score", mp4_item())
    assert status == 200 and body["failed"] and body["score"] is None and body["success"] is False


def test_client_disconnecting_mid_request_leaves_the_server_serving(served: Running, fake: FakeModelServer) -> None:
    with socket.create_connection(("127.0.0.1", served.port)) as sock:
        sock.sendall(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100000\r\n\r\n{\"task\": \"t\", \"vid")
    fake.behaviour = constant(delay=0.5)
    with socket.create_connection(("127.0.0.1", served.port)) as sock:  # gone while the model answers
        body = json.dumps(mp4_item()).encode()
        sock.sendall(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    time.sleep(1.0)
    assert served.call("POST", "/v1/score", mp4_item())[0] == 200
    assert served.app.held == 0


def test_hanging_backend_answers_failed(reward_local_path: Path) -> None:
    model = RewardModel(RR8B, SILENT_DEPLOYMENT, local_path=str(reward_local_path), cache=False)
    for running in start(RewardServer(model)):
        status, body, _ = running.call("POST", "/v1/score", mp4_item())
        assert status == 200 and body["failed"] and "timed out" in body["error"].lower()
        assert running.call("GET", "/healthz")[0] == 200


def test_token_guards_every_v1_route(model: RewardModel) -> None:
    for running in start(RewardServer(model, token=TOKEN)):
        assert running.call("GET", "/healthz")[0] == 200
        for method, path, body in (("GET", "/v1/model", None), ("POST", "/v1/score", mp4_item())):
            assert running.call(method, path, body)[0] == 401
            assert running.call(method, path, body, token="wrong-token-wrong-token")[0] == 401
            assert running.call(method, path, body, token=TOKEN)[0] == 200


def test_non_loopback_bind_needs_a_private_token_file(tmp_path: Path) -> None:
    check_bind("127.0.0.1", None)
    check_bind("::1", None)
    with pytest.raises(ValueError, match="--token-file"):
        check_bind("0.0.0.0", None)
    check_bind("0.0.0.0", TOKEN)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o644)
    with pytest.raises(ValueError, match="chmod 600"):
        read_token_file(str(token_file))
    token_file.chmod(0o600)
    assert read_token_file(str(token_file)) == TOKEN
    token_file.write_text("short")
    with pytest.raises(ValueError, match="at least 16"):
        read_token_file(str(token_file))
