"""OpenRLHF's ``/get_reward`` and Robometer's ``/evaluate_batch`` on ``roboreward serve``, called the way each
framework calls its reward server, give the reward ``/v1/score`` gives, with byte-identical model requests.

OpenRLHF itself (Ray, DeepSpeed, vLLM) does not install here: its client is re-created from its source (OpenRLHF
3c3be6234e0cb353e76bb8019947db9dfe99fca7, ``openrlhf/utils/agent.py``, ``SingleTurnAgentExecutor.
_fetch_rewards_via_http``: an aiohttp ``session.post(url, json=payload)`` per endpoint, the samples split in
contiguous shards). Robometer's client likewise (robometer c7f38e266e1c00ec1203f4f8dbfa64de36590a0c,
``robometer/evals/eval_utils.py``, ``post_batch``: ``requests.post(url + "/evaluate_batch", json=payload)``).
"""

import asyncio
import base64
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pytest
import requests
from PIL import Image

from helm_roboreward.reward import RewardModel
from helm_roboreward.reward.server import RewardServer, ServerLimits
from tests.helpers.fakes import CHAT, FakeModelServer
from tests.helpers.fakes.exchange import constant
from tests.helpers.reward import RR8B
from tests.helpers.reward_server import ROW, Running, mp4_item, start


@pytest.fixture(scope="module")
def served(reward_local_path: Path) -> Iterator[Running]:
    model = RewardModel(RR8B, "vllm/roboreward-8b", local_path=str(reward_local_path), cache=False)
    yield from start(RewardServer(model, ServerLimits(max_concurrency=2, max_queue=6)))


def openrlhf_post(endpoints: list[str], queries: list[str], prompts: list[str], labels: list[Any]) -> list[Any]:
    """OpenRLHF's ``_fetch_rewards_via_http``: the lists split across the endpoints, one aiohttp POST each."""
    async def fetch() -> list[Any]:
        size = (len(queries) + len(endpoints) - 1) // len(endpoints)
        timeout = aiohttp.ClientTimeout(total=180)

        async def post(url: str, data: dict[str, Any]) -> Any:
            async with aiohttp.ClientSession(timeout=timeout) as session:
                async with session.post(url, json=data) as response:
                    response.raise_for_status()
                    return await response.json()

        return await asyncio.gather(*(post(url, {"query": queries[i * size:(i + 1) * size],
                                                 "prompts": prompts[i * size:(i + 1) * size],
                                                 "labels": labels[i * size:(i + 1) * size]})
                                      for i, url in enumerate(endpoints)))

    return asyncio.run(fetch())


def png(array: np.ndarray) -> str:
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def api_request(served: Running, fake: FakeModelServer, item: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """``/v1/score``'s reward for ``item`` and the model request it sent."""
    fake.clear()
    status, reward, _ = served.call("POST", "/v1/score", item)
    assert status == 200, reward
    (sent,) = fake.requests_to(CHAT)
    fake.clear()
    return reward, sent.raw


def test_openrlhf_gets_the_apis_reward_with_the_same_request(served: Running, fake: FakeModelServer) -> None:
    fake.behaviour = constant("ANSWER: 4")
    item = mp4_item()
    reward, request = api_request(served, fake, item)
    url = f"http://127.0.0.1:{served.port}/get_reward"
    labels = [json.dumps(item), item]  # a JSON string (a dataset's text column) or the object itself
    (answer,) = openrlhf_post([url], ["<prompt> response 1", "<prompt> response 2"], ["<prompt>"] * 2, labels)
    assert answer["rewards"] == [reward["score"]] * 2 == [4.0, 4.0]
    assert answer["scores"] == [reward["progress"]] * 2 == [0.75, 0.75]
    assert answer["extra_logs"] == {"roboreward_failed": [0.0, 0.0]}
    assert answer["results"] == [reward, reward]
    assert [sent.raw for sent in fake.requests_to(CHAT)] == [request, request]


def test_openrlhf_sharding_values_and_failures(served: Running, fake: FakeModelServer) -> None:
    fake.behaviour = constant("ANSWER: 4")
    url = f"http://127.0.0.1:{served.port}/get_reward?value=progress&on_failure=-1"
    # Two endpoints and one sample (its executor posts one sample per call): the second gets empty lists.
    first, second = openrlhf_post([url, url], ["q"], ["p"], [mp4_item()])
    assert first["rewards"] == [0.75] and second == {"rewards": [], "scores": [], "errors": [], "results": [],
                                                     "extra_logs": {"roboreward_failed": []}}
    labels = [mp4_item(), "{not json", {"task": "", "video": {"mp4_base64": ""}}, ["a list"]]
    (answer,) = openrlhf_post([url], ["q"] * 4, ["p"] * 4, labels)
    assert answer["rewards"] == [0.75, -1, -1, -1] and answer["scores"] == [0.75, -1, -1, -1]
    assert answer["extra_logs"]["roboreward_failed"] == [0.0, 1.0, 1.0, 1.0]
    assert [result["field"] for result in answer["results"]] == [None, "labels[1]", "labels[2].task", "labels[3]"]
    assert "is not a JSON item" in answer["errors"][1]
    assert len(fake.requests_to(CHAT)) == 2  # only the good items reached the model
    for body, query, field in (({"query": ["q"], "prompts": ["p"], "labels": [mp4_item()]}, "?value=median", "value"),
                               ({"query": ["q"], "prompts": ["p"], "labels": [mp4_item()]}, "?on_failure=nan",
                                "on_failure"),
                               ({"query": ["q", "r"], "prompts": ["p"], "labels": [mp4_item()]}, "", "query"),
                               ({"query": ["q"], "prompts": ["p"]}, "", "labels")):
        status, refused, _ = served.call("POST", "/get_reward" + query, body)
        assert status == 400 and refused["error"]["field"] == field, refused
    assert served.app.held == 0


def test_robometer_gets_the_apis_progress_with_the_same_request(served: Running, fake: FakeModelServer) -> None:
    fake.behaviour = constant("ANSWER: 4")
    frames = np.random.default_rng(2).integers(0, 256, (6, 32, 48, 3), dtype=np.uint8)
    images = [png(frame) for frame in frames]
    reward, request = api_request(served, fake, {"task": ROW["task"], "fps": 5, "video": {"images_base64": images}})
    url = f"http://127.0.0.1:{served.port}"
    trajectory: dict[str, Any] = {"task": ROW["task"], "metadata": {"fps": 5}, "id": "ep-1", "data_source": "tests"}
    payload: dict[str, Any] = {"samples": [
        {"sample_type": "progress", "trajectory": {**trajectory, "frames": images}},
        {"sample_type": "progress", "trajectory": {**trajectory, "frames": base64.b64encode(frames.tobytes()).decode(),
                                                   "frames_shape": list(frames.shape)}},
    ]}
    response = requests.post(url.rstrip("/") + "/evaluate_batch", json=payload, timeout=120)  # Robometer's post_batch
    response.raise_for_status()
    answer = response.json()
    assert answer["outputs_progress"] == {"progress_pred": [[reward["progress"]] * 6] * 2}
    assert reward["progress"] == 0.75 and answer["roboreward"]["results"] == [reward, reward]
    assert [sent.raw for sent in fake.requests_to(CHAT)] == [request, request]


def test_robometer_refusals_and_failures(served: Running, fake: FakeModelServer) -> None:
    good: dict[str, Any] = {"sample_type": "progress", "trajectory": {"task": "t", "metadata": {"fps": 5},
                                                      "frames": [png(np.zeros((32, 32, 3), np.uint8))] * 2}}
    no_fps = {"sample_type": "progress", "trajectory": {"task": "t", "frames": good["trajectory"]["frames"]}}
    bad_image = {"sample_type": "progress", "trajectory": {**good["trajectory"], "frames": ["%%", "AAAA"]}}
    status, answer, _ = served.call("POST", "/evaluate_batch", [good, no_fps, bad_image])  # a bare list, as it takes
    assert status == 200, answer
    assert answer["outputs_progress"]["progress_pred"] == [[0.5, 0.5], [], []]
    fields = [result["field"] for result in answer["roboreward"]["results"]]
    assert fields == [None, "samples[1].trajectory.metadata.fps", "samples[2].trajectory.frames[0]"], fields
    preference = {"sample_type": "preference", "chosen_trajectory": {}, "rejected_trajectory": {}}
    for body, field in (({"samples": [good, preference]}, "samples[1].sample_type"),
                        ({"samples": [good], "use_frame_steps": True}, "use_frame_steps")):
        status, refused, _ = served.call("POST", "/evaluate_batch", body)
        assert status == 400 and refused["error"]["field"] == field, refused
    assert served.app.held == 0
