"""RewardModel in process: inputs of every kind, bad inputs, failed and hanging backends, the cache, the tiny
random Qwen3-VL through the real transformers client, and missing credentials at start."""

import hashlib
import time
from pathlib import Path

import av
import numpy as np
import pytest

from helm_roboreward.reward import Frames, Reward, RewardInputError, RewardModel, RewardModelError
from helm_roboreward.reward.api import progress_of
from tests.helpers.fakes import CHAT, FakeModelServer, Recorded, Reply, media_parts
from tests.helpers.fakes.exchange import constant
from tests.helpers.reward import RR8B, SILENT_DEPLOYMENT, TINY_DEPLOYMENT
from tests.helpers.sample import SAMPLE, sample_rows

LLAMA = "meta/llama-4-scout-17b-16e-instruct"
ROW = sample_rows()[0]
VIDEO = SAMPLE / ROW["file_name"]


@pytest.fixture(scope="module")
def native(reward_local_path: Path) -> RewardModel:
    return RewardModel(RR8B, "vllm/roboreward-8b", local_path=str(reward_local_path), cache=False)


@pytest.fixture(scope="module")
def frames_model(reward_local_path: Path) -> RewardModel:
    return RewardModel(LLAMA, local_path=str(reward_local_path), cache=False)


def clip(frames: int = 20, height: int = 64, width: int = 96, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (frames, height, width, 3), dtype=np.uint8)


def test_settings_say_what_the_reward_depends_on(native: RewardModel, frames_model: RewardModel) -> None:
    assert native.settings["video"] == "native" and native.settings["deployment"] == "vllm/roboreward-8b"
    assert native.settings["max_tokens"] == 5000 and native.settings["prompt_version"] == "1"
    assert frames_model.settings["video"] == "frames"
    assert frames_model.settings["frame_options"]["frames_per_second"] == 1.0


def test_path_bytes_and_frames_all_score(native: RewardModel, fake: FakeModelServer) -> None:
    fake.behaviour = constant("The cube is in the tray.\nANSWER: 5")
    by_path = native.score(ROW["task"], str(VIDEO))
    by_bytes = native.score(ROW["task"], VIDEO.read_bytes())
    by_frames = native.score("stack the blocks", clip(), fps=10)
    for reward in (by_path, by_bytes, by_frames):
        assert reward == Reward(5.0, 1.0, True, None, "The cube is in the tray.\nANSWER: 5")
    sent = [media_parts(r) for r in fake.requests_to(CHAT)]
    assert sent[0] == sent[1], "the same mp4, as a path or as bytes, is the same request"
    video = sent[2][1].data
    assert video is not None
    with av.open(__import__("io").BytesIO(video)) as container:
        stream = container.streams.video[0]
        assert (stream.frames or sum(1 for _ in container.decode(stream))) == 20
        assert float(stream.average_rate) == 10


def test_frames_model_gets_the_official_frames_of_an_array(frames_model: RewardModel, fake: FakeModelServer) -> None:
    frames_model.score("stack the blocks", [frame for frame in clip(frames=25)], fps=10)
    (request,) = fake.requests_to(CHAT)
    parts = media_parts(request)
    assert parts[0].text is not None and parts[0].text.endswith("Task: stack the blocks")
    assert [p.kind for p in parts[1:]] == ["image"] * 3  # frames 0, 10, 20 of 25 at 10 fps


def test_unparseable_and_failed_are_told_apart(native: RewardModel, fake: FakeModelServer) -> None:
    fake.behaviour = constant("I cannot tell.")
    unparseable = native.score(ROW["task"], str(VIDEO))
    assert (unparseable.score, unparseable.progress, unparseable.failed) == (None, None, False)
    fake.behaviour = constant(status=400, error="bad request")
    failed = native.score(ROW["task"], str(VIDEO))
    assert failed.failed and failed.score is None and "400" in (failed.error or "")


def test_progress_is_clipped() -> None:
    assert [progress_of(s) for s in (1, 3, 5, 0, 7, None)] == [0.0, 0.5, 1.0, 0.0, 1.0, None]


def test_hanging_backend_fails_after_the_clients_timeout(reward_local_path: Path) -> None:
    model = RewardModel(RR8B, SILENT_DEPLOYMENT, local_path=str(reward_local_path), cache=False)
    started = time.monotonic()
    reward = model.score(ROW["task"], str(VIDEO))
    assert reward.failed and reward.score is None and "timed out" in (reward.error or "").lower()
    assert time.monotonic() - started < 10


def test_cache_serves_a_repeat(reward_local_path: Path, fake: FakeModelServer) -> None:
    model = RewardModel(RR8B, "vllm/roboreward-8b", local_path=str(reward_local_path))
    task = f"cache check {time.time_ns()}"
    first, second = model.score(task, str(VIDEO)), model.score(task, str(VIDEO))
    assert (first.cached, second.cached, second.score) == (False, True, 3.0)
    assert len(fake.requests_to(CHAT)) == 1


def task_length_score(recorded: Recorded) -> Reply:
    prompt = media_parts(recorded)[0].text or ""
    return Reply(text=f"ANSWER: {len(prompt.rsplit('Task: ', 1)[1]) % 5 + 1}")


def test_score_many_keeps_order_and_reports_progress(native: RewardModel, fake: FakeModelServer) -> None:
    fake.behaviour = task_length_score
    tasks = ["a" * n for n in range(5, 13)]
    seen: list[int] = []
    rewards = native.score_many([(task, str(VIDEO)) for task in tasks], max_workers=4,
                                on_result=lambda index, reward: seen.append(index))
    assert [r.score for r in rewards] == [float(len(task) % 5 + 1) for task in tasks]
    assert sorted(seen) == list(range(len(tasks)))


BAD_ITEMS = [
    ("", str(VIDEO), None, "task", "empty"),
    ("x" * 10_000, str(VIDEO), None, "task", "10,000 characters"),
    ("t", clip(), 0, "fps", "(0, 1000]"),
    ("t", clip(), -1.0, "fps", "(0, 1000]"),
    ("t", clip(), float("nan"), "fps", "(0, 1000]"),
    ("t", clip(), None, "fps", "required"),
    ("t", clip(frames=0), 10, "video", "zero frames"),
    ("t", [], 10, "video", "zero frames"),
    ("t", [clip(1)[0], clip(1, height=32)[0]], 10, "video", "mixed shapes"),
    ("t", clip().astype(np.float32), 10, "video", "uint8"),
    ("t", clip()[..., :2], 10, "video", "(T, H, W, 3)"),
    ("t", b"not a video at all", None, "video", "cannot be read as a video"),
    ("t", b"", None, "video", "empty"),
    ("t", "/no/such/file.mp4", None, "video", "cannot be read"),
    ("t", str(VIDEO), 10, "fps", "frames only"),
]


@pytest.mark.parametrize(("task", "video", "fps", "field", "words"), BAD_ITEMS,
                         ids=[f"{i}-{item[3]}" for i, item in enumerate(BAD_ITEMS)])
def test_bad_inputs_name_the_field(native: RewardModel, fake: FakeModelServer, task: str, video: object,
                                   fps: float | None, field: str, words: str) -> None:
    with pytest.raises(RewardInputError) as raised:
        native.score(task, video, fps)
    assert raised.value.field == field and words in str(raised.value)
    assert fake.requests == [], "nothing is sent for a bad input"
    assert native.score("t", str(VIDEO)).score == 3.0  # and the model keeps working


def test_score_many_checks_every_item_before_sending(native: RewardModel, fake: FakeModelServer) -> None:
    with pytest.raises(RewardInputError) as raised:
        native.score_many([("ok", str(VIDEO)), ("", str(VIDEO))])
    assert raised.value.field == "items[1].task"
    assert fake.requests == []
    rewards = native.score_many([("ok", str(VIDEO)), ("ok", b"garbage bytes")])
    assert rewards[0].score == 3.0 and rewards[1].failed and rewards[1].field == "items[1].video"


def test_a_link_out_of_nowhere_is_just_a_path(native: RewardModel, tmp_path: Path) -> None:
    """The API trusts its caller's paths (the server confines them); a link is followed, its target read."""
    link = tmp_path / "clip.mp4"
    link.symlink_to(VIDEO)
    assert native.score(ROW["task"], str(link)).score == 3.0


def test_nothing_sent_carries_the_label_or_the_file_name(native: RewardModel, fake: FakeModelServer) -> None:
    clip_row = next(row for row in sample_rows() if "_score_" in row["file_name"])
    native.score(clip_row["task"], str(SAMPLE / clip_row["file_name"]))
    (request,) = fake.requests_to(CHAT)
    stem = Path(clip_row["file_name"]).stem
    assert stem.encode() not in request.raw and b"score_" not in request.raw
    assert b"gpt5_mini_check" not in request.raw


def test_unknown_model_and_bad_options_fail_at_start(reward_local_path: Path) -> None:
    with pytest.raises(RewardModelError, match="no/such-model"):
        RewardModel("no/such-model", local_path=str(reward_local_path))
    with pytest.raises(RewardModelError, match="'subset' is not a reward option"):
        RewardModel(RR8B, local_path=str(reward_local_path), options={"subset": "bridge"})
    with pytest.raises(RewardModelError, match="video="):
        RewardModel(RR8B, local_path=str(reward_local_path), options="video=sideways")


def test_missing_credentials_fail_once_at_start(reward_local_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capfd: pytest.CaptureFixture[str],
                                               caplog: pytest.LogCaptureFixture) -> None:
    credentials = reward_local_path / "credentials.conf"
    saved = credentials.read_text(encoding="utf-8")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    try:
        credentials.write_text("", encoding="utf-8")
        capfd.readouterr()
        with pytest.raises(RewardModelError, match=r"credentials.conf \(openaiApiKey"):
            RewardModel("openai/gpt-5-mini-2025-08-07", local_path=str(reward_local_path))
    finally:
        credentials.write_text(saved, encoding="utf-8")
    # Issue 36, B2: HELM's "Could not find key 'deployments' in credentials.conf" line no longer comes first
    # (it named a key nobody needs to set); our error above names the one that is missing.
    printed = capfd.readouterr()
    assert "Could not find key" not in printed.out + printed.err + caplog.text


def test_options_are_named(reward_local_path: Path, fake: FakeModelServer) -> None:
    model = RewardModel(RR8B, "vllm/roboreward-8b", local_path=str(reward_local_path),
                        options={"video": "frames", "max_frames": 2, "last_frame": True}, cache=False)
    assert model.settings["video"] == "frames" and model.settings["frame_options"]["max_frames"] == 2
    model.score(ROW["task"], str(VIDEO))
    assert [p.kind for p in media_parts(fake.requests_to(CHAT)[0])[1:]] == ["image", "image"]


def test_tiny_qwen3vl_in_process(reward_local_path: Path) -> None:
    model = RewardModel(RR8B, TINY_DEPLOYMENT, local_path=str(reward_local_path), cache=False)
    assert model.settings["video"] == "native"
    reward = model.score(ROW["task"], Frames(clip(frames=8, height=64, width=64), 4.0))
    assert not reward.failed, reward.error
    assert isinstance(reward.output, str)  # random weights: any text; parsed by the official rule
    assert reward.score is None or reward.progress == progress_of(reward.score)


def test_content_addressed_inputs_folder(native: RewardModel) -> None:
    data = VIDEO.read_bytes()
    native.score(ROW["task"], data)
    name = hashlib.sha256(data).hexdigest()[:32] + ".mp4"
    assert (Path(native.media_dir) / "inputs" / name[:2] / name).read_bytes() == data
