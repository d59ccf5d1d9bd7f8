"""TransformersQwen3VLClient's ``top_logprobs`` with real transformers on CPU and the tiny random-weight Qwen3-VL.

The checkpoint comes from tests/helpers/tiny_qwen3vl.py; nothing of transformers is mocked. Checked: the key is
absent by default (``top_logprobs`` 0 in the cache key, N > 0 giving other keys), present with ``top_logprobs`` > 0
under both decodings, every entry sits at its offset in the answer, sampling draws the same answer with and without
the option, the recorded values are ``log_softmax`` of the RAW logits (equal to a direct forward pass over prompt +
answer, summing to 1 over the whole vocabulary; under greedy decoding the chosen token is their argmax), and cached
results keep them.

Forcing a score-like answer: the tiny model answers six random characters, so one test checkpoint (a copy of
the tiny one, ``build_digit_answering``) changes only its ``generation_config.json`` so that it draws one digit
1..5 and stops. Its biases never touch the raw logits the client records, so the distribution over 1..5 that
``score_distribution`` reads is the model's own (checked against a forward pass).
Runs wherever the package installs: the client decodes the video with PyAV where torchcodec cannot load.
"""

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch
from helm.common.cache import BlackHoleCacheConfig, CacheConfig, SqliteCacheConfig
from helm.common.media_object import MediaObject, MultimediaObject
from helm.common.request import Request

from helm_roboreward.helm_frontend.clients import logprobs
from helm_roboreward.helm_frontend.clients.logprobs import digit_token_logprobs
from helm_roboreward.helm_frontend.clients.transformers_client import DECODE, TransformersQwen3VLClient, completion_from
from helm_roboreward.protocol.rules import build_prompt
from helm_roboreward.protocol.score_probabilities import (
    SCORE_TOKEN_LOGPROBS,
    expected_score,
    score_distribution,
    success_probability,
)
from tests.helpers.tiny_qwen3vl import IM_END

SAMPLE = Path(__file__).resolve().parents[3] / "helm_roboreward" / "sample" / "test"
VIDEO = SAMPLE / next(row["file_name"] for row in map(json.loads, (SAMPLE / "metadata.jsonl").read_text().splitlines())
                      if row["file_name"].startswith("sim_panda/"))
TASKS = ("pick up the red block", "put the cube in the bowl", "push the button", "open the drawer")
SCORES = "12345"
ALL = 1000
"""More alternatives than the tiny vocabulary has: the whole distribution is recorded."""


@pytest.fixture(scope="module")
def tiny(tiny_qwen3vl: Path) -> Path:
    """The session's tiny dense checkpoint (tests/conftest.py), shared with the client's other tests."""
    return tiny_qwen3vl


@pytest.fixture(scope="module")
def digits(tiny_qwen3vl_digits: Path) -> Path:
    """The session's digit-answering checkpoint (tests/helpers/tiny_qwen3vl.py, ``build_digit_answering``)."""
    return tiny_qwen3vl_digits


def make_client(folder: Path, cache_config: CacheConfig | None = None, **kwargs: Any) -> TransformersQwen3VLClient:
    return TransformersQwen3VLClient(cache_config=cache_config or BlackHoleCacheConfig(), checkpoint=str(folder),
                                     **kwargs)


def video_request(task: str = TASKS[0]) -> Request:
    return Request(model="teetone/roboreward-8b", model_deployment="transformers/tiny-qwen3-vl", max_tokens=5000,
                   temperature=0.0, num_completions=1, multimodal_prompt=MultimediaObject([
                       MediaObject(content_type="text/plain", text=build_prompt(task)),
                       MediaObject(content_type="video/mp4", location=str(VIDEO))]))


def answer_and_finish(client: TransformersQwen3VLClient, request: Request) -> tuple[str, dict[str, Any]]:
    result = client.make_request(request)
    assert result.success, result.error
    (completion,) = result.completions
    assert completion.finish_reason is not None
    return completion.text, completion.finish_reason


def forward_log_probs(client: TransformersQwen3VLClient, request: Request, answer_ids: list[int]) -> torch.Tensor:
    """log_softmax of one forward pass over prompt + answer: row j is the distribution of answer token j."""
    loaded = client.load()
    inputs, _ = client.processor_inputs(client.build_messages(request))  # what generate got, either video decoder
    prompt = inputs["input_ids"].shape[1]
    tail = torch.tensor([answer_ids], dtype=inputs["input_ids"].dtype)
    full = dict(inputs)
    full["input_ids"] = torch.cat([inputs["input_ids"], tail], dim=1)
    full["attention_mask"] = torch.ones_like(full["input_ids"])
    full["mm_token_type_ids"] = torch.cat([inputs["mm_token_type_ids"], torch.zeros_like(tail)], dim=1)
    with torch.inference_mode():
        logits = loaded.model(**full).logits[0, prompt - 1:prompt - 1 + len(answer_ids) + 1]
    return torch.log_softmax(logits.float(), dim=-1)


def by_text(client: TransformersQwen3VLClient, log_probs: torch.Tensor) -> dict[str, float]:
    """One position's distribution keyed by decoded text, texts decoding alike adding up (as the client does)."""
    tokenizer = client.load().processor.tokenizer
    texts = tokenizer.batch_decode([[i] for i in range(log_probs.shape[-1])], skip_special_tokens=True,
                                   clean_up_tokenization_spaces=False)
    out: dict[str, float] = {}
    for text, value in zip(texts, log_probs.exp().tolist(), strict=True):
        out[text] = out.get(text, 0.0) + value
    return out


def token_ids(client: TransformersQwen3VLClient, text: str) -> list[int]:
    ids: list[int] = client.load().processor.tokenizer.convert_tokens_to_ids(list(text))  # one token per character
    return ids


# ------------------------------------------------------------------------------------- presence, offsets


def test_no_key_by_default_and_top_logprobs_in_the_cache_key(tiny: Path) -> None:
    default, off, on = make_client(tiny), make_client(tiny, top_logprobs=0), make_client(tiny, top_logprobs=5)
    request = video_request()
    messages = default.build_messages(request)
    assert default.cache_key(request, messages) == off.cache_key(request, messages)
    assert default.cache_key(request, messages)["top_logprobs"] == 0
    assert on.cache_key(request, messages)["top_logprobs"] == 5
    assert on.cache_key(request, messages) != make_client(tiny, top_logprobs=6).cache_key(request, messages)
    _, finish = answer_and_finish(default, request)
    assert SCORE_TOKEN_LOGPROBS not in finish


@pytest.mark.parametrize("value", [-1, 2.0, True])
def test_bad_top_logprobs_are_rejected(tiny: Path, value: Any) -> None:
    with pytest.raises(ValueError, match="top_logprobs"):
        make_client(tiny, top_logprobs=value)


@pytest.mark.parametrize("decoding", ["checkpoint", "greedy"])
def test_every_digit_of_the_answer_has_an_entry_at_its_offset(tiny: Path, decoding: str) -> None:
    client, plain = make_client(tiny, decoding=decoding, top_logprobs=5), make_client(tiny, decoding=decoding)
    seen = 0
    for task in TASKS:
        text, finish = answer_and_finish(client, video_request(task))
        assert text == answer_and_finish(plain, video_request(task))[0]  # the option changes no drawn token
        entries = finish[SCORE_TOKEN_LOGPROBS]
        print(f"\n{decoding} {task!r}: {text!r} -> {[(e['offset'], e['text']) for e in entries]}")
        assert [e["offset"] for e in entries] == [i for i, ch in enumerate(text) if ch.isdecimal()]
        for entry in entries:
            assert text[entry["offset"]:entry["offset"] + len(entry["text"])] == entry["text"]
            assert entry["text"] in entry["top"]  # the chosen token is among the alternatives
            assert 5 <= len(entry["top"]) <= 6  # the top 5, plus the drawn token when sampling went below them
        seen += len(entries)
        json.dumps(finish)  # HELM caches it
    assert seen > 0, "no answer of the tiny model held a digit: the offsets were not checked"


# --------------------------------------------------------------------------------- the values are real


def test_greedy_log_probs_are_the_raw_logits_of_a_forward_pass(tiny: Path) -> None:
    client = make_client(tiny, decoding="greedy", top_logprobs=ALL)
    answers = {task: answer_and_finish(client, video_request(task)) for task in TASKS}
    task = next((task for task, (_, finish) in answers.items() if finish[SCORE_TOKEN_LOGPROBS]), None)
    assert task is not None, f"no greedy answer holds a digit: {answers}"
    request = video_request(task)
    text, finish = answers[task]
    entries = finish[SCORE_TOKEN_LOGPROBS]
    forward = forward_log_probs(client, request, token_ids(client, text))
    for entry in entries:
        step = forward[entry["offset"]]
        assert sum(math.exp(v) for v in entry["top"].values()) == pytest.approx(1.0, abs=1e-5)  # whole vocabulary
        expected = by_text(client, step)
        assert set(entry["top"]) == set(expected)
        for alternative, value in entry["top"].items():
            assert math.exp(value) == pytest.approx(expected[alternative], abs=1e-5)
        # greedy drew the raw argmax (the tiny model's biases touch only <|im_end|>), with its log_softmax value
        chosen = token_ids(client, entry["text"])[0]
        assert int(step.argmax()) == chosen
        assert entry["top"][entry["text"]] == pytest.approx(float(step[chosen]), abs=1e-5)
        # the special tokens all decode to "" and add up there; among the texts of single tokens it is the largest
        assert entry["top"][entry["text"]] == max(value for text, value in entry["top"].items() if text)


@pytest.mark.parametrize("decoding", ["checkpoint", "greedy"])
def test_a_one_digit_answer_gets_the_models_distribution_over_1_to_5(digits: Path, decoding: str) -> None:
    client = make_client(digits, decoding=decoding, top_logprobs=ALL)
    request = video_request()
    text, finish = answer_and_finish(client, request)
    assert len(text) == 1 and text in SCORES
    (entry,) = finish[SCORE_TOKEN_LOGPROBS]
    assert entry["offset"] == 0 and entry["text"] == text
    distribution = score_distribution(text, finish[SCORE_TOKEN_LOGPROBS])
    assert distribution is not None
    print(f"\n{decoding}: answer {text!r}, distribution {distribution}, expected {expected_score(distribution):.3f}, "
          f"P(5) {success_probability(distribution):.3f}, finish_reason entry {json.dumps(entry)[:400]}")
    # the first answer token's distribution depends on the prompt only: one forward pass over it
    step = forward_log_probs(client, request, [])[0]
    raw = {int(d): float(step[token_ids(client, d)[0]].exp()) for d in SCORES}
    assert distribution == pytest.approx({s: p / sum(raw.values()) for s, p in raw.items()}, abs=1e-5)
    assert sum(1 for p in distribution.values() if p > 0.05) >= 2, "degenerate: the test would not show mixing"
    assert sum(distribution.values()) == pytest.approx(1.0)
    if decoding == "greedy":  # equal biases on 1..5: greedy draws the most probable score of the raw logits
        assert max(distribution, key=lambda score: distribution[score]) == int(text)


def test_cached_results_keep_the_entries(tiny: Path, tmp_path: Path) -> None:
    cache = SqliteCacheConfig(str(tmp_path / "cache.sqlite"))
    first = make_client(tiny, cache, top_logprobs=5).make_request(video_request())
    again = make_client(tiny, cache, top_logprobs=5).make_request(video_request())
    off = make_client(tiny, cache).make_request(video_request())
    assert not first.cached and again.cached and not off.cached
    assert first.completions[0].finish_reason == again.completions[0].finish_reason
    assert off.completions[0].finish_reason is not None
    assert SCORE_TOKEN_LOGPROBS not in off.completions[0].finish_reason


# --------------------------------------------------------------------------- reasoning, alignment (pure)


def test_digit_tokens_of_a_think_block_are_left_out(tiny: Path) -> None:
    """The real tokenizer and a ``<think>`` answer spelled out token by token; logits made up (any tensor)."""
    client = make_client(tiny, top_logprobs=3)
    tokenizer = client.load().processor.tokenizer
    raw = "<think>frame 3 of 12</think>\n\nANSWER: 4"
    ids = token_ids(client, raw) + [tokenizer.convert_tokens_to_ids(IM_END)]
    logits = tuple(torch.randn(1, len(tokenizer), generator=torch.Generator().manual_seed(i)) for i in range(len(ids)))
    stored = digit_token_logprobs(tokenizer, ids, raw, logits, client.top_logprobs, DECODE)
    assert [(e["offset"], e["text"]) for e in stored] == [(len(raw) - 1, "4")]  # the reasoning's digits are not kept
    assert len(stored[0]["top"]) in (3, 4)
    generated = {"text": raw, "tokens": [], "completion_tokens": len(ids), "reason": "stop", "seed": None,
                 "token_logprobs": stored}
    completion = completion_from(generated, {"prompt_tokens": 10})
    assert completion.text == "ANSWER: 4" and completion.thinking is not None
    assert completion.finish_reason is not None
    assert completion.finish_reason[SCORE_TOKEN_LOGPROBS] == [{"offset": 8, "text": "4", "top": stored[0]["top"]}]


class BytesTokenizer:
    """A byte-level tokenizer (one byte per id): a two-byte character decodes to U+FFFD token by token."""

    all_special_ids: list[int] = []

    def decode(self, ids: list[int], **_: Any) -> str:
        return bytes(ids).decode("utf-8", errors="replace")

    def batch_decode(self, sequences: list[list[int]], **kwargs: Any) -> list[str]:
        return [self.decode(ids, **kwargs) for ids in sequences]


def test_offsets_come_from_decoded_prefixes_when_tokens_do_not_concatenate(tiny: Path) -> None:
    client = make_client(tiny, top_logprobs=2)
    raw = "Très bien. ANSWER: 5"
    ids = list(raw.encode())
    logits = tuple(torch.zeros(1, 256) for _ in ids)
    stored = digit_token_logprobs(BytesTokenizer(), ids, raw, logits, client.top_logprobs, DECODE)
    assert [(e["offset"], e["text"]) for e in stored] == [(raw.index("5"), "5")]  # characters, not bytes


def test_entries_that_do_not_line_up_are_dropped_and_logged_once(monkeypatch: pytest.MonkeyPatch) -> None:
    logged: list[str] = []
    monkeypatch.setattr(logprobs, "_WARNED", set())
    monkeypatch.setattr(logprobs, "hwarn", logged.append)
    generated = {"text": "ANSWER: 4", "tokens": [], "completion_tokens": 9, "reason": "stop", "seed": None,
                 "token_logprobs": [{"offset": 3, "text": "4", "top": {"4": -0.1}}]}
    for _ in range(2):
        finish = completion_from(generated, {"prompt_tokens": 10}).finish_reason
        assert finish is not None and SCORE_TOKEN_LOGPROBS not in finish
    assert len(logged) == 1 and "do not line up" in logged[0]
    unterminated = {**generated, "text": "<think>step 4", "token_logprobs": []}
    finish = completion_from(unterminated, {"prompt_tokens": 10}).finish_reason
    assert finish is not None and finish[SCORE_TOKEN_LOGPROBS] == []
