"""The RoboReward HELM metric: per-instance errors and the macro MAE over subsets.

docs/protocol.md, sections 6 (parsing), 7 (failed requests) and 8 (aggregation).

Per instance (request answered): ``abs_error``, ``squared_error``, ``exact_match``, ``within_one``
(error at most 1; core/peer_metrics.py), ``invalid_output``, ``signed_error`` (parsed answers only),
``predicted_score`` and its copy ``predicted_score_gold_<k>`` for a row labelled k (parsed answers
only; its run-level mean is the mean prediction per gold label), ``gold_score``; ``false_success``
only for rows labelled below 5 and ``missed_success`` only for rows labelled 5, so their run-level
means are the rates over those rows; plus breakdown copies of ``abs_error`` named
``mae_subset_<id>``, ``mae_robot_<robot>`` and ``mae_kind_<kind>`` that only the matching
instances carry, so their run-level mean is that group's MAE.

Failed requests (the client returned a non-fatal error after retries): the official run charged
them the maximum error, because HELM's executor turns such a failure into one empty completion and
the official metric scores "" as unparseable (``failed=max_error``, default; docs/protocol.md,
section 7). They are charged 4.0 in ``abs_error`` but counted in ``failed_request``, never in
``invalid_output``: a model's bad answer and a request that never got one stay apart.
``failed=skip`` (a named departure) leaves them out of every statistic instead: the MAE and its
breakdowns, the reward-model statistics (ordering, success detection) and the expected-score ones.
Either way ``failed_request`` counts them, so they are never hidden.

Run level: ``macro_mae`` is the unweighted mean of the per-subset MAEs (the official overall
number when a run covers several subsets) and ``num_subsets`` how many subsets it averages;
``error_rows`` and ``predicted_score_gold_<k>_rows`` count the rows behind the means of
``abs_error`` and ``predicted_score_gold_<k>`` (HELM keeps only the means), for micro means over runs.
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

from helm_roboreward import expected_scores
from helm_roboreward.core.ordering import ScoredRow, by_subset, macro, subset_ordering, total_counts
from helm_roboreward.core.peer_metrics import GOLD_LABELS, within_one
from helm_roboreward.core.record import InstanceRecord
from helm_roboreward.core.stats import STATS, gold_prediction, gold_prediction_rows, kind_mae, robot_mae, subset_mae
from helm_roboreward.protocol import (
    EXPECTED,
    FAILED_POLICIES,
    MAX_ERROR,
    MAX_SCORE,
    PARSED,
    SCORE_MODES,
    SKIP,
    ScoredPrediction,
    maximum_error_score,
    score_prediction,
)


def gold_score(instance: Instance) -> int:
    """The gold progress score of an instance (its single correct reference)."""
    reference = instance.first_correct_reference
    if reference is None:
        raise ValueError(f"instance {instance.id} has no correct reference")
    return int(reference.output.text)


def completion_text(request_state: RequestState) -> str | None:
    """The final-answer text of a request, or None when the request failed (no completion).

    Only ``GeneratedOutput.text`` is read: clients that return reasoning separately keep it in
    ``thinking``, so reasoning never feeds the parser.
    """
    result = request_state.result
    if result is None or not result.success or not result.completions:
        return None
    return result.completions[0].text


def instance_stats(scored: ScoredPrediction, record: InstanceRecord, answered: bool = True) -> list[Stat]:
    """The per-instance stats of one answered (or, ``answered=False``, failed and max-error charged) request.

    A failed request gets the official error terms (abs_error 4, squared_error 16, exact_match 0) and the
    breakdowns of abs_error, but none of the stats about a model's answer (invalid output, false and missed
    success): it had none.
    """
    stats = [
        Stat(MetricName("abs_error")).add(scored.abs_error),
        Stat(MetricName("squared_error")).add(scored.squared_error),
        Stat(MetricName("exact_match")).add(scored.exact_match),
        Stat(MetricName("within_one")).add(within_one(scored.abs_error)),
        Stat(MetricName("gold_score")).add(scored.gold),
    ]
    if answered:
        stats.append(Stat(MetricName("invalid_output")).add(scored.invalid_output))
        # Rates over the rows they are about, so a run's mean is the rate itself (not diluted by the other rows).
        if scored.gold < MAX_SCORE:
            stats.append(Stat(MetricName("false_success")).add(scored.false_success))
        else:
            stats.append(Stat(MetricName("missed_success")).add(scored.missed_success))
    if scored.predicted is not None:
        stats.append(Stat(MetricName("predicted_score")).add(scored.predicted))
        stats.append(Stat(MetricName(gold_prediction(scored.gold))).add(scored.predicted))
    if scored.signed_error is not None:
        stats.append(Stat(MetricName("signed_error")).add(scored.signed_error))
    if record.subset:
        stats.append(Stat(MetricName(subset_mae(record.subset))).add(scored.abs_error))
    if record.robot:
        stats.append(Stat(MetricName(robot_mae(record.robot))).add(scored.abs_error))
    if record.kind:
        stats.append(Stat(MetricName(kind_mae(record.kind))).add(scored.abs_error))
    return stats


def media_stats(record: InstanceRecord) -> list[Stat]:
    """What the request carried: frames and bytes of media."""
    stats = []
    if record.num_frames is not None:
        stats.append(Stat(MetricName("num_frames")).add(float(record.num_frames)))
    if record.media_bytes is not None:
        stats.append(Stat(MetricName("media_bytes")).add(float(record.media_bytes)))
    return stats


def usage_stats(request_state: RequestState) -> list[Stat]:
    """Prompt and completion tokens, when the client reported them (in the completion's finish_reason)."""
    result = request_state.result
    if result is None or not result.completions:
        return []
    finish = result.completions[0].finish_reason or {}
    stats = []
    for key, name in (("prompt_tokens", "num_prompt_tokens"), ("completion_tokens", "num_completion_tokens")):
        value = finish.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            stats.append(Stat(MetricName(name)).add(float(value)))
    return stats


def scored_rows(per_instance_stats: dict[Instance, list[Stat]]) -> list[ScoredRow]:
    """The rows of a run as the ordering statistics see them (the parsed score; none when unparseable or failed)."""
    rows = []
    for instance, stats in per_instance_stats.items():
        record = InstanceRecord.from_extra_data(instance.extra_data)
        predicted = [stat.sum / stat.count for stat in stats if stat.name.name == "predicted_score" and stat.count]
        rows.append(ScoredRow(str(instance.id), record.subset, record.task, record.video_sha256, record.episode,
                              record.kind, float(gold_score(instance)), predicted[0] if predicted else None))
    return rows


def ordering_stats(per_instance_stats: dict[Instance, list[Stat]]) -> list[Stat]:
    """The reward-model statistics of a run: each the macro over its subsets, plus the pair counts."""
    orderings = [subset_ordering(subset, rows) for subset, rows in by_subset(scored_rows(per_instance_stats)).items()]
    if not orderings:
        return []
    values = {name: value for name, value in macro(orderings).items() if value is not None}
    values.update({name: float(count) for name, count in total_counts(orderings).items()})
    return [Stat(MetricName(name)).add(value) for name, value in values.items()]


class RoboRewardMetric(Metric):
    """Absolute error of the parsed progress score, with breakdowns and the macro MAE over subsets."""

    def __init__(self, failed: str = MAX_ERROR, score: str = PARSED) -> None:
        """The metric of one run.

        Args:
            failed: ``max_error`` (official: a failed request costs 4.0) or ``skip`` (left out of the means).
            score: ``parsed`` (official) or ``expected`` (expected-score rewards where a client records them).
        """
        if failed not in FAILED_POLICIES:
            raise ValueError(f"failed={failed!r} is not one of {', '.join(FAILED_POLICIES)}")
        if score not in SCORE_MODES:
            raise ValueError(f"score={score!r} is not one of {', '.join(SCORE_MODES)}")
        self.failed = failed
        self.score = score

    def evaluate_generation(
        self,
        adapter_spec: AdapterSpec,
        request_state: RequestState,
        metric_service: MetricService,
        eval_cache_path: str,
    ) -> list[Stat]:
        """Score one request."""
        instance = request_state.instance
        record = InstanceRecord.from_extra_data(instance.extra_data)
        gold = gold_score(instance)
        text = completion_text(request_state)
        stats = [Stat(MetricName("failed_request")).add(1.0 if text is None else 0.0)] + media_stats(record)
        stats += usage_stats(request_state)
        if text is None and self.failed == SKIP:
            return stats
        # A failed request costs the worst possible answer (official), but it is not an invalid output: none came.
        scored = maximum_error_score(gold, invalid_output=False) if text is None else score_prediction(text, gold)
        stats += instance_stats(scored, record, answered=text is not None)
        if self.score == EXPECTED:
            stats += expected_scores.instance_stats(request_state, gold)
        return stats

    def derive_per_instance_stats(self, per_instance_stats: dict[Instance, list[Stat]]) -> list[Stat]:
        """The macro MAE and the reward-model statistics (macro over the run's subsets)."""
        counted = self._counted(per_instance_stats)
        derived = self._macro_mae(per_instance_stats) + self._row_counts(per_instance_stats) + ordering_stats(counted)
        if self.score == EXPECTED:
            gold_of = {instance: float(gold_score(instance)) for instance in counted}
            derived += expected_scores.run_stats(counted, gold_of)
        return derived

    def _counted(self, per_instance_stats: dict[Instance, list[Stat]]) -> dict[Instance, list[Stat]]:
        """The rows the statistics count: under ``failed=skip`` not the failed requests (officially: every row)."""
        if self.failed != SKIP:
            return per_instance_stats
        return {instance: stats for instance, stats in per_instance_stats.items()
                if not any(stat.name.name == "failed_request" and stat.sum > 0 for stat in stats)}

    @staticmethod
    def _row_counts(per_instance_stats: dict[Instance, list[Stat]]) -> list[Stat]:
        """How many rows carry the MAE's error and each gold label's prediction: their weights across runs.

        HELM keeps a run's mean of a per-instance stat, not how many rows it averaged (``take_mean``), so the
        summarizer's micro means over runs weigh each run's mean by these counts.
        """
        if not per_instance_stats:
            return []
        names = ["abs_error"] + [gold_prediction(gold) for gold in GOLD_LABELS]
        counts = {name: sum(any(stat.name.name == name and stat.count for stat in stats)
                            for stats in per_instance_stats.values()) for name in names}
        return [Stat(MetricName("error_rows")).add(counts["abs_error"])] + [
            Stat(MetricName(gold_prediction_rows(gold))).add(counts[gold_prediction(gold)]) for gold in GOLD_LABELS]

    def _macro_mae(self, per_instance_stats: dict[Instance, list[Stat]]) -> list[Stat]:
        """The unweighted mean of the per-subset MAEs of the instances that have an error."""
        errors_by_subset: dict[str, list[float]] = defaultdict(list)
        for instance, stats in per_instance_stats.items():
            subset = InstanceRecord.from_extra_data(instance.extra_data).subset
            for stat in stats:
                if stat.name.name == "abs_error" and stat.count:
                    errors_by_subset[subset].append(stat.sum / stat.count)
        stats = self._coverage(per_instance_stats)
        if not errors_by_subset:
            return stats
        subset_maes = [sum(errors) / len(errors) for errors in errors_by_subset.values()]
        return stats + [
            Stat(MetricName("macro_mae")).add(sum(subset_maes) / len(subset_maes)),
            Stat(MetricName("num_subsets")).add(len(subset_maes)),
        ]

    @staticmethod
    def _coverage(per_instance_stats: dict[Instance, list[Stat]]) -> list[Stat]:
        """``eval_coverage``: the share of the run's rows evaluated; below 1 HELM's ``-m`` subsampled them."""
        rows = {InstanceRecord.from_extra_data(instance.extra_data).rows_in_run or 0 for instance in per_instance_stats}
        if len(rows) != 1 or not (total := rows.pop()):
            return []
        evaluated = len(per_instance_stats)
        if evaluated < total:
            hwarn(f"RoboReward: only {evaluated} of the run's {total} rows were evaluated (helm-run -m / "
                  f"--max-eval-instances samples at random, not per subset): these MAEs are not the official "
                  f"numbers. Rerun with -m {total} or more.")
        return [Stat(MetricName("eval_coverage")).add(evaluated / total)]

    def get_metadata(self) -> list[MetricMetadata]:
        """Names, descriptions and directions of the stats, from the stats catalogue."""
        return [MetricMetadata(definition.name, definition.display_name, None, definition.description,
                               definition.lower_is_better) for definition in STATS]
