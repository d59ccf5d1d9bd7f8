"""The stats catalogue: every stat the metric reports, named, titled, described and directed once.

Also the names of the metric's per-group stats, which the metric writes and every reader looks up.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from helm_roboreward.protocol.rules import RUBRIC_SCORES, Subset, robot_slug

SUBSET_MAE_PREFIX = "mae_subset_"
ROBOT_MAE_PREFIX = "mae_robot_"
KIND_MAE_PREFIX = "mae_kind_"
# name(key) -> breakdown stat: abs_error reported on one subset's or augmentation kind's rows only; predicted_score
# reported on the rows whose gold score is ``gold_score`` only (its mean: the mean prediction per gold score), and its
# run-level count (its weight when pooled).
subset_mae = (SUBSET_MAE_PREFIX + "{}").format
kind_mae = (KIND_MAE_PREFIX + "{}").format
predicted_score_gold = "predicted_score_gold_{}".format
predicted_score_gold_rows = "predicted_score_gold_{}_rows".format


def robot_mae(robot: str) -> str:
    """The breakdown stat of ``abs_error`` on one robot's rows (named by its slug)."""
    return ROBOT_MAE_PREFIX + robot_slug(robot)


ACCURACY = "accuracy"
FAILURE_MODES = "failure_modes"
SCORES = "scores"
MACRO = "macro"
GENERAL = "general_information"
COST = "cost"
REWARD_MODEL = "reward_model"
EXPECTED = "expected_score"
PEER = "peer_metrics"

PREDICTED_SCORE_GOLD_STATS: tuple[str, ...] = tuple(predicted_score_gold(gold_score) for gold_score in RUBRIC_SCORES)


@dataclass(frozen=True)
class StatDefinition:
    """One stat as every reader shows it."""

    name: str  # in HELM's stats files
    display_name: str  # column title
    description: str
    lower_is_better: bool | None = None  # None for counts and descriptive stats
    per_instance: bool = True  # False for run-level stats
    table_title: str = ""  # title in the summarizer's cost table, when not display_name


STATS: tuple[StatDefinition, ...] = (
    StatDefinition("abs_error", "MAE", "Mean absolute error between the parsed score and the gold score (1..5 "
                   "scale; unparseable answers count 4).", True),
    StatDefinition("macro_mae", "Macro MAE", "Unweighted mean of the per-subset MAEs (the official overall number).",
                   True, per_instance=False),
    StatDefinition("num_subsets", "# subsets", "Number of subsets the macro MAE averages.", None, per_instance=False),
    StatDefinition("squared_error", "MSE", "Mean squared error of the parsed score.", True),
    StatDefinition("exact_match", "Exact match", "Share of answers equal to the gold score.", False),
    StatDefinition("within_one", "Within 1", "Share of answers at most 1 from the gold score (unparseable answers "
                   "and failed requests charged error 4 are not; protocol/reward_statistics.py).", False),
    StatDefinition("invalid_output", "Invalid output", "Share of answers with no parseable score.", True),
    StatDefinition("false_success", "False success", "Share of rollouts with a gold score below 5 that got a 5 "
                   "(over-rewarding a failure).", True),
    StatDefinition("missed_success", "Missed success", "Share of rollouts with gold score 5 that did not get a 5 "
                   "(under-rewarding a success; unparseable answers count).", True),
    StatDefinition("signed_error", "Bias", "Mean of predicted minus gold score over parsed answers (positive: "
                   "over-rewarding).", None),
    StatDefinition("predicted_score", "Predicted score", "The parsed score (mean over parsed answers; absent when "
                   "the answer could not be parsed).", None),
    *(StatDefinition(predicted_score_gold(gold_score), f"Mean pred. (gold {gold_score})",
                     f"Mean parsed score of the rows with gold score {gold_score} (parsed answers only).", None)
      for gold_score in RUBRIC_SCORES),
    StatDefinition("gold_score", "Gold score", "The human-verified gold score (mean over answered rows).", None),
    StatDefinition("failed_request", "Failed requests", "Share of requests that returned no completion after "
                   "retries; by the official rule each costs error 4 in the MAE (failed=skip leaves them out), but "
                   "never counts as an invalid output.", True),
    StatDefinition("num_instances", "# eval", "Number of evaluation instances.", None),
    StatDefinition("error_rows", "# rows with an error", "Rows the MAE counts (a failed request under failed=skip "
                   "is not one): the weight of the run's MAE, exact and within-1 means when pooled over runs "
                   "(micro).", None, per_instance=False),
    *(StatDefinition(predicted_score_gold_rows(gold_score), f"# parsed (gold {gold_score})",
                     f"Parsed answers of the rows with gold score {gold_score}: the weight of the mean prediction "
                     "when pooled over runs.", None, per_instance=False)
      for gold_score in RUBRIC_SCORES),
    StatDefinition("eval_coverage", "Rows evaluated", "Share of the run's rows evaluated; below 1 helm-run's -m "
                   "sampled them at random and the MAEs are not the official numbers.", None, per_instance=False),
    StatDefinition("num_frames", "# frames", "Frames sent per instance (0 for native video).", None,
                   table_title="Frames / instance"),
    StatDefinition("media_bytes", "Media bytes", "Bytes of video or frames sent per instance.", None,
                   table_title="Media bytes / instance"),
    StatDefinition("num_prompt_tokens", "# prompt tokens", "Prompt tokens per instance, where the client reports "
                   "them (this package's vLLM client does; HELM's API clients do not).", None,
                   table_title="Prompt tokens / instance"),
    StatDefinition("num_completion_tokens", "# completion tokens", "Completion tokens per instance, where the "
                   "client reports them.", None),
    # Reward-model statistics (docs/reward_metrics.md).
    StatDefinition("preference_accuracy", "Preference acc.", "Same-task preference accuracy: pairs of rows with the "
                   "same task and different gold scores ordered as gold does (ties half; unparseable or failed "
                   "rows count as 1); pooled per subset, macro over subsets.", False, per_instance=False),
    StatDefinition("ladder_accuracy", "Ladder acc.", "Counterfactual ladder: pairwise ordering accuracy among the "
                   "tasks scored on one video (an original and its relabels), averaged over videos.", False,
                   per_instance=False),
    StatDefinition("ladder_tau_b", "Ladder tau-b", "Kendall tau-b of scores against gold among the tasks of one "
                   "video (0 when every score ties), averaged over videos.", False, per_instance=False),
    StatDefinition("clip_accuracy", "Clip acc.", "Clip monotonicity: pairwise ordering accuracy among an episode's "
                   "clips and its original, averaged over episodes.", False, per_instance=False),
    StatDefinition("success_auroc", "Success AUROC", "AUROC of the score for gold 5 against gold below 5 (ties "
                   "half).", False, per_instance=False),
    StatDefinition("success_precision", "Success precision", "Share of rows scored 5 whose gold is 5.", False,
                   per_instance=False),
    StatDefinition("success_recall", "Success recall", "Share of gold-5 rows scored 5.", False, per_instance=False),
    StatDefinition("success_f1", "Success F1", "F1 of scoring 5 for gold 5.", False, per_instance=False),
    StatDefinition("success_mcc", "Success MCC", "Matthews correlation of scoring 5 with gold 5.", False,
                   per_instance=False),
    StatDefinition("preference_pairs", "# preference pairs", "Same-task pairs with different gold scores.", None,
                   per_instance=False),
    StatDefinition("ladder_videos", "# ladder videos", "Videos scored under several tasks with different gold "
                   "scores.", None, per_instance=False),
    StatDefinition("clip_episodes", "# clip episodes", "Episodes with clips and an original of different gold "
                   "scores.", None, per_instance=False),
    # Expected-score rewards (score=expected; docs/reward_metrics.md).
    StatDefinition("expected_score_coverage", "Expected-score coverage", "Share of rows with an answer-token "
                   "distribution over 1..5 (0: the client returned no log-probabilities).", None, per_instance=False),
    StatDefinition("expected_score_available", "Expected score available", "1 when the row has an answer-token "
                   "distribution over 1..5.", None),
    StatDefinition("expected_score", "Expected score", "Probability-weighted mean of the score tokens 1..5 at the "
                   "answer token (renormalised).", None),
    StatDefinition("expected_abs_error", "Expected-score MAE", "Absolute error of the expected score (rows with a "
                   "distribution).", True),
    StatDefinition("success_probability", "P(5)", "Probability of the score token 5 at the answer token.", None),
    StatDefinition("success_brier", "Brier (P(5))", "Brier score of P(5) against gold 5.", True),
    StatDefinition("success_ece", "ECE (P(5))", "Expected calibration error of P(5) against gold 5 (10 equal-width "
                   "bins).", True, per_instance=False),
    StatDefinition("preference_accuracy_expected", "Preference acc. (expected)", "Same-task preference accuracy on "
                   "the expected score.", False, per_instance=False),
    StatDefinition("ladder_accuracy_expected", "Ladder acc. (expected)", "Ladder accuracy on the expected score.",
                   False, per_instance=False),
    StatDefinition("ladder_tau_b_expected", "Ladder tau-b (expected)", "Ladder Kendall tau-b on the expected "
                   "score.", False, per_instance=False),
    StatDefinition("clip_accuracy_expected", "Clip acc. (expected)", "Clip monotonicity on the expected score.",
                   False, per_instance=False),
    StatDefinition("success_auroc_expected", "Success AUROC (expected)", "AUROC of the expected score for gold 5.",
                   False, per_instance=False),
    StatDefinition("success_f1_expected", "Success F1 (expected)", "F1 of an expected score of at least 4.5 for gold "
                   "5.", False, per_instance=False),
    StatDefinition("success_mcc_expected", "Success MCC (expected)", "Matthews correlation of an expected score of "
                   "at least 4.5 with gold 5.", False, per_instance=False),
)
"""The stats of the metric, in the order tables show them."""

BY_NAME: dict[str, StatDefinition] = {stat.name: stat for stat in STATS}

KIND_DESCRIPTIONS: dict[str, str] = {
    "natural": "natural rollouts (RoboArena), successes and failures as they happened",
    "clip": "temporal clips of successful episodes, labelled by the state at the clip's end",
    "counterfactual": "a successful video with a different task whose goal was not reached",
    "original": "original successful episodes",
}


def stat(name: str) -> StatDefinition:
    """The definition of a stat by name (breakdown stats included only through :func:`breakdown_stats`)."""
    return BY_NAME[name]


METRIC_GROUPS: dict[str, tuple[str, ...]] = {
    ACCURACY: ("abs_error",),
    FAILURE_MODES: ("invalid_output", "false_success", "missed_success", "signed_error", "exact_match",
                    "failed_request"),
    SCORES: ("predicted_score", "gold_score"),
    MACRO: ("macro_mae", "num_subsets"),
    GENERAL: ("num_instances", "eval_coverage", "failed_request", "num_frames", "media_bytes", "num_prompt_tokens"),
    COST: ("num_frames", "media_bytes", "num_prompt_tokens"),
    REWARD_MODEL: ("preference_accuracy", "ladder_accuracy", "ladder_tau_b", "clip_accuracy", "success_auroc",
                   "success_precision", "success_recall", "success_f1", "success_mcc", "preference_pairs",
                   "ladder_videos", "clip_episodes"),
    EXPECTED: ("expected_score_coverage", "expected_abs_error", "success_brier", "success_ece",
               "preference_accuracy_expected", "ladder_accuracy_expected", "ladder_tau_b_expected",
               "clip_accuracy_expected", "success_auroc_expected", "success_f1_expected", "success_mcc_expected"),
    PEER: ("exact_match", "within_one") + PREDICTED_SCORE_GOLD_STATS,
}
"""The stats each table shows, in column order (the schema's metric groups and the summarizer's extra tables)."""


def in_group(group: str) -> tuple[StatDefinition, ...]:
    """The stats of one metric group, in column order."""
    return tuple(BY_NAME[name] for name in METRIC_GROUPS[group])





def breakdown_stats(
    kinds: Iterable[str], robots: Iterable[str], subsets: Sequence[Subset]
) -> tuple[StatDefinition, ...]:
    """The breakdown stats of ``abs_error`` that only a kind's, robot's or subset's rows carry (their mean: its MAE)."""
    found = [StatDefinition(kind_mae(kind), f"MAE ({kind})", f"MAE on {KIND_DESCRIPTIONS.get(kind, kind)}.", True)
             for kind in kinds]
    found += [StatDefinition(robot_mae(robot), f"MAE ({robot})", f"MAE on {robot} rollouts.", True)
              for robot in robots]
    found += [StatDefinition(subset_mae(subset.id), f"MAE ({subset.display_name})",
                             f"MAE on the {subset.display_name} subset.", True) for subset in subsets]
    return tuple(found)


MAY_BE_ABSENT: frozenset[str] = frozenset(
    ["num_prompt_tokens", "num_completion_tokens", "predicted_score", "signed_error", "false_success",
     "missed_success", "eval_coverage"]
    + list(METRIC_GROUPS[REWARD_MODEL]) + list(METRIC_GROUPS[EXPECTED])
    + ["expected_score_available", "expected_score", "success_probability"] + list(PREDICTED_SCORE_GOLD_STATS)
)
"""Stats a correct run may not report (why: docs/data.md); the summarizer warns about any other missing stat."""


def may_be_absent(name: str) -> bool:
    """True when a run may legitimately lack the stat (:data:`MAY_BE_ABSENT`, or a breakdown)."""
    return name in MAY_BE_ABSENT or name.startswith((KIND_MAE_PREFIX, ROBOT_MAE_PREFIX, SUBSET_MAE_PREFIX))
