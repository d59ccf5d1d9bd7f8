"""Which chat-completions replies can become completions (pure checks; the client tests send them over HTTP)."""

import json
from typing import Any

import pytest

from helm_roboreward.helm_frontend.clients.chat_replies import UnusableReplyError, decode_reply, reply_problem
from tests.helpers.fakes.openai_chat import MALFORMED_BODIES


def reply(**message: Any) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant",
                                                                                       **message}}]}


REASONS = {
    "truncated-json": "not JSON (Content-Type application/json",
    "text-plain": "not JSON (Content-Type text/plain",
    "empty-object": "no choices",
    "number-content": "message content is a number (3), not text",
    "empty-choices": "no choices",
    "json-list": "the reply is a list, not a chat completion object",
}


@pytest.mark.parametrize("kind", sorted(MALFORMED_BODIES))
def test_every_malformed_body_is_refused_with_its_reason(kind: str) -> None:
    content_type, body = MALFORMED_BODIES[kind]
    with pytest.raises(UnusableReplyError, match="the server answered 200") as raised:
        decode_reply(content_type, body.decode())
    assert REASONS[kind] in str(raised.value)
    assert set(REASONS) == set(MALFORMED_BODIES)


def test_the_error_quotes_the_start_of_the_reply() -> None:
    with pytest.raises(UnusableReplyError) as raised:
        decode_reply("text/plain", "upstream worker crashed " * 20)
    message = str(raised.value)
    assert "'upstream worker crashed upstream" in message and "...;" in message and len(message) < 400


@pytest.mark.parametrize("good", [
    reply(content="ANSWER: 3"),
    reply(content=None, reasoning_content="ran out of tokens while thinking"),  # no answer: charged, not a failure
    reply(content="ANSWER: 2", reasoning="short"),
    {**reply(content="ANSWER: 1"), "usage": {"prompt_tokens": 1}},
])
def test_usable_replies_pass(good: dict[str, Any]) -> None:
    assert reply_problem(good) is None
    assert decode_reply("application/json", json.dumps(good)) == good


def test_valid_json_under_another_content_type_is_read() -> None:
    """As the openai package does: the body decides, not the header."""
    assert decode_reply("text/plain", json.dumps(reply(content="ANSWER: 5")))["choices"][0]["message"]["content"] \
        == "ANSWER: 5"


@pytest.mark.parametrize("broken, reason", [
    ("3", "the reply is a number"),
    ({"error": {"message": "model overloaded"}}, "no choices (it holds an error: {\"message\": \"model overloaded\"})"),
    ({"choices": ["ANSWER: 3"]}, "choice 0 has no message object"),
    ({"choices": [{"message": "ANSWER: 3"}]}, "choice 0 has no message object"),
    (reply(content=["ANSWER", 3]), "message content is a list"),
    (reply(content="ANSWER: 3", reasoning_content={"steps": 2}), "message reasoning_content is an object"),
    ({**reply(content="ANSWER: 3"), "usage": "lots"}, "usage is a string, not an object"),
    ({"choices": [{"message": {"content": "ANSWER: 3"}, "logprobs": [1]}]}, "logprobs is a list, not an object"),
])
def test_unusable_shapes_are_named(broken: Any, reason: str) -> None:
    decoded = json.loads(broken) if isinstance(broken, str) else broken
    problem = reply_problem(decoded)
    assert problem is not None and reason in problem
