"""The distribution over the scores 1..5 behind a completion's answer token (``score=expected``).

Pure functions, no I/O, no HELM. A client that can returns, in a completion's
``finish_reason["score_token_logprobs"]``, one candidate per generated token of the final answer whose text
holds a decimal digit: ``{"offset": <where the token's text starts in the answer>, "text": <the token's text>,
"top": {<alternative token text>: <natural-log probability>, ...}}`` (the top-k alternatives at that
position, the chosen token included). :func:`score_distribution` reads it the way the official rule reads
the answer:

1. the number the official parse rule reads (``helm_roboreward.protocol``: the first
   ``ANSWER: <number>`` of the stripped text, else a leading number), located by the same two regular
   expressions so that its span is known, mapped back to offsets in the unstripped answer;
2. the candidate whose text covers the first character of that number;
3. its alternatives whose stripped text is exactly one of ``"1"`` .. ``"5"``, several spellings of one
   digit (``"3"``, ``" 3"``) adding their probabilities, renormalised to a distribution over 1..5.

No distribution (None) when there is no parsed number, no covering candidate, no alternative among 1..5,
when an alternative of the covering candidate has a value that is no log-probability (NaN, above 0 beyond
rounding, +inf, or not a number: the record is broken, and dropping that alternative would hand its mass to
the others, e.g. ``{"3": NaN, "4": -0.7, "5": -0.7}`` would read as P(4) = P(5) = 0.5), or when the parsed
number is not ONE character: ``10``, ``-1``, ``3.5`` and ``315`` are read by the
official rule as those values, while the covering token's alternatives only describe its first
character (the "1" of "10" is not the score 1), so mixing them in would misstate what was parsed. A single
digit outside 1..5 (``0``, ``7``) does get the renormalised distribution of its 1..5 alternatives: the
expected reward is defined over the rubric's scores. The caller decides what a row without a distribution
gets; nothing here falls back to the parsed score; :func:`no_distribution_reason` says why there is none.
"""

import math
from collections.abc import Mapping, Sequence
from typing import Any

from helm_roboreward.protocol import (
    MAX_SCORE,
    MIN_SCORE,
    official_number_match,
    parse_progress_score,
)

SCORE_TOKEN_LOGPROBS = "score_token_logprobs"
"""The ``finish_reason`` key under which the clients record the candidates (see the module docstring)."""

SCORE_TOKENS: dict[str, int] = {str(score): score for score in range(MIN_SCORE, MAX_SCORE + 1)}
"""The stripped alternative texts that count, and the score each stands for."""

LOGPROB_ROUNDING = 1e-6
"""A log-probability up to this far above 0 is rounding (a probability of 1 computed in floating point)."""



def parsed_number_span(text: str) -> tuple[int, int] | None:
    """Where, in ``text`` as given (not stripped), the number the official parse rule reads starts and ends.

    Args:
        text: The completion's final answer (``GeneratedOutput.text``).

    Returns:
        ``(start, end)`` character offsets of the number, or None when the official rule finds none
        (including numbers it rejects, see :func:`helm_roboreward.protocol.parse_progress_score`).
    """
    if parse_progress_score(text) is None:
        return None
    match = official_number_match(text)
    assert match is not None  # parse_progress_score found it with the same match
    lead = len(text) - len(text.lstrip())
    return lead + match.start(1), lead + match.end(1)


def covering_candidate(candidates: Sequence[Mapping[str, Any]], position: int) -> Mapping[str, Any] | None:
    """The first well-formed candidate whose text covers character ``position`` of the answer."""
    for candidate in candidates:
        offset, token = candidate.get("offset"), candidate.get("text")
        if isinstance(offset, int) and isinstance(token, str) and offset <= position < offset + len(token):
            return candidate
    return None


def _impossible_log_probability(alternative: str, value: object) -> str | None:
    """Why ``value`` is not a log-probability (a number <= 0, -inf included), or None when it is one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"the log-probability of {alternative!r} is not a number ({value!r})"
    if math.isnan(value):
        return f"the log-probability of {alternative!r} is NaN"
    if value > LOGPROB_ROUNDING:
        return f"the log-probability of {alternative!r} is positive ({value!r}): not a log-probability"
    return None


def _read_distribution(text: str, candidates: Sequence[Mapping[str, Any]]) -> tuple[dict[int, float] | None, str]:
    """The distribution of :func:`score_distribution`, or None with the reason."""
    span = parsed_number_span(text)
    if span is None:
        return None, "the official rule parses no number"
    if span[1] - span[0] != 1:
        return None, f"the parsed number {text[span[0]:span[1]]!r} is not one character"
    candidate = covering_candidate(candidates, span[0])
    top = candidate.get("top") if candidate is not None else None
    if not isinstance(top, Mapping):
        return None, "no log-probability record covers the parsed number"
    logprobs: dict[int, list[float]] = {}
    for alternative, logprob in top.items():
        if not isinstance(alternative, str):
            continue  # not a token text: a malformed entry, skipped
        problem = _impossible_log_probability(alternative, logprob)
        if problem is not None:
            return None, problem
        score = SCORE_TOKENS.get(alternative.strip())
        if score is not None:
            logprobs.setdefault(score, []).append(min(float(logprob), 0.0))
    ceiling = max((max(values) for values in logprobs.values()), default=-math.inf)
    if ceiling == -math.inf:
        return None, "no alternative among 1..5"
    # Scaled by exp(-ceiling) so that log-probabilities far below 0 (vLLM floors at -9999) do not underflow.
    mass = {score: sum(math.exp(value - ceiling) for value in logprobs.get(score, []))
            for score in SCORE_TOKENS.values()}
    total = sum(mass.values())
    return {score: weight / total for score, weight in mass.items()}, ""


def score_distribution(text: str, candidates: Sequence[Mapping[str, Any]]) -> dict[int, float] | None:
    """The probability of each score 1..5 at the answer's score token, renormalised over 1..5.

    Args:
        text: The completion's final answer (``GeneratedOutput.text``), in which candidate offsets count.
        candidates: ``finish_reason["score_token_logprobs"]`` (see the module docstring).

    Returns:
        ``{1: p1, ..., 5: p5}`` summing to 1 (scores without an alternative get 0), or None: no parsed
        number, a parsed number longer than one character, no candidate covering it, an alternative whose value
        is no log-probability (NaN, positive, not a number), or no alternative among 1..5 with a positive
        probability (:func:`no_distribution_reason` says which).
    """
    return _read_distribution(text, candidates)[0]


def no_distribution_reason(text: str, candidates: Sequence[Mapping[str, Any]]) -> str | None:
    """Why :func:`score_distribution` gives None for this answer (one line), or None when it gives a distribution."""
    distribution, reason = _read_distribution(text, candidates)
    return None if distribution is not None else reason


def expected_score(distribution: Mapping[int, float]) -> float:
    """The probability-weighted mean score of a distribution over 1..5.

    Raises:
        ValueError: The distribution has no positive mass.
    """
    total = sum(distribution.values())
    if not total > 0:
        raise ValueError(f"expected_score needs a distribution with positive mass, got {dict(distribution)}")
    return sum(score * probability for score, probability in distribution.items()) / total


def success_probability(distribution: Mapping[int, float]) -> float:
    """P(5): the probability that the model calls the episode a success."""
    return float(distribution.get(MAX_SCORE, 0.0))


__all__: list[str] = ["score_distribution", "no_distribution_reason", "expected_score", "success_probability",
                      "parsed_number_span", "covering_candidate", "SCORE_TOKENS"]
