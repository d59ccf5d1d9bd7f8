"""The report's reward-model statistics with clustered bootstrap intervals (docs/reward_metrics.md).

The statistics are :mod:`helm_roboreward.core.ordering`'s, per subset and macro over subsets. Intervals come
from the same clustered bootstrap as the macro MAE (:mod:`helm_roboreward.presentation.report.bootstrap`):
within a subset, rows sharing an episode key or a video are one cluster (union-find), and so are the two rows
of every same-task preference pair, so a pair never straddles two resampled units; a cluster is drawn as a
whole, each subset's draws seeded by (seed, subset) as for the MAE. A replicate recomputes every statistic from
the drawn clusters (pairs, ladder videos and clip episodes belong to one cluster each; AUROC and the success
counts are weighted by how often each row's cluster was drawn), and the replicate's macro is the mean over the
subsets where the statistic is defined.
"""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from helm_roboreward.core.benchmark import MAX_SCORE
from helm_roboreward.core.ordering import (
    ScoredRow,
    clip_groups,
    group_accuracy,
    kendall_tau_b,
    ladder_groups,
    macro,
    ordered_right,
    preference_pairs,
    says_success,
    subset_ordering,
    total_counts,
)
from helm_roboreward.presentation.report.bootstrap import (
    Interval,
    cluster_ids,
    draw_cluster_weights,
    percentile_interval,
    subset_rng,
)
from helm_roboreward.presentation.report.loading import InstanceRow, ModelRows

STATISTICS = ("preference_accuracy", "ladder_accuracy", "ladder_tau_b", "clip_accuracy", "success_auroc",
              "success_f1", "success_mcc")
"""The statistics the report shows with intervals (precision and recall are in the CSV)."""

PARSED = "parsed"
EXPECTED = "expected"


@dataclass(frozen=True)
class RewardModelSummary:
    """One model's reward-model statistics under one score (parsed, or expected where recorded)."""

    model: str
    display_name: str
    score: str
    """``parsed`` or ``expected``."""

    macro: dict[str, Interval | None]
    """Statistic -> macro over subsets with its interval (None: undefined in every subset)."""

    values: dict[str, float | None]
    """Every statistic's macro point value (precision and recall included)."""

    counts: dict[str, int]
    """Preference pairs, ladder videos and clip episodes over all subsets."""

    per_subset: dict[str, dict[str, float | None]]
    """Subset -> statistic -> value."""


def scored(row: InstanceRow, score: str) -> ScoredRow:
    """A report row as the ordering statistics see it (its parsed or its expected score).

    A failed request its run charged (``failed=max_error``, official) counts as 1; one its run left out
    (``failed=skip``, :attr:`InstanceRow.left_out`) is never passed here.
    """
    value = row.expected if score == EXPECTED else row.predicted  # None for unparseable answers: they count as 1
    return ScoredRow(row.instance_id, row.subset, row.task, row.video_sha256, row.episode, row.kind,
                     float(row.gold or 0.0), None if row.failed_request else value)


class _Clusters:
    """Union-find over a subset's rows: episode / video clusters joined by preference pairs."""

    def __init__(self, rows: Sequence[ScoredRow]) -> None:
        self.index = {row.instance_id: position for position, row in enumerate(rows)}
        base = cluster_ids([row.episode for row in rows], [row.video_sha256 for row in rows])
        self.parent = list(range(len(rows)))
        first_of: dict[int, int] = {}
        for position, cluster in enumerate(base):
            self._union(first_of.setdefault(int(cluster), position), position)
        for a, b in preference_pairs(rows):
            self._union(self.index[a.instance_id], self.index[b.instance_id])
        roots = [self._root(position) for position in range(len(rows))]
        numbering: dict[int, int] = {}
        self.of_row = np.array([numbering.setdefault(root, len(numbering)) for root in roots], dtype=np.int64)
        self.count = len(numbering)

    def _root(self, item: int) -> int:
        while self.parent[item] != item:
            self.parent[item] = self.parent[self.parent[item]]
            item = self.parent[item]
        return item

    def _union(self, a: int, b: int) -> None:
        root_a, root_b = self._root(a), self._root(b)
        if root_a != root_b:
            self.parent[max(root_a, root_b)] = min(root_a, root_b)

    def of(self, row: ScoredRow) -> int:
        return int(self.of_row[self.index[row.instance_id]])


def _ratio(weights: np.ndarray, numerators: np.ndarray, denominators: np.ndarray) -> np.ndarray:
    """Per replicate, sum(w * numerator) / sum(w * denominator) over clusters; NaN where nothing was drawn."""
    top, bottom = weights @ numerators, weights @ denominators
    with np.errstate(invalid="ignore", divide="ignore"):
        result: np.ndarray = np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.nan)
    return result


def _weighted_auroc(rewards: np.ndarray, positive: np.ndarray, row_weights: np.ndarray) -> np.ndarray:
    """AUROC per replicate with rows weighted by ``row_weights`` (B, n); ties count half."""
    values, value_of_row = np.unique(rewards, return_inverse=True)
    onehot = np.zeros((rewards.size, values.size))
    onehot[np.arange(rewards.size), value_of_row] = 1.0
    pos = (row_weights * positive) @ onehot  # (B, V) weight of positives at each value
    neg = (row_weights * ~positive) @ onehot
    below = np.cumsum(neg, axis=1) - neg
    wins = (pos * (below + 0.5 * neg)).sum(axis=1)
    total = pos.sum(axis=1) * neg.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        result: np.ndarray = np.where(total > 0, wins / np.where(total > 0, total, 1.0), np.nan)
    return result


def _success_replicates(rows: Sequence[ScoredRow], row_weights: np.ndarray, continuous: bool) -> dict[str,
                                                                                                      np.ndarray]:
    said = np.array([says_success(row.reward, continuous) for row in rows])
    real = np.array([row.gold == MAX_SCORE for row in rows])
    tp, fp = row_weights @ (said & real), row_weights @ (said & ~real)
    fn, tn = row_weights @ (~said & real), row_weights @ (~said & ~real)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(tp + fp > 0, tp / np.maximum(tp + fp, 1e-300), np.nan)
        recall = np.where(tp + fn > 0, tp / np.maximum(tp + fn, 1e-300), np.nan)
        f1 = np.where(tp + fn > 0, np.where(tp > 0, 2 * tp / np.maximum(2 * tp + fp + fn, 1e-300), 0.0), np.nan)
        denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        mcc = np.where(denominator > 0, (tp * tn - fp * fn) / np.maximum(denominator, 1e-300), 0.0)
    return {"success_f1": f1, "success_mcc": mcc, "success_precision": precision, "success_recall": recall}


def _group_replicates(groups: list[list[ScoredRow]], clusters: _Clusters, weights: np.ndarray,
                      tau: bool = False) -> np.ndarray:
    sums, counts = np.zeros(clusters.count), np.zeros(clusters.count)
    for group in groups:
        statistic = kendall_tau_b(group) if tau else group_accuracy(group)
        if statistic is None:
            continue
        cluster = clusters.of(group[0])
        sums[cluster] += statistic
        counts[cluster] += 1
    return _ratio(weights, sums, counts)


def subset_replicates(rows: Sequence[ScoredRow], subset: str, resamples: int, seed: int,
                      continuous: bool) -> dict[str, np.ndarray]:
    """Each statistic's bootstrap replicates (B,) for one subset; NaN where a replicate leaves it undefined."""
    clusters = _Clusters(rows)
    weights = draw_cluster_weights(clusters.count, resamples, subset_rng(seed, subset))
    row_weights = weights[:, clusters.of_row]
    correct, pairs = np.zeros(clusters.count), np.zeros(clusters.count)
    for a, b in preference_pairs(rows):
        cluster = clusters.of(a)
        correct[cluster] += ordered_right(a, b)
        pairs[cluster] += 1
    replicates = {
        "preference_accuracy": _ratio(weights, correct, pairs),
        "ladder_accuracy": _group_replicates(ladder_groups(rows), clusters, weights),
        "ladder_tau_b": _group_replicates(ladder_groups(rows), clusters, weights, tau=True),
        "clip_accuracy": _group_replicates(clip_groups(rows), clusters, weights),
        "success_auroc": _weighted_auroc(np.array([row.reward for row in rows]),
                                         np.array([row.gold == MAX_SCORE for row in rows]), row_weights),
    }
    replicates.update(_success_replicates(rows, row_weights, continuous))
    return replicates


def summarize_model(model: ModelRows, score: str, resamples: int, seed: int,
                    confidence: float) -> RewardModelSummary | None:
    """One model's statistics under ``score``; None when no row has that score (e.g. no expected scores)."""
    if score == EXPECTED and not any(row.expected is not None for row in model.rows):
        return None  # no score=expected run, or a client without log-probabilities: parsed scores only
    rows = [scored(row, score) for row in model.rows if row.gold is not None and not row.left_out]
    if not rows:
        return None
    by_subset: dict[str, list[ScoredRow]] = defaultdict(list)
    for row in rows:
        by_subset[row.subset].append(row)
    continuous = score == EXPECTED
    orderings = [subset_ordering(subset, subset_rows, continuous) for subset, subset_rows in by_subset.items()]
    values = macro(orderings)
    stacked: dict[str, list[np.ndarray]] = defaultdict(list)
    for ordering, (subset, subset_rows) in zip(orderings, by_subset.items(), strict=True):
        point_values = ordering.values()
        for name, replicate in subset_replicates(subset_rows, subset, resamples, seed, continuous).items():
            if point_values.get(name) is not None:  # subsets where the statistic is undefined stay out, as above
                stacked[name].append(replicate)
    intervals: dict[str, Interval | None] = {}
    for name in STATISTICS:
        point = values.get(name)
        if point is None or not stacked[name]:
            intervals[name] = None
            continue
        # A replicate that leaves a statistic undefined in one of its subsets drops out (as for the macro MAE).
        intervals[name] = percentile_interval(point, np.vstack(stacked[name]).mean(axis=0), confidence)
    return RewardModelSummary(model.model, model.display_name, score, intervals, values,
                              dict(total_counts(orderings)),
                              {ordering.subset: ordering.values() for ordering in orderings})


def reward_model_summaries(models: Sequence[ModelRows], resamples: int, seed: int,
                           confidence: float) -> list[RewardModelSummary]:
    """Every model's statistics on its parsed scores, and on its expected scores where it has them."""
    found = []
    for model in models:
        for score in (PARSED, EXPECTED):
            summary = summarize_model(model, score, resamples, seed, confidence)
            if summary is not None:
                found.append(summary)
    return found
