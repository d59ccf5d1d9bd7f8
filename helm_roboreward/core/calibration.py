"""Calibration of a success probability P(5): reliability bins, expected calibration error, Brier score.

Pure functions over ``(probability, outcome)`` pairs, ``outcome`` 1.0 for a row whose gold score is 5 and 0.0
otherwise (``score=expected`` runs; docs/reward_metrics.md). Bins are equal-width over [0, 1]: bin ``i`` of
``n`` holds ``i/n <= p < (i+1)/n``, the last one also ``p == 1``. The expected calibration error is the
row-weighted mean over non-empty bins of ``|mean p - share of successes|`` (Guo et al., "On Calibration of
Modern Neural Networks", ICML 2017, with the usual 10 bins).
"""

from collections.abc import Sequence
from dataclasses import dataclass

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
