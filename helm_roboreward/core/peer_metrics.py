"""What peer evaluations report beside the official macro MAE, defined once (docs/reward_metrics.md, "Peer metrics").

Other harnesses on RoboRewardBench report the instance-weighted (micro) MAE, exact and within-1 accuracy and the
mean predicted score per gold label. Pure functions, no I/O. The rows are the MAE's rows, charged as the MAE
charges them: an unparseable answer has error 4 (neither exact nor within 1); a failed request has error 4 under
``failed=max_error`` (official) and is no row under ``failed=skip``. The mean prediction per gold label is over
parsed answers only (as ``predicted_score``): a row without a score has no prediction to average.

- **Macro**: the mean per subset, then the unweighted mean over subsets (the leaderboard's rule).
- **Micro**: the mean over all rows, every row weighing the same (RoboArena's 1,000 rows count 1,000 times).
- **Mean prediction per gold label**: pooled over all rows with that gold label (micro).
"""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from helm_roboreward.protocol import GOLD_LABELS, within_one


def exact_match(abs_error: float) -> float:
    """1 when the answer equals the label (error 0), else 0: the metric's ``exact_match`` from the error."""
    return 1.0 if abs_error == 0 else 0.0



@dataclass(frozen=True)
class PeerRow:
    """One row as the peer metrics see it."""

    subset: str
    gold: int
    predicted: float | None
    """The parsed score; None when unparseable or failed."""

    abs_error: float | None
    """The MAE's error; None for a row the MAE leaves out (a failed request under ``failed=skip``)."""


@dataclass(frozen=True)
class PeerMetrics:
    """One model's peer metrics over its rows."""

    rows: int
    """Rows with an error (the MAE's rows)."""

    subsets: int
    macro_mae: float | None
    micro_mae: float | None
    exact_macro: float | None
    exact_micro: float | None
    within_one_macro: float | None
    within_one_micro: float | None
    mean_prediction: dict[int, float | None]
    """Gold label -> mean parsed score of its rows (None: no parsed answer with that label)."""

    prediction_rows: dict[int, int]
    """Gold label -> parsed answers behind its mean."""


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def macro_mean(by_subset: dict[str, list[float]]) -> float | None:
    """The mean over subsets of each subset's mean (subsets without values left out); None without any."""
    return _mean([sum(values) / len(values) for values in by_subset.values() if values])


def peer_metrics(rows: Iterable[PeerRow]) -> PeerMetrics:
    """Micro and macro MAE, exact and within-1 accuracy, and the mean prediction per gold label."""
    errors: dict[str, list[float]] = defaultdict(list)
    predictions: dict[int, list[float]] = defaultdict(list)
    for row in rows:
        if row.abs_error is not None:
            errors[row.subset].append(row.abs_error)
        if row.predicted is not None and row.abs_error is not None:
            predictions[row.gold].append(row.predicted)
    pooled = [error for subset_errors in errors.values() for error in subset_errors]
    exact = {subset: [exact_match(error) for error in values] for subset, values in errors.items()}
    within = {subset: [within_one(error) for error in values] for subset, values in errors.items()}
    return PeerMetrics(
        rows=len(pooled),
        subsets=len(errors),
        macro_mae=macro_mean(errors),
        micro_mae=_mean(pooled),
        exact_macro=macro_mean(exact),
        exact_micro=_mean([value for values in exact.values() for value in values]),
        within_one_macro=macro_mean(within),
        within_one_micro=_mean([value for values in within.values() for value in values]),
        mean_prediction={gold: _mean(predictions[gold]) for gold in GOLD_LABELS},
        prediction_rows={gold: len(predictions[gold]) for gold in GOLD_LABELS},
    )
