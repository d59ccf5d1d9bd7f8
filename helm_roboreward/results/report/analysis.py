"""From a suite's rows to the report's numbers; no I/O.

Macro MAE with intervals, pairwise differences, per-subset MAEs, failure modes, confusion matrices.
"""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from helm_roboreward.helm_frontend.run_rows import InstanceRow, ModelRows, SuiteRows, all_failed_subsets
from helm_roboreward.protocol.reward_statistics import PeerMetrics, PeerRow, peer_metrics
from helm_roboreward.protocol.rules import (
    MAX_SCORE,
    OFFICIAL_SUBSET_IDS,
    RUBRIC_SCORES,
    subset_info,
    subset_order,
)
from helm_roboreward.results.report.bootstrap import (
    MAX_HALF_WIDTH,
    MIN_CLUSTERS,
    Interval,
    PairedDifference,
    SubsetSample,
    bootstrap_macro_mae,
    bootstrap_paired_differences,
    cluster_ids,
    too_small_reason,
)
from helm_roboreward.results.report.calibration import CalibrationSummary, calibration_summaries
from helm_roboreward.results.report.published_rows import ModelScore, PublishedReference, published_reference
from helm_roboreward.results.report.reward_model import RewardModelSummary, reward_model_summaries

CONFUSION_COLUMNS = [str(score) for score in RUBRIC_SCORES] + ["other", "invalid"]
"""Predicted-score columns: 1..5, ``other`` (parsed but not an integer 1..5, e.g. 0 or 3.5), ``invalid``."""


@dataclass(frozen=True)
class Settings:
    """Bootstrap settings, the rule for intervals too small to trust, and whether to show the published rows."""

    resamples: int = 2000
    seed: int = 0
    confidence: float = 0.95
    min_clusters: int = MIN_CLUSTERS
    """Fewer clusters than this: too small (the bootstrap distribution is too coarse to trust)."""

    max_half_width: float = MAX_HALF_WIDTH
    """A model's subset-MAE interval half-width above this: too small (spans 0.5 MAE, more than most gaps)."""

    published: bool = True
    """Show the published leaderboard beside the suite's models (on the public split; ``--no-published``: no)."""


@dataclass(frozen=True)
class SubsetSummary:
    """One subset present in the suite."""

    id: str
    display_name: str
    num_rows: int
    """Distinct instances with an error for at least one model."""

    num_clusters: int
    too_small: str | None
    """Why the subset is too small to separate models, or None."""


@dataclass(frozen=True)
class FailureModes:
    """Counts behind the failure-mode rates of one model (over all its rows)."""

    rows: int
    failed_requests: int
    answered: int
    invalid_outputs: int
    exact_matches: int
    answered_gold_score_below_max: int
    false_successes: int
    """Predicted 5 although the gold score is below 5."""

    answered_gold_score_max: int
    missed_successes: int
    """Gold score 5 but not predicted 5 (an invalid answer counts as missed)."""

    signed_bias: float | None
    """Mean predicted - gold score over parsed answers (positive: over-rewarding)."""


@dataclass(frozen=True)
class ModelSummary:
    """Everything the report shows about one model."""

    model: str
    display_name: str
    macro: Interval | None
    subset_mae: dict[str, Interval]
    subset_rows: dict[str, int]
    missing_subsets: list[str]
    """Subsets of the suite for which the model has no error."""

    failures: FailureModes
    confusion: np.ndarray
    """Counts, gold score 1..5 (rows) by :data:`CONFUSION_COLUMNS`; failed requests excluded."""

    failed_subsets: list[str] = field(default_factory=list)
    """Subsets where the model has rows but every request failed and its run left them out (``failed=skip``):
    no error to average, on the leaderboard or here."""

    peer: PeerMetrics | None = None
    """Micro and macro MAE, exact and within-1 accuracy, mean prediction per gold score
    (protocol/reward_statistics.py)."""


@dataclass(frozen=True)
class PairSummary:
    """The paired comparison of two models (first is the better-ranked one)."""

    first: str
    """Display name of the first model."""

    second: str
    first_model: str
    """Model name of the first model."""

    second_model: str
    difference: PairedDifference


@dataclass
class ReportData:
    """The report's content."""

    suite: str
    settings: Settings
    subsets: list[SubsetSummary]
    models: list[ModelSummary]
    """Ranked by macro MAE (lower first)."""

    pairs: list[PairSummary]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reward_models: list[RewardModelSummary] = field(default_factory=list)
    """Ordering and success statistics per model (parsed scores; expected scores where recorded), ranked as
    :attr:`models`."""

    calibration: list[CalibrationSummary] = field(default_factory=list)
    """Expected-score MAE and P(5) calibration of the models with expected scores, ranked as :attr:`models`."""

    published: PublishedReference | None = None
    """The published leaderboard beside the models, or why it is left out; None with ``--no-published``."""

    comparability: dict[str, tuple[bool, str]] = field(default_factory=dict)
    """Per model key: comparable with the published leaderboard, and the verdict's line (docs/publishing.md)."""


def _subset_sample(subset: str, rows_per_model: list[list[InstanceRow]]) -> SubsetSample:
    """The subset's error matrix over the union of the models' rows, with the rows' clusters.

    Rows go in instance-id order: the clusters are numbered in row order and the bootstrap draws cluster numbers, so
    the interval depends on the rows alone, not on the order a source lists them in (a HELM run lists them in the
    data's order, an Inspect log by sample id).
    """
    first: dict[str, InstanceRow] = {}
    for rows in rows_per_model:
        for row in rows:
            first.setdefault(row.instance_id, row)
    index = {instance_id: number for number, instance_id in enumerate(sorted(first))}
    episodes = [first[instance_id].cluster or first[instance_id].episode for instance_id in index]  # a session: one
    hashes = [first[instance_id].video_sha256 for instance_id in index]
    errors = np.full((len(index), len(rows_per_model)), np.nan)
    for column, rows in enumerate(rows_per_model):
        for row in rows:
            errors[index[row.instance_id], column] = row.abs_error
    return SubsetSample(subset, cluster_ids(episodes, hashes), errors)


def failure_modes(rows: Sequence[InstanceRow]) -> FailureModes:
    """The failure-mode counts of one model's rows (failed requests counted, then left out of the rest)."""
    answered = [row for row in rows if not row.failed_request and row.gold_score is not None]
    parsed = [row for row in answered if not row.invalid_output and row.predicted is not None]
    below = [row for row in answered if row.gold_score is not None and row.gold_score < MAX_SCORE]
    at_max = [row for row in answered if row.gold_score == MAX_SCORE]
    signed = [row.predicted - row.gold_score for row in parsed
              if row.predicted is not None and row.gold_score is not None]
    return FailureModes(
        rows=len(rows),
        failed_requests=sum(row.failed_request for row in rows),
        answered=len(answered),
        invalid_outputs=sum(row.invalid_output for row in answered),
        exact_matches=sum(row.predicted == row.gold_score for row in parsed),
        answered_gold_score_below_max=len(below),
        false_successes=sum(row.predicted == MAX_SCORE for row in below),
        answered_gold_score_max=len(at_max),
        missed_successes=sum(row.invalid_output or row.predicted != MAX_SCORE for row in at_max),
        signed_bias=float(np.mean(signed)) if signed else None,
    )


def confusion_matrix(rows: Sequence[InstanceRow]) -> np.ndarray:
    """Gold score 1..5 (rows) by predicted :data:`CONFUSION_COLUMNS`; failed requests and rows without one excluded."""
    matrix = np.zeros((len(RUBRIC_SCORES), len(CONFUSION_COLUMNS)), dtype=np.int64)
    for row in rows:
        if row.failed_request or row.gold_score not in RUBRIC_SCORES:
            continue
        if row.invalid_output or row.predicted is None:
            column = len(CONFUSION_COLUMNS) - 1
        elif row.predicted in RUBRIC_SCORES:
            column = RUBRIC_SCORES.index(int(row.predicted))
        else:
            column = len(RUBRIC_SCORES)
        matrix[RUBRIC_SCORES.index(int(row.gold_score or 0)), column] += 1
    return matrix


def _model_summaries(
    models: list[ModelRows], subsets: list[str], samples: list[SubsetSample], settings: Settings
) -> list[ModelSummary]:
    result = bootstrap_macro_mae(samples, settings.resamples, settings.seed, settings.confidence)
    summaries = []
    for column, model in enumerate(models):
        subset_mae = {subset: result.subsets[s][column] for s, subset in enumerate(subsets)}
        present = {subset: interval for subset, interval in subset_mae.items() if interval is not None}
        summaries.append(ModelSummary(
            model=model.model,
            display_name=model.display_name,
            macro=result.macro[column] if result.macro else None,
            subset_mae=present,
            subset_rows={subset: int(np.sum(~np.isnan(samples[s].errors[:, column]))) for s, subset in
                         enumerate(subsets)},
            missing_subsets=[subset for subset in subsets if subset not in present],
            failures=failure_modes(model.rows),
            confusion=confusion_matrix(model.rows),
            failed_subsets=every_request_failed(model.rows),
            peer=peer_metrics(PeerRow(row.subset, int(row.gold_score), row.predicted, row.abs_error)
                              for row in model.rows if row.gold_score is not None),
        ))
    return summaries


def every_request_failed(rows: Sequence[InstanceRow]) -> list[str]:
    """The subsets (official order) where every row is a failed request its run left out (``failed=skip``)."""
    return subset_order(all_failed_subsets(rows))


def _rank_key(summary: ModelSummary) -> tuple[float, str]:
    macro = summary.macro.estimate if summary.macro is not None else float("inf")
    return (macro, summary.display_name)


def analyse(suite: SuiteRows, settings: Settings) -> ReportData:
    """Compute the report's numbers.

    Args:
        suite: The loaded rows of every model.
        settings: Bootstrap settings and the too-small rule.

    Returns:
        Models ranked by macro MAE, their subset MAEs, pairwise differences, failure modes.
    """
    by_subset: dict[str, list[list[InstanceRow]]] = defaultdict(lambda: [[] for _ in suite.models])
    for column, model in enumerate(suite.models):
        for row in model.rows:
            if row.abs_error is not None:
                by_subset[row.subset][column].append(row)
    subsets = subset_order(list(by_subset))
    samples = [_subset_sample(subset, by_subset[subset]) for subset in subsets]
    summaries = _model_summaries(suite.models, subsets, samples, settings)
    subset_summaries = [
        SubsetSummary(subset, subset_info(subset).display_name, sample.errors.shape[0], sample.num_clusters,
                      too_small_reason(sample.num_clusters, [model.subset_mae.get(subset) for model in summaries],
                                       settings.min_clusters, settings.max_half_width))
        for subset, sample in zip(subsets, samples, strict=True)
    ]
    order = sorted(range(len(summaries)), key=lambda column: _rank_key(summaries[column]))
    pairs = list(combinations(order, 2))
    differences = bootstrap_paired_differences(samples, pairs, settings.resamples, settings.seed,
                                               settings.confidence)
    pair_summaries = [
        PairSummary(summaries[a].display_name, summaries[b].display_name, summaries[a].model, summaries[b].model,
                    difference)
        for (a, b), difference in zip(pairs, differences, strict=True)
        if difference is not None
    ]
    ranked = [suite.models[column] for column in order]
    reward_models = reward_model_summaries(ranked, settings.resamples, settings.seed, settings.confidence,
                                           settings.min_clusters, settings.max_half_width)
    models = [summaries[column] for column in order]
    return ReportData(suite.suite, settings, subset_summaries, models, pair_summaries, list(suite.warnings),
                      list(suite.notes), reward_models, calibration_summaries(ranked),
                      _published(suite, models, subsets) if settings.published else None)


def _published(suite: SuiteRows, models: Sequence[ModelSummary], subsets: Sequence[str]) -> PublishedReference:
    scores = [ModelScore(model.model, model.display_name, model.macro.estimate if model.macro else None,
                         sum(subset in OFFICIAL_SUBSET_IDS for subset in model.subset_mae)) for model in models]
    runs = [run for model in suite.models for run in model.run_of_subset.values()]
    return published_reference(scores, suite.sources, runs, subsets)
