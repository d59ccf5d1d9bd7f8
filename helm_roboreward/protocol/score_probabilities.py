"""The distribution over the scores 1..5 behind a completion's answer token (``score=expected``).

Pure functions, no I/O, no HELM. Reads a completion's ``finish_reason["score_token_logprobs"]`` at the token of the
number the official parse rule reads; the record and the rule: docs/clients.md, "The score_token_logprobs record".
Also the calibration of a success probability P(5): reliability bins, expected calibration error, Brier score.
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from helm_roboreward.protocol.rules import (
    MAX_SCORE,
    MIN_SCORE,
    official_number_match,
    parse_progress_score,
)

SCORE_TOKEN_LOGPROBS = "score_token_logprobs"
"""The ``finish_reason`` key under which the clients record the candidates."""

SCORE_TOKENS: dict[str, int] = {str(score): score for score in range(MIN_SCORE, MAX_SCORE + 1)}
"""The stripped alternative texts that count, and the score each stands for."""

LOGPROB_ROUNDING = 1e-6
"""A log-probability up to this far above 0 is rounding (a probability of 1 computed in floating point)."""


def parsed_number_span(text: str) -> tuple[int, int] | None:
    """``(start, end)`` in ``text`` as given (not stripped) of the number the official rule reads (None: none)."""
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
    """``{1: p1, ..., 5: p5}`` at the answer's score token, renormalised over 1..5 (None: see docs/clients.md).

    ``text`` is the completion's final answer, in which the candidates' offsets count; when there is no
    distribution, :func:`no_distribution_reason` says why.
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


ECE_BINS = 10
"""Equal-width bins of the expected calibration error and the reliability plot."""


@dataclass(frozen=True)
class ReliabilityBin:
    """One non-empty bin of a reliability diagram."""

    low: float
    high: float
    count: int
    mean_probability: float
    """Mean predicted P(5) of the bin's rows."""

    success_rate: float
    """Share of the bin's rows whose gold score is 5."""


def _check(pairs: Sequence[tuple[float, float]]) -> None:
    for probability, outcome in pairs:
        if not 0.0 <= probability <= 1.0 or outcome not in (0.0, 1.0):
            raise ValueError(f"calibration: ({probability!r}, {outcome!r}) is not a probability in [0, 1] with an "
                             "outcome 0 or 1")


def reliability_bins(pairs: Sequence[tuple[float, float]], bins: int = ECE_BINS) -> list[ReliabilityBin]:
    """The non-empty equal-width bins of ``pairs``, lowest first."""
    if bins < 1:
        raise ValueError(f"calibration: bins must be at least 1, got {bins}")
    _check(pairs)
    members: list[list[tuple[float, float]]] = [[] for _ in range(bins)]
    for probability, outcome in pairs:
        members[min(int(probability * bins), bins - 1)].append((probability, outcome))
    return [ReliabilityBin(index / bins, (index + 1) / bins, len(items), sum(p for p, _ in items) / len(items),
                           sum(y for _, y in items) / len(items))
            for index, items in enumerate(members) if items]


def calibration_error(pairs: Sequence[tuple[float, float]], bins: int = ECE_BINS) -> float | None:
    """Expected calibration error of ``pairs`` (None when there are none)."""
    if not pairs:
        return None
    found = reliability_bins(pairs, bins)
    return sum(b.count * abs(b.mean_probability - b.success_rate) for b in found) / len(pairs)


def brier_score(pairs: Sequence[tuple[float, float]]) -> float | None:
    """Mean squared difference between P(5) and the outcome (None when there are no pairs)."""
    _check(pairs)
    return sum((p - y) ** 2 for p, y in pairs) / len(pairs) if pairs else None
