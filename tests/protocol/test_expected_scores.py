"""``score=expected`` in RoboRewardMetric (helm_roboreward/helm_frontend/expected_scores.py), on hand-built rows.

Completions carry ``finish_reason["score_token_logprobs"]`` as the clients record it (one entry per digit token of
the answer: its offset, text and top alternatives with log-probabilities). Checked: per-row stats and their values,
the run's coverage, ECE and ordering statistics on the expected score, a row without a distribution counting as 1
(never as its parsed score), a client without log-probabilities (coverage 0, one warning, nothing else), and that
the parsed-score stats do not change.
"""

import math
from typing import Any

import pytest
from helm.benchmark.metrics.statistic import Stat
from helm.benchmark.scenarios.scenario import Instance
from helm.common.request import GeneratedOutput, RequestResult

from helm_roboreward.helm_frontend import expected_scores
from helm_roboreward.helm_frontend.metrics import RoboRewardMetric
from tests.helpers.metric_inputs import (
    adapter_spec,
    answered,
    failed_like_executor,
    make_instance,
    make_request_state,
    stats_by_name,
)


def with_logprobs(text: str, probabilities: dict[str, float]) -> RequestResult:
    """An answer whose last character is the score token, with these alternatives there."""
    entry = {"offset": len(text) - 1, "text": text[-1], "top": {t: math.log(p) for t, p in probabilities.items()}}
    output = GeneratedOutput(text=text, logprob=0.0, tokens=[],
                             finish_reason={"reason": "stop", "score_token_logprobs": [entry]})
    return RequestResult(success=True, embedding=[], completions=[output], cached=False)


def task_instance(gold: int, task: str = "put the cube in the bowl", subset: str = "bridge") -> Instance:
    instance = make_instance(gold, subset=subset, kind="original")
    assert instance.extra_data is not None
    instance.extra_data["task"] = task
    return instance


def evaluate(rows: list[tuple[Instance, RequestResult]], score: str = "expected") -> tuple[
        dict[Instance, list[Stat]], dict[str, float]]:
    metric = RoboRewardMetric(score=score)
    per_instance = {instance: metric.evaluate_generation(adapter_spec(), make_request_state(instance, result),
                                                         None, "")  # type: ignore[arg-type]
                    for instance, result in rows}
    derived = {stat.name.name: stat.sum / stat.count for stat in metric.derive_per_instance_stats(per_instance)}
    return per_instance, derived


@pytest.fixture
def warnings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    logged: list[str] = []
    monkeypatch.setattr(expected_scores, "hwarn", logged.append)
    return logged


def test_a_row_with_a_distribution_gets_its_expected_score(warnings: list[str]) -> None:
    instance = task_instance(5)
    probabilities = {"3": 0.1, "4": 0.2, "5": 0.6, "x": 0.1}  # renormalised over 1..5: 1/9, 2/9, 6/9
    per_instance, derived = evaluate([(instance, with_logprobs("ANSWER: 5", probabilities))])
    values = stats_by_name(per_instance[instance])
    expected = (3 * 0.1 + 4 * 0.2 + 5 * 0.6) / 0.9
    assert values["expected_score_available"] == 1.0
    assert values["expected_score"] == pytest.approx(expected)
    assert values["expected_abs_error"] == pytest.approx(5 - expected)
    assert values["success_probability"] == pytest.approx(0.6 / 0.9)
    assert values["success_brier"] == pytest.approx((1 - 0.6 / 0.9) ** 2)
    assert values["abs_error"] == 0.0  # the parsed score's stats are the official ones, unchanged
    assert derived["expected_score_coverage"] == 1.0
    assert derived["success_ece"] == pytest.approx(1 - 0.6 / 0.9)  # one row, one bin
    assert warnings == []


def test_the_parsed_stats_do_not_depend_on_the_option() -> None:
    rows = [(task_instance(gold), with_logprobs(f"ANSWER: {answer}", {"2": 0.5, "4": 0.5}))
            for gold, answer in ((1, 2), (4, 4), (5, 2))]
    parsed, parsed_derived = evaluate(rows, score="parsed")
    expected, expected_derived = evaluate(rows)
    for instance, _ in rows:
        official = stats_by_name(parsed[instance])
        assert {k: v for k, v in stats_by_name(expected[instance]).items() if k in official} == official
    assert {k: v for k, v in expected_derived.items() if k in parsed_derived} == parsed_derived


def test_a_row_without_a_distribution_counts_as_1_never_as_its_parsed_score(warnings: list[str]) -> None:
    """Gold 5 answered 5 but without alternatives, gold 1 with expected score 3: the pair is ordered wrong."""
    best, worst = task_instance(5), task_instance(1)
    rows = [(best, answered("ANSWER: 5")), (worst, with_logprobs("ANSWER: 3", {"3": 1.0}))]
    per_instance, derived = evaluate(rows)
    assert stats_by_name(per_instance[best])["expected_score_available"] == 0.0
    assert "expected_score" not in stats_by_name(per_instance[best])
    assert derived["expected_score_coverage"] == 0.5
    assert derived["preference_accuracy_expected"] == 0.0  # 1 (no distribution) < 3: the wrong order
    assert derived["preference_accuracy"] == 1.0  # on the parsed scores (5 > 3) it is right
    assert len(warnings) == 1 and "1 of 2 rows" in warnings[0]


def test_a_client_without_log_probabilities_reports_coverage_0_and_warns(warnings: list[str]) -> None:
    rows = [(task_instance(gold), answered(f"ANSWER: {gold}")) for gold in (1, 3, 5)]
    _, derived = evaluate(rows)
    assert derived["expected_score_coverage"] == 0.0
    assert not any(name.endswith("_expected") or name == "success_ece" for name in derived), derived
    assert derived["preference_accuracy"] == 1.0  # the parsed-score statistics stay
    assert len(warnings) == 1 and "no log-probabilities" in warnings[0]


@pytest.mark.parametrize("result", [
    answered("ANSWER: 12"),  # a two-character number has no single score token
    with_logprobs("ANSWER: 4", {"x": 0.9, "y": 0.1}),  # no alternative among 1..5
    answered("I cannot tell"),  # unparseable
])
def test_rows_without_a_usable_distribution(result: RequestResult, warnings: list[str]) -> None:
    instance = task_instance(3)
    per_instance, derived = evaluate([(instance, result)])
    assert stats_by_name(per_instance[instance])["expected_score_available"] == 0.0
    assert derived["expected_score_coverage"] == 0.0


def test_a_failed_request_has_no_distribution(warnings: list[str]) -> None:
    instance = task_instance(2)
    per_instance, derived = evaluate([(instance, failed_like_executor())])
    values: dict[str, Any] = stats_by_name(per_instance[instance])
    assert values["expected_score_available"] == 0.0 and values["abs_error"] == 4.0  # charged 4, as officially
    assert derived["expected_score_coverage"] == 0.0
