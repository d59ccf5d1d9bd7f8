"""Why a chat-completions request failed, in words: its reply unusable, or the server's error; imported only then."""

import json

from helm_roboreward.clients.common import UnusableReplyError
from helm_roboreward.clients.reply_check import REPLY_QUOTE, reply_problem


def unusable_body(content_type: str, text: str) -> UnusableReplyError:
    """The error for a 200 body that is not JSON or not a usable chat completion, quoting the body's start."""
    quote = repr(text[:REPLY_QUOTE]) + ("..." if len(text) > REPLY_QUOTE else "")
    try:
        problem = reply_problem(json.loads(text))
    except ValueError as error:
        return UnusableReplyError(f"the server answered 200 with a body that is not JSON (Content-Type "
                                  f"{content_type or 'absent'}, {len(text)} characters: {quote}; {error})")
    return UnusableReplyError(f"the server answered 200 with a reply that is not a usable chat completion: "
                              f"{problem} (reply: {quote})")


def request_failure(error: Exception, retries: int) -> str:
    """The failed request's message for an unusable reply or an ``openai`` error raised after ``retries`` retries."""
    import openai

    if isinstance(error, UnusableReplyError):
        return f"{error}; not cached, a rerun sends the request again"
    if isinstance(error, openai.APIStatusError):
        return f"server answered {error.status_code}: {error.message}"
    return f"request failed after {retries} retries: {error}"  # connection errors and timeouts
