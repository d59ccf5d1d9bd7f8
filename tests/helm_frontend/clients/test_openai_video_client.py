"""OpenAIVideoClient with the real ``openai`` package against the loopback fake (tests/helpers/fakes/).

What reaches the server is read back from the fake's records: one user message, the exact prompt
first, then the mp4 as a ``video_url`` data URL (or ``file://`` URL) or the JPEG frames as
``image_url`` data URLs, byte for byte; the generation settings; the vLLM sampling hints only when
asked for. Then the client side: cache keys follow the media content, reasoning lands in
``thinking``, token usage in ``finish_reason``, and failures come back as non-fatal,
non-retriable results so that HELM records an empty completion and the run goes on.
"""

import dataclasses
import hashlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from helm.common.cache import BlackHoleCacheConfig, CacheConfig, SqliteCacheConfig
from helm.common.media_object import MediaObject, MultimediaObject
from helm.common.request import Request, RequestResult
from helm.proxy.retry import retry_if_request_failed

from helm_roboreward.helm_frontend.clients import openai_video_client
from helm_roboreward.helm_frontend.clients.openai_video_client import OpenAIVideoClient
from helm_roboreward.protocol.frame_cache import extract_frames
from helm_roboreward.protocol.native_videos import store_video
from helm_roboreward.protocol.rules import DECLARED_LIMIT_ARGS, FrameOptions, build_prompt
from tests.helpers.fakes import (
    CHAT,
    FailFirst,
    FakeModelServer,
    Recorded,
    Reply,
    constant,
    decode_data_url,
    media_parts,
    unused_port,
)
from tests.helpers.fakes.openai_chat import MALFORMED_BODIES
from tests.helpers.fakes.server import malformed
from tests.helpers.sample import CLIP_NAME, SAMPLE, clip_rows, kind_of, rows_of, stem_of

LEAKY_SUBSET = "sim_kuka"
LEAKY_NAME = str(clip_rows(LEAKY_SUBSET, min_frames=11)[0]["file_name"])
"""A sample clip whose name carries its label (``..._score_<k>``) and that gives at least two frames at the
official 1 fps: nothing of its name may reach the server."""
_LEAKY = CLIP_NAME.match(stem_of(LEAKY_NAME))
assert _LEAKY, LEAKY_NAME
OTHER_VIDEO = next(row["file_name"] for row in rows_of(LEAKY_SUBSET)
                   if kind_of(row["file_name"]) == "original" and stem_of(row["file_name"]) != _LEAKY["episode"])
"""An original of another episode of the same subset (other bytes)."""
SERVED = "teetone/RoboReward-8B"
TASK = "pick up the red block and drop it in the blue bowl"
PROMPT = build_prompt(TASK)
FORBIDDEN = ("score_", LEAKY_SUBSET, _LEAKY["episode"], f"attempt_{_LEAKY['attempt']}", ".mp4", "gpt5_mini_check")


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    with FakeModelServer(constant("ANSWER: 4"), served_models=[SERVED]) as server:
        yield server


@pytest.fixture
def leaky_video(tmp_path: Path) -> Path:
    """A copy of a sample mp4 under its label-carrying original name and subset folder."""
    target = tmp_path / LEAKY_NAME
    target.parent.mkdir(parents=True)
    shutil.copyfile(SAMPLE / LEAKY_NAME, target)
    return target


def make_client(server_url: str, cache_config: CacheConfig | None = None, **kwargs: object) -> OpenAIVideoClient:
    args = {"api_key": "sk-test", "served_model_name": SERVED, "max_retries": 0, "timeout_seconds": 10.0}
    args.update(kwargs)
    return OpenAIVideoClient(cache_config=cache_config or BlackHoleCacheConfig(), base_url=server_url,
                             **args)  # type: ignore[arg-type]

def built(client: OpenAIVideoClient, request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    """The request body the client would send, and its cache key."""
    make_body, key = client._prepare(request)
    return make_body(), key


def make_request(media: Sequence[MediaObject], max_tokens: int = 5000, prompt: str = PROMPT) -> Request:
    return Request(
        model="teetone/roboreward-8b",
        model_deployment="vllm/roboreward-8b",
        multimodal_prompt=MultimediaObject([MediaObject(text=prompt, content_type="text/plain"), *media]),
        temperature=0.0,
        max_tokens=max_tokens,
        num_completions=1,
        stop_sequences=[],
    )


def video_request(path: Path, **kwargs: object) -> Request:
    return make_request([MediaObject(location=str(path), content_type="video/mp4")], **kwargs)  # type: ignore[arg-type]


def frames_request(paths: Sequence[Path]) -> Request:
    return make_request([MediaObject(location=str(p), content_type="image/jpeg") for p in paths])


def tiny_frames(folder: Path, count: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"{index:04d}.jpg" for index in range(count)]
    for index, path in enumerate(paths):
        path.write_bytes(b"\xff\xd8\xff\xe0 frame %d \xff\xd9" % index)
    return paths


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def only_request(server: FakeModelServer) -> Recorded:
    requests = server.requests_to(CHAT)
    assert len(requests) == 1, f"{len(requests)} chat requests"
    return requests[0]


def assert_non_fatal_failure(result: RequestResult) -> None:
    assert result.success is False
    assert result.completions == []
    assert result.error
    assert result.error_flags is not None
    assert result.error_flags.is_fatal is False
    assert result.error_flags.is_retriable is False
    # HELM's retry decorator must not retry it (it would for about 150 s per request).
    assert retry_if_request_failed(result) is False


# --------------------------------------------------------------------------------------------- native video


def test_native_video_payload_shape(fake: FakeModelServer, leaky_video: Path) -> None:
    result = make_client(fake.base_url).make_request(video_request(leaky_video, max_tokens=1234))
    assert result.success, result.error
    assert [c.text for c in result.completions] == ["ANSWER: 4"]

    recorded = only_request(fake)
    assert recorded.method == "POST" and recorded.path == "/v1/chat/completions"
    assert recorded.headers["authorization"] == "Bearer sk-test"
    body = recorded.body
    assert body["model"] == SERVED
    assert body["temperature"] == 0
    assert body["max_tokens"] == 1234
    assert body.get("n", 1) == 1
    for absent in ("stop", "mm_processor_kwargs", "media_io_kwargs", "tools", "response_format"):
        assert absent not in body, absent
    assert len(body["messages"]) == 1
    message = body["messages"][0]
    assert message["role"] == "user"
    content = message["content"]
    assert len(content) == 2
    assert content[0] == {"type": "text", "text": PROMPT}
    assert set(content[1]) == {"type", "video_url"} and content[1]["type"] == "video_url"
    assert set(content[1]["video_url"]) == {"url"}
    url = content[1]["video_url"]["url"]
    assert url.startswith("data:video/mp4;base64,")
    decoded = decode_data_url(url)
    assert decoded is not None
    mime, data = decoded
    assert mime == "video/mp4"
    assert data == leaky_video.read_bytes()

    serialized = recorded.raw.decode("utf-8") + recorded.path + recorded.query
    for forbidden in FORBIDDEN:
        assert forbidden not in serialized, forbidden
    assert str(leaky_video.parent) not in serialized


def test_native_video_without_served_model_name_uses_the_model_engine(fake: FakeModelServer, leaky_video: Path) -> None:
    result = make_client(fake.base_url, served_model_name=None).make_request(video_request(leaky_video))
    assert result.success, result.error
    assert only_request(fake).body["model"] == "roboreward-8b"


def test_file_url_transport_sends_the_content_addressed_native_mp4(fake: FakeModelServer, leaky_video: Path,
                                                                   tmp_path: Path) -> None:
    media_dir = tmp_path / "benchmark_output" / "scenarios" / "roboreward"
    digest = sha256(leaky_video.read_bytes())
    native_mp4 = Path(store_video(str(leaky_video), digest, str(media_dir)).path)
    assert native_mp4.read_bytes() == leaky_video.read_bytes()

    client = make_client(fake.base_url, video_transport="file_url")
    result = client.make_request(video_request(native_mp4))
    assert result.success, result.error

    content = only_request(fake).body["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": PROMPT}
    assert content[1] == {"type": "video_url", "video_url": {"url": f"file://{native_mp4.resolve()}"}}
    assert Path(content[1]["video_url"]["url"][len("file://"):]).read_bytes() == leaky_video.read_bytes()
    serialized = only_request(fake).raw.decode("utf-8")
    for forbidden in ("score_", LEAKY_SUBSET, "episode_", "attempt_"):
        assert forbidden not in serialized, forbidden


# --------------------------------------------------------------------------------------------- frames


def test_frames_are_image_url_data_urls_byte_identical_in_order(fake: FakeModelServer, tmp_path: Path) -> None:
    frame_set = extract_frames(str(SAMPLE / LEAKY_NAME), str(tmp_path / "frames"), FrameOptions())
    frames = [Path(p) for p in frame_set.paths]
    assert len(frames) >= 2, "the sample clip should give several frames"
    request = make_request([MediaObject(location=str(p), content_type="image/jpeg") for p in frames])
    result = make_client(fake.base_url).make_request(request)
    assert result.success, result.error

    recorded = only_request(fake)
    content = recorded.body["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": PROMPT}
    assert [part["type"] for part in content[1:]] == ["image_url"] * len(frames)
    for part in content[1:]:
        assert set(part) == {"type", "image_url"} and set(part["image_url"]) == {"url"}
        assert part["image_url"]["url"].startswith("data:image/jpeg;base64,")
    parts = media_parts(recorded)
    assert [p.kind for p in parts] == ["text"] + ["image"] * len(frames)
    assert [p.data for p in parts[1:]] == [frame.read_bytes() for frame in frames]
    assert "video_url" not in recorded.raw.decode("utf-8")


# --------------------------------------------------------------------------------------------- sampling hints


def test_sampling_hints_are_absent_by_default(fake: FakeModelServer, leaky_video: Path) -> None:
    assert make_client(fake.base_url).make_request(video_request(leaky_video)).success
    body = only_request(fake).body
    assert "mm_processor_kwargs" not in body and "media_io_kwargs" not in body
    assert "extra_body" not in body


def test_sampling_hints_reach_vllm(fake: FakeModelServer, leaky_video: Path) -> None:
    """The checkpoint processor's rule, as the Qwen3-VL deployments send it (vLLM >= 0.24 qwen3_vl loader keys)."""
    client = make_client(fake.base_url, video_fps=2, video_min_frames=4, video_max_frames=768)
    assert client.make_request(video_request(leaky_video)).success
    body = only_request(fake).body
    assert "mm_processor_kwargs" not in body  # frame sampling keys there clash with frames already sampled
    assert body["media_io_kwargs"] == {"video": {"fps": 2, "min_frames": 4, "max_frames": 768}}
    assert "extra_body" not in body


def test_fixed_frame_count_hint_alone(fake: FakeModelServer, leaky_video: Path) -> None:
    assert make_client(fake.base_url, video_num_frames=8).make_request(video_request(leaky_video)).success
    body = only_request(fake).body
    assert "mm_processor_kwargs" not in body
    assert body["media_io_kwargs"] == {"video": {"num_frames": 8}}


@pytest.mark.parametrize("decoding", ["request", "checkpoint", "greedy"])
def test_decoding_decides_the_sampling_fields(fake: FakeModelServer, leaky_video: Path, decoding: str) -> None:
    """``checkpoint`` sends no sampling field, so vLLM applies the checkpoint's generation_config.json."""
    request = dataclasses.replace(video_request(leaky_video), temperature=0.7)
    assert make_client(fake.base_url, decoding=decoding).make_request(request).success
    body = only_request(fake).body
    expected = {"request": 0.7, "checkpoint": None, "greedy": 0.0}[decoding]
    assert body.get("temperature") == expected and ("temperature" in body) == (expected is not None)
    assert not {"top_p", "top_k", "seed"} & set(body)


def test_decodings_are_cached_apart(fake: FakeModelServer, leaky_video: Path, tmp_path: Path) -> None:
    cache = SqliteCacheConfig(str(tmp_path / "decoding.sqlite"))
    for decoding in ("request", "checkpoint", "greedy"):
        assert make_client(fake.base_url, cache, decoding=decoding).make_request(video_request(leaky_video)).cached \
            is False
    assert len(fake.requests_to(CHAT)) == 3


def test_unknown_decoding_is_rejected(fake: FakeModelServer) -> None:
    with pytest.raises(ValueError, match="decoding must be one of request, checkpoint, greedy"):
        make_client(fake.base_url, decoding="beam")


# --------------------------------------------------------------------------------------------- cache


def test_cache_key_follows_the_video_content_not_the_path(fake: FakeModelServer, tmp_path: Path) -> None:
    cache = SqliteCacheConfig(str(tmp_path / "cache" / "vllm.sqlite"))
    (tmp_path / "cache").mkdir()
    video = tmp_path / "media" / "video.mp4"
    video.parent.mkdir()
    first_bytes = (SAMPLE / LEAKY_NAME).read_bytes()
    second_bytes = (SAMPLE / OTHER_VIDEO).read_bytes()
    assert first_bytes != second_bytes

    video.write_bytes(first_bytes)
    first = make_client(fake.base_url, cache).make_request(video_request(video))
    again = make_client(fake.base_url, cache).make_request(video_request(video))
    assert first.success and again.success
    assert (first.cached, again.cached) == (False, True)
    assert len(fake.requests_to(CHAT)) == 1

    video.write_bytes(second_bytes)  # same path, new content: must reach the server
    changed = make_client(fake.base_url, cache).make_request(video_request(video))
    assert changed.success and changed.cached is False
    requests = fake.requests_to(CHAT)
    assert len(requests) == 2
    assert [media_parts(r)[1].data for r in requests] == [first_bytes, second_bytes]

    changed_again = make_client(fake.base_url, cache).make_request(video_request(video))
    assert changed_again.cached is True
    assert len(fake.requests_to(CHAT)) == 2


def test_cache_key_follows_frame_content(fake: FakeModelServer, tmp_path: Path) -> None:
    cache = SqliteCacheConfig(str(tmp_path / "frames.sqlite"))
    frame_set = extract_frames(str(SAMPLE / LEAKY_NAME), str(tmp_path / "frames"), FrameOptions())
    frame = tmp_path / "frame.jpg"
    shutil.copyfile(frame_set.paths[0], frame)
    request = make_request([MediaObject(location=str(frame), content_type="image/jpeg")])
    assert make_client(fake.base_url, cache).make_request(request).cached is False
    assert make_client(fake.base_url, cache).make_request(request).cached is True
    shutil.copyfile(frame_set.paths[-1], frame)
    assert make_client(fake.base_url, cache).make_request(request).cached is False
    assert len(fake.requests_to(CHAT)) == 2


def test_cache_key_differs_between_prompts_and_settings(fake: FakeModelServer, leaky_video: Path,
                                                        tmp_path: Path) -> None:
    cache = SqliteCacheConfig(str(tmp_path / "settings.sqlite"))
    client = make_client(fake.base_url, cache)
    assert client.make_request(video_request(leaky_video)).cached is False
    assert client.make_request(video_request(leaky_video, prompt=build_prompt("another task"))).cached is False
    assert client.make_request(video_request(leaky_video, max_tokens=100)).cached is False
    hinted = make_client(fake.base_url, cache, video_fps=2)
    assert hinted.make_request(video_request(leaky_video)).cached is False
    assert len(fake.requests_to(CHAT)) == 4


def test_two_servers_with_the_same_served_name_never_share_answers(leaky_video: Path, tmp_path: Path) -> None:
    """A fine-tune served elsewhere under the base model's name: HELM gives every vllm/* deployment one cache file."""
    cache = SqliteCacheConfig(str(tmp_path / "vllm.sqlite"))
    with FakeModelServer(constant("ANSWER: 1")) as base, FakeModelServer(constant("ANSWER: 5")) as finetune:
        results = [make_client(url, cache).make_request(video_request(leaky_video))
                   for url in (base.base_url, finetune.base_url, base.base_url + "/", finetune.base_url)]
        sent = (len(base.requests_to(CHAT)), len(finetune.requests_to(CHAT)))
    assert [(r.completions[0].text, r.cached) for r in results] == [
        ("ANSWER: 1", False), ("ANSWER: 5", False), ("ANSWER: 1", True), ("ANSWER: 5", True)]
    assert sent == (1, 1), "each server received its own request"


ANSWER_SETTINGS = [{"server_url": "http://127.0.0.1:10/v1"}, {"served_model_name": "someone/else"},
                   {"decoding": "greedy"}, {"decoding": "checkpoint"}, {"video_transport": "file_url"},
                   {"video_fps": 2}, {"video_num_frames": 8}, {"top_logprobs": 5}]


@pytest.mark.parametrize("setting", ANSWER_SETTINGS, ids=lambda setting: next(iter(setting)))
def test_every_setting_that_changes_the_request_changes_the_cache_key(setting: dict[str, object],
                                                                      leaky_video: Path) -> None:
    arguments = {"server_url": "http://127.0.0.1:9/v1", **setting}
    base_key = built(make_client("http://127.0.0.1:9/v1"), video_request(leaky_video))[1]
    key = built(make_client(**arguments), video_request(leaky_video))[1]  # type: ignore[arg-type]
    assert key != base_key
    assert base_key["server"] == "http://127.0.0.1:9/v1" and base_key["model"] == SERVED


def test_settings_that_do_not_change_the_answer_keep_the_cache_key(leaky_video: Path) -> None:
    key = built(make_client("http://127.0.0.1:9/v1"), video_request(leaky_video))[1]
    for setting in ({"timeout_seconds": 1.0}, {"max_retries": 5}, {"api_key": "sk-other"},
                    {"max_images_per_prompt": 3, "max_request_bytes": 10**9}):
        assert built(make_client("http://127.0.0.1:9/v1/", **setting), video_request(leaky_video))[1] == key


def test_media_is_read_once_and_encoded_only_on_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    frame = tiny_frames(tmp_path / "frames", 1)[0]
    opened: list[str] = []
    encoded: list[int] = []
    real_open, real_data_url = open, openai_video_client._data_url

    def counting_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    def counting_data_url(content_type: str, data: bytes) -> str:
        encoded.append(len(data))
        return real_data_url(content_type, data)

    monkeypatch.setattr(openai_video_client, "open", counting_open, raising=False)
    monkeypatch.setattr(openai_video_client, "_data_url", counting_data_url)
    cache = SqliteCacheConfig(str(tmp_path / "vllm.sqlite"))
    with FakeModelServer() as fake:
        first = make_client(fake.base_url, cache).make_request(frames_request([frame]))
        second = make_client(fake.base_url, cache).make_request(frames_request([frame]))
    assert (first.success, first.cached, second.success, second.cached) == (True, False, True, True)
    assert opened == [str(frame), str(frame)]  # once per request: the key's digest and the body share the bytes
    assert encoded == [frame.stat().st_size]  # base64 only for the miss (benchmarks/requests_in_flight.py)


# --------------------------------------------------------------------------------------------- reasoning, usage


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
def test_separate_reasoning_goes_to_thinking(key: str, leaky_video: Path) -> None:
    reply = Reply(text="ANSWER: 4", reasoning="The block is held. ANSWER: 1 is wrong.", reasoning_key=key,
                  prompt_tokens=1234, completion_tokens=56)
    with FakeModelServer(lambda recorded: reply) as server:
        result = make_client(server.base_url).make_request(video_request(leaky_video))
    assert result.success, result.error
    (completion,) = result.completions
    assert completion.text == "ANSWER: 4"
    assert completion.thinking is not None
    assert completion.thinking.text == "The block is held. ANSWER: 1 is wrong."
    assert completion.finish_reason == {"reason": "stop", "prompt_tokens": 1234, "completion_tokens": 56}


def test_think_block_goes_to_thinking(leaky_video: Path) -> None:
    text = "<think>\nThe gripper released it. ANSWER: 2 would be too low.\n</think>\n\nANSWER: 5"
    with FakeModelServer(constant(text, prompt_tokens=900, completion_tokens=40)) as server:
        result = make_client(server.base_url).make_request(video_request(leaky_video))
    (completion,) = result.completions
    assert completion.text == "ANSWER: 5"
    assert completion.thinking is not None
    assert completion.thinking.text == "The gripper released it. ANSWER: 2 would be too low."
    assert "<think>" not in completion.text
    assert completion.finish_reason == {"reason": "stop", "prompt_tokens": 900, "completion_tokens": 40}


def test_think_block_and_reasoning_content_are_both_kept(leaky_video: Path) -> None:
    with FakeModelServer(constant("<think>inline</think>ANSWER: 3", reasoning="separate")) as server:
        result = make_client(server.base_url).make_request(video_request(leaky_video))
    (completion,) = result.completions
    assert completion.text == "ANSWER: 3"
    assert completion.thinking is not None and completion.thinking.text is not None
    assert "inline" in completion.thinking.text and "separate" in completion.thinking.text


def test_unterminated_think_block_is_reasoning_not_answer(leaky_video: Path) -> None:
    text = "<think>\nThe block looks grasped, maybe ANSWER: 2, but let me check the last frame again and"
    with FakeModelServer(constant(text, finish_reason="length")) as server:
        result = make_client(server.base_url).make_request(video_request(leaky_video))
    (completion,) = result.completions
    assert "ANSWER: 2" not in completion.text
    assert completion.thinking is not None and completion.thinking.text is not None
    assert "ANSWER: 2" in completion.thinking.text
    assert completion.finish_reason is not None and completion.finish_reason["reason"] == "length"


def test_reasoning_closed_without_an_opening_tag_is_split(leaky_video: Path) -> None:
    text = "The block is still held, so ANSWER: 2 is tempting.\n</think>\n\nANSWER: 4"
    with FakeModelServer(constant(text)) as server:
        result = make_client(server.base_url).make_request(video_request(leaky_video))
    (completion,) = result.completions
    assert completion.text == "ANSWER: 4"
    assert completion.thinking is not None
    assert completion.thinking.text == "The block is still held, so ANSWER: 2 is tempting."


def test_answer_without_reasoning_has_no_thinking(fake: FakeModelServer, leaky_video: Path) -> None:
    (completion,) = make_client(fake.base_url).make_request(video_request(leaky_video)).completions
    assert completion.text == "ANSWER: 4"
    assert completion.thinking is None
    assert completion.finish_reason == {"reason": "stop", "prompt_tokens": 11, "completion_tokens": 3}


# --------------------------------------------------------------------------------------------- failures


def test_transient_503_is_retried_by_the_openai_package(leaky_video: Path) -> None:
    behaviour = FailFirst(2, then=constant("ANSWER: 2"), status=503, headers={"retry-after-ms": "10"})
    with FakeModelServer(behaviour) as server:
        started = time.monotonic()
        result = make_client(server.base_url, max_retries=2).make_request(video_request(leaky_video))
        elapsed = time.monotonic() - started
        requests = server.requests_to(CHAT)
    assert result.success, result.error
    assert [c.text for c in result.completions] == ["ANSWER: 2"]
    assert len(requests) == 3
    assert len({r.raw for r in requests}) == 1, "the retries must resend the same body"
    assert elapsed < 5, f"retry-after-ms: 10 should keep retries fast, took {elapsed:.1f} s"


def test_transient_503_beyond_the_retry_budget_is_a_non_fatal_failure(leaky_video: Path) -> None:
    behaviour = FailFirst(5, then=constant("ANSWER: 2"), status=503, headers={"retry-after-ms": "10"})
    with FakeModelServer(behaviour) as server:
        result = make_client(server.base_url, max_retries=1).make_request(video_request(leaky_video))
        assert len(server.requests_to(CHAT)) == 2
    assert_non_fatal_failure(result)
    assert "503" in str(result.error)


def test_permanent_400_is_a_non_fatal_failure_without_retries(leaky_video: Path) -> None:
    behaviour = constant(status=400, error="This model's maximum context length is 262144 tokens")
    with FakeModelServer(behaviour) as server:
        result = make_client(server.base_url, max_retries=3).make_request(video_request(leaky_video))
        assert len(server.requests_to(CHAT)) == 1
    assert_non_fatal_failure(result)
    assert "400" in str(result.error)
    assert "maximum context length" in str(result.error)


def test_400_for_some_requests_only(leaky_video: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.mp4"
    shutil.copyfile(SAMPLE / OTHER_VIDEO, other)
    too_long = hashlib.sha256(other.read_bytes()).hexdigest()

    def behaviour(recorded: Recorded) -> Reply:
        video = media_parts(recorded)[1].data or b""
        if sha256(video) == too_long:
            return Reply(status=400, error="video too long")
        return Reply(text="ANSWER: 5")

    with FakeModelServer(behaviour) as server:
        client = make_client(server.base_url)
        good = client.make_request(video_request(leaky_video))
        bad = client.make_request(video_request(other))
    assert good.success and good.completions[0].text == "ANSWER: 5"
    assert_non_fatal_failure(bad)


def test_failures_are_not_cached(leaky_video: Path, tmp_path: Path) -> None:
    cache = SqliteCacheConfig(str(tmp_path / "failures.sqlite"))
    with FakeModelServer(constant(status=400, error="temporarily misconfigured")) as server:
        assert_non_fatal_failure(make_client(server.base_url, cache).make_request(video_request(leaky_video)))
        server.behaviour = constant("ANSWER: 1")
        recovered = make_client(server.base_url, cache).make_request(video_request(leaky_video))
        assert len(server.requests_to(CHAT)) == 2
    assert recovered.success and recovered.cached is False
    assert recovered.completions[0].text == "ANSWER: 1"


def test_connection_refused_is_a_non_fatal_failure(leaky_video: Path) -> None:
    client = make_client(f"http://127.0.0.1:{unused_port()}/v1", max_retries=1)
    started = time.monotonic()
    result = client.make_request(video_request(leaky_video))
    assert time.monotonic() - started < 10
    assert_non_fatal_failure(result)


def test_a_server_that_never_answers_fails_the_row_after_the_retries(leaky_video: Path) -> None:
    with FakeModelServer(constant(delay=6.0)) as server:
        client = make_client(server.base_url, max_retries=1, timeout_seconds=0.5)
        started = time.monotonic()
        result = client.make_request(video_request(leaky_video))
        elapsed = time.monotonic() - started
        attempts = len(server.requests_to(CHAT))
    assert_non_fatal_failure(result)
    assert attempts == 2, "the first attempt and one retry"
    assert "timed out" in str(result.error) and "after 1 retries" in str(result.error)
    assert elapsed < 5, f"two 0.5-s attempts and a short backoff took {elapsed:.1f} s"


def test_default_time_limits_reach_the_openai_client() -> None:
    client = OpenAIVideoClient(cache_config=BlackHoleCacheConfig(), base_url="http://127.0.0.1:9/v1")
    assert client.client.max_retries == 2
    assert (client.client.timeout.read, client.client.timeout.connect) == (300.0, 10.0)
    short = make_client("http://127.0.0.1:9/v1", timeout_seconds=2.0, max_retries=5)
    assert (short.client.max_retries, short.client.timeout.read, short.client.timeout.connect) == (5, 2.0, 2.0)


# --------------------------------------------------------------------------------------------- malformed 200 replies


@pytest.mark.parametrize("kind", sorted(MALFORMED_BODIES))
def test_a_malformed_reply_is_one_failed_request_and_never_cached(kind: str, leaky_video: Path,
                                                                    tmp_path: Path) -> None:
    cache = SqliteCacheConfig(str(tmp_path / "malformed.sqlite"))
    with FakeModelServer(lambda recorded: malformed(kind)) as server:
        failed = make_client(server.base_url, cache, max_retries=2).make_request(video_request(leaky_video))
        assert len(server.requests_to(CHAT)) == 1, "a 200 reply is not retried"
        server.behaviour = constant("ANSWER: 2")  # the server is fixed
        fixed = make_client(server.base_url, cache).make_request(video_request(leaky_video))
        again = make_client(server.base_url, cache).make_request(video_request(leaky_video))
        assert len(server.requests_to(CHAT)) == 2, "the rerun sent the request again; then it was cached"
    assert_non_fatal_failure(failed)
    assert "the server answered 200" in str(failed.error) and "not cached" in str(failed.error)
    assert (fixed.success, fixed.cached, fixed.completions[0].text) == (True, False, "ANSWER: 2")
    assert again.cached is True


def test_other_requests_are_answered_while_one_reply_is_malformed(leaky_video: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.mp4"
    shutil.copyfile(SAMPLE / OTHER_VIDEO, other)
    bad = sha256(other.read_bytes())

    def behaviour(recorded: Recorded) -> Reply:
        return malformed("empty-object") if sha256(media_parts(recorded)[1].data or b"") == bad else Reply("ANSWER: 4")

    with FakeModelServer(behaviour) as server:
        client = make_client(server.base_url)
        results = [client.make_request(video_request(path)) for path in (leaky_video, other, leaky_video)]
    assert [r.success for r in results] == [True, False, True]
    assert "no choices" in str(results[1].error)


def test_missing_media_file_fails_without_a_request(fake: FakeModelServer, tmp_path: Path) -> None:
    video = tmp_path / "gone.mp4"
    shutil.copyfile(SAMPLE / LEAKY_NAME, video)
    request = video_request(video)  # MediaObject checks the file exists when it is built
    video.unlink()
    result = make_client(fake.base_url).make_request(request)
    assert_non_fatal_failure(result)
    assert fake.requests == []


def test_unsupported_media_fails_without_a_request(fake: FakeModelServer, tmp_path: Path) -> None:
    audio = tmp_path / "sound.wav"
    audio.write_bytes(b"RIFF....WAVE")
    result = make_client(fake.base_url).make_request(
        make_request([MediaObject(location=str(audio), content_type="audio/wav")]))
    assert_non_fatal_failure(result)
    assert fake.requests == []


# --------------------------------------------------------------------------------------------- request limits


@pytest.mark.parametrize("argument", list(DECLARED_LIMIT_ARGS))
@pytest.mark.parametrize("value", [-1, 0, 1.5, "3", True])
def test_a_bad_limit_names_the_argument(argument: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"OpenAIVideoClient declares {argument}: .*; it must be a whole number >= 1"):
        make_client("http://127.0.0.1:9/v1", None, **{argument: value})


def test_absent_limits_limit_nothing() -> None:
    assert make_client("http://127.0.0.1:9/v1").limits is None
    limits = make_client("http://127.0.0.1:9/v1", max_images_per_prompt=4, max_videos_per_prompt=1,
                         max_request_bytes=1000).limits
    assert limits is not None
    assert (limits.max_images, limits.max_videos, limits.max_request_bytes) == (4, 1, 1000)


def test_a_request_over_the_image_limit_is_not_sent(fake: FakeModelServer, tmp_path: Path) -> None:
    frames = tiny_frames(tmp_path / "frames", 3)
    client = make_client(fake.base_url, max_images_per_prompt=2)
    over = client.make_request(frames_request(frames))
    assert fake.requests == [], "nothing was sent for the row over the limit"
    fits = client.make_request(frames_request(frames[:2]))
    assert_non_fatal_failure(over)
    error = str(over.error)
    assert "not sent" in error and "3 images" in error and "max_images_per_prompt=2, 1 over" in error
    assert "max_frames=2" in error
    assert fits.success and [p.kind for p in media_parts(only_request(fake))] == ["text", "image", "image"]


def test_a_request_over_the_video_limit_is_not_sent(fake: FakeModelServer, leaky_video: Path) -> None:
    two = make_request([MediaObject(location=str(leaky_video), content_type="video/mp4")] * 2)
    result = make_client(fake.base_url, max_videos_per_prompt=1).make_request(two)
    assert_non_fatal_failure(result)
    assert "2 videos" in str(result.error) and "max_videos_per_prompt=1, 1 over" in str(result.error)
    assert "video=frames" in str(result.error) and fake.requests == []


def test_a_request_over_the_byte_limit_is_not_sent_nor_cached(fake: FakeModelServer, leaky_video: Path,
                                                              tmp_path: Path) -> None:
    cache = SqliteCacheConfig(str(tmp_path / "limits.sqlite"))
    size = leaky_video.stat().st_size  # inline, the video weighs 4/3 of that: over a limit of its raw size
    over = make_client(fake.base_url, cache, max_request_bytes=size).make_request(video_request(leaky_video))
    assert_non_fatal_failure(over)
    error = str(over.error)
    assert f"max_request_bytes={size}" in error and "with base64" in error and " over" in error
    assert "video=frames" in error and fake.requests == []
    by_path = make_client(fake.base_url, cache, max_request_bytes=size, video_transport="file_url")
    assert by_path.make_request(video_request(leaky_video)).success, "a file:// video weighs its URL"
    unlimited = make_client(fake.base_url, cache).make_request(video_request(leaky_video))
    assert unlimited.success and unlimited.cached is False, "the refused request was never cached"
    assert len(fake.requests_to(CHAT)) == 2


# --------------------------------------------------------------------------------------------- construction


@pytest.mark.parametrize("base_url", [None, ""])
def test_missing_base_url_is_an_error(base_url: str | None) -> None:
    with pytest.raises(ValueError, match="vllmBaseUrl"):
        OpenAIVideoClient(cache_config=BlackHoleCacheConfig(), base_url=base_url)


@pytest.mark.parametrize("transport", ["ftp", "DATA_URL", "inline"])
def test_bad_video_transport_is_an_error(transport: str) -> None:
    with pytest.raises(ValueError, match="video_transport"):
        OpenAIVideoClient(cache_config=BlackHoleCacheConfig(), base_url="http://127.0.0.1:1/v1",
                          video_transport=transport)


def test_fake_lists_served_models(fake: FakeModelServer) -> None:
    from openai import OpenAI

    models: list[str] = [m.id for m in OpenAI(base_url=fake.base_url, api_key="sk-test").models.list()]
    assert models == [SERVED]


# --------------------------------------------------------------------------------------------- what loads

_DEFAULT_REQUEST = """
import json, sys
from helm.common.cache import BlackHoleCacheConfig
from helm.common.media_object import MediaObject, MultimediaObject
from helm.common.request import Request
from helm_roboreward.helm_frontend.clients.openai_video_client import OpenAIVideoClient
from helm_roboreward.helm_frontend.clients.transformers_client import TransformersQwen3VLClient
from tests.helpers.fakes import FakeModelServer

media = [MediaObject(text="Rate the video.", content_type="text/plain"),
         MediaObject(location=sys.argv[1], content_type="video/mp4")]
with FakeModelServer() as fake:
    result = OpenAIVideoClient(BlackHoleCacheConfig(), base_url=fake.base_url).make_request(Request(
        model="qwen/qwen3-vl-8b-instruct", model_deployment="vllm/qwen3-vl-8b-instruct",
        multimodal_prompt=MultimediaObject(media), max_tokens=5000, temperature=0.0))
assert result.success, result.error
print(json.dumps(sorted(name for name in sys.modules if name.startswith("helm_roboreward.helm_frontend.clients"))))
"""


def test_a_default_request_loads_only_the_official_clients(leaky_video: Path) -> None:
    """The two official clients and a default vLLM request load their own modules and what they share, no other
    client (Gemini's, the baselines)."""
    done = subprocess.run([sys.executable, "-c", _DEFAULT_REQUEST, str(leaky_video)], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[3], check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == [
        "helm_roboreward.helm_frontend.clients", "helm_roboreward.helm_frontend.clients.chat_replies",
        "helm_roboreward.helm_frontend.clients.logprobs", "helm_roboreward.helm_frontend.clients.openai_video_client",
        "helm_roboreward.helm_frontend.clients.pyav_decoder",
        "helm_roboreward.helm_frontend.clients.transformers_client"]
