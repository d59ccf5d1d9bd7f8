"""The report's expected-score calibration: per model with recorded expected scores (``score=expected``).

For each model whose rows carry an expected score and P(5) (:class:`~helm_roboreward.helm_frontend.
run_rows.InstanceRow`): how many rows have one, the expected score's MAE next to the parsed score's MAE on the
same rows (each a mean over the rows of a subset, then the unweighted mean over subsets, as the leaderboard's
MAE), and for P(5) against "the gold score is 5", pooled over the model's rows: the Brier score, the expected
calibration error and the reliability bins (:mod:`~helm_roboreward.protocol.score_probabilities`). Rows without a
distribution (failed, unparseable, no 1..5 alternative) are left out of all of these and counted in ``rows -
with_distribution``; failed requests a ``failed=skip`` run left out are not rows at all.
"""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from helm_roboreward.helm_frontend.run_rows import ModelRows
from helm_roboreward.protocol.reward_statistics import macro_mean
from helm_roboreward.protocol.rules import MAX_SCORE
from helm_roboreward.protocol.score_probabilities import (
    ECE_BINS,
    ReliabilityBin,
    brier_score,
    calibration_error,
    reliability_bins,
)


@dataclass(frozen=True)
class CalibrationSummary:
    """One model's expected-score statistics."""

    model: str
    display_name: str
    rows: int
    """Rows with a gold score."""

    with_distribution: int
    """Rows with an expected score and P(5)."""

    expected_mae: float
    """Macro over subsets of the mean |expected score - gold score|."""

    parsed_mae: float | None
    """The same, for the parsed score on the same rows (None when none of them parsed)."""

    brier: float
    ece: float
    base_rate: float
    """Share of the rows (with a distribution) whose gold score is 5."""

    bins: tuple[ReliabilityBin, ...]


def summarize_calibration(model: ModelRows, bins: int = ECE_BINS) -> CalibrationSummary | None:
    """The model's calibration summary; None when no row has an expected score."""
    graded = [row for row in model.rows if row.gold_score is not None and not row.left_out]  # failed=skip: not a row
    expected_errors: dict[str, list[float]] = defaultdict(list)
    parsed_errors: dict[str, list[float]] = defaultdict(list)
    pairs: list[tuple[float, float]] = []
    for row in graded:
        gold_score, expected, success = row.gold_score, row.expected, row.success_probability
        if gold_score is None or expected is None or success is None:
            continue
        expected_errors[row.subset].append(abs(expected - gold_score))
        if row.predicted is not None:
            parsed_errors[row.subset].append(abs(row.predicted - gold_score))
        pairs.append((success, 1.0 if gold_score == MAX_SCORE else 0.0))
    if not pairs:
        return None
    expected_mae = macro_mean(expected_errors)
    brier, ece = brier_score(pairs), calibration_error(pairs, bins)
    assert expected_mae is not None and brier is not None and ece is not None  # pairs is not empty
    return CalibrationSummary(model.model, model.display_name, len(graded), len(pairs), expected_mae,
                              macro_mean(parsed_errors), brier, ece, sum(y for _, y in pairs) / len(pairs),
                              tuple(reliability_bins(pairs, bins)))


def calibration_summaries(models: Sequence[ModelRows]) -> list[CalibrationSummary]:
    """The summaries of the models that have expected scores, in the given order."""
    found = [summarize_calibration(model) for model in models]
    return [summary for summary in found if summary is not None]
