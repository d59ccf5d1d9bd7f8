"""Clustered bootstrap of the macro MAE (docs/protocol.md, section 8) and of paired differences between models.

Pure numpy, no I/O. Rows of one subset that share a source rollout are not independent: the
camera views of one RoboArena episode, the temporal clips of one OXE episode and the
counterfactual relabels of one video (byte-identical, only the task differs). They form one
cluster (union-find over equal ``episode`` OR equal ``video_sha256`` keys) and are resampled
together. Subsets are resampled independently (stratified), each replicate's subset MAE is the
ratio estimator ``sum of errors of the drawn clusters / number of rows of the drawn clusters``,
and the replicate macro MAE is the unweighted mean of its subset MAEs. Intervals are percentile
intervals.

Every subset draws its clusters from its own generator, seeded by ``(seed, subset name)``: the
draws do not depend on which other subsets or models are present, and every model (and every
pair of models) sees the same resampled clusters, which makes the pairwise comparison paired.
"""

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from helm_roboreward.protocol.rows import cluster_numbers

MIN_CLUSTERS = 30
"""An interval from fewer clusters than this is too small to trust (the bootstrap distribution is too coarse: on
the bundled sample, 5 to 8 clusters per subset, 95% intervals of the null model held the true value in about 9 of
10 seeds)."""

MAX_HALF_WIDTH = 0.25
"""An interval with a half-width above this is too small to separate models (it spans 0.5 MAE, more than most
gaps between neighbouring leaderboard models)."""


@dataclass(frozen=True)
class Interval:
    """A point estimate with a bootstrap confidence interval."""

    estimate: float
    low: float
    high: float

    @property
    def half_width(self) -> float:
        """Half the width of the interval."""
        return (self.high - self.low) / 2.0

    @property
    def excludes_zero(self) -> bool:
        """True when zero lies outside the closed interval."""
        return self.low > 0.0 or self.high < 0.0


@dataclass(frozen=True)
class SubsetSample:
    """The rows of one subset, for every model at once."""

    name: str
    """Subset id; also seeds the subset's cluster draws."""

    clusters: np.ndarray
    """Cluster index (0..K-1) of each row, shape (n,)."""

    errors: np.ndarray
    """Absolute error of each row (rows) for each model (columns), NaN where a model has no error."""

    @property
    def num_clusters(self) -> int:
        """Number of clusters K."""
        return int(self.clusters.max()) + 1 if self.clusters.size else 0


@dataclass(frozen=True)
class MacroBootstrap:
    """Per-model macro MAE and per-subset MAE intervals."""

    macro: list[Interval | None]
    """One per model; None for a model without any error."""

    subsets: list[list[Interval | None]]
    """``subsets[s][m]``: subset s, model m; None when the model has no error in that subset."""


@dataclass(frozen=True)
class PairedDifference:
    """Macro-MAE difference (first minus second model) over the rows both models have."""

    interval: Interval
    num_rows: int
    num_subsets: int


def too_small_reason(num_clusters: int, intervals: Sequence[Interval | None], min_clusters: int = MIN_CLUSTERS,
                     max_half_width: float = MAX_HALF_WIDTH) -> str | None:
    """Why intervals from ``num_clusters`` clusters cannot be trusted to separate models, or None.

    The one rule for every interval the report flags: the per-subset MAE (``subset_mae.csv``, over every model's
    interval of the subset) and each reward-model statistic (``reward_model.csv``, per subset and macro).

    Args:
        num_clusters: The clusters behind the intervals (drawn as wholes by the bootstrap).
        intervals: The intervals judged (None entries and non-finite widths are skipped).
        min_clusters: Fewer clusters than this: too small.
        max_half_width: A half-width above this: too small.
    """
    reasons = []
    if num_clusters < min_clusters:
        reasons.append(f"{num_clusters} clusters < {min_clusters}")
    widths = [item.half_width for item in intervals if item is not None and np.isfinite(item.half_width)]
    if widths and max(widths) > max_half_width:
        reasons.append(f"CI half-width up to {max(widths):.2f} > {max_half_width:g}")
    return "; ".join(reasons) or None


def cluster_ids(episodes: Sequence[str], video_hashes: Sequence[str]) -> np.ndarray:
    """Cluster rows that share an episode key or a video hash (union-find); empty keys link nothing.

    Args:
        episodes: Source-episode key of each row.
        video_hashes: Content hash of each row's video.

    Returns:
        Cluster index of each row, numbered 0..K-1 in order of first appearance.
    """
    return np.array(cluster_numbers(episodes, video_hashes), dtype=np.int64)


def subset_rng(seed: int, subset: str) -> np.random.Generator:
    """The generator of one subset's cluster draws: depends on the seed and the subset name only."""
    return np.random.default_rng([seed, zlib.crc32(subset.encode("utf-8"))])


def draw_cluster_weights(num_clusters: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """How often each cluster is drawn in each replicate (K draws with replacement per replicate).

    Returns:
        Float array of shape (resamples, num_clusters); every row sums to num_clusters.
    """
    draws = rng.integers(0, num_clusters, size=(resamples, num_clusters))
    flat = draws + np.arange(resamples)[:, None] * num_clusters
    counts = np.bincount(flat.ravel(), minlength=resamples * num_clusters)
    return counts.reshape(resamples, num_clusters).astype(np.float64)


def cluster_sums(clusters: np.ndarray, values: np.ndarray, num_clusters: int) -> np.ndarray:
    """Column sums of ``values`` (n, P) per cluster: shape (num_clusters, P)."""
    indicator = np.zeros((num_clusters, clusters.size))
    indicator[clusters, np.arange(clusters.size)] = 1.0
    sums: np.ndarray = indicator @ values
    return sums


def ratio_replicates(
    values: np.ndarray, included: np.ndarray, clusters: np.ndarray, weights: np.ndarray
) -> np.ndarray:
    """Ratio estimator per replicate: weighted sum of included values over weighted count of included rows.

    Args:
        values: Shape (n, P); entries where ``included`` is False are ignored.
        included: Boolean, shape (n, P).
        clusters: Cluster index of each row, shape (n,).
        weights: Cluster weights, shape (B, K); a row of ones gives the point estimate.

    Returns:
        Shape (B, P); NaN where a replicate drew no included row.
    """
    num_clusters = weights.shape[1]
    sums = cluster_sums(clusters, np.where(included, values, 0.0), num_clusters)
    counts = cluster_sums(clusters, included.astype(np.float64), num_clusters)
    numerator = weights @ sums
    denominator = weights @ counts
    ratios: np.ndarray = np.divide(numerator, denominator, out=np.full_like(numerator, np.nan), where=denominator > 0)
    return ratios


def percentile_interval(estimate: float, replicates: np.ndarray, confidence: float) -> Interval:
    """Percentile interval of the replicates (NaN replicates dropped) around the point estimate."""
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        return Interval(estimate, float("nan"), float("nan"))
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    return Interval(estimate, float(low), float(high))


def _subset_estimates(
    sample: SubsetSample, values: np.ndarray, included: np.ndarray, resamples: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Point estimates (P,) and replicates (B, P) of one subset's ratio."""
    weights = draw_cluster_weights(sample.num_clusters, resamples, subset_rng(seed, sample.name))
    ones = np.ones((1, sample.num_clusters))
    point = ratio_replicates(values, included, sample.clusters, ones)[0]
    return point, ratio_replicates(values, included, sample.clusters, weights)


class _MacroAccumulator:
    """Running sums of the per-subset estimates, for the unweighted mean over the valid subsets of each column."""

    def __init__(self, resamples: int, columns: int) -> None:
        self.num_valid = np.zeros(columns)
        self.point_sum = np.zeros(columns)
        self.replicate_sum = np.zeros((resamples, columns))
        self.dropped = np.zeros((resamples, columns), dtype=bool)

    def add(self, valid: np.ndarray, point: np.ndarray, replicates: np.ndarray) -> None:
        """Add one subset: ``valid`` (P,) says which columns have rows there."""
        self.num_valid += valid
        self.point_sum += np.where(valid, point, 0.0)
        self.replicate_sum += np.where(valid, replicates, 0.0)
        self.dropped |= valid & ~np.isfinite(replicates)

    def intervals(self, confidence: float) -> list[Interval | None]:
        """Per column: the mean over its valid subsets; replicates that drew no row of a valid subset drop out."""
        results: list[Interval | None] = []
        for column, count in enumerate(self.num_valid):
            if count == 0:
                results.append(None)
                continue
            replicates = np.where(self.dropped[:, column], np.nan, self.replicate_sum[:, column] / count)
            results.append(percentile_interval(float(self.point_sum[column] / count), replicates, confidence))
        return results


def bootstrap_macro_mae(
    samples: Sequence[SubsetSample], resamples: int, seed: int, confidence: float
) -> MacroBootstrap:
    """Per-model macro MAE (mean over the subsets where the model has errors) and per-subset MAE intervals.

    Args:
        samples: One per subset; all with the same number of model columns.
        resamples: Bootstrap replicates B.
        seed: Seed of the cluster draws.
        confidence: Interval level, e.g. 0.95.

    Returns:
        The intervals; a replicate in which a model drew no row of one of its subsets is dropped.
    """
    if not samples:
        return MacroBootstrap([], [])
    macro = _MacroAccumulator(resamples, samples[0].errors.shape[1])
    per_subset: list[list[Interval | None]] = []
    for sample in samples:
        included = ~np.isnan(sample.errors)
        point, reps = _subset_estimates(sample, sample.errors, included, resamples, seed)
        has_rows = included.any(axis=0)
        macro.add(has_rows, point, reps)
        per_subset.append([
            percentile_interval(float(point[m]), reps[:, m], confidence) if has_rows[m] else None
            for m in range(sample.errors.shape[1])
        ])
    return MacroBootstrap(macro.intervals(confidence), per_subset)


def bootstrap_paired_differences(
    samples: Sequence[SubsetSample],
    pairs: Sequence[tuple[int, int]],
    resamples: int,
    seed: int,
    confidence: float,
) -> list[PairedDifference | None]:
    """Macro-MAE difference of each pair of model columns over the rows both have, with a paired interval.

    The same clusters are drawn for both models (same seed and subset as :func:`bootstrap_macro_mae`).
    Per subset the difference is ``MAE_a - MAE_b`` on the shared rows; the macro difference is its
    unweighted mean over the subsets where the pair shares rows.

    Returns:
        One per pair; None when the two models share no row.
    """
    if not pairs or not samples:
        return [None] * len(pairs)
    first = np.array([a for a, _ in pairs])
    second = np.array([b for _, b in pairs])
    macro = _MacroAccumulator(resamples, len(pairs))
    num_rows = np.zeros(len(pairs), dtype=np.int64)
    for sample in samples:
        present = ~np.isnan(sample.errors)
        shared = present[:, first] & present[:, second]
        difference = np.where(shared, np.nan_to_num(sample.errors[:, first] - sample.errors[:, second]), 0.0)
        point, reps = _subset_estimates(sample, difference, shared, resamples, seed)
        macro.add(shared.any(axis=0), point, reps)
        num_rows += shared.sum(axis=0)
    return [
        None if interval is None else PairedDifference(interval, int(num_rows[p]), int(macro.num_valid[p]))
        for p, interval in enumerate(macro.intervals(confidence))
    ]
