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
import shutil
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from helm.common.cache import BlackHoleCacheConfig, CacheConfig, SqliteCacheConfig
from helm.common.media_object import MediaObject, MultimediaObject
from helm.common.request import Request, RequestResult
from helm.proxy.retry import retry_if_request_failed

from helm_roboreward.core.prompt import build_prompt
from helm_roboreward.helm_layer.clients.openai_video_client import OpenAIVideoClient
from helm_roboreward.media.copies import store_video
from helm_roboreward.media.decoding import extract_frames
from helm_roboreward.media.selection import FrameOptions
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


def test_file_url_transport_sends_the_content_addressed_copy(fake: FakeModelServer, leaky_video: Path,
                                                             tmp_path: Path) -> None:
    media_dir = tmp_path / "benchmark_output" / "scenarios" / "roboreward"
    digest = sha256(leaky_video.read_bytes())
    copy = Path(store_video(str(leaky_video), digest, str(media_dir)).path)
    assert copy.read_bytes() == leaky_video.read_bytes()

    client = make_client(fake.base_url, video_transport="file_url")
    result = client.make_request(video_request(copy))
    assert result.success, result.error

    content = only_request(fake).body["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": PROMPT}
    assert content[1] == {"type": "video_url", "video_url": {"url": f"file://{copy.resolve()}"}}
    assert Path(content[1]["video_url"]["url"][len("file://"):]).read_bytes() == leaky_video.read_bytes()
    serialized = only_request(fake).raw.decode("utf-8")
    for forbidden in ("score_", LEAKY_SUBSET, "episode_", "attempt_"):
        assert forbidden not in serialized, forbidden


# --------------------------------------------------------------------------------------------- frames


def test_frames_are_image_url_data_urls_byte_identical_in_order(fake: FakeModelServer, tmp_path: Path) -> None:
    frame_set = extract_frames(str(SAMPLE / LEAKY_NAME), str(tmp_path / "frames"), FrameOptions())
    frames = [Path(p) for p in frame_set.frame_files]
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
    shutil.copyfile(frame_set.frame_files[0], frame)
    request = make_request([MediaObject(location=str(frame), content_type="image/jpeg")])
    assert make_client(fake.base_url, cache).make_request(request).cached is False
    assert make_client(fake.base_url, cache).make_request(request).cached is True
    shutil.copyfile(frame_set.frame_files[-1], frame)
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


def test_timeout_is_a_non_fatal_failure(leaky_video: Path) -> None:
    with FakeModelServer(constant(delay=3.0)) as server:
        client = make_client(server.base_url, max_retries=0, timeout_seconds=0.3)
        result = client.make_request(video_request(leaky_video))
    assert_non_fatal_failure(result)


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
