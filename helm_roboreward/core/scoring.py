"""Parsing a completion into a progress score and the per-instance error terms (docs/protocol.md, section 6).

Pure functions, no I/O. The official rule:

1. Search the stripped completion, case-insensitively, for the WORD ``answer`` (word boundaries on
   both sides: ``final_answer: 3``, ``reanswer: 3`` and ``answers: 3`` do not match) followed by
   optional spaces, a colon, optional spaces and a number (optional minus sign, optional decimal
   part). The first match wins.
2. Otherwise, if the stripped completion starts with such a number followed by a word boundary,
   use it.
3. Otherwise (an empty completion included) the completion is unparseable.

These are the two regular expressions of the official metric (HELM branch ``rob``,
``RoboRewardBenchProgressPredictionMetric.extract_answer``), used verbatim; ``docs/protocol.md``
section 6 has the details.

No clamping: ``ANSWER: 0`` scores 0 and ``ANSWER: 3.5`` scores 3.5. An unparseable completion
costs the maximum error (4.0 absolute, 16.0 squared).
"""

import math
import re
from dataclasses import dataclass

from helm_roboreward.core.benchmark import MAX_SCORE, MIN_SCORE

UNPARSEABLE_ABS_ERROR = float(MAX_SCORE - MIN_SCORE)
"""Absolute error charged for an unparseable completion (the widest possible miss, 4.0)."""

# Python's \d: any Unicode decimal digit counts ("ANSWER: ٤" -> 4), as in the official regex (float() reads them all).
_NUMBER = r"-?\d+(?:\.\d+)?"
MAX_PARSED_MAGNITUDE = 1e75
"""Larger numbers are unparseable: HELM squares the squared error for its variance, which would overflow."""

_ANSWER_PATTERN = re.compile(r"(?i)\banswer\b\s*:\s*(" + _NUMBER + r")")
_LEADING_NUMBER_PATTERN = re.compile(r"^\s*(" + _NUMBER + r")\b")


def official_number_match(completion: str) -> re.Match[str] | None:
    """The official rule's match on the stripped completion: group 1 is the number it reads (None: no number).

    Offsets count in ``completion.strip()``; :func:`parse_progress_score` also rejects non-finite and huge values.
    """
    text = completion.strip()
    return _ANSWER_PATTERN.search(text) or _LEADING_NUMBER_PATTERN.search(text)


def parse_progress_score(completion: str) -> float | None:
    """Extract the progress score from a completion by the official rule.

    Args:
        completion: The model's final answer text (reasoning kept separately is not passed here).

    Returns:
        The score as a float (not clamped to 1..5), or None when the completion is unparseable.
    """
    match = official_number_match(completion)
    if match is None:
        return None
    value = float(match.group(1))
    if not math.isfinite(value) or abs(value) > MAX_PARSED_MAGNITUDE:
        return None  # a digit string so long that its error would not be finite: unparseable
    return value


@dataclass(frozen=True)
class ScoredPrediction:
    """The per-instance error terms of one prediction."""

    predicted: float | None
    """Parsed score, or None when unparseable."""

    gold: int
    """Human-verified label, 1..5."""

    abs_error: float
    squared_error: float
    exact_match: float
    invalid_output: float
    """1.0 when the completion was unparseable."""

    signed_error: float | None
    """predicted - gold (positive = over-rewarding); None when unparseable, so bias is measured on parsed answers."""

    false_success: float
    """1.0 when the model predicted 5 although gold < 5 (called a failure a success)."""

    missed_success: float
    """1.0 when gold is 5 and the model did not predict 5 (unparseable counts as a miss)."""


def maximum_error_score(gold: int, invalid_output: bool) -> ScoredPrediction:
    """The charge for an answer without a score: the widest possible miss.

    Args:
        gold: The row's reward, 1..5.
        invalid_output: True for an unparseable completion; False for a request charged as an error
            without any completion (``failed=max_error``).
    """
    return ScoredPrediction(
        predicted=None,
        gold=gold,
        abs_error=UNPARSEABLE_ABS_ERROR,
        squared_error=UNPARSEABLE_ABS_ERROR**2,
        exact_match=0.0,
        invalid_output=1.0 if invalid_output else 0.0,
        signed_error=None,
        false_success=0.0,
        missed_success=1.0 if gold == MAX_SCORE else 0.0,
    )


def score_prediction(completion: str, gold: int) -> ScoredPrediction:
    """Score one completion against the gold label.

    Args:
        completion: The model's answer text.
        gold: The row's reward, 1..5.

    Returns:
        Every per-instance error term.
    """
    predicted = parse_progress_score(completion)
    if predicted is None:
        return maximum_error_score(gold, invalid_output=True)
    error = predicted - gold
    return ScoredPrediction(
        predicted=predicted,
        gold=gold,
        abs_error=abs(error),
        squared_error=error * error,
        exact_match=1.0 if predicted == gold else 0.0,
        invalid_output=0.0,
        signed_error=error,
        false_success=1.0 if predicted == MAX_SCORE and gold < MAX_SCORE else 0.0,
        missed_success=1.0 if gold == MAX_SCORE and predicted != MAX_SCORE else 0.0,
    )
