"""A chat-completions reply read into HELM completions; one that cannot be read fails its request (docs/clients.md)."""

import json
from typing import Any

from helm.common.request import GeneratedOutput

from helm_roboreward.clients.common import completion

TEXT_FIELDS = ("content", "reasoning_content", "reasoning")
_OBJECT_OR_NULL = (dict, type(None))


class UnusableReplyError(Exception):
    """A 200 reply that cannot become completions: the request fails, uncached, so a rerun sends it again."""


def usable(reply: Any) -> bool:
    """Whether a decoded reply can become completions (``reply_errors.reply_problem`` says why it cannot)."""
    choices = reply.get("choices") if isinstance(reply, dict) else None
    return isinstance(choices, list) and bool(choices) and isinstance(reply.get("usage"), _OBJECT_OR_NULL) and all(
        isinstance(choice, dict) and isinstance(choice.get("message"), dict)
        and isinstance(choice.get("logprobs"), _OBJECT_OR_NULL)
        and all(isinstance(choice["message"].get(field), (str, type(None))) for field in TEXT_FIELDS)
        for choice in choices)


def decode_reply(content_type: str, text: str) -> dict[str, Any]:
    """A 200 reply's body as a usable chat completion; :class:`UnusableReplyError` saying why when it is not."""
    try:
        reply = json.loads(text)
    except ValueError:
        reply = None  # not JSON: the error says so
    if usable(reply):
        return dict(reply)
    from helm_roboreward.clients.reply_errors import unusable_body

    raise unusable_body(content_type, text)


def completions_of(response: dict[str, Any], logprobs_requested: bool) -> list[GeneratedOutput]:
    """HELM completions from a response as cached; :class:`UnusableReplyError` when any part cannot be read."""
    if not usable(response):
        from helm_roboreward.clients.reply_errors import reply_problem

        raise UnusableReplyError(f"the reply is not a usable chat completion: {reply_problem(response)}")
    try:
        return [completion_from_choice(choice, response.get("usage"), logprobs_requested)
                for choice in response["choices"]]
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        raise UnusableReplyError(f"the reply cannot be read ({type(error).__name__}: {error})") from error


def completion_from_choice(choice: dict[str, Any], usage: dict[str, Any] | None,
                           logprobs_requested: bool = False) -> GeneratedOutput:
    """A HELM completion from one ``choice`` (as cached): answer, reasoning, usage, ``score_token_logprobs``."""
    message = choice.get("message") or {}
    finish: dict[str, Any] = {"reason": choice.get("finish_reason")}
    if usage:  # HELM's RequestResult has no usage field; finish_reason is the dict that reaches the metric
        finish.update(prompt_tokens=usage.get("prompt_tokens"), completion_tokens=usage.get("completion_tokens"))
    if logprobs_requested:
        from helm_roboreward.clients.logprobs import record_choice_logprobs

        record_choice_logprobs(finish, choice)
    return completion(message.get("content") or "", finish, [],
                      message.get("reasoning_content") or message.get("reasoning"))
