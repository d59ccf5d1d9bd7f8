"""The RoboReward metric: each answer scored by the official rule, and the macro MAE over subsets.

Rules: docs/protocol.md, sections 6-7; every stat: docs/leaderboard_and_report.md. ``mae_subset_<id>``, ``mae_robot_*``
and ``mae_kind_*`` are breakdown stats: ``abs_error`` reported on the matching rows only, so their run-level mean is
that group's MAE.
"""

from collections import defaultdict

from helm.benchmark.adaptation.adapter_spec import AdapterSpec
from helm.benchmark.adaptation.request_state import RequestState
from helm.benchmark.metrics.metric import Metric, MetricMetadata
from helm.benchmark.metrics.metric_name import MetricName
from helm.benchmark.metrics.metric_service import MetricService
from helm.benchmark.metrics.statistic import Stat
from helm.benchmark.scenarios.scenario import Instance
from helm.common.hierarchical_logger import hwarn

from helm_roboreward.protocol import rules as protocol
from helm_roboreward.protocol.instance_record import InstanceRecord
from helm_roboreward.protocol.stat_catalogue import (
    STATS,
    kind_mae,
    predicted_score_gold,
    predicted_score_gold_rows,
    robot_mae,
    subset_mae,
)


def gold_score_of(instance: Instance) -> int:
    """The gold progress score of an instance (its single correct reference)."""
    reference = instance.first_correct_reference
    if reference is None:
        raise ValueError(f"instance {instance.id} has no correct reference")
    return int(reference.output.text)


def _stat(name: str, value: float) -> Stat:
    return Stat(MetricName(name)).add(value)


def instance_stats(scored: protocol.ScoredPrediction, record: InstanceRecord, answered: bool = True) -> list[Stat]:
    """The stats of one answered request, or (``answered=False``) the error terms of a failed one."""
    stats = [_stat("abs_error", scored.abs_error), _stat("squared_error", scored.squared_error),
             _stat("exact_match", scored.exact_match), _stat("within_one", scored.within_one),
             _stat("gold_score", scored.gold_score)]
    if answered:
        stats.append(_stat("invalid_output", scored.invalid_output))
        # Rates over the rows they are about, so the run's mean is the rate itself.
        stats.append(_stat("false_success", scored.false_success) if scored.gold_score < protocol.MAX_SCORE
                     else _stat("missed_success", scored.missed_success))
    if scored.predicted is not None:
        stats += [_stat("predicted_score", scored.predicted),
                  _stat(predicted_score_gold(scored.gold_score), scored.predicted)]
    if scored.signed_error is not None:
        stats.append(_stat("signed_error", scored.signed_error))
    breakdowns = ((record.subset, subset_mae), (record.robot, robot_mae), (record.kind, kind_mae))
    return stats + [_stat(name_of(key), scored.abs_error) for key, name_of in breakdowns if key]


def request_stats(request_state: RequestState, record: InstanceRecord) -> list[Stat]:
    """What the request carried (frames, media bytes) and the tokens the client reported (each when known)."""
    result = request_state.result
    finish = (result.completions[0].finish_reason or {}) if result is not None and result.completions else {}
    values: dict[str, object] = {"num_frames": record.num_frames, "media_bytes": record.media_bytes}
    values |= {f"num_{key}": finish.get(key) for key in ("prompt_tokens", "completion_tokens")}
    return [_stat(name, float(value)) for name, value in values.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool)]


class RoboRewardMetric(Metric):
    """Absolute error of the parsed progress score, with breakdowns and the macro MAE over subsets."""

    def __init__(self, failed: str = protocol.MAX_ERROR, score: str = protocol.PARSED) -> None:
        """``failed``: ``max_error`` (official) or ``skip``; ``score``: ``parsed`` (official) or ``expected``."""
        if failed not in protocol.FAILED_POLICIES:
            raise ValueError(f"failed={failed!r} is not one of {', '.join(protocol.FAILED_POLICIES)}")
        if score not in protocol.SCORE_MODES:
            raise ValueError(f"score={score!r} is not one of {', '.join(protocol.SCORE_MODES)}")
        self.failed = failed
        self.score = score

    def evaluate_generation(self, adapter_spec: AdapterSpec, request_state: RequestState,
                            metric_service: MetricService, eval_cache_path: str) -> list[Stat]:
        """Score one request."""
        instance = request_state.instance
        record = InstanceRecord.from_extra_data(instance.extra_data)
        gold_score = gold_score_of(instance)
        result = request_state.result  # its text leaves out reasoning the client returned apart; None: failed
        text = result.completions[0].text if result is not None and result.success and result.completions else None
        stats = [_stat("failed_request", 1.0 if text is None else 0.0)] + request_stats(request_state, record)
        if text is None and self.failed == protocol.SKIP:
            return stats
        scored = (protocol.maximum_error_score(gold_score, invalid_output=False) if text is None
                  else protocol.score_prediction(text, gold_score))
        stats += instance_stats(scored, record, answered=text is not None)
        if self.score == protocol.EXPECTED:
            from helm_roboreward.helm_frontend import expected_scores  # the score=expected option's statistics

            stats += expected_scores.instance_stats(request_state, gold_score)
        return stats

    def derive_per_instance_stats(self, per_instance_stats: dict[Instance, list[Stat]]) -> list[Stat]:
        """The instance count, macro MAE, evaluated share of rows and row counts (``score=expected``: more)."""
        if not per_instance_stats:
            return []
        errors_by_subset: dict[str, list[float]] = defaultdict(list)
        rows_in_run: set[int] = set()
        counts: dict[str, int] = defaultdict(int)
        counted_names = {"abs_error", *(predicted_score_gold(gold_score) for gold_score in protocol.RUBRIC_SCORES)}
        for instance, stats in per_instance_stats.items():
            record = InstanceRecord.from_extra_data(instance.extra_data)
            rows_in_run.add(record.rows_in_run or 0)
            for stat in stats:
                if stat.count and stat.name.name in counted_names:
                    counts[stat.name.name] += 1
                    if stat.name.name == "abs_error":
                        errors_by_subset[record.subset].append(stat.sum / stat.count)
        derived = [_stat("num_instances", len(per_instance_stats))]
        total = rows_in_run.pop() if len(rows_in_run) == 1 else 0
        if total:  # the share of the run's rows evaluated: below 1, HELM's -m subsampled them
            if len(per_instance_stats) < total:
                hwarn(f"RoboReward: only {len(per_instance_stats)} of the run's {total} rows were evaluated (helm-run "
                      f"-m / --max-eval-instances samples at random, not per subset): these MAEs are not the official "
                      f"numbers. Rerun with -m {total} or more.")
            derived.append(_stat("eval_coverage", len(per_instance_stats) / total))
        if errors_by_subset:
            subset_maes = [sum(errors) / len(errors) for errors in errors_by_subset.values()]
            derived += [_stat("macro_mae", sum(subset_maes) / len(subset_maes)), _stat("num_subsets", len(subset_maes))]
        # HELM keeps a run's mean, not how many rows it averaged: the summarizer's micro means weigh by these.
        derived.append(_stat("error_rows", counts["abs_error"]))
        derived += [_stat(predicted_score_gold_rows(gold_score), counts[predicted_score_gold(gold_score)])
                    for gold_score in protocol.RUBRIC_SCORES]
        if self.score == protocol.EXPECTED:
            from helm_roboreward.helm_frontend import expected_scores

            derived += expected_scores.derived_stats(per_instance_stats, self.failed == protocol.SKIP,
                                                  gold_score_of)
        return derived

    def get_metadata(self) -> list[MetricMetadata]:
        """Names, descriptions and directions of the stats, from the stats catalogue (read by helm-summarize)."""
        return [MetricMetadata(definition.name, definition.display_name, None, definition.description,
                               definition.lower_is_better) for definition in STATS]

