"""Judging a reward model the way RL uses it: ordering and success detection, from scores a run already has.

Pure functions over scored rows (no HELM, no I/O); docs/reward_metrics.md states every rule with examples.
All comparisons stay within one subset. A row's score is its reward: the parsed score, or under
``score=expected`` the expected score; an unparseable answer or a failed request counts as the rubric's
lowest score, 1 (no reward). A failed request counts only where its run charges it (``failed=max_error``,
official); under ``failed=skip`` the callers (the metric, the report) leave it out of the rows given here, so it
enters no pair, group or success count.

- **Preference pairs**: every pair of rows of a subset with the same task text and different gold scores.
  Right when the scores order them as the gold scores do; a tie counts half. Pooled over the subset's pairs.
- **Counterfactual ladder**: rows of a subset sharing one video (its SHA-256) with different tasks (an original
  success and its relabels). Per video: pairwise ordering accuracy over its pairs with different gold scores, and
  Kendall's tau-b of scores against gold scores; averaged over videos. Tau-b is 0 when every score of the video ties
  (no ordering information), and a video whose rows all share one gold score is skipped.
- **Clip monotonicity**: an episode's temporal clips and its original (rows of kind ``clip`` or ``original``
  sharing an episode key) ordered by gold score: pairwise ordering accuracy per episode, averaged over episodes.
- **Success detection**: gold score 5 against gold score below 5. AUROC of the score (ties count half); precision,
  recall, F1 and Matthews correlation of "the reward says 5" (a parsed score of 5; for expected scores, at least 4.5).

Per subset, then macro over subsets like the leaderboard's MAE: a subset where a statistic is undefined (no
pairs, no row with gold score 5) is left out of that statistic's macro mean, and the counts say how many there were.
"""

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from helm_roboreward.protocol.rules import MAX_SCORE, MIN_SCORE, RUBRIC_SCORES, within_one

SUCCESS_THRESHOLD = MAX_SCORE - 0.5
"""An expected (continuous) score at or above this says "success"; a parsed score says it only when it is 5."""

CLIP = "clip"
ORIGINAL = "original"


@dataclass(frozen=True)
class ScoredRow:
    """One row as the ordering metrics see it."""

    instance_id: str
    subset: str
    task: str
    video_sha256: str
    episode: str
    kind: str
    gold_score: float
    score: float | None
    """The reward: parsed (or expected) score; None when unparseable or failed and charged (it then counts as 1)."""

    cluster: str = ""
    """Bootstrap cluster key by name (a RoboArena session, else the episode; '' reads as the episode). Only the
    report's intervals use it; the statistics themselves pair and link rows by episode and video."""

    @property
    def reward(self) -> float:
        """The score, with the rubric's lowest score standing in for a missing one."""
        return float(MIN_SCORE) if self.score is None or not math.isfinite(self.score) else float(self.score)


def ordered_right(first: ScoredRow, second: ScoredRow) -> float:
    """1 when the rewards order the pair as its gold scores do (they differ), 0.5 for a tie in reward, else 0."""
    gold_score_difference = first.gold_score - second.gold_score
    reward_difference = first.reward - second.reward
    if reward_difference == 0:
        return 0.5
    return 1.0 if (gold_score_difference > 0) == (reward_difference > 0) else 0.0


def _pairs_with_different_gold_scores(rows: Sequence[ScoredRow]) -> list[tuple[ScoredRow, ScoredRow]]:
    return [(a, b) for i, a in enumerate(rows) for b in rows[i + 1:] if a.gold_score != b.gold_score]


def preference_pairs(rows: Iterable[ScoredRow]) -> list[tuple[ScoredRow, ScoredRow]]:
    """Every pair of rows of one subset with the same task text and different gold scores (in row order)."""
    return [pair for group in task_groups(rows) for pair in _pairs_with_different_gold_scores(group)]


def task_groups(rows: Iterable[ScoredRow]) -> list[list[ScoredRow]]:
    """Rows of one subset sharing a task with at least two different gold scores: every row is in a pair."""
    by_task: dict[tuple[str, str], list[ScoredRow]] = defaultdict(list)
    for row in rows:
        by_task[(row.subset, row.task)].append(row)
    return [group for group in by_task.values() if len({row.gold_score for row in group}) > 1]


def preference_counts(group: Sequence[ScoredRow]) -> tuple[float, int]:
    """``(pairs ordered right, ties half; pairs)`` over one task group's preference pairs.

    Counted by (gold score, reward), so a task with n rows costs no n^2 pairs; the same numbers as summing
    :func:`ordered_right` over the pairs (sums of halves are exact in floating point).
    """
    counts = Counter((row.gold_score, row.reward) for row in group)
    keys = list(counts)
    right, pairs = 0.0, 0
    for position, (gold_score_a, reward_a) in enumerate(keys):
        for gold_score_b, reward_b in keys[position + 1:]:
            if gold_score_a == gold_score_b:
                continue
            both = counts[(gold_score_a, reward_a)] * counts[(gold_score_b, reward_b)]
            pairs += both
            right += both * (0.5 if reward_a == reward_b
                             else float((gold_score_a > gold_score_b) == (reward_a > reward_b)))
    return right, pairs


def ladder_groups(rows: Iterable[ScoredRow]) -> list[list[ScoredRow]]:
    """Rows of one subset sharing a video with at least two different tasks and two different gold scores."""
    by_video: dict[tuple[str, str], list[ScoredRow]] = defaultdict(list)
    for row in rows:
        if row.video_sha256:
            by_video[(row.subset, row.video_sha256)].append(row)
    return [group for group in by_video.values()
            if len({row.task for row in group}) > 1 and len({row.gold_score for row in group}) > 1]


def clip_groups(rows: Iterable[ScoredRow]) -> list[list[ScoredRow]]:
    """An episode's clips and original (kinds clip and original, one episode key) with different gold scores."""
    by_episode: dict[tuple[str, str], list[ScoredRow]] = defaultdict(list)
    for row in rows:
        if row.kind in (CLIP, ORIGINAL) and row.episode:
            by_episode[(row.subset, row.episode)].append(row)
    return [group for group in by_episode.values() if len(group) > 1 and len({row.gold_score for row in group}) > 1]


def pair_accuracy(pairs: Sequence[tuple[ScoredRow, ScoredRow]]) -> float | None:
    """Share of pairs ordered right (ties half); None without pairs."""
    return sum(ordered_right(a, b) for a, b in pairs) / len(pairs) if pairs else None


def group_accuracy(group: Sequence[ScoredRow]) -> float | None:
    """Pairwise ordering accuracy inside one group (a video's ladder, an episode's clips)."""
    return pair_accuracy(_pairs_with_different_gold_scores(group))


def kendall_tau_b(group: Sequence[ScoredRow]) -> float:
    """Kendall's tau-b of rewards against gold scores in one group; 0 when every reward ties."""
    rewards = [row.reward for row in group]
    if len(set(rewards)) < 2:
        return 0.0
    from scipy.stats import kendalltau  # scipy takes seconds: loaded by the first statistic

    tau = float(kendalltau(rewards, [row.gold_score for row in group]).statistic)
    return 0.0 if math.isnan(tau) else tau


def auroc(positives: Sequence[float], negatives: Sequence[float]) -> float | None:
    """Probability that a positive outranks a negative (ties half); None when a class is empty.

    Computed from mid-ranks (the Mann-Whitney statistic), so it is exact and O(n log n).
    """
    if not positives or not negatives:
        return None
    from scipy.stats import rankdata

    ranks = rankdata(list(positives) + list(negatives))
    positive_rank_sum = float(ranks[: len(positives)].sum())
    count = len(positives)
    return (positive_rank_sum - count * (count + 1) / 2) / (count * len(negatives))


@dataclass(frozen=True)
class SuccessCounts:
    """The confusion counts of "the reward says 5" against gold score 5."""

    true_positive: int
    false_positive: int
    false_negative: int
    true_negative: int

    @property
    def precision(self) -> float | None:
        """Share of said successes that are real; None when the reward never says 5."""
        said = self.true_positive + self.false_positive
        return self.true_positive / said if said else None

    @property
    def recall(self) -> float | None:
        """Share of real successes the reward says; None without rows of gold score 5."""
        real = self.true_positive + self.false_negative
        return self.true_positive / real if real else None

    @property
    def f1(self) -> float | None:
        """Harmonic mean of precision and recall: 0 when no success is found, None without rows of gold score 5."""
        p, r = self.precision, self.recall
        if r is None:
            return None
        if p is None or self.true_positive == 0:
            return 0.0
        return 2 * p * r / (p + r)

    @property
    def mcc(self) -> float | None:
        """Matthews correlation; 0 when a margin is empty (e.g. the reward never says 5), None without rows."""
        tp, fp, fn, tn = self.true_positive, self.false_positive, self.false_negative, self.true_negative
        if tp + fp + fn + tn == 0:
            return None
        denominator = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        return 0.0 if denominator == 0 else (tp * tn - fp * fn) / denominator


def says_success(reward: float, continuous: bool) -> bool:
    """Whether a reward says "success": 5 for a parsed score, at least 4.5 for an expected one."""
    return reward >= SUCCESS_THRESHOLD if continuous else reward == MAX_SCORE


def success_counts(rows: Iterable[ScoredRow], continuous: bool = False) -> SuccessCounts:
    """Confusion counts of "the reward says 5" (:func:`says_success`) against ``gold_score == 5``."""
    tp = fp = fn = tn = 0
    for row in rows:
        said, real = says_success(row.reward, continuous), row.gold_score == MAX_SCORE
        tp, fp, fn, tn = tp + (said and real), fp + (said and not real), fn + (real and not said), \
            tn + (not said and not real)
    return SuccessCounts(tp, fp, fn, tn)


@dataclass(frozen=True)
class SubsetOrdering:
    """Every ordering and success statistic of one subset, with the counts behind them."""

    subset: str
    preference_accuracy: float | None
    preference_pairs: int
    ladder_accuracy: float | None
    ladder_tau_b: float | None
    ladder_videos: int
    clip_accuracy: float | None
    clip_episodes: int
    success_auroc: float | None
    success: SuccessCounts

    def values(self) -> dict[str, float | None]:
        """``stat name -> value`` (the names of the stats catalogue)."""
        return {
            "preference_accuracy": self.preference_accuracy,
            "ladder_accuracy": self.ladder_accuracy,
            "ladder_tau_b": self.ladder_tau_b,
            "clip_accuracy": self.clip_accuracy,
            "success_auroc": self.success_auroc,
            "success_precision": self.success.precision,
            "success_recall": self.success.recall,
            "success_f1": self.success.f1,
            "success_mcc": self.success.mcc,
        }

    def counts(self) -> dict[str, int]:
        """``count name -> count``."""
        return {"preference_pairs": self.preference_pairs, "ladder_videos": self.ladder_videos,
                "clip_episodes": self.clip_episodes}


def _mean(values: Iterable[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return sum(present) / len(present) if present else None


def subset_ordering(subset: str, rows: Sequence[ScoredRow], continuous: bool = False) -> SubsetOrdering:
    """The statistics of one subset's rows (``continuous``: the scores are expected scores)."""
    counted = [preference_counts(group) for group in task_groups(rows)]
    right, pairs = sum(value for value, _ in counted), sum(count for _, count in counted)
    ladders = ladder_groups(rows)
    clips = clip_groups(rows)
    positives = [row.reward for row in rows if row.gold_score == MAX_SCORE]
    negatives = [row.reward for row in rows if row.gold_score != MAX_SCORE]
    return SubsetOrdering(
        subset=subset,
        preference_accuracy=right / pairs if pairs else None,
        preference_pairs=pairs,
        ladder_accuracy=_mean(group_accuracy(group) for group in ladders),
        ladder_tau_b=_mean(kendall_tau_b(group) for group in ladders),
        ladder_videos=len(ladders),
        clip_accuracy=_mean(group_accuracy(group) for group in clips),
        clip_episodes=len(clips),
        success_auroc=auroc(positives, negatives),
        success=success_counts(rows, continuous),
    )


def by_subset(rows: Iterable[ScoredRow]) -> dict[str, list[ScoredRow]]:
    """Rows grouped by subset, in first-seen order."""
    grouped: dict[str, list[ScoredRow]] = defaultdict(list)
    for row in rows:
        grouped[row.subset].append(row)
    return dict(grouped)


def macro(orderings: Sequence[SubsetOrdering]) -> dict[str, float | None]:
    """The unweighted mean of each statistic over the subsets where it is defined."""
    names = list(orderings[0].values()) if orderings else []
    return {name: _mean(ordering.values()[name] for ordering in orderings) for name in names}


def total_counts(orderings: Sequence[SubsetOrdering]) -> Mapping[str, int]:
    """Pairs, ladder videos and clip episodes summed over subsets."""
    totals: dict[str, int] = defaultdict(int)
    for ordering in orderings:
        for name, count in ordering.counts().items():
            totals[name] += count
    return dict(totals)


def reward_model_stats(rows: Iterable[ScoredRow]) -> dict[str, float]:
    """A run's reward-model statistics: each macro over its subsets (left out where undefined), and the counts."""
    orderings = [subset_ordering(subset, subset_rows) for subset, subset_rows in by_subset(rows).items()]
    if not orderings:
        return {}
    values = {name: value for name, value in macro(orderings).items() if value is not None}
    return values | {name: float(count) for name, count in total_counts(orderings).items()}


def exact_match(abs_error: float) -> float:
    """1 when the answer equals the gold score (error 0), else 0: the metric's ``exact_match`` from the error."""
    return 1.0 if abs_error == 0 else 0.0



@dataclass(frozen=True)
class PeerRow:
    """One row as the peer metrics see it."""

    subset: str
    gold_score: int
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
    """Gold score -> mean parsed score of its rows (None: no parsed answer with that gold score)."""

    prediction_rows: dict[int, int]
    """Gold score -> parsed answers behind its mean."""


def macro_mean(by_subset: dict[str, list[float]]) -> float | None:
    """The mean over subsets of each subset's mean (subsets without values left out); None without any."""
    return _mean([sum(values) / len(values) for values in by_subset.values() if values])


def peer_metrics(rows: Iterable[PeerRow]) -> PeerMetrics:
    """Micro and macro MAE, exact and within-1 accuracy, and the mean prediction per gold score."""
    errors: dict[str, list[float]] = defaultdict(list)
    predictions: dict[int, list[float]] = defaultdict(list)
    for row in rows:
        if row.abs_error is not None:
            errors[row.subset].append(row.abs_error)
        if row.predicted is not None and row.abs_error is not None:
            predictions[row.gold_score].append(row.predicted)
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
        mean_prediction={gold_score: _mean(predictions[gold_score]) for gold_score in RUBRIC_SCORES},
        prediction_rows={gold_score: len(predictions[gold_score]) for gold_score in RUBRIC_SCORES},
    )
