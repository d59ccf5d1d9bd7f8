"""Expected-score rewards (``score=expected``): the probability-weighted mean of the score tokens 1..5.

A client that can (this package's vLLM / OpenAI-compatible client and its in-process transformers client, on
their ``-logprobs`` deployments) records the answer's digit tokens with their top log-probabilities in the
completion's ``finish_reason["score_token_logprobs"]``; :func:`helm_roboreward.protocol.score_probabilities.
score_distribution` turns the token holding the parsed number into a distribution over 1..5. Per instance:
``expected_score``, ``expected_abs_error``, ``success_probability`` (P(5)), ``success_brier``, and
``expected_score_available``. Per run: ``success_ece`` (expected calibration error of P(5)), the ordering
statistics on the expected score (``*_expected``), and ``expected_score_coverage``. Rows without a
distribution (unparseable, failed, or no alternative among 1..5) have no expected-score stats and count as the
lowest score, 1, in the ordering statistics, as unparseable answers do; never the parsed score in their place.
The run's coverage and a warning say how many (docs/reward_metrics.md). Such a run also gets the
reward-model statistics on its parsed scores here; other runs get them from the summarizer and the report.
"""

from collections.abc import Callable

from helm.benchmark.adaptation.request_state import RequestState
from helm.benchmark.metrics.metric_name import MetricName
from helm.benchmark.metrics.statistic import Stat
from helm.benchmark.scenarios.scenario import Instance
from helm.common.hierarchical_logger import hwarn

from helm_roboreward.protocol.instance_record import InstanceRecord
from helm_roboreward.protocol.reward_statistics import ScoredRow, by_subset, macro, reward_model_stats, subset_ordering
from helm_roboreward.protocol.rules import MAX_SCORE
from helm_roboreward.protocol.score_probabilities import (
    SCORE_TOKEN_LOGPROBS,
    calibration_error,
    expected_score,
    score_distribution,
    success_probability,
)

EXPECTED_SUFFIX = "_expected"
ORDERING_ON_EXPECTED = ("preference_accuracy", "ladder_accuracy", "ladder_tau_b", "clip_accuracy", "success_auroc",
                        "success_f1", "success_mcc")


def instance_stats(request_state: RequestState, gold_score: int) -> list[Stat]:
    """The expected-score stats of one request (only ``expected_score_available`` 0 when there is no distribution)."""
    result = request_state.result
    distribution = None
    if result is not None and result.success and result.completions:
        completion = result.completions[0]
        candidates = (completion.finish_reason or {}).get(SCORE_TOKEN_LOGPROBS)
        if isinstance(candidates, list):
            distribution = score_distribution(completion.text, candidates)
    if distribution is None:
        return [Stat(MetricName("expected_score_available")).add(0.0)]
    expected = expected_score(distribution)
    success = success_probability(distribution)
    outcome = 1.0 if gold_score == MAX_SCORE else 0.0
    return [
        Stat(MetricName("expected_score_available")).add(1.0),
        Stat(MetricName("expected_score")).add(expected),
        Stat(MetricName("expected_abs_error")).add(abs(expected - gold_score)),
        Stat(MetricName("success_probability")).add(success),
        Stat(MetricName("success_brier")).add((success - outcome) ** 2),
    ]


def derived_stats(per_instance_stats: dict[Instance, list[Stat]], skip_failed: bool,
                  gold_score_of: Callable[[Instance], int]) -> list[Stat]:
    """The run's parsed-score and expected-score stats (``skip_failed``: over the answered requests only).

    ``gold_score_of``: the metric's reader of an instance's gold score.
    """
    counted = {instance: stats for instance, stats in per_instance_stats.items() if not skip_failed
               or not any(stat.name.name == "failed_request" and stat.sum > 0 for stat in stats)}
    gold_scores = {instance: float(gold_score_of(instance)) for instance in counted}
    return parsed_score_stats(counted, gold_scores) + run_stats(counted, gold_scores)


def _scored_row(instance: Instance, gold_score: float, score: float | None) -> ScoredRow:
    record = InstanceRecord.from_extra_data(instance.extra_data)
    return ScoredRow(str(instance.id), record.subset, record.task, record.video_sha256, record.episode, record.kind,
                     gold_score, score)


def parsed_score_stats(per_instance_stats: dict[Instance, list[Stat]],
                       gold_scores: "dict[Instance, float]") -> list[Stat]:
    """The reward-model statistics on the parsed scores (none for an unparseable answer or a failed request)."""
    rows = [_scored_row(instance, gold_scores[instance], _mean_of(stats, "predicted_score"))
            for instance, stats in per_instance_stats.items()]
    return [Stat(MetricName(name)).add(value) for name, value in reward_model_stats(rows).items()]


def _mean_of(stats: list[Stat], name: str) -> float | None:
    found = [stat.sum / stat.count for stat in stats if stat.name.name == name and stat.count]
    return found[0] if found else None


def run_stats(per_instance_stats: dict[Instance, list[Stat]], gold_scores: "dict[Instance, float]") -> list[Stat]:
    """Coverage, calibration and the ordering statistics on the expected score, for one run."""
    rows: list[ScoredRow] = []
    calibration: list[tuple[float, float]] = []
    available = 0
    for instance, stats in per_instance_stats.items():
        expected = _mean_of(stats, "expected_score")
        gold_score = gold_scores[instance]
        rows.append(_scored_row(instance, gold_score, expected))
        success = _mean_of(stats, "success_probability")
        if expected is not None and success is not None:
            available += 1
            calibration.append((success, 1.0 if gold_score == MAX_SCORE else 0.0))
    total = len(per_instance_stats)
    coverage = available / total if total else 0.0
    out = [Stat(MetricName("expected_score_coverage")).add(coverage)]
    if not available:
        hwarn("RoboReward: score=expected, but this client returned no log-probabilities for the answer token: "
              "no expected scores; the reward-model statistics use the parsed score.")
        return out
    if coverage < 1:
        hwarn(f"RoboReward: score=expected: {total - available} of {total} rows have no answer-token distribution "
              "(unparseable, failed, or no 1..5 alternative): they have no expected-score stats and count as 1 in "
              "the ordering statistics, never as their parsed score.")
    ece = calibration_error(calibration)
    if ece is not None:
        out.append(Stat(MetricName("success_ece")).add(ece))
    orderings = [subset_ordering(subset, subset_rows, continuous=True) for subset, subset_rows in
                 by_subset(rows).items()]
    values = macro(orderings)
    out += [Stat(MetricName(name + EXPECTED_SUFFIX)).add(value) for name, value in values.items()
            if name in ORDERING_ON_EXPECTED and value is not None]
    return out
