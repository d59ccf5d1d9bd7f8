"""The answer's digit tokens with their top log-probabilities (``score_token_logprobs``), for ``score=expected``.

Imported only by clients asked for log-probabilities (``top_logprobs`` > 0); the format and how the tokens are
found: docs/clients.md, "Log-probabilities".
"""

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from helm.common.hierarchical_logger import hwarn

from helm_roboreward.helm_frontend.clients.chat_replies import THINK_CLOSE, THINK_OPEN, split_reasoning
from helm_roboreward.protocol.score_probabilities import SCORE_TOKEN_LOGPROBS

LOGPROB_FLOOR = -9999.0
"""What a log-probability of -inf (or NaN) is recorded as: the cache is JSON, and vLLM floors at the same value."""
_DIGIT = re.compile(r"\d")
_WARNED: set[str] = set()


def warn_once(reason: str, message: str) -> None:
    """Log ``message`` the first time ``reason`` comes up in this process."""
    if reason not in _WARNED:
        _WARNED.add(reason)
        hwarn(message)


def answer_start(text: str) -> int | None:
    """Where the answer :func:`split_reasoning` keeps starts in ``text`` (None: a ``<think>`` never closed)."""
    if THINK_CLOSE not in text and text.lstrip().startswith(THINK_OPEN):
        return None
    return len(text) - len(split_reasoning(text)[0])


def merge_logprob(top: dict[str, float], token: str, logprob: Any) -> None:
    """Add one alternative to ``top``; same texts add their probabilities, a non-finite value is the floor."""
    value = float(logprob) if isinstance(logprob, (int, float)) and math.isfinite(logprob) else LOGPROB_FLOOR
    value = max(value, LOGPROB_FLOOR)
    if token in top:
        high, low = max(top[token], value), min(top[token], value)
        value = high + math.log1p(math.exp(low - high))
    top[token] = value


def answer_digit_tokens(spans: Iterable[tuple[int, str, Mapping[str, float]]], answer: str,
                        start: int) -> list[dict[str, Any]] | None:
    """The entries of the ``(offset, text, top)`` spans that hold a digit and start in ``answer``.

    Offsets count in a text in which ``answer`` starts at ``start``; the entries' offsets count in ``answer``.
    None when a digit token does not sit at its offset in the answer: no offset is guessed.
    """
    entries: list[dict[str, Any]] = []
    for offset, token, top in spans:
        at = offset - start
        if at < 0 or not _DIGIT.search(token):
            continue
        if answer[at:at + len(token)] != token:
            return None
        entries.append({"offset": at, "text": token, "top": dict(top)})
    return entries


def score_token_logprobs(choice: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The answer's digit tokens from one chat-completions ``choice``; None: no log-probabilities, or unaligned."""
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, Mapping) else None
    if not isinstance(content, list):
        return None
    tokens = [str(item.get("token") or "") for item in content]
    raw = str((choice.get("message") or {}).get("content") or "")
    answer = split_reasoning(raw)[0]
    joined = "".join(tokens)
    start = answer_start(raw)
    if start is None or not answer:
        return []  # no answer (or an empty one): no answer token to describe
    if not joined.startswith(raw) or _DIGIT.search(joined[len(raw):]):  # a reasoning parser moved the reasoning
        start = joined.rfind(answer)
        if start < 0 or _DIGIT.search(joined[start + len(answer):]):
            return None
    spans: list[tuple[int, str, dict[str, float]]] = []
    offset = 0
    for item, token in zip(content, tokens, strict=True):
        if _DIGIT.search(token):
            top: dict[str, float] = {}
            for alternative in item.get("top_logprobs") or []:
                merge_logprob(top, str(alternative.get("token") or ""), alternative.get("logprob"))
            if token not in top:  # the chosen token is always among the alternatives
                merge_logprob(top, token, item.get("logprob"))
            spans.append((offset, token, top))
        offset += len(token)
    return answer_digit_tokens(spans, answer, start)


def trim_alternatives(response: dict[str, Any]) -> dict[str, Any]:
    """Drop the alternatives of tokens without a digit before the response is cached (offsets keep every token)."""
    for choice in response.get("choices") or []:
        logprobs = choice.get("logprobs") if isinstance(choice, dict) else None
        for item in (logprobs.get("content") or []) if isinstance(logprobs, dict) else []:
            if isinstance(item, dict) and not _DIGIT.search(str(item.get("token") or "")):
                item["top_logprobs"] = []
    return response


def record_choice_logprobs(finish: dict[str, Any], choice: Mapping[str, Any]) -> None:
    """Put a chat-completions choice's ``score_token_logprobs`` in ``finish``, or warn once why there are none."""
    entries = score_token_logprobs(choice)
    if entries is not None:
        finish[SCORE_TOKEN_LOGPROBS] = entries
    elif not isinstance((choice.get("logprobs") or {}).get("content"), list):
        warn_once("no_logprobs", "OpenAIVideoClient: top_logprobs was asked for, but the server returned no "
                                 "log-probabilities: no score_token_logprobs (score=expected has no distribution)")
    else:
        warn_once("unaligned", "OpenAIVideoClient: the log-probability tokens of a completion do not line up with "
                               "its answer text: no score_token_logprobs for it (logged once)")


def digit_token_logprobs(tokenizer: Any, ids: list[int], text: str, logits: Any, top_n: int,
                         decoding: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The answer's digit tokens of one generation: offset in ``text``, text, top ``top_n`` alternatives.

    ``logits`` are ``generate``'s raw logits per step; every token is decoded with ``decoding``, as the answer.
    """
    import torch

    start = answer_start(text)
    if start is None:
        return []
    pieces: list[str] = tokenizer.batch_decode([[i] for i in ids], **decoding)
    running = "".join(pieces) == text
    entries: list[dict[str, Any]] = []
    offset = 0
    for step, (token_id, piece) in enumerate(zip(ids, pieces, strict=True)):
        at = offset if running else None
        offset += len(piece)
        if not _DIGIT.search(piece):
            continue
        at = len(tokenizer.decode(ids[:step], **decoding)) if at is None else at  # a character split over tokens
        if at < start:
            continue  # reasoning: not part of the answer
        logprobs = torch.log_softmax(logits[step][0].float(), dim=-1)
        values, indices = torch.topk(logprobs, min(top_n, int(logprobs.shape[-1])))
        chosen: list[int] = indices.tolist()
        scores: list[float] = values.tolist()
        if token_id not in chosen:  # sampling may pick a token outside the top N: it is always recorded
            chosen.append(token_id)
            scores.append(float(logprobs[token_id]))
        top: dict[str, float] = {}
        for alternative, score in zip(tokenizer.batch_decode([[i] for i in chosen], **decoding), scores, strict=True):
            merge_logprob(top, alternative, score)
        entries.append({"offset": at, "text": piece, "top": top})
    return entries


def record_generated_logprobs(finish: dict[str, Any], generated: Mapping[str, Any], answer: str) -> None:
    """Put a cached generation's digit tokens, re-based to ``answer``, in ``finish`` (or warn once: unaligned)."""
    start = answer_start(generated["text"])
    spans = ((entry["offset"], entry["text"], entry["top"]) for entry in generated["token_logprobs"])
    entries = answer_digit_tokens(spans, answer, start) if start is not None else []
    if entries is None:
        warn_once("transformers_unaligned", "TransformersQwen3VLClient: the digit tokens of a completion do not "
                  "line up with its answer text: no score_token_logprobs for it (logged once)")
    else:
        finish[SCORE_TOKEN_LOGPROBS] = entries
