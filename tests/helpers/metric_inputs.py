"""Hand-built HELM inputs for RoboRewardMetric: instances shaped like the scenario's, results, request states.

Used by the metric's tests and by the parser fuzz (which scores its generated completions through the metric).
"""

import itertools
from collections.abc import Sequence

from helm.benchmark.adaptation.adapter_spec import ADAPT_GENERATION_MULTIMODAL, AdapterSpec
from helm.benchmark.adaptation.request_state import RequestState
from helm.benchmark.adaptation.scenario_state import ScenarioState
from helm.benchmark.metrics.metric import MetricResult
from helm.benchmark.metrics.metric_name import MetricName
from helm.benchmark.metrics.statistic import Stat
from helm.benchmark.scenarios.scenario import CORRECT_TAG, TEST_SPLIT, Input, Instance, Output, Reference
from helm.common.request import ErrorFlags, GeneratedOutput, Request, RequestResult, Thinking

from helm_roboreward.helm_frontend.metrics import RoboRewardMetric

_ids = itertools.count()


def make_instance(
    gold: int,
    subset: str = "bridge",
    robot: str = "WidowX",
    kind: str = "clip",
    num_frames: int = 7,
    media_bytes: int = 12345,
    rows_in_run: int | None = None,
) -> Instance:
    """An instance shaped like the scenario's: one correct reference holding the gold score."""
    return Instance(
        input=Input(text=""),
        references=[Reference(Output(text=str(gold)), tags=[CORRECT_TAG])],
        split=TEST_SPLIT,
        id=f"rr-test{next(_ids):04d}",
        extra_data={
            "subset": subset,
            "robot": robot,
            "kind": kind,
            "num_frames": num_frames,
            "media_bytes": media_bytes,
            **({"rows_in_run": rows_in_run} if rows_in_run is not None else {}),
        },
    )


def answered(text: str, thinking: str | None = None) -> RequestResult:
    output = GeneratedOutput(
        text=text, logprob=0.0, tokens=[], thinking=Thinking(text=thinking) if thinking is not None else None
    )
    return RequestResult(success=True, embedding=[], completions=[output], cached=False)


def failed_like_executor() -> RequestResult:
    """What HELM's executor leaves after a non-fatal client error: success=False and one empty completion."""
    return RequestResult(
        success=False,
        embedding=[],
        completions=[GeneratedOutput(text="", logprob=0, tokens=[])],
        cached=False,
        error="upstream 500 after retries",
        error_flags=ErrorFlags(is_retriable=False, is_fatal=False),
    )


def failed_without_completions() -> RequestResult:
    return RequestResult(
        success=False,
        embedding=[],
        completions=[],
        cached=False,
        error="upstream 500 after retries",
        error_flags=ErrorFlags(is_retriable=False, is_fatal=False),
    )


def make_request_state(instance: Instance, result: RequestResult | None) -> RequestState:
    return RequestState(
        instance=instance,
        reference_index=None,
        request_mode=None,
        train_trial_index=0,
        output_mapping=None,
        request=Request(model="baseline/constant-3", model_deployment="baseline/constant-3", prompt=""),
        result=result,
        num_train_instances=0,
        prompt_truncated=False,
    )


def adapter_spec() -> AdapterSpec:
    return AdapterSpec(
        method=ADAPT_GENERATION_MULTIMODAL,
        max_train_instances=0,
        num_outputs=1,
        temperature=0.0,
        model="baseline/constant-3",
        model_deployment="baseline/constant-3",
    )


def stats_by_name(stats: Sequence[Stat]) -> dict[str, float]:
    """Per-instance stats as name -> value (each must occur once, with one observation)."""
    values: dict[str, float] = {}
    for stat in stats:
        assert stat.name.name not in values, f"duplicate stat {stat.name.name}"
        assert stat.count == 1, stat
        values[stat.name.name] = stat.sum
    return values


def generation_stats(instance: Instance, result: RequestResult | None,
                     failed: str = "max_error") -> dict[str, float]:
    metric = RoboRewardMetric(failed=failed)
    stats = metric.evaluate_generation(adapter_spec(), make_request_state(instance, result), None, "")  # type: ignore[arg-type]
    return stats_by_name(stats)


def run_metric(request_states: list[RequestState], failed: str = "max_error", score: str = "parsed") -> MetricResult:
    state = ScenarioState(adapter_spec=adapter_spec(), request_states=request_states)
    return RoboRewardMetric(failed=failed, score=score).evaluate(state, None, "", parallelism=1)  # type: ignore[arg-type]


def run_mean(result: MetricResult, name: str) -> float:
    """The run-level value of a stat in the test split, without perturbation."""
    wanted = MetricName(name, split=TEST_SPLIT)
    matches = [stat for stat in result.aggregated_stats if stat.name == wanted]
    assert len(matches) == 1, f"{name}: {[s.name for s in result.aggregated_stats if s.name.name == name]}"
    assert matches[0].mean is not None
    return matches[0].mean


def run_stat_names(result: MetricResult) -> set[str]:
    return {stat.name.name for stat in result.aggregated_stats if stat.name.perturbation is None}
