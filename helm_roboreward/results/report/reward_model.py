"""The report's reward-model statistics with clustered bootstrap intervals (docs/reward_metrics.md).

The statistics are :mod:`~helm_roboreward.protocol.reward_statistics`'s, per subset and macro over subsets. Intervals
come from the same clustered bootstrap as the macro MAE (:mod:`helm_roboreward.results.report.bootstrap`):
within a subset, rows sharing an episode key or a video are one cluster (union-find), and so are the two rows
of every same-task preference pair, so a pair never straddles two resampled units; a cluster is drawn as a
whole, each subset's draws seeded by (seed, subset) as for the MAE. A replicate recomputes every statistic from
the drawn clusters (pairs, ladder videos and clip episodes belong to one cluster each; AUROC and the success
counts are weighted by how often each row's cluster was drawn), and the replicate's macro is the mean over the
subsets where the statistic is defined.

Every interval says what it rests on (:class:`Support`): the clusters holding the statistic's units (clusters with
a preference pair, a ladder video or a clip episode; every cluster for success detection; summed over the subsets
of a macro) and the per-subset MAE's too-small rule (:func:`~helm_roboreward.results.report.bootstrap.
too_small_reason`). With a handful of clusters per subset the percentile interval is too narrow: on the bundled
sample the null model's 95% intervals held the true value in about 9 of 10 seeds, on copies with 40 clusters per
subset in about 19 of 20 (tests/results/report/test_reward_model_coverage.py).
"""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from helm_roboreward.helm_frontend.run_rows import ModelRows, scored
from helm_roboreward.protocol.reward_statistics import (
    ScoredRow,
    clip_groups,
    group_accuracy,
    kendall_tau_b,
    ladder_groups,
    macro,
    preference_counts,
    says_success,
    subset_ordering,
    task_groups,
    total_counts,
)
from helm_roboreward.protocol.rules import EXPECTED, MAX_SCORE, PARSED
from helm_roboreward.results.report.bootstrap import (
    MAX_HALF_WIDTH,
    MIN_CLUSTERS,
    Interval,
    cluster_ids,
    draw_cluster_weights,
    percentile_interval,
    subset_rng,
    too_small_reason,
)

STATISTICS = ("preference_accuracy", "ladder_accuracy", "ladder_tau_b", "clip_accuracy", "success_auroc",
              "success_f1", "success_mcc")
"""The statistics the report's table shows (precision and recall, with their intervals, are in the CSV)."""


@dataclass(frozen=True)
class Support:
    """What an interval rests on: the clusters the bootstrap drew it from, and whether they are enough."""

    clusters: int
    too_small: str | None
    """Why the interval cannot be trusted (the per-subset MAE's rule), or None."""


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

    support: dict[str, Support] = field(default_factory=dict)
    """Statistic -> the clusters behind its macro interval (summed over its subsets) and the too-small flag."""

    subset_intervals: dict[str, dict[str, Interval | None]] = field(default_factory=dict)
    """Subset -> statistic -> interval (statistics defined in the subset)."""

    subset_support: dict[str, dict[str, Support]] = field(default_factory=dict)
    """Subset -> statistic -> the clusters behind its interval and the too-small flag."""


class _Clusters:
    """Union-find over a subset's rows: name clusters and identical videos, joined by preference pairs.

    A name cluster is a RoboArena session, else the episode (:func:`loading.cluster_of_record`).
    """

    def __init__(self, rows: Sequence[ScoredRow]) -> None:
        self.index = {row.instance_id: position for position, row in enumerate(rows)}
        base = cluster_ids([row.cluster or row.episode for row in rows], [row.video_sha256 for row in rows])
        self.parent = list(range(len(rows)))
        first_of: dict[int, int] = {}
        for position, cluster in enumerate(base):
            self._union(first_of.setdefault(int(cluster), position), position)
        for group in task_groups(rows):  # every row of such a group is in a pair: the pairs join the whole group
            for row in group[1:]:
                self._union(self.index[group[0].instance_id], self.index[row.instance_id])
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
    real = np.array([row.gold_score == MAX_SCORE for row in rows])
    tp, fp = row_weights @ (said & real), row_weights @ (said & ~real)
    fn, tn = row_weights @ (~said & real), row_weights @ (~said & ~real)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(tp + fp > 0, tp / np.maximum(tp + fp, 1e-300), np.nan)
        recall = np.where(tp + fn > 0, tp / np.maximum(tp + fn, 1e-300), np.nan)
        f1 = np.where(tp + fn > 0, np.where(tp > 0, 2 * tp / np.maximum(2 * tp + fp + fn, 1e-300), 0.0), np.nan)
        denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        mcc = np.where(denominator > 0, (tp * tn - fp * fn) / np.maximum(denominator, 1e-300), 0.0)
    return {"success_f1": f1, "success_mcc": mcc, "success_precision": precision, "success_recall": recall}


def _group_sums(groups: list[list[ScoredRow]], clusters: _Clusters, tau: bool = False) -> tuple[np.ndarray,
                                                                                               np.ndarray]:
    """Per cluster: the sum of its groups' statistic and how many groups it holds."""
    sums, counts = np.zeros(clusters.count), np.zeros(clusters.count)
    for group in groups:
        statistic = kendall_tau_b(group) if tau else group_accuracy(group)
        if statistic is None:
            continue
        cluster = clusters.of(group[0])
        sums[cluster] += statistic
        counts[cluster] += 1
    return sums, counts


@dataclass(frozen=True)
class SubsetReplicates:
    """One subset's bootstrap replicates and the clusters behind each statistic."""

    replicates: dict[str, np.ndarray]
    """Statistic -> replicates (B,); NaN where a replicate leaves it undefined."""

    clusters: dict[str, int]
    """Statistic -> the clusters that hold its units (pairs, ladder videos, clip episodes; every cluster for
    success detection): what the bootstrap resamples for it."""


def subset_replicates(rows: Sequence[ScoredRow], subset: str, resamples: int, seed: int,
                      continuous: bool) -> SubsetReplicates:
    """Each statistic's bootstrap replicates for one subset, with the clusters behind it."""
    clusters = _Clusters(rows)
    weights = draw_cluster_weights(clusters.count, resamples, subset_rng(seed, subset))
    row_weights = weights[:, clusters.of_row]
    correct, pairs = np.zeros(clusters.count), np.zeros(clusters.count)
    for group in task_groups(rows):  # one cluster holds the whole group (:class:`_Clusters`)
        cluster = clusters.of(group[0])
        right, count = preference_counts(group)
        correct[cluster] += right
        pairs[cluster] += count
    ladders = ladder_groups(rows)
    ladder_sums, ladder_counts = _group_sums(ladders, clusters)
    tau_sums, _ = _group_sums(ladders, clusters, tau=True)
    clip_sums, clip_counts = _group_sums(clip_groups(rows), clusters)
    replicates = {
        "preference_accuracy": _ratio(weights, correct, pairs),
        "ladder_accuracy": _ratio(weights, ladder_sums, ladder_counts),
        "ladder_tau_b": _ratio(weights, tau_sums, ladder_counts),
        "clip_accuracy": _ratio(weights, clip_sums, clip_counts),
        "success_auroc": _weighted_auroc(np.array([row.reward for row in rows]),
                                         np.array([row.gold_score == MAX_SCORE for row in rows]), row_weights),
    }
    replicates.update(_success_replicates(rows, row_weights, continuous))
    holding = {"preference_accuracy": pairs, "ladder_accuracy": ladder_counts, "ladder_tau_b": ladder_counts,
               "clip_accuracy": clip_counts}
    behind = {name: int(np.count_nonzero(holding[name])) if name in holding else clusters.count
              for name in replicates}
    return SubsetReplicates(replicates, behind)


class _Intervals:
    """Per-subset intervals with their support, and what the macro intervals are stacked from."""

    def __init__(self, confidence: float, min_clusters: int, max_half_width: float) -> None:
        self.confidence, self.min_clusters, self.max_half_width = confidence, min_clusters, max_half_width
        self.stacked: dict[str, list[np.ndarray]] = defaultdict(list)
        self.macro_clusters: dict[str, int] = defaultdict(int)
        self.subset_intervals: dict[str, dict[str, Interval | None]] = {}
        self.subset_support: dict[str, dict[str, Support]] = {}

    def support(self, clusters: int, interval: Interval | None) -> Support:
        return Support(clusters, too_small_reason(clusters, [interval], self.min_clusters, self.max_half_width))

    def add(self, subset: str, point_values: dict[str, float | None], found: SubsetReplicates) -> None:
        """One subset: a statistic undefined there (no pairs, one class only) stays out of its macro."""
        self.subset_intervals[subset], self.subset_support[subset] = {}, {}
        for name, replicate in found.replicates.items():
            point = point_values.get(name)
            if point is None:
                continue
            self.stacked[name].append(replicate)
            self.macro_clusters[name] += found.clusters[name]
            interval = percentile_interval(point, replicate, self.confidence)
            self.subset_intervals[subset][name] = interval
            self.subset_support[subset][name] = self.support(found.clusters[name], interval)

    def macro(self, values: dict[str, float | None]) -> tuple[dict[str, Interval | None], dict[str, Support]]:
        """The macro intervals (mean of the subsets' replicates) and their support (clusters summed)."""
        intervals: dict[str, Interval | None] = {}
        support: dict[str, Support] = {}
        for name, point in values.items():
            if point is None or not self.stacked[name]:
                intervals[name] = None
                continue
            # A replicate that leaves a statistic undefined in one of its subsets drops out (as for the macro MAE).
            replicates = np.vstack(self.stacked[name]).mean(axis=0)
            intervals[name] = percentile_interval(point, replicates, self.confidence)
            support[name] = self.support(self.macro_clusters[name], intervals[name])
        return intervals, support


def summarize_model(model: ModelRows, score: str, resamples: int, seed: int, confidence: float,
                    min_clusters: int = MIN_CLUSTERS, max_half_width: float = MAX_HALF_WIDTH
                    ) -> RewardModelSummary | None:
    """One model's statistics under ``score``; None when no row has that score (e.g. no expected scores).

    Every interval carries the clusters behind it and the report's too-small flag
    (:func:`~helm_roboreward.results.report.bootstrap.too_small_reason` with ``min_clusters`` and
    ``max_half_width``); a macro interval's clusters are summed over the subsets it averages.
    """
    if score == EXPECTED and not any(row.expected is not None for row in model.rows):
        return None  # no score=expected run, or a client without log-probabilities: parsed scores only
    rows = [scored(row, score) for row in model.rows if row.gold_score is not None and not row.left_out]
    if not rows:
        return None
    by_subset: dict[str, list[ScoredRow]] = defaultdict(list)
    for row in rows:
        by_subset[row.subset].append(row)
    continuous = score == EXPECTED
    orderings = [subset_ordering(subset, subset_rows, continuous) for subset, subset_rows in by_subset.items()]
    found = _Intervals(confidence, min_clusters, max_half_width)
    for ordering, (subset, subset_rows) in zip(orderings, by_subset.items(), strict=True):
        found.add(subset, ordering.values(), subset_replicates(subset_rows, subset, resamples, seed, continuous))
    values = macro(orderings)
    intervals, support = found.macro(values)
    return RewardModelSummary(model.model, model.display_name, score, intervals, values,
                              dict(total_counts(orderings)),
                              {ordering.subset: ordering.values() for ordering in orderings},
                              support, found.subset_intervals, found.subset_support)


def reward_model_summaries(models: Sequence[ModelRows], resamples: int, seed: int, confidence: float,
                           min_clusters: int = MIN_CLUSTERS,
                           max_half_width: float = MAX_HALF_WIDTH) -> list[RewardModelSummary]:
    """Every model's statistics on its parsed scores, and on its expected scores where it has them."""
    found = []
    for model in models:
        for score in (PARSED, EXPECTED):
            summary = summarize_model(model, score, resamples, seed, confidence, min_clusters, max_half_width)
            if summary is not None:
                found.append(summary)
    return found
