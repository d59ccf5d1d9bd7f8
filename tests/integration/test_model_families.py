"""Each model family end to end: the real ``helm-run`` and the real client libraries against a loopback fake.

One ``helm-run`` subprocess (no ``--plugins``: the entry point loads the plugin) evaluates the
``sim_kuka`` sample subset with one model of each client family, every client pointed at one
:class:`~tests.helpers.fakes.FakeModelServer` (see tests/helpers/harness.py for how):

| family | deployment | HELM client (library) | API | media |
|---|---|---|---|---|
| RoboReward 8B | vllm/roboreward-8b (named) | OpenAIVideoClient (openai) | chat | mp4 |
| RoboReward 4B, decoding=greedy | vllm/roboreward-4b-greedy (option) | OpenAIVideoClient (openai) | chat | mp4 |
| Llama 4 Scout | vllm/llama-4-scout-17b-16e-instruct | OpenAIVideoClient (openai) | chat | frames |
| GPT-5 mini | openai/gpt-5-mini-2025-08-07 (HELM) | OpenAIResponseClient (openai) | responses | frames |
| GPT-5.5 xhigh | openai/gpt-5.5-2026-04-23-xhigh-... (package) | OpenAIResponseClient (openai) | responses | frames |
| Claude Sonnet 4.5 | anthropic/claude-sonnet-4-5-20250929 (HELM) | AnthropicMessagesClient | messages | frames |
| Gemini Robotics-ER 2 | google/gemini-robotics-er-2-preview (package) | GoogleGenAIClient | Gemini | mp4 |
| Gemini 2.5 Flash | google/gemini-2.5-flash (HELM) | GoogleGenAIClient (google-genai) | Gemini | mp4 |
| Gemini 2.5 Flash-Lite | google/gemini-2.5-flash-lite (HELM, named) | GoogleGenAIClient (google-genai) | Gemini | mp4 |
| Gemini 2.5 Pro, layout=one_message | google/gemini-2.5-pro-one-message (option) | OneMessage... | Gemini | mp4 |

Gemini runs on HELM's own client by default (the official layout: text and video as two user turns);
``layout=one_message`` picks the option deployment that sends the prompt as one user message. The vLLM deployments of
the checkpoint-sampling families send no temperature (the server applies the checkpoint's generation config)
unless ``decoding=greedy`` picks the greedy option deployment.

The fake answers a score computed from what it received (prompt and video hash, or prompt and
number of images) plus a decoy "ANSWER: 1" in the separate reasoning, so the tests can check
every completion and the MAE against what the fake said, and that reasoning never reaches the
parser. Further tests: ``video=native`` on a frames-only client fails before any request; a
routing table over the seed families with the real package + HELM deployments (helm-run's
registration order, in a subprocess); two concurrent helm-run processes sharing output and cache
give the same stats as one sequential run.
"""

import collections
import functools
import io
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from PIL import Image

from helm_roboreward.protocol.rules import select_frame_indices
from tests.helpers.fakes import (
    CHAT,
    GEMINI,
    MESSAGES,
    RESPONSES,
    FailFirst,
    FakeModelServer,
    Recorded,
    Reply,
    gemini_inline,
    media_parts,
    user_messages,
    without_media_payloads,
)
from tests.helpers.harness import (
    ANTHROPIC_KEY,
    GOOGLE_KEY,
    OPENAI_KEY,
    SAMPLE,
    TIMEOUT,
    VLLM_KEY,
    check_completed,
    gold_of,
    helm_environment,
    helm_run_command,
    media_locations,
    private_local_path,
    prompt_of,
    read_json,
    reap,
    request_states,
    run_stats,
    sha256,
)
from tests.helpers.sample import rows_of, sample_rows
from tests.helpers.videos import decode_all

SUBSET = "sim_kuka"
DECOY_REASONING = "Weighing the final frame. A careless reader would answer ANSWER: 1 here."


@dataclass(frozen=True)
class Family:
    key: str
    model: str
    deployment: str | None
    api: str
    served: str
    """The model name the API request carries."""
    mode: str
    max_tokens: int
    options: str = ""
    """Run-entry options (``layout=one_message``, ``decoding=greedy``): in the entry and in the run name."""
    temperature: float | None = 0.0
    """The temperature the API request carries; None: not sent (the checkpoint's generation config applies)."""

    @property
    def entry(self) -> str:
        entry = f"roboreward:subset={SUBSET},data=sample,{self.options + ',' if self.options else ''}model={self.model}"
        return entry + (f",model_deployment={self.deployment}" if self.deployment else "")

    @property
    def run_name(self) -> str:
        options = f",{self.options}" if self.options else ""
        name = (f"roboreward:subset={SUBSET},data=sample,video={self.mode}{options},"
                f"model={self.model.replace('/', '_')}")
        return name + (f",model_deployment={self.deployment.replace('/', '_')}" if self.deployment else "")


FAMILIES = [
    Family("roboreward-8b", "teetone/roboreward-8b", "vllm/roboreward-8b", CHAT, "teetone/RoboReward-8B", "native",
           5000, temperature=None),
    Family("roboreward-4b-greedy", "teetone/roboreward-4b", "vllm/roboreward-4b", CHAT, "teetone/RoboReward-4B",
           "native", 5000, options="decoding=greedy"),
    Family("llama-4-scout-vllm", "meta/llama-4-scout-17b-16e-instruct", "vllm/llama-4-scout-17b-16e-instruct",
           CHAT, "meta-llama/Llama-4-Scout-17B-16E-Instruct", "frames", 5000),
    Family("gpt-5-mini", "openai/gpt-5-mini-2025-08-07", None, RESPONSES, "gpt-5-mini-2025-08-07", "frames", 65000),
    Family("gpt-5.5-xhigh", "openai/gpt-5.5-2026-04-23-xhigh-reasoning-effort", None, RESPONSES, "gpt-5.5-2026-04-23",
           "frames", 65000),
    Family("claude-sonnet-4.5", "anthropic/claude-sonnet-4-5-20250929", None, MESSAGES, "claude-sonnet-4-5-20250929",
           "frames", 5000),
    Family("gemini-robotics-er-2", "google/gemini-robotics-er-2-preview", None, GEMINI,
           "gemini-robotics-er-2-preview", "native", 65000),
    Family("gemini-2.5-flash", "google/gemini-2.5-flash", None, GEMINI, "gemini-2.5-flash", "native", 65000),
    Family("gemini-2.5-flash-lite-helm", "google/gemini-2.5-flash-lite", "google/gemini-2.5-flash-lite", GEMINI,
           "gemini-2.5-flash-lite", "native", 65000),
    Family("gemini-2.5-pro-one-message", "google/gemini-2.5-pro", None, GEMINI, "gemini-2.5-pro", "native", 65000,
           options="layout=one_message"),
]
HELM_GEMINI_LAYOUT = {"gemini-robotics-er-2", "gemini-2.5-flash", "gemini-2.5-flash-lite-helm"}
"""Families on HELM's own Gemini deployment: text and video as two user turns."""
FAMILY_IDS = [f.key for f in FAMILIES]
BY_KEY = {f.key: f for f in FAMILIES}
FRAME_FAMILIES = [f for f in FAMILIES if f.mode == "frames"]
REENCODING_FAMILIES = [f for f in FRAME_FAMILIES if f.api != CHAT]


# --------------------------------------------------------------------------------------------- the fake's script


def scripted_score(prompt: str, video_sha256: str | None, num_images: int) -> int:
    """The score the fake answers, from what the request carried."""
    digest = sha256(f"{prompt}|{video_sha256}|{num_images}".encode())
    return int(digest, 16) % 5 + 1


def scripted_answer(score: int) -> str:
    return f"The block ends where the rubric places it.\nANSWER: {score}"


def prompt_tokens_for(prompt: str) -> int:
    return 1000 + len(prompt)


def scripted_behaviour(recorded: Recorded) -> Reply:
    parts = media_parts(recorded)
    prompt = "".join(p.text or "" for p in parts if p.kind == "text")
    videos = [p for p in parts if p.kind == "video"]
    video_sha = sha256(videos[0].data) if videos and videos[0].data is not None else None
    images = sum(1 for p in parts if p.kind == "image")
    score = scripted_score(prompt, video_sha, images)
    return Reply(text=scripted_answer(score), reasoning=DECOY_REASONING, prompt_tokens=prompt_tokens_for(prompt),
                 completion_tokens=7)


def expected_score(state: dict[str, Any]) -> int:
    extra = state["instance"]["extra_data"]
    native = extra["video_mode"] == "native"
    return scripted_score(prompt_of(state), extra["video_sha256"] if native else None,
                          0 if native else len(media_locations(state)))


# --------------------------------------------------------------------------------------------- the run


@dataclass
class FamiliesRun:
    workdir: Path
    runs: Path
    requests: list[Recorded]
    stdout: str
    stderr: str

    def run_dir(self, family: Family) -> Path:
        return self.runs / family.run_name

    def requests_of(self, family: Family) -> list[Recorded]:
        return [r for r in self.requests if r.api == family.api and r.model == family.served]

    def states(self, family: Family) -> list[dict[str, Any]]:
        return request_states(self.run_dir(family))


@pytest.fixture(scope="module")
def families(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FamiliesRun]:
    workdir = tmp_path_factory.mktemp("families")
    with FakeModelServer(scripted_behaviour) as fake:
        local = private_local_path(workdir / "local", fake)
        process = subprocess.run(helm_run_command([f.entry for f in FAMILIES], "families", local),
                                 cwd=workdir, env=helm_environment(fake), capture_output=True, text=True,
                                 timeout=TIMEOUT)
        check_completed(process, "helm-run")
        yield FamiliesRun(workdir, workdir / "benchmark_output" / "runs" / "families", fake.requests,
                          process.stdout, process.stderr)


# --------------------------------------------------------------------------------------------- every family


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
def test_run_name_carries_the_resolved_video_mode(families: FamiliesRun, family: Family) -> None:
    assert families.run_dir(family).is_dir(), sorted(p.name for p in families.runs.iterdir())
    assert f"video={family.mode}" in family.run_name
    for state in families.states(family):
        assert state["instance"]["extra_data"]["video_mode"] == family.mode
    spec = json.loads((families.run_dir(family) / "run_spec.json").read_text(encoding="utf-8"))
    assert spec["routing"]["video"] == "auto"  # what the entry asked, kept with the run (provenance)


def test_every_request_belongs_to_a_family(families: FamiliesRun) -> None:
    assert sum(len(families.requests_of(f)) for f in FAMILIES) == len(families.requests)
    assert {r.api for r in families.requests} <= {CHAT, RESPONSES, MESSAGES, GEMINI}


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
def test_one_request_per_row_text_first(families: FamiliesRun, family: Family) -> None:
    requests = families.requests_of(family)
    assert rows_of(SUBSET), f"the sample has no {SUBSET} rows"
    assert len(requests) == len(rows_of(SUBSET))
    media_kind = "video" if family.mode == "native" else "image"
    for recorded in requests:
        assert len(user_messages(recorded)) == (2 if family.key in HELM_GEMINI_LAYOUT else 1)
        parts = media_parts(recorded)
        assert parts[0].kind == "text"
        assert [p.kind for p in parts[1:]] == [media_kind] * (len(parts) - 1)
        assert len(parts) >= 2
        if family.mode == "native":
            assert len(parts) == 2, "one video per request"
        for part in parts[1:]:
            assert part.mime_type == ("video/mp4" if family.mode == "native" else "image/jpeg")
            assert part.data, "media must be inline bytes"


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
def test_prompts_are_the_instances_prompts(families: FamiliesRun, family: Family) -> None:
    sent = collections.Counter(media_parts(r)[0].text or "" for r in families.requests_of(family))
    expected = collections.Counter(prompt_of(s) for s in families.states(family))
    assert sent == expected
    tasks = collections.Counter(row["task"] for row in rows_of(SUBSET))
    assert collections.Counter(p.rsplit("\n\nTask: ", 1)[1] for p in sent.elements()) == tasks


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
def test_generation_settings(families: FamiliesRun, family: Family) -> None:
    for state in families.states(family):
        assert state["request"]["max_tokens"] == family.max_tokens
        assert state["request"]["temperature"] == 0
        assert state["request"]["num_completions"] == 1
    for recorded in families.requests_of(family):
        body = recorded.body
        if family.api == CHAT:
            assert body["max_tokens"] == family.max_tokens
            assert body.get("temperature") == family.temperature and ("temperature" in body) == (
                family.temperature is not None)
            assert not {"top_p", "top_k", "stop"} & set(body)
        elif family.api == RESPONSES:
            assert body["max_output_tokens"] == family.max_tokens
            assert body["store"] is False
            # HELM drops temperature for OpenAI reasoning models (the API rejects it).
            assert "temperature" not in body
        elif family.api == MESSAGES:
            assert (body["max_tokens"], body["temperature"]) == (family.max_tokens, 0)
            assert body["stop_sequences"] == []
            assert "system" not in body
        else:
            config = body["generationConfig"]
            assert config["maxOutputTokens"] == family.max_tokens
            assert config["temperature"] == 0
            assert config.get("candidateCount", 1) == 1
            assert "systemInstruction" not in body and "system_instruction" not in body


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
def test_answers_and_mae_follow_the_fakes_answers(families: FamiliesRun, family: Family) -> None:
    states = families.states(family)
    errors = []
    for state in states:
        score = expected_score(state)
        (completion,) = state["result"]["completions"]
        assert state["result"]["success"] is True
        assert completion["text"] == scripted_answer(score)
        assert (completion.get("thinking") or {}).get("text") == DECOY_REASONING
        errors.append(abs(score - gold_of(state)))
    stats = run_stats(families.run_dir(family))
    assert stats["abs_error"] == pytest.approx(sum(errors) / len(errors), abs=1e-12)
    assert stats["macro_mae"] == pytest.approx(sum(errors) / len(errors), abs=1e-12)
    assert stats["failed_request"] == 0
    assert stats["invalid_output"] == 0
    assert stats["num_instances"] == len(rows_of(SUBSET)) == len(states)
    # The decoy in the reasoning would have scored 1 everywhere.
    assert stats["predicted_score"] != 1.0


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
def test_api_keys_reach_the_server(families: FamiliesRun, family: Family) -> None:
    for recorded in families.requests_of(family):
        headers = recorded.headers
        if family.api == CHAT:
            assert headers["authorization"] == f"Bearer {VLLM_KEY}"
        elif family.api == RESPONSES:
            assert headers["authorization"] == f"Bearer {OPENAI_KEY}"
        elif family.api == MESSAGES:
            assert headers["x-api-key"] == ANTHROPIC_KEY
            assert "anthropic-version" in headers
        else:
            assert headers["x-goog-api-key"] == GOOGLE_KEY
            assert recorded.path == f"/v1beta/models/{family.served}:generateContent"


def test_no_request_leaks_a_label_file_name_or_label_check(families: FamiliesRun) -> None:
    rows = sample_rows()
    stems = {Path(row["file_name"]).stem for row in rows}
    checks = {row["gpt5_mini_check"] for row in rows}
    assert families.requests
    for recorded in families.requests:
        text = without_media_payloads(recorded) + recorded.path + recorded.query
        for forbidden in ("score_", "_attempt_", "_relabel_", ".mp4", "gpt5_mini_check", "sim_kuka", "sim_",
                          "benchmark_output"):
            assert forbidden not in text, (forbidden, recorded.path)
        assert not any(stem in text for stem in stems)
        assert not any(check in text for check in checks)
        prompt = media_parts(recorded)[0].text or ""
        assert not re.search(r"ANSWER:\s*-?\d", prompt), "a gold-looking answer in the prompt"


# --------------------------------------------------------------------------------------------- native video


@pytest.mark.parametrize("family", [f for f in FAMILIES if f.mode == "native"],
                         ids=[f.key for f in FAMILIES if f.mode == "native"])
def test_native_video_bytes_are_the_rows_mp4(families: FamiliesRun, family: Family) -> None:
    states = families.states(family)
    for state in states:
        extra = state["instance"]["extra_data"]
        assert extra["video_sha256"] == sha256((SAMPLE / extra["source_file"]).read_bytes())
        (location,) = media_locations(state)
        assert Path(families.workdir / location).read_bytes() == (SAMPLE / extra["source_file"]).read_bytes()
    sent = collections.Counter((media_parts(r)[0].text, sha256(media_parts(r)[1].data or b""))
                               for r in families.requests_of(family))
    expected = collections.Counter((prompt_of(s), s["instance"]["extra_data"]["video_sha256"]) for s in states)
    assert sent == expected


@pytest.mark.parametrize("key", ["roboreward-8b", "roboreward-4b-greedy"])
def test_vllm_native_payload_is_text_then_one_video_url(families: FamiliesRun, key: str) -> None:
    assert families.requests_of(BY_KEY[key])
    for recorded in families.requests_of(BY_KEY[key]):
        (message,) = recorded.body["messages"]
        assert message["role"] == "user"
        text, video = message["content"]
        assert set(text) == {"type", "text"} and text["type"] == "text"
        assert video["type"] == "video_url" and set(video) == {"type", "video_url"}
        assert video["video_url"]["url"].startswith("data:video/mp4;base64,")
        assert "mm_processor_kwargs" not in recorded.body
        # The checkpoint processor's frame rule, sent explicitly (vLLM >= 0.24 qwen3_vl loader keys).
        assert recorded.body["media_io_kwargs"] == {"video": {"fps": 2, "min_frames": 4, "max_frames": 768}}


def test_vllm_usage_becomes_prompt_token_stats(families: FamiliesRun) -> None:
    for family in (BY_KEY["roboreward-8b"], BY_KEY["llama-4-scout-vllm"]):
        states = families.states(family)
        stats = run_stats(families.run_dir(family))
        expected = sum(prompt_tokens_for(prompt_of(s)) for s in states) / len(states)
        assert stats["num_prompt_tokens"] == pytest.approx(expected, abs=1e-9)
        assert stats["num_completion_tokens"] == 7


@pytest.mark.parametrize("key", ["gemini-robotics-er-2", "gemini-2.5-flash", "gemini-2.5-flash-lite-helm",
                                 "gemini-2.5-pro-one-message"])
def test_gemini_video_is_inline_mp4_after_the_text(families: FamiliesRun, key: str) -> None:
    family = BY_KEY[key]
    assert families.requests_of(family)
    for recorded in families.requests_of(family):
        contents = recorded.body["contents"]
        assert all(content["role"] == "user" for content in contents)
        if key in HELM_GEMINI_LAYOUT:  # HELM's client: one user turn per media object
            assert [len(content["parts"]) for content in contents] == [1, 1]
        else:  # layout=one_message (an option): one user message, text then video
            assert [len(content["parts"]) for content in contents] == [2]
        text_part, video_part = [part for content in contents for part in content["parts"]]
        assert set(text_part) == {"text"}
        inline = gemini_inline(video_part)
        assert inline is not None, f"no inline data in {sorted(video_part)}"
        assert inline["mime_type"] == "video/mp4"
        assert "fileData" not in video_part and "file_data" not in video_part


# --------------------------------------------------------------------------------------------- frames


def _image(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=np.int16)


def _changed_share(a: np.ndarray, b: np.ndarray) -> float:
    """Share of pixels where some channel differs by more than 48 levels.

    JPEG re-encoding moves many pixels a little (mean error up to ~2 levels here) but almost none by
    48; two different moments of a rollout differ there (the gripper and the block move). Measured
    on the sample: re-encoded vs own frame <= 0.0001, different frames >= 0.0036.
    """
    assert a.shape == b.shape, (a.shape, b.shape)
    return float((np.abs(a.astype(np.int16) - b.astype(np.int16)).max(axis=2) > 48).mean())


SAME_FRAME = 0.001
"""Above this changed share two images show different moments."""


def _probe(path: Path) -> tuple[int, float]:
    """(decodable frames, native fps) of a video, read with PyAV."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        rate = stream.average_rate or stream.guessed_rate
        fps = float(rate) if rate else 0.0
    return len(_decoded(str(path))), fps


@pytest.mark.parametrize("family", FRAME_FAMILIES, ids=[f.key for f in FRAME_FAMILIES])
def test_frame_instances_carry_the_official_frames(families: FamiliesRun, family: Family) -> None:
    """1 frame per second from frame 0, no forced last frame, at native size, as stored JPEGs."""
    for state in families.states(family):
        extra = state["instance"]["extra_data"]
        source = SAMPLE / extra["source_file"]
        num_frames, fps = _probe(source)
        official = select_frame_indices(num_frames, fps)
        assert extra["frame_indices"] == official
        assert official == list(range(0, num_frames, max(int(fps // 1), 1)))
        locations = media_locations(state)
        assert len(locations) == len(official) == extra["num_frames"]
        for index, location in zip(official, locations, strict=True):
            assert location.startswith("benchmark_output/scenarios/roboreward/"), location
            problem = _jpeg_is_not_source_frame(str(families.workdir / location), str(source), index)
            assert problem is None, f"{location}: {problem}"


@functools.cache
def _decoded(source: str) -> np.ndarray:
    """Every frame of a source video, stacked (frames, height, width, 3)."""
    return np.stack(decode_all(source)).astype(np.int16)


@functools.cache
def _jpeg_is_not_source_frame(jpeg_path: str, source: str, index: int) -> str | None:
    """None when a stored JPEG shows source frame ``index`` at native size, else what is wrong.

    Frames of the same moment (a still scene) are indistinguishable; every frame of another moment
    must be further from the JPEG than frame ``index`` is. Cached: the frame families share the files.
    """
    frames = _decoded(source)
    jpeg = _image(Path(jpeg_path).read_bytes())
    if jpeg.shape != frames[index].shape:
        return f"size {jpeg.shape} is not the native {frames[index].shape}"
    to_jpeg = (np.abs(frames - jpeg[None]).max(axis=3) > 48).mean(axis=(1, 2))
    to_frame = (np.abs(frames - frames[index][None]).max(axis=3) > 48).mean(axis=(1, 2))
    if to_jpeg[index] >= SAME_FRAME / 2:
        return f"not source frame {index} (changed share {to_jpeg[index]:.4f})"
    closer = [other for other in range(len(frames))
              if to_frame[other] > SAME_FRAME and to_jpeg[other] <= to_jpeg[index]]
    return f"as close to source frames {closer} as to frame {index}" if closer else None


def test_vllm_frames_are_the_stored_jpegs_byte_for_byte(families: FamiliesRun) -> None:
    family = BY_KEY["llama-4-scout-vllm"]
    sent: collections.Counter[tuple[str | None, tuple[str, ...]]] = collections.Counter()
    for recorded in families.requests_of(family):
        (message,) = recorded.body["messages"]
        assert message["content"][0]["type"] == "text"
        for part in message["content"][1:]:
            assert part["type"] == "image_url"
            assert part["image_url"]["url"].startswith("data:image/jpeg;base64,")
        parts = media_parts(recorded)
        sent[(parts[0].text, tuple(sha256(p.data or b"") for p in parts[1:]))] += 1
    expected = collections.Counter(
        (prompt_of(s), tuple(sha256((families.workdir / loc).read_bytes()) for loc in media_locations(s)))
        for s in families.states(family))
    assert sent == expected


@pytest.mark.parametrize("family", REENCODING_FAMILIES, ids=[f.key for f in REENCODING_FAMILIES])
def test_reencoded_frames_are_the_official_frames_in_order(families: FamiliesRun, family: Family) -> None:
    """HELM's OpenAI and Anthropic clients re-encode each JPEG: match by prompt, count, size and pixels."""
    states = families.states(family)
    officials = [[_image((families.workdir / loc).read_bytes()) for loc in media_locations(s)] for s in states]
    unmatched = list(range(len(states)))
    for recorded in families.requests_of(family):
        parts = media_parts(recorded)
        received = [_image(p.data or b"") for p in parts[1:]]
        candidates = [i for i in unmatched
                      if prompt_of(states[i]) == parts[0].text and len(officials[i]) == len(received)
                      and all(a.shape == b.shape for a, b in zip(officials[i], received, strict=True))]
        assert candidates, "no instance with this prompt, frame count and frame size"
        best = min(candidates, key=lambda i: sum(_changed_share(a, b)
                                                 for a, b in zip(officials[i], received, strict=True)))
        unmatched.remove(best)
        official = officials[best]
        distinct_pairs = 0
        for position, image in enumerate(received):
            own = _changed_share(image, official[position])
            assert own < SAME_FRAME / 2, f"frame {position} is not the official frame ({own:.4f})"
            for other, candidate in enumerate(official):
                # Order: each received frame is nearer its own official frame than any other moment's frame.
                if other != position and _changed_share(candidate, official[position]) > SAME_FRAME:
                    distinct_pairs += 1
                    assert own < _changed_share(image, candidate), (position, other)
        assert distinct_pairs or len(received) == 1, "the order check compared nothing"
    assert unmatched == []


def test_responses_payload_shape(families: FamiliesRun) -> None:
    for key, effort in (("gpt-5-mini", None), ("gpt-5.5-xhigh", "xhigh")):
        for recorded in families.requests_of(BY_KEY[key]):
            body = recorded.body
            assert recorded.path == "/v1/responses"
            (message,) = body["input"]
            assert message["role"] == "user"
            kinds = [part["type"] for part in message["content"]]
            assert kinds[0] == "input_text" and set(kinds[1:]) == {"input_image"}
            assert all(part["image_url"].startswith("data:image/jpeg;base64,") for part in message["content"][1:])
            assert body["reasoning"].get("effort") == effort
            assert "instructions" not in body


def test_anthropic_payload_shape(families: FamiliesRun) -> None:
    for recorded in families.requests_of(BY_KEY["claude-sonnet-4.5"]):
        assert recorded.path == "/v1/messages"
        (message,) = recorded.body["messages"]
        blocks = message["content"]
        assert blocks[0]["type"] == "text"
        for block in blocks[1:]:
            assert block["type"] == "image"
            assert block["source"]["type"] == "base64" and block["source"]["media_type"] == "image/jpeg"


# --------------------------------------------------------------------------------------------- failures inside helm-run


def test_failed_requests_are_charged_and_the_run_goes_on(tmp_path: Path) -> None:
    """Two 503s (retried by the openai package, retry-after-ms 10) and a permanent 400 for one task's rows.

    The 400s become HELM's empty completion and cost 4.0 each (the official rule), without counting as invalid.
    """
    rejected_task = rows_of(SUBSET)[0]["task"]
    num_rows = len(rows_of(SUBSET))
    rejected = sum(1 for row in rows_of(SUBSET) if row["task"] == rejected_task)
    assert 0 < rejected < num_rows

    def reject_one_task(recorded: Recorded) -> Reply:
        if (media_parts(recorded)[0].text or "").endswith("\n\nTask: " + rejected_task):
            return Reply(status=400, error="video exceeds the maximum context length")
        return scripted_behaviour(recorded)

    family = BY_KEY["roboreward-8b"]
    with FakeModelServer(FailFirst(2, then=reject_one_task, status=503,
                                   headers={"retry-after-ms": "10"})) as fake:
        local = private_local_path(tmp_path / "local", fake)
        process = subprocess.run(helm_run_command([family.entry], "failures", local), cwd=tmp_path,
                                 env=helm_environment(fake), capture_output=True, text=True, timeout=TIMEOUT)
        requests = fake.requests
    check_completed(process, "helm-run")
    assert "Retrying (attempt" not in process.stdout + process.stderr, "HELM must not retry a permanent failure"
    assert len(requests) == num_rows + 2  # every row once, plus the two 503s retried by the openai package

    run_dir = tmp_path / "benchmark_output" / "runs" / "failures" / family.run_name
    states = request_states(run_dir)
    errors = []
    for state in states:
        if prompt_of(state).endswith("\n\nTask: " + rejected_task):
            assert state["result"]["success"] is False
            assert [c["text"] for c in state["result"]["completions"]] == [""]  # HELM's empty completion
            errors.append(4.0)
        else:
            assert state["result"]["success"] is True
            errors.append(abs(expected_score(state) - gold_of(state)))
    stats = run_stats(run_dir)
    assert stats["num_instances"] == num_rows == len(states)
    assert stats["failed_request"] == pytest.approx(rejected / num_rows, abs=1e-12)
    assert stats["abs_error"] == pytest.approx(sum(errors) / len(errors), abs=1e-12)
    per_instance = read_json(run_dir / "per_instance_stats.json")
    counted = [e for e in per_instance if any(s["name"]["name"] == "abs_error" for s in e["stats"])]
    assert len(counted) == num_rows
    invalid = [e for e in per_instance if any(s["name"]["name"] == "invalid_output" for s in e["stats"])]
    assert len(invalid) == num_rows - rejected and stats["invalid_output"] == 0


# ------------------------------------------------------------------------------------- native on a frames-only client


def test_native_video_on_a_frames_only_client_fails_before_any_request(tmp_path: Path) -> None:
    with FakeModelServer(scripted_behaviour) as fake:
        local = private_local_path(tmp_path / "local", fake)
        entry = f"roboreward:subset={SUBSET},data=sample,video=native,model=openai/gpt-5-mini-2025-08-07"
        process = subprocess.run(helm_run_command([entry], "native-gpt", local), cwd=tmp_path,
                                 env=helm_environment(fake), capture_output=True, text=True, timeout=TIMEOUT)
        requests = fake.requests
    output = process.stdout + process.stderr
    assert process.returncode != 0, output[-3000:]
    assert "video=frames" in output
    assert "OpenAIResponseClient" in output and "video=native" in output
    assert requests == []
    assert not (tmp_path / "benchmark_output" / "runs" / "native-gpt").exists() or not any(
        p.name.startswith("roboreward:") for p in (tmp_path / "benchmark_output" / "runs" / "native-gpt").iterdir())


# --------------------------------------------------------------------------------------------- routing table

_ROUTING_PROBE = r"""
import json, sys
from helm.benchmark.config_registry import register_builtin_configs_from_helm_package, register_configs_from_directory
from helm.benchmark.model_deployment_registry import get_default_model_deployment_for_model, get_model_deployment
from helm.benchmark.presentation.run_entry import RunEntry
from helm.benchmark.run import load_entry_point_plugins, run_entries_to_run_specs

SHARED = ["qwen/qwen2.5-vl-7b-instruct", "meta/llama-4-scout-17b-16e-instruct",
          "meta/llama-4-maverick-17b-128e-instruct-fp8", "google/gemini-2.5-flash", "google/gemini-3-pro-preview"]
# helm-run's order (helm/benchmark/run.py): built-ins, then --local-path, then the entry-point plugins.
register_builtin_configs_from_helm_package()
before = {model: get_default_model_deployment_for_model(model) for model in SHARED}
register_configs_from_directory(sys.argv[1])
load_entry_point_plugins()
after = {model: get_default_model_deployment_for_model(model) for model in SHARED}
OURS = ["teetone/roboreward-8b", "qwen/qwen3-vl-8b-instruct", "google/gemini-robotics-er-2-preview"]
ours = {model: get_default_model_deployment_for_model(model) for model in OURS}
print("DEFAULTS=" + json.dumps({"before": before, "after": after, "ours": ours}))
out = {}
for description in json.loads(sys.stdin.read()):
    (spec,) = run_entries_to_run_specs([RunEntry(description=description, priority=1, groups=None)],
                                       max_eval_instances=10)
    deployment = spec.adapter_spec.model_deployment
    out[description] = {
        "name": spec.name,
        "video": spec.scenario_spec.args["video"],
        "deployment": deployment,
        "client": get_model_deployment(deployment).client_spec.class_name,
        "max_tokens": spec.adapter_spec.max_tokens,
    }
print("ROUTING=" + json.dumps(out))
"""

VIDEO_CLIENT = "helm_roboreward.helm_frontend.clients.openai_video_client.OpenAIVideoClient"
TRANSFORMERS_CLIENT = "helm_roboreward.helm_frontend.clients.transformers_client.TransformersQwen3VLClient"
GENAI = "helm.clients.google_genai_client.GoogleGenAIClient"
GENAI_ONE = "helm_roboreward.helm_frontend.clients.gemini_client.OneMessageGoogleGenAIClient"
RESPONSES_CLIENT = "helm.clients.openai_responses_client.OpenAIResponseClient"
ANTHROPIC_CLIENT = "helm.clients.anthropic_client.AnthropicMessagesClient"
TOGETHER_CLIENT = "helm.clients.together_client.TogetherChatClient"
HF_QWEN_CLIENT = "helm.clients.vision_language.qwen2_vlm_client.Qwen2VLMClient"

# (model, deployment override or None) -> (video mode under auto, deployment, client class, max_tokens)
ROUTING_TABLE: dict[tuple[str, str | None], tuple[str, str, str, int]] = {
    # The official path: in-process transformers.
    ("teetone/roboreward-4b", None): ("native", "transformers/roboreward-4b", TRANSFORMERS_CLIENT, 5000),
    ("teetone/roboreward-8b", None): ("native", "transformers/roboreward-8b", TRANSFORMERS_CLIENT, 5000),
    ("qwen/qwen3-vl-4b-instruct", None): ("native", "transformers/qwen3-vl-4b-instruct", TRANSFORMERS_CLIENT, 5000),
    ("qwen/qwen3-vl-8b-instruct", None): ("native", "transformers/qwen3-vl-8b-instruct", TRANSFORMERS_CLIENT, 5000),
    ("qwen/qwen3-vl-30b-a3b-instruct", None):
        ("native", "transformers/qwen3-vl-30b-a3b-instruct", TRANSFORMERS_CLIENT, 5000),
    # The fast path, named.
    ("teetone/roboreward-8b", "vllm/roboreward-8b"): ("native", "vllm/roboreward-8b", VIDEO_CLIENT, 5000),
    ("qwen/qwen3-vl-8b-instruct", "vllm/qwen3-vl-8b-instruct"):
        ("native", "vllm/qwen3-vl-8b-instruct", VIDEO_CLIENT, 5000),
    ("qwen/qwen2.5-vl-3b-instruct", None): ("native", "vllm/qwen2.5-vl-3b-instruct", VIDEO_CLIENT, 5000),
    ("qwen/qwen2.5-vl-7b-instruct", None): ("native", "vllm/qwen2.5-vl-7b-instruct", VIDEO_CLIENT, 5000),
    ("qwen/qwen2.5-vl-32b-instruct", None): ("native", "vllm/qwen2.5-vl-32b-instruct", VIDEO_CLIENT, 5000),
    ("qwen/qwen2.5-vl-72b-instruct", None): ("native", "vllm/qwen2.5-vl-72b-instruct", VIDEO_CLIENT, 5000),
    # HELM's own Qwen2.5-VL client (local transformers) cannot send video: frames.
    ("qwen/qwen2.5-vl-7b-instruct", "huggingface/qwen2.5-vl-7b-instruct"):
        ("frames", "huggingface/qwen2.5-vl-7b-instruct", HF_QWEN_CLIENT, 5000),
    # Gemini: HELM's own client (the official layout, two user turns); the option deployment only when named.
    ("google/gemini-2.5-flash", None): ("native", "google/gemini-2.5-flash", GENAI, 65000),
    ("google/gemini-2.5-flash-lite", None): ("native", "google/gemini-2.5-flash-lite", GENAI, 65000),
    ("google/gemini-2.5-pro", None): ("native", "google/gemini-2.5-pro", GENAI, 65000),
    ("google/gemini-3.1-pro-preview", None): ("native", "google/gemini-3.1-pro-preview", GENAI, 65000),
    ("google/gemini-3-flash-preview", None): ("native", "google/gemini-3-flash-preview", GENAI, 65000),
    ("google/gemini-robotics-er-1.5-preview", None): ("native", "google/gemini-robotics-er-1.5-preview", GENAI, 65000),
    ("google/gemini-robotics-er-2-preview", None): ("native", "google/gemini-robotics-er-2-preview", GENAI, 65000),
    ("google/gemini-2.5-pro", "google/gemini-2.5-pro-one-message"):
        ("native", "google/gemini-2.5-pro-one-message", GENAI_ONE, 65000),
    ("openai/gpt-5-2025-08-07", None): ("frames", "openai/gpt-5-2025-08-07", RESPONSES_CLIENT, 65000),
    ("openai/gpt-5-mini-2025-08-07", None): ("frames", "openai/gpt-5-mini-2025-08-07", RESPONSES_CLIENT, 65000),
    ("openai/gpt-5-nano-2025-08-07", None): ("frames", "openai/gpt-5-nano-2025-08-07", RESPONSES_CLIENT, 65000),
    ("openai/gpt-5.1-2025-11-13", None): ("frames", "openai/gpt-5.1-2025-11-13", RESPONSES_CLIENT, 65000),
    ("openai/gpt-5.2-2025-12-11", None): ("frames", "openai/gpt-5.2-2025-12-11", RESPONSES_CLIENT, 65000),
    ("openai/gpt-5.5", None): ("frames", "openai/gpt-5.5", RESPONSES_CLIENT, 65000),
    ("openai/gpt-5.5-xhigh", None): ("frames", "openai/gpt-5.5-xhigh", RESPONSES_CLIENT, 65000),
    ("openai/gpt-5.5-2026-04-23", None): ("frames", "openai/gpt-5.5-2026-04-23", RESPONSES_CLIENT, 65000),
    ("anthropic/claude-sonnet-4-5-20250929", None):
        ("frames", "anthropic/claude-sonnet-4-5-20250929", ANTHROPIC_CLIENT, 5000),
    ("anthropic/claude-opus-4-6", None): ("frames", "anthropic/claude-opus-4-6", ANTHROPIC_CLIENT, 5000),
    ("meta/llama-4-scout-17b-16e-instruct", None):
        ("frames", "vllm/llama-4-scout-17b-16e-instruct", VIDEO_CLIENT, 5000),
    ("meta/llama-4-scout-17b-16e-instruct", "google/llama-4-scout-17b-16e-instruct"):
        ("frames", "google/llama-4-scout-17b-16e-instruct", GENAI, 5000),
    ("meta/llama-4-maverick-17b-128e-instruct-fp8", None):
        ("frames", "vllm/llama-4-maverick-17b-128e-instruct-fp8", VIDEO_CLIENT, 5000),
    ("meta/llama-4-maverick-17b-128e-instruct-fp8", "together/llama-4-maverick-17b-128e-instruct-fp8"):
        ("frames", "together/llama-4-maverick-17b-128e-instruct-fp8", TOGETHER_CLIENT, 5000),
    ("baseline/constant-3", None):
        ("frames", "baseline/constant-3", "helm_roboreward.helm_frontend.clients.baselines.ConstantScoreClient", 5000),
    ("baseline/uniform-random", None):
        ("frames", "baseline/uniform-random",
         "helm_roboreward.helm_frontend.clients.baselines.RandomScoreClient", 5000),
}


QWEN_HF = "model=qwen/qwen2.5-vl-7b-instruct,model_deployment=huggingface/qwen2.5-vl-7b-instruct"
NAME_CASES = {
    # The model routes to native (vLLM) first; the deployment named after it switches back to frames:
    # the frame options must come back into the name, or two configurations would share one run.
    f"roboreward:subset={SUBSET},data=sample,fps=2,{QWEN_HF}":
        f"roboreward:subset={SUBSET},data=sample,video=frames,fps=2,model=qwen_qwen2.5-vl-7b-instruct,"
        "model_deployment=huggingface_qwen2.5-vl-7b-instruct",
    f"roboreward:subset={SUBSET},data=sample,{QWEN_HF}":
        f"roboreward:subset={SUBSET},data=sample,video=frames,model=qwen_qwen2.5-vl-7b-instruct,"
        "model_deployment=huggingface_qwen2.5-vl-7b-instruct",
    # Native video: frame options do nothing, so they leave the name.
    f"roboreward:subset={SUBSET},data=sample,fps=2,last_frame=1,model=google/gemini-2.5-pro":
        f"roboreward:subset={SUBSET},data=sample,video=native,model=google_gemini-2.5-pro",
    # Options served by option deployments are named; where a model's client has no such deployment, nothing is.
    f"roboreward:subset={SUBSET},data=sample,layout=one_message,model=google/gemini-2.5-pro":
        f"roboreward:subset={SUBSET},data=sample,video=native,layout=one_message,model=google_gemini-2.5-pro",
    f"roboreward:subset={SUBSET},data=sample,model=google/gemini-2.5-pro,"
    "model_deployment=google/gemini-2.5-pro-one-message":
        f"roboreward:subset={SUBSET},data=sample,video=native,layout=one_message,model=google_gemini-2.5-pro,"
        "model_deployment=google_gemini-2.5-pro-one-message",
    f"roboreward:subset={SUBSET},data=sample,layout=one_message,model=openai/gpt-5-mini-2025-08-07":
        f"roboreward:subset={SUBSET},data=sample,video=frames,model=openai_gpt-5-mini-2025-08-07",
    f"roboreward:subset={SUBSET},data=sample,decoding=greedy,model=teetone/roboreward-8b":
        f"roboreward:subset={SUBSET},data=sample,video=native,decoding=greedy,model=teetone_roboreward-8b",
    f"roboreward:subset={SUBSET},data=sample,decoding=greedy,model=teetone/roboreward-8b,"
    "model_deployment=vllm/roboreward-8b":
        f"roboreward:subset={SUBSET},data=sample,video=native,decoding=greedy,model=teetone_roboreward-8b,"
        "model_deployment=vllm_roboreward-8b",
    f"roboreward:subset={SUBSET},data=sample,decoding=greedy,model=baseline/constant-3":
        f"roboreward:subset={SUBSET},data=sample,video=frames,model=baseline_constant-3",
    # score=expected changes the metric as well as the deployment: it is named on every client (a client without
    # log-probabilities gets the parsed score, said per run); the -logprobs option deployment itself is never named.
    f"roboreward:subset={SUBSET},data=sample,score=expected,model=teetone/roboreward-8b":
        f"roboreward:subset={SUBSET},data=sample,video=native,score=expected,model=teetone_roboreward-8b",
    f"roboreward:subset={SUBSET},data=sample,score=expected,decoding=greedy,model=teetone/roboreward-8b":
        f"roboreward:subset={SUBSET},data=sample,video=native,decoding=greedy,score=expected,"
        "model=teetone_roboreward-8b",
    f"roboreward:subset={SUBSET},data=sample,score=expected,model=baseline/constant-3":
        f"roboreward:subset={SUBSET},data=sample,video=frames,score=expected,model=baseline_constant-3",
}
OPTION_DEPLOYMENTS = {
    f"roboreward:subset={SUBSET},data=sample,layout=one_message,model=google/gemini-2.5-pro":
        "google/gemini-2.5-pro-one-message",
    f"roboreward:subset={SUBSET},data=sample,decoding=greedy,model=teetone/roboreward-8b":
        "transformers/roboreward-8b-greedy",
    f"roboreward:subset={SUBSET},data=sample,decoding=greedy,model=teetone/roboreward-8b,"
    "model_deployment=vllm/roboreward-8b": "vllm/roboreward-8b-greedy",
    f"roboreward:subset={SUBSET},data=sample,layout=one_message,model=openai/gpt-5-mini-2025-08-07":
        "openai/gpt-5-mini-2025-08-07",
    # option deployments chain in one order (x -> x-greedy -> x-greedy-logprobs), whatever the options' order
    f"roboreward:subset={SUBSET},data=sample,score=expected,model=teetone/roboreward-8b":
        "transformers/roboreward-8b-logprobs",
    f"roboreward:subset={SUBSET},data=sample,score=expected,decoding=greedy,model=teetone/roboreward-8b":
        "transformers/roboreward-8b-greedy-logprobs",
    f"roboreward:subset={SUBSET},data=sample,decoding=greedy,score=expected,model=teetone/roboreward-8b,"
    "model_deployment=vllm/roboreward-8b": "vllm/roboreward-8b-greedy-logprobs",
    f"roboreward:subset={SUBSET},data=sample,score=expected,model=baseline/constant-3": "baseline/constant-3",
    f"roboreward:subset={SUBSET},data=sample,score=expected,model=openai/gpt-5-mini-2025-08-07":
        "openai/gpt-5-mini-2025-08-07",
}


def test_options_pick_their_option_deployment(routing: dict[str, dict[str, Any]]) -> None:
    for entry, deployment in OPTION_DEPLOYMENTS.items():
        assert routing[entry]["deployment"] == deployment, entry


def test_run_names_follow_the_final_mode(routing: dict[str, dict[str, Any]]) -> None:
    for entry, name in NAME_CASES.items():
        assert routing[entry]["name"] == name, entry


def _routing_entry(model: str, deployment: str | None) -> str:
    entry = f"roboreward:subset={SUBSET},data=sample,model={model}"
    return entry + (f",model_deployment={deployment}" if deployment else "")


@pytest.fixture(scope="module")
def routing(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    workdir = tmp_path_factory.mktemp("routing")
    with FakeModelServer() as fake:  # only for the credentials file; nothing is sent
        local = private_local_path(workdir / "local", fake)
        entries = ([_routing_entry(model, deployment) for model, deployment in ROUTING_TABLE] + list(NAME_CASES)
                   + [entry for entry in OPTION_DEPLOYMENTS if entry not in NAME_CASES])
        process = subprocess.run([sys.executable, "-c", _ROUTING_PROBE, str(local)], input=json.dumps(entries),
                                 cwd=workdir, env=helm_environment(fake), capture_output=True, text=True,
                                 timeout=TIMEOUT)
        assert fake.requests == []
    check_completed(process, "routing probe")
    (line,) = [line for line in process.stdout.splitlines() if line.startswith("ROUTING=")]
    (defaults,) = [line for line in process.stdout.splitlines() if line.startswith("DEFAULTS=")]
    return {**json.loads(line[len("ROUTING="):]), "_defaults": json.loads(defaults[len("DEFAULTS="):])}


def test_the_plugin_leaves_helm_defaults_alone_for_other_benchmarks(routing: dict[str, dict[str, Any]]) -> None:
    """Qwen2.5-VL and Llama 4 have HELM deployments: roboreward runs use the package's vLLM ones (table
    above), but installing the plugin (and ``--local-path prod_env``) must not change which deployment every
    other benchmark gets for these models; no option deployment (a named option) is ever a model's default."""
    defaults = routing["_defaults"]
    assert defaults["after"] == defaults["before"]
    assert not any(str(name).startswith("vllm/") or str(name).endswith(("-one-message", "-greedy", "-logprobs"))
                   for name in defaults["after"].values()), defaults
    assert not any(str(name).endswith(("-one-message", "-greedy", "-logprobs"))
                   for name in defaults["ours"].values()), defaults


@pytest.mark.parametrize("model, deployment", list(ROUTING_TABLE),
                         ids=[m + (f"@{d}" if d else "") for m, d in ROUTING_TABLE])
def test_auto_routing_with_the_real_deployments(routing: dict[str, dict[str, Any]], model: str,
                                                deployment: str | None) -> None:
    mode, expected_deployment, client, max_tokens = ROUTING_TABLE[(model, deployment)]
    resolved = routing[_routing_entry(model, deployment)]
    assert (resolved["video"], resolved["deployment"], resolved["client"], resolved["max_tokens"]) == (
        mode, expected_deployment, client, max_tokens)
    assert f"video={mode}" in resolved["name"] and "video=auto" not in resolved["name"]


# --------------------------------------------------------------------------------------------- concurrency


def _comparable_stats(run_dir: Path) -> dict[str, tuple[int, float, float]]:
    """stats.json without timing stats: name -> (count, sum, mean)."""
    out = {}
    for stat in read_json(run_dir / "stats.json"):
        name = stat["name"]["name"]
        if "time" in name or "runtime" in name:
            continue
        out[json.dumps(stat["name"], sort_keys=True)] = (stat["count"], round(stat["sum"], 9),
                                                         round(stat.get("mean", 0.0), 9))
    return out


@pytest.mark.slow
def test_concurrent_runs_on_disjoint_subsets_match_a_sequential_run(tmp_path: Path) -> None:
    entries = [f"roboreward:subset={subset},data=sample,model=teetone/roboreward-8b,model_deployment=vllm/roboreward-8b"
               for subset in ("sim_kuka", "sim_panda")]
    names = [f"roboreward:subset={subset},data=sample,video=native,model=teetone_roboreward-8b,"
             "model_deployment=vllm_roboreward-8b" for subset in ("sim_kuka", "sim_panda")]
    rows = len(rows_of("sim_kuka")) + len(rows_of("sim_panda"))
    with FakeModelServer(scripted_behaviour) as fake:
        env = helm_environment(fake)
        shared = tmp_path / "shared"
        shared.mkdir()
        local = private_local_path(shared / "local", fake)
        logs = []
        processes = []
        try:
            for index, entry in enumerate(entries):
                out = open(shared / f"stdout-{index}.log", "w+")
                err = open(shared / f"stderr-{index}.log", "w+")
                logs.append((out, err))
                processes.append(subprocess.Popen(helm_run_command([entry], "conc", local), cwd=shared, env=env,
                                                  stdout=out, stderr=err, text=True))
            for process in processes:
                process.wait(timeout=TIMEOUT)
        finally:
            reap(processes)
        for process, (out, err) in zip(processes, logs, strict=True):
            out.seek(0)
            err.seek(0)
            check_completed(subprocess.CompletedProcess(process.args, process.returncode, out.read(), err.read()),
                            "concurrent helm-run")
            out.close()
            err.close()
        concurrent_requests = len(fake.requests)

        sequential = tmp_path / "sequential"
        sequential.mkdir()
        sequential_run = subprocess.run(
            helm_run_command(entries, "conc", private_local_path(sequential / "local", fake)), cwd=sequential, env=env,
            capture_output=True, text=True, timeout=TIMEOUT)
        check_completed(sequential_run, "sequential helm-run")
        sequential_requests = len(fake.requests) - concurrent_requests

    assert concurrent_requests == rows
    assert sequential_requests == rows
    for name in names:
        concurrent_stats = _comparable_stats(shared / "benchmark_output" / "runs" / "conc" / name)
        sequential_stats = _comparable_stats(sequential / "benchmark_output" / "runs" / "conc" / name)
        assert concurrent_stats, name
        assert concurrent_stats == sequential_stats, name
