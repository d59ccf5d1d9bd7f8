"""The Inspect scorer: each answer scored by the official rule, and the report's macro MAE with its intervals.

Per sample: the absolute error (``protocol/rules.py``: parse rule, unparseable 4, a failed request 4 or left out
with ``failed=skip``); the metadata carries every term the HELM metric records. Metrics: the macro MAE over subsets
with the report's clustered bootstrap interval (``results/report/bootstrap.py``, the report's default settings),
the instance-weighted MAE, and the breakdown stats by HELM's names (``mae_subset_<id>``, ``mae_robot_*``,
``mae_kind_*``), invalid outputs and failed requests.
"""

import math
from collections import defaultdict
from collections.abc import Callable

import numpy as np
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import TaskState

from helm_roboreward.inspect_frontend.log_rows import FAILED_KEY
from helm_roboreward.protocol import rules as protocol
from helm_roboreward.protocol.instance_record import InstanceRecord
from helm_roboreward.protocol.stat_catalogue import kind_mae, robot_mae, subset_mae
from helm_roboreward.results.report.analysis import Settings
from helm_roboreward.results.report.bootstrap import SubsetSample, bootstrap_macro_mae, cluster_ids

SCORE_FIELDS = ("subset", "robot", "kind", "episode", "cluster", "video_sha256")
"""The instance record's fields each score carries, for the metrics and for reading a log into rows."""


def _errors(scores: list[SampleScore]) -> list[tuple[dict[str, object], float]]:
    """``(score metadata, abs_error)`` of every sample the run charges (``failed=skip`` leaves NaN: not charged)."""
    charged = []
    for sample_score in scores:
        value = sample_score.score.value
        if isinstance(value, (int, float)) and not math.isnan(value):
            charged.append((sample_score.score.metadata or {}, float(value)))
    return charged


def _grouped_mae(scores: list[SampleScore], field: str, name: Callable[[str], str]) -> dict[str, float]:
    groups: dict[str, list[float]] = defaultdict(list)
    for metadata, error in _errors(scores):
        if metadata.get(field):
            groups[str(metadata[field])].append(error)
    return {name(key): sum(errors) / len(errors) for key, errors in sorted(groups.items())}


@metric
def macro_mae() -> Metric:
    """The official overall number: the unweighted mean of the subset MAEs."""

    def compute(scores: list[SampleScore]) -> float:
        subset_maes = list(_grouped_mae(scores, "subset", subset_mae).values())
        return sum(subset_maes) / len(subset_maes) if subset_maes else float("nan")

    return compute


@metric
def macro_mae_interval() -> Metric:
    """The report's clustered bootstrap interval of the macro MAE (``macro_mae_low``, ``macro_mae_high``)."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        by_subset: dict[str, list[tuple[dict[str, object], float]]] = defaultdict(list)
        # In instance-id order, as the report orders rows: the clusters' numbering, and so the draws, do not depend
        # on the order the samples finished in
        ordered = sorted(scores, key=lambda sample_score: str(sample_score.sample_id))
        for metadata, error in _errors(ordered):
            by_subset[str(metadata.get("subset", ""))].append((metadata, error))
        samples = [SubsetSample(subset, cluster_ids([str(m.get("cluster") or m.get("episode") or "") for m, _ in rows],
                                                    [str(m.get("video_sha256", "")) for m, _ in rows]),
                                np.array([[error] for _, error in rows]))
                   for subset, rows in sorted(by_subset.items())]
        settings = Settings()
        interval = bootstrap_macro_mae(samples, settings.resamples, settings.seed, settings.confidence).macro
        if not interval or interval[0] is None:
            return {}
        return {"macro_mae_low": interval[0].low, "macro_mae_high": interval[0].high}

    return compute


@metric
def mae() -> Metric:
    """The instance-weighted mean absolute error (not official; the macro MAE is)."""

    def compute(scores: list[SampleScore]) -> float:
        errors = [error for _, error in _errors(scores)]
        return sum(errors) / len(errors) if errors else float("nan")

    return compute


@metric
def breakdown_mae() -> Metric:
    """The MAE per subset, robot and augmentation kind, by the HELM metric's stat names."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        return {**_grouped_mae(scores, "subset", subset_mae), **_grouped_mae(scores, "robot", robot_mae),
                **_grouped_mae(scores, "kind", kind_mae)}

    return compute


@metric
def failure_counts() -> Metric:
    """Failed requests (counted apart, charged or left out) and invalid outputs among the answered."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        metadata = [sample_score.score.metadata or {} for sample_score in scores]
        return {"failed_request": float(sum(bool(item.get(FAILED_KEY)) for item in metadata)),
                "invalid_output": float(sum(bool(item.get("invalid_output")) for item in metadata))}

    return compute


@scorer(metrics=[macro_mae(), macro_mae_interval(), mae(), breakdown_mae(), failure_counts()])
def progress_score(failed: str = protocol.MAX_ERROR) -> Scorer:
    """Absolute error of the parsed progress score against the gold score (``failed``: max_error or skip)."""

    async def score(state: TaskState, target: Target) -> Score:
        record = InstanceRecord.from_extra_data(state.metadata)
        gold_score = int(target.text)
        failure = state.metadata.get(FAILED_KEY)
        text = None if failure else state.output.completion
        scored = (protocol.maximum_error_score(gold_score, invalid_output=False) if text is None
                  else protocol.score_prediction(text, gold_score))
        value = float("nan") if text is None and failed == protocol.SKIP else scored.abs_error
        metadata = {field: getattr(record, field) for field in SCORE_FIELDS}
        metadata.update(gold_score=gold_score, predicted=scored.predicted, squared_error=scored.squared_error,
                        exact_match=scored.exact_match, invalid_output=bool(scored.invalid_output),
                        failed_request=failure or "")
        explanation = f"request failed: {failure}" if failure else (
            "unparseable: error 4" if scored.predicted is None else f"parsed {scored.predicted:g}, gold {gold_score}")
        return Score(value=value, answer=text or "", explanation=explanation, metadata=metadata)

    return score
