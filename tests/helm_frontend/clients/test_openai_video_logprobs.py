"""OpenAIVideoClient's ``top_logprobs``: the request fields, the cache key, and ``score_token_logprobs`` from responses.

Responses are recorded-style chat-completions dicts in the shape vLLM returns (``logprobs.content``: one entry per
generated token with ``token``, ``logprob``, ``bytes`` and ``top_logprobs``), passed through the ``openai``
package's own ``ChatCompletion`` model and ``model_dump(mode="json")`` exactly as the client caches them, and fed to
the response parser directly; one request goes through the ``openai`` package to the loopback fake
(tests/helpers/fakes/openai_chat.py), which answers with such log probabilities.
"""

import math
from collections.abc import Sequence
from typing import Any

import pytest
from helm.common.cache import BlackHoleCacheConfig
from helm.common.request import Request
from openai.types.chat import ChatCompletion

from helm_roboreward.helm_frontend.clients import logprobs
from helm_roboreward.helm_frontend.clients.chat_replies import split_reasoning
from helm_roboreward.helm_frontend.clients.logprobs import answer_start, score_token_logprobs, trim_alternatives
from helm_roboreward.helm_frontend.clients.openai_video_client import OpenAIVideoClient, completion_from_choice
from helm_roboreward.protocol.score_probabilities import SCORE_TOKEN_LOGPROBS, expected_score, score_distribution
from tests.helpers.fakes import CHAT, FakeModelServer, constant

SERVED = "teetone/RoboReward-8B"
END = "<|im_end|>"
"""vLLM lists the end-of-turn token among the generated tokens; its text is not in the message content."""


def token(text: str, logprob: float, alternatives: Sequence[tuple[str, float]] = ()) -> dict[str, Any]:
    """One ``logprobs.content`` entry; the chosen token first among its alternatives, as vLLM orders them."""
    listed = [(text, logprob), *alternatives] if alternatives else []
    return {"token": text, "logprob": logprob, "bytes": list(text.encode()),
            "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in listed]}


def plain(*texts: str) -> list[dict[str, Any]]:
    return [token(text, -0.01, [("x", -6.0)]) for text in texts]


def response(content: str, tokens: list[dict[str, Any]] | None, reasoning: str | None = None,
             n: int = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    choice = {"index": 0, "finish_reason": "stop", "message": message,
              "logprobs": None if tokens is None else {"content": tokens}}
    raw = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": SERVED,
           "choices": [{**choice, "index": i} for i in range(n)],
           "usage": {"prompt_tokens": 1234, "completion_tokens": len(tokens or []), "total_tokens": 1240}}
    dumped: dict[str, Any] = ChatCompletion.model_validate(raw).model_dump(mode="json")
    return dumped


def first_choice(content: str, tokens: list[dict[str, Any]] | None, reasoning: str | None = None) -> dict[str, Any]:
    choice: dict[str, Any] = response(content, tokens, reasoning)["choices"][0]
    return choice


def check_entries_match(text: str, entries: list[dict[str, Any]]) -> None:
    for entry in entries:
        assert text[entry["offset"]:entry["offset"] + len(entry["text"])] == entry["text"], entry


def make_client(base_url: str = "http://127.0.0.1:9/v1", **kwargs: Any) -> OpenAIVideoClient:
    return OpenAIVideoClient(cache_config=BlackHoleCacheConfig(), base_url=base_url, api_key="sk-test",
                             served_model_name=SERVED, max_retries=0, **kwargs)

def built(client: OpenAIVideoClient, request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    """The request body the client would send, and its cache key."""
    make_body, key = client._prepare(request)
    return make_body(), key


def text_request() -> Request:
    return Request(model="teetone/roboreward-8b", model_deployment="vllm/roboreward-8b", prompt="Rate the video.",
                   max_tokens=5000, temperature=0.0, num_completions=1)


@pytest.fixture
def warnings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    logged: list[str] = []
    monkeypatch.setattr(logprobs, "_WARNED", set())
    monkeypatch.setattr(logprobs, "hwarn", logged.append)
    return logged


# ------------------------------------------------------------------------------------ request, cache key


def test_off_by_default_the_request_and_cache_key_are_unchanged() -> None:
    body, key = built(make_client(), text_request())
    assert built(make_client(top_logprobs=0), text_request()) == (body, key)
    assert "logprobs" not in body and "top_logprobs" not in body
    assert key == {"server": "http://127.0.0.1:9/v1", "model": SERVED, "max_tokens": 5000, "n": 1, "temperature": 0.0,
                   "content": "Rate the video.", "extra_body": {}, "decoding": "request", "video_transport": "data_url"}


def test_top_logprobs_reach_the_request_and_the_cache_key() -> None:
    body, key = built(make_client(top_logprobs=5), text_request())
    assert body["logprobs"] is True and body["top_logprobs"] == 5
    assert key["logprobs"] is True and key["top_logprobs"] == 5
    off = built(make_client(), text_request())[1]
    assert {k: v for k, v in key.items() if k not in ("logprobs", "top_logprobs")} == off
    assert built(make_client(top_logprobs=20), text_request())[1] != key


@pytest.mark.parametrize("value", [-1, 1.5, True, "5"])
def test_bad_top_logprobs_are_rejected(value: Any) -> None:
    with pytest.raises(ValueError, match="top_logprobs"):
        make_client(top_logprobs=value)


def test_make_request_sends_the_fields_and_records_the_tokens() -> None:
    tokens = plain("ANSWER", ":", " ") + [token("4", -0.4, [("5", -1.2), ("3", -3.0)]), token(END, -0.001)]
    with FakeModelServer(constant("ANSWER: 4", logprobs=tokens), served_models=[SERVED]) as fake:
        result = make_client(top_logprobs=5, base_url=fake.base_url).make_request(text_request())
        (sent,) = fake.requests_to(CHAT)
    assert result.success and sent.body["logprobs"] is True and sent.body["top_logprobs"] == 5
    (completion,) = result.completions
    assert completion.text == "ANSWER: 4"
    assert completion.finish_reason is not None
    entries = completion.finish_reason[SCORE_TOKEN_LOGPROBS]
    assert entries == [{"offset": 8, "text": "4", "top": {"4": -0.4, "5": -1.2, "3": -3.0}}]
    distribution = score_distribution(completion.text, entries)
    weights = {4: math.exp(-0.4), 5: math.exp(-1.2), 3: math.exp(-3.0)}
    assert distribution is not None
    assert expected_score(distribution) == pytest.approx(sum(s * w for s, w in weights.items()) / sum(weights.values()))


def test_only_digit_tokens_keep_their_alternatives_in_the_cache() -> None:
    tokens = plain("<think>", "a", " ", "7", "</think>", "ANSWER", ":", " ") + [token("4", -0.2, [("5", -1.7)]),
                                                                                 token(END, -0.01)]
    recorded = response("<think>a 7</think>ANSWER: 4", tokens)
    before = score_token_logprobs(recorded["choices"][0])
    trimmed = trim_alternatives(recorded)
    kept = [(item["token"], len(item["top_logprobs"])) for item in trimmed["choices"][0]["logprobs"]["content"]]
    assert kept == [("<think>", 0), ("a", 0), (" ", 0), ("7", 2), ("</think>", 0), ("ANSWER", 0), (":", 0), (" ", 0),
                    ("4", 2), (END, 0)]
    assert score_token_logprobs(trimmed["choices"][0]) == before == [
        {"offset": 8, "text": "4", "top": {"4": -0.2, "5": -1.7}}]
    assert trim_alternatives(response("ANSWER: 4", None))["choices"][0]["logprobs"] is None


# ------------------------------------------------------------------------------------------- responses


def test_plain_answer_offsets_follow_the_token_concatenation() -> None:
    tokens = plain("ANSWER", ":", " ") + [token("3", -0.1, [("4", -2.5), (" 3", -4.0), ("x", -1.0)]),
                                          token(END, -0.002)]
    entries = score_token_logprobs(first_choice("ANSWER: 3", tokens))
    assert entries == [{"offset": 8, "text": "3", "top": {"3": -0.1, "4": -2.5, " 3": -4.0, "x": -1.0}}]


def test_every_digit_token_of_the_answer_is_recorded_in_order() -> None:
    text = "Grasp 2 of 12 worked.\nANSWER: 5"
    tokens = plain("Grasp", " ", "2", " of", " ", "1", "2", " worked", ".\n", "ANSWER", ":", " ", "5", END)
    entries = score_token_logprobs(first_choice(text, tokens))
    assert entries is not None
    assert [(e["offset"], e["text"]) for e in entries] == [(6, "2"), (11, "1"), (12, "2"), (30, "5")]
    check_entries_match(text, entries)


def test_a_think_block_in_the_content_is_left_out_and_offsets_count_in_the_answer() -> None:
    content = "<think>\nframe 3 shows the block; ANSWER: 2 would be wrong\n</think>\n\nANSWER: 4"
    tokens = plain("<think>", "\n", "frame", " ", "3", " shows", " the", " block", ";", " ANSWER", ":", " ", "2",
                   " would", " be", " wrong", "\n", "</think>", "\n\n", "ANSWER", ":", " ") \
        + [token("4", -0.7, [("5", -0.9)]), token(END, -0.01)]
    choice = first_choice(content, tokens)
    completion = completion_from_choice(choice, None, logprobs_requested=True)
    assert completion.text == "ANSWER: 4" and completion.thinking is not None
    assert completion.finish_reason is not None
    entries = completion.finish_reason[SCORE_TOKEN_LOGPROBS]
    assert entries == [{"offset": 8, "text": "4", "top": {"4": -0.7, "5": -0.9}}]
    distribution = score_distribution(completion.text, entries)
    assert distribution is not None and distribution[5] == pytest.approx(1 / (1 + math.exp(0.2)))


def test_separate_reasoning_content_is_aligned_on_the_answer() -> None:
    """A reasoning parser moves the reasoning to ``reasoning_content``; the tokens still start with it."""
    reasoning = "\nMaybe ANSWER: 4, or 5: the cube is in the bowl.\n"
    tokens = plain("\n", "Maybe", " ANSWER", ":", " ", "4", ",", " or", " ", "5", ":", " the", " cube", " is", " in",
                   " the", " bowl", ".\n", "</think>", "\n\n", "ANSWER", ":", " ") \
        + [token("4", -0.3, [("5", -1.5), ("3", -2.0)]), token(END, -0.01)]
    choice = first_choice("ANSWER: 4", tokens, reasoning=reasoning)
    completion = completion_from_choice(choice, None, logprobs_requested=True)
    assert completion.text == "ANSWER: 4" and completion.thinking is not None
    assert completion.finish_reason is not None
    assert completion.finish_reason[SCORE_TOKEN_LOGPROBS] == [
        {"offset": 8, "text": "4", "top": {"4": -0.3, "5": -1.5, "3": -2.0}}]


def test_reasoning_content_that_starts_like_the_answer_is_not_taken_for_it() -> None:
    tokens = plain("3", " frames", " show", " it", "</think>", "\n\n") + [token("2", -0.2, [("1", -1.8)]),
                                                                           token(END, -0.01)]
    entries = score_token_logprobs(first_choice("2", tokens, reasoning="3 frames show it"))
    assert entries == [{"offset": 0, "text": "2", "top": {"2": -0.2, "1": -1.8}}]


def test_the_chosen_token_is_added_when_sampling_picked_it_outside_the_top_n() -> None:
    tokens = plain("ANSWER", ": ") + [token("2", -3.2, []), token(END, -0.01)]
    tokens[2]["top_logprobs"] = [{"token": "4", "logprob": -0.2, "bytes": [52]},
                                 {"token": "3", "logprob": -1.9, "bytes": [51]}]
    assert score_token_logprobs(first_choice("ANSWER: 2", tokens)) == [
        {"offset": 8, "text": "2", "top": {"4": -0.2, "3": -1.9, "2": -3.2}}]


def test_alternatives_with_the_same_text_add_their_probabilities() -> None:
    tokens = plain("ANSWER", ": ") + [token("3", -0.5, [("3", -1.0), ("4", -2.0)]), token(END, -0.01)]
    (entry,) = score_token_logprobs(first_choice("ANSWER: 3", tokens)) or []
    assert entry["top"]["3"] == pytest.approx(math.log(math.exp(-0.5) + math.exp(-1.0)))


def test_an_answer_without_digits_gives_an_empty_list() -> None:
    tokens = plain("I", " cannot", " tell", ".", END)
    choice = first_choice("I cannot tell.", tokens)
    assert score_token_logprobs(choice) == []
    finish = completion_from_choice(choice, None, logprobs_requested=True).finish_reason
    assert finish is not None and finish[SCORE_TOKEN_LOGPROBS] == []


def test_an_unterminated_think_block_has_no_answer_tokens() -> None:
    tokens = plain("<think>", "\n", "frame", " ", "3", " is")
    assert score_token_logprobs(first_choice("<think>\nframe 3 is", tokens)) == []


def test_tokens_that_do_not_line_up_are_skipped_and_logged_once(warnings: list[str]) -> None:
    # --return-tokens-as-token-ids on the server: the token texts are ids, not text
    tokens = [token("token_id:8164", -0.1), token("token_id:25", -0.1), token("token_id:220", -0.1),
              token("token_id:18", -0.1)]
    choice = first_choice("ANSWER: 3", tokens)
    assert score_token_logprobs(choice) is None
    for _ in range(3):
        finish = completion_from_choice(choice, {"prompt_tokens": 9, "completion_tokens": 4}, True).finish_reason
        assert finish is not None and SCORE_TOKEN_LOGPROBS not in finish and finish["prompt_tokens"] == 9
    assert len(warnings) == 1 and "do not line up" in warnings[0]


def test_a_digit_after_the_aligned_answer_is_not_guessed(warnings: list[str]) -> None:
    # the content is a prefix of the tokens, but digits follow it: which "3" is the answer's cannot be told
    tokens = plain("ANSWER", ":", " ", "3", "\n", "ANSWER", ":", " ", "4")
    assert score_token_logprobs(first_choice("ANSWER: 3", tokens)) is None


def test_no_logprobs_in_the_response_leaves_the_key_out_and_logs_once(warnings: list[str]) -> None:
    choice = first_choice("ANSWER: 3", None)
    for _ in range(2):
        finish = completion_from_choice(choice, None, logprobs_requested=True).finish_reason
        assert finish is not None and SCORE_TOKEN_LOGPROBS not in finish
    assert len(warnings) == 1 and "returned no log-probabilities" in warnings[0]


def test_without_the_option_no_key_even_if_the_response_has_logprobs(warnings: list[str]) -> None:
    choice = first_choice("ANSWER: 3", plain("ANSWER", ":", " ", "3"))
    finish = completion_from_choice(choice, None).finish_reason
    assert finish == {"reason": "stop"} and not warnings


def test_every_choice_gets_its_own_entries() -> None:
    tokens = plain("ANSWER", ":", " ") + [token("5", -0.1, [("4", -2.4)]), token(END, -0.01)]
    recorded = response("ANSWER: 5", tokens, n=2)
    for choice in recorded["choices"]:
        finish = completion_from_choice(choice, recorded["usage"], True).finish_reason
        assert finish is not None and finish[SCORE_TOKEN_LOGPROBS][0]["offset"] == 8


def test_non_finite_log_probabilities_are_floored_for_the_json_cache() -> None:
    tokens = plain("ANSWER", ":", " ") + [token("5", -0.1, [("4", -math.inf)])]
    tokens[3]["top_logprobs"][1]["logprob"] = None
    (entry,) = score_token_logprobs({"message": {"content": "ANSWER: 5"}, "logprobs": {"content": tokens}}) or []
    assert entry["top"] == {"5": -0.1, "4": logprobs.LOGPROB_FLOOR}


@pytest.mark.parametrize("text", ["ANSWER: 3", "<think>a 1</think>\n\nANSWER: 3", "a</think> 3", "<think>open 2",
                                  "  <think>x</think>y", "", "</think>", "no tags 4"])
def test_answer_start_agrees_with_split_reasoning(text: str) -> None:
    start = answer_start(text)
    answer = split_reasoning(text)[0]
    assert (text[start:] if start is not None else "") == answer
