"""RoboRewardMetric on hand-built HELM request states (PROTOCOL sections 6 and 7).

Every expected number below is computed by hand from the gold score and the completion, not by
calling the package's scoring code.
"""

import pytest
from helm.benchmark.metrics.metric_name import MetricName
from helm.benchmark.metrics.statistic import Stat
from helm.benchmark.scenarios.scenario import TEST_SPLIT, Instance
from helm.common.request import GeneratedOutput, RequestResult

from helm_roboreward.helm_frontend.metrics import RoboRewardMetric
from tests.helpers.metric_inputs import (
    answered,
    failed_like_executor,
    failed_without_completions,
    generation_stats,
    make_instance,
    make_request_state,
    run_mean,
    run_metric,
    run_stat_names,
    stats_by_name,
)

MEDIA_STATS = {"failed_request", "num_frames", "media_bytes"}


# ---------------------------------------------------------------------------------------------
# One instance at a time
# ---------------------------------------------------------------------------------------------

PARSED_CASES = [
    # completion, gold, predicted, abs, squared, exact, false_success, missed_success, within_one
    ("ANSWER: 4", 2, 4.0, 2.0, 4.0, 0.0, 0.0, 0.0, 0.0),
    ("ANSWER: 3", 3, 3.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0),
    ("answer:3", 3, 3.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0),
    ("The arm stops short.\nAnswer :  1", 4, 1.0, 3.0, 9.0, 0.0, 0.0, 0.0, 0.0),
    ("ANSWER: 5", 4, 5.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0),
    ("ANSWER: 5", 5, 5.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0),
    ("ANSWER: 3", 5, 3.0, 2.0, 4.0, 0.0, 0.0, 1.0, 0.0),
    ("ANSWER: 3.5", 1, 3.5, 2.5, 6.25, 0.0, 0.0, 0.0, 0.0),
    ("ANSWER: 1.5", 2, 1.5, 0.5, 0.25, 0.0, 0.0, 0.0, 1.0),  # within 1 is |predicted - gold| <= 1, not rounding
    ("ANSWER: 0", 2, 0.0, 2.0, 4.0, 0.0, 0.0, 0.0, 0.0),  # no clamping
    ("ANSWER: 7", 5, 7.0, 2.0, 4.0, 0.0, 0.0, 1.0, 0.0),  # no clamping; 7 is not a 5
    ("ANSWER: -1", 1, -1.0, 2.0, 4.0, 0.0, 0.0, 0.0, 0.0),
    ("4", 1, 4.0, 3.0, 9.0, 0.0, 0.0, 0.0, 0.0),  # leading number
    ("  2. The block never reached the bowl.", 2, 2.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0),
    ("ANSWER: 2 ... on reflection ANSWER: 5", 5, 2.0, 3.0, 9.0, 0.0, 0.0, 1.0, 0.0),  # first match wins
]


@pytest.mark.parametrize(
    "completion, gold, predicted, abs_error, squared, exact, false_success, missed_success, within", PARSED_CASES
)
def test_parsed_answer_stats(
    completion: str,
    gold: int,
    predicted: float,
    abs_error: float,
    squared: float,
    exact: float,
    false_success: float,
    missed_success: float,
    within: float,
) -> None:
    stats = generation_stats(make_instance(gold, subset="bridge", robot="WidowX", kind="clip"), answered(completion))
    # Each rate is carried only by the rows it is about, so a run's mean is the rate over those rows.
    rate = {"false_success": false_success} if gold < 5 else {"missed_success": missed_success}
    assert stats == pytest.approx(
        {
            "failed_request": 0.0,
            "num_frames": 7.0,
            "media_bytes": 12345.0,
            "abs_error": abs_error,
            "squared_error": squared,
            "exact_match": exact,
            "within_one": within,
            "invalid_output": 0.0,
            **rate,
            "gold_score": float(gold),
            "predicted_score": predicted,
            f"predicted_score_gold_{gold}": predicted,  # the mean prediction per gold label
            "signed_error": predicted - gold,
            "mae_subset_bridge": abs_error,
            "mae_robot_widowx": abs_error,
            "mae_kind_clip": abs_error,
        }
    )


@pytest.mark.parametrize("completion", ["", "I cannot tell from the video.", "ANSWER: high", "Score = 4", "ANSWER 4"])
@pytest.mark.parametrize("gold, missed_success", [(3, 0.0), (5, 1.0), (1, 0.0)])
def test_unparseable_answer_costs_the_maximum_error(completion: str, gold: int, missed_success: float) -> None:
    stats = generation_stats(make_instance(gold), answered(completion))
    assert stats["abs_error"] == 4.0
    assert stats["squared_error"] == 16.0
    assert stats["exact_match"] == 0.0
    assert stats["within_one"] == 0.0
    assert stats["invalid_output"] == 1.0
    assert stats.get("false_success", 0.0) == 0.0
    assert ("false_success" in stats) == (gold < 5) and ("missed_success" in stats) == (gold == 5)
    assert stats.get("missed_success", 0.0) == missed_success
    assert stats["failed_request"] == 0.0  # the request was answered; the answer is just unusable
    assert "predicted_score" not in stats and f"predicted_score_gold_{gold}" not in stats
    assert "signed_error" not in stats  # bias is measured on parsed answers only
    assert stats["mae_subset_bridge"] == 4.0


def test_reasoning_in_thinking_is_not_parsed() -> None:
    stats = generation_stats(
        make_instance(5), answered("ANSWER: 2", thinking="Looks finished, so ANSWER: 5 ... no, the lid is open.")
    )
    assert stats["predicted_score"] == 2.0
    assert stats["abs_error"] == 3.0


def test_reasoning_only_in_thinking_leaves_the_answer_unparseable() -> None:
    stats = generation_stats(make_instance(5), answered("", thinking="ANSWER: 5"))
    assert stats["invalid_output"] == 1.0
    assert stats["abs_error"] == 4.0


def test_only_the_first_completion_is_scored() -> None:
    result = RequestResult(
        success=True,
        embedding=[],
        completions=[
            GeneratedOutput(text="ANSWER: 1", logprob=0.0, tokens=[]),
            GeneratedOutput(text="ANSWER: 4", logprob=0.0, tokens=[]),
        ],
        cached=False,
    )
    assert generation_stats(make_instance(4), result)["predicted_score"] == 1.0


FAILED_RESULTS = {
    "executor_non_fatal_error": failed_like_executor,
    "no_completions": failed_without_completions,
    "success_but_no_completions": lambda: RequestResult(success=True, embedding=[], completions=[], cached=False),
    "never_executed": lambda: None,
}


@pytest.mark.parametrize("make_result", FAILED_RESULTS.values(), ids=FAILED_RESULTS.keys())
def test_failed_request_is_counted_and_left_out_under_skip(make_result) -> None:
    stats = generation_stats(make_instance(5), make_result(), failed="skip")
    assert stats == {"failed_request": 1.0, "num_frames": 7.0, "media_bytes": 12345.0}


@pytest.mark.parametrize("make_result", FAILED_RESULTS.values(), ids=FAILED_RESULTS.keys())
@pytest.mark.parametrize("gold", [5, 2])
def test_failed_request_costs_the_maximum_error_by_default(make_result, gold: int) -> None:
    """The official rule: HELM's executor makes a failed request an empty completion, charged 4.0."""
    stats = generation_stats(make_instance(gold, subset="droid", robot="Franka", kind="original"), make_result())
    assert stats["failed_request"] == 1.0
    assert stats["abs_error"] == 4.0
    assert stats["squared_error"] == 16.0
    assert stats["exact_match"] == 0.0
    assert stats["within_one"] == 0.0  # charged as the MAE charges it
    # Nothing was output, so none of the stats about a model's answer: a failure is not an invalid output.
    assert "invalid_output" not in stats
    assert "false_success" not in stats and "missed_success" not in stats
    assert stats["gold_score"] == float(gold)
    assert stats["mae_subset_droid"] == 4.0
    assert stats["mae_robot_franka"] == 4.0
    assert stats["mae_kind_original"] == 4.0
    assert "predicted_score" not in stats and "signed_error" not in stats


def test_empty_successful_answer_is_an_invalid_output_not_a_failed_request() -> None:
    stats = generation_stats(make_instance(3), answered(""), failed="skip")
    assert stats["failed_request"] == 0.0
    assert stats["invalid_output"] == 1.0
    assert stats["abs_error"] == 4.0


def test_official_failed_policy_is_the_default() -> None:
    assert RoboRewardMetric().failed == "max_error"
    assert generation_stats(make_instance(3), failed_like_executor(), failed="max_error") == generation_stats(
        make_instance(3), failed_like_executor())


def test_unknown_failed_policy_is_rejected() -> None:
    with pytest.raises(ValueError, match="failed='ignore'"):
        RoboRewardMetric(failed="ignore")


def test_instance_without_media_stats_only_reports_failed_request() -> None:
    instance = make_instance(3)
    assert instance.extra_data is not None
    instance.extra_data.pop("num_frames")
    instance.extra_data.pop("media_bytes")
    stats = generation_stats(instance, failed_like_executor(), failed="skip")
    assert stats == {"failed_request": 1.0}


# ---------------------------------------------------------------------------------------------
# A whole run through Metric.evaluate
# ---------------------------------------------------------------------------------------------


def test_macro_versus_micro_mae() -> None:
    """Subset A: 1 instance, error 4. Subset B: 3 instances, error 0."""
    states = [make_request_state(make_instance(1, subset="A"), answered("ANSWER: 5"))]
    states += [make_request_state(make_instance(g, subset="B"), answered(f"ANSWER: {g}")) for g in (2, 3, 4)]
    result = run_metric(states)
    assert run_mean(result, "abs_error") == pytest.approx(1.0)  # micro: (4 + 0 + 0 + 0) / 4
    assert run_mean(result, "macro_mae") == pytest.approx(2.0)  # macro: (4 + 0) / 2
    assert run_mean(result, "mae_subset_A") == pytest.approx(4.0)
    assert run_mean(result, "mae_subset_B") == pytest.approx(0.0)
    assert run_mean(result, "num_subsets") == 2
    assert run_mean(result, "exact_match") == pytest.approx(0.75)
    assert run_mean(result, "squared_error") == pytest.approx(4.0)  # 16 / 4
    assert run_mean(result, "failed_request") == 0.0
    assert len(result.per_instance_stats) == 4
    assert all(s.train_trial_index == 0 for s in result.per_instance_stats)


def test_macro_mae_over_three_subsets_of_unequal_size() -> None:
    # X: errors 1, 3 -> 2.0; Y: errors 0, 0, 0, 0, 4 -> 0.8; Z: error 1 -> 1.0.
    plan = {"X": [(1, 2), (2, 5)], "Y": [(3, 3)] * 4 + [(1, 5)], "Z": [(5, 4)]}
    states = [
        make_request_state(make_instance(gold, subset=subset), answered(f"ANSWER: {pred}"))
        for subset, pairs in plan.items()
        for gold, pred in pairs
    ]
    result = run_metric(states)
    assert run_mean(result, "macro_mae") == pytest.approx((2.0 + 0.8 + 1.0) / 3)
    assert run_mean(result, "abs_error") == pytest.approx((1 + 3 + 0 + 4 + 1) / 8)
    assert run_mean(result, "num_subsets") == 3


def test_breakdowns_by_kind_and_robot() -> None:
    rows = [
        # gold, answer, robot, kind -> abs error
        (5, 5, "Google Robot", "original"),  # 0
        (2, 4, "Google Robot", "counterfactual"),  # 2
        (3, 4, "Google Robot", "clip"),  # 1
        (1, 4, "WidowX", "counterfactual"),  # 3
        (4, 4, "WidowX", "clip"),  # 0
        (2, 5, "xArm Bimanual", "clip"),  # 3
    ]
    states = [
        make_request_state(make_instance(gold, subset="s", robot=robot, kind=kind), answered(f"ANSWER: {pred}"))
        for gold, pred, robot, kind in rows
    ]
    result = run_metric(states)
    assert run_mean(result, "mae_robot_google_robot") == pytest.approx(1.0)  # (0 + 2 + 1) / 3
    assert run_mean(result, "mae_robot_widowx") == pytest.approx(1.5)  # (3 + 0) / 2
    assert run_mean(result, "mae_robot_xarm_bimanual") == pytest.approx(3.0)
    assert run_mean(result, "mae_kind_original") == pytest.approx(0.0)
    assert run_mean(result, "mae_kind_counterfactual") == pytest.approx(2.5)  # (2 + 3) / 2
    assert run_mean(result, "mae_kind_clip") == pytest.approx(4 / 3)  # (1 + 0 + 3) / 3
    assert run_mean(result, "false_success") == pytest.approx(1 / 5)  # of the 5 rows labelled below 5, one got a 5
    assert run_mean(result, "missed_success") == pytest.approx(0.0)  # the one row labelled 5 got a 5
    assert run_mean(result, "signed_error") == pytest.approx((0 + 2 + 1 + 3 + 0 + 3) / 6)
    assert run_mean(result, "predicted_score") == pytest.approx((5 + 4 + 4 + 4 + 4 + 5) / 6)
    assert run_mean(result, "gold_score") == pytest.approx((5 + 2 + 3 + 1 + 4 + 2) / 6)
    assert "mae_kind_natural" not in run_stat_names(result)


def test_peer_stats_of_a_run_within_one_and_mean_prediction_per_gold_label() -> None:
    rows = [(2, "ANSWER: 3"), (2, "ANSWER: 4"), (2, "no score"), (5, "ANSWER: 4"), (5, "ANSWER: 5"), (1, "ANSWER: 1")]
    states = [make_request_state(make_instance(gold, subset="s"), answered(text)) for gold, text in rows]
    states.append(make_request_state(make_instance(3, subset="s"), failed_like_executor()))  # charged 4 (official)
    result = run_metric(states)
    # errors 1, 2, 4 (unparseable), 1, 0, 0, 4 (failed): within 1 for 4 of the 7 rows the MAE counts
    assert run_mean(result, "within_one") == pytest.approx(4 / 7)
    assert run_mean(result, "exact_match") == pytest.approx(2 / 7)
    assert run_mean(result, "predicted_score_gold_2") == pytest.approx(3.5)  # parsed answers only: (3 + 4) / 2
    assert run_mean(result, "predicted_score_gold_5") == pytest.approx(4.5)
    assert run_mean(result, "predicted_score_gold_1") == pytest.approx(1.0)
    names = run_stat_names(result)
    assert "predicted_score_gold_3" not in names and "predicted_score_gold_4" not in names  # no parsed answer
    # HELM keeps the means; the rows behind them let the summarizer pool runs (micro)
    assert run_mean(result, "error_rows") == 7
    assert [run_mean(result, f"predicted_score_gold_{gold}_rows") for gold in range(1, 6)] == [1, 2, 0, 0, 2]
    skipped = run_metric(states, failed="skip")
    assert run_mean(skipped, "within_one") == pytest.approx(4 / 6)  # the failed row leaves it, as it leaves the MAE
    assert run_mean(skipped, "error_rows") == 6


@pytest.mark.parametrize("evaluated, total", [(4, 10), (10, 10)])
def test_eval_coverage_shows_helm_subsampling(evaluated: int, total: int, caplog: pytest.LogCaptureFixture) -> None:
    states = [make_request_state(make_instance(3, subset="s", rows_in_run=total), answered("ANSWER: 3"))
              for _ in range(evaluated)]
    result = run_metric(states)
    assert run_mean(result, "eval_coverage") == pytest.approx(evaluated / total)
    warned = f"only {evaluated} of the run's {total} rows were evaluated" in caplog.text
    assert warned == (evaluated < total)


def test_no_eval_coverage_without_the_row_count() -> None:
    result = run_metric([make_request_state(make_instance(3), answered("ANSWER: 3"))])
    assert "eval_coverage" not in run_stat_names(result)


def test_failed_requests_in_a_run_under_skip() -> None:
    states = [
        make_request_state(make_instance(2, subset="A"), answered("ANSWER: 3")),  # error 1
        make_request_state(make_instance(5, subset="A"), answered("ANSWER: 2")),  # error 3
        make_request_state(make_instance(1, subset="A"), failed_like_executor()),  # left out
        make_request_state(make_instance(4, subset="B"), failed_without_completions()),  # B has no errors at all
    ]
    result = run_metric(states, failed="skip")
    assert run_mean(result, "abs_error") == pytest.approx(2.0)
    assert run_mean(result, "failed_request") == pytest.approx(0.5)
    assert run_mean(result, "macro_mae") == pytest.approx(2.0)  # subset B is missing: skipped, not zero
    assert run_mean(result, "num_subsets") == 1
    assert "mae_subset_B" not in run_stat_names(result)
    # every instance keeps a per-instance record, so failures stay visible
    assert len(result.per_instance_stats) == 4
    failed = [p for p in result.per_instance_stats if p.instance_id == states[2].instance.id]
    assert {s.name.name for s in failed[0].stats} == MEDIA_STATS


def test_failed_requests_in_a_run_under_max_error() -> None:
    states = [
        make_request_state(make_instance(2, subset="A"), answered("ANSWER: 3")),  # 1
        make_request_state(make_instance(5, subset="A"), answered("ANSWER: 2")),  # 3
        make_request_state(make_instance(1, subset="A"), failed_like_executor()),  # 4
        make_request_state(make_instance(4, subset="B"), failed_without_completions()),  # 4
    ]
    result = run_metric(states, failed="max_error")
    assert run_mean(result, "abs_error") == pytest.approx(3.0)  # (1 + 3 + 4 + 4) / 4
    assert run_mean(result, "failed_request") == pytest.approx(0.5)
    assert run_mean(result, "invalid_output") == 0.0
    assert run_mean(result, "macro_mae") == pytest.approx((8 / 3 + 4) / 2)
    assert run_mean(result, "num_subsets") == 2


def test_run_where_every_request_failed_has_no_mae() -> None:
    states = [make_request_state(make_instance(3), failed_like_executor()) for _ in range(3)]
    result = run_metric(states, failed="skip")
    assert run_mean(result, "failed_request") == 1.0
    names = run_stat_names(result)
    assert "abs_error" not in names and "macro_mae" not in names


def test_run_stats_carry_the_test_split() -> None:
    result = run_metric([make_request_state(make_instance(3), answered("ANSWER: 3"))])
    for stat in result.aggregated_stats:
        assert stat.name.split == TEST_SPLIT


def test_metadata_directions() -> None:
    metadata = {m.name: m for m in RoboRewardMetric().get_metadata()}
    assert metadata["abs_error"].lower_is_better is True
    assert metadata["macro_mae"].lower_is_better is True
    assert metadata["exact_match"].lower_is_better is False


# ---------------------------------------------------------------------------------------------
# PROTOCOL section 7: RoboReward 8B per-subset MAEs average to 0.665
# ---------------------------------------------------------------------------------------------

# (rows in the test split, RoboReward-8B MAE), official subset order (PROTOCOL sections 2 and 7).
ROBOREWARD_8B = [
    (1000, 0.768), (87, 0.701), (100, 0.340), (91, 0.538), (71, 0.577), (86, 0.674), (100, 0.770), (92, 0.587),
    (19, 0.474), (100, 0.670), (100, 0.830), (83, 0.807), (100, 0.720), (53, 0.396), (97, 0.485), (91, 0.890),
    (91, 0.473), (71, 0.493), (95, 0.947), (100, 0.100), (73, 0.452), (71, 1.394), (60, 1.200),
]


def macro_mean(per_instance_errors: dict[str, list[float]]) -> float:
    """Reference: mean over subsets of the mean error inside each subset."""
    subset_means = [sum(errors) / len(errors) for errors in per_instance_errors.values() if errors]
    return sum(subset_means) / len(subset_means)


def derive_macro(per_instance_errors: dict[str, list[float]]) -> dict[str, float]:
    """Feed synthetic per-instance abs_error stats through the metric's derive step."""
    per_instance: dict[Instance, list[Stat]] = {}
    for subset, errors in per_instance_errors.items():
        for error in errors:
            instance = make_instance(3, subset=subset)
            per_instance[instance] = [
                Stat(MetricName("failed_request", split=TEST_SPLIT)).add(0.0),
                Stat(MetricName("abs_error", split=TEST_SPLIT)).add(error),
            ]
    derived = RoboRewardMetric().derive_per_instance_stats(per_instance)
    return stats_by_name(derived)


def test_protocol_example_roboreward_8b_macro_mae() -> None:
    errors = {f"subset_{i:02d}": [mae] * rows for i, (rows, mae) in enumerate(ROBOREWARD_8B)}
    assert sum(rows for rows, _ in ROBOREWARD_8B) == 2831
    derived = derive_macro(errors)
    assert derived["num_subsets"] == 23
    assert derived["macro_mae"] == pytest.approx(macro_mean(errors), abs=1e-12)
    assert round(derived["macro_mae"], 3) == 0.665
    # the instance-weighted mean is a different number (PROTOCOL: 0.696)
    instance_weighted = sum(rows * mae for rows, mae in ROBOREWARD_8B) / 2831
    assert round(instance_weighted, 3) == 0.696


def test_macro_mean_weighs_every_subset_equally() -> None:
    errors = {"big": [0.0] * 999 + [4.0], "tiny": [2.0]}
    derived = derive_macro(errors)
    assert derived["macro_mae"] == pytest.approx((4.0 / 1000 + 2.0) / 2)
    assert derived["num_subsets"] == 2


def test_derive_ignores_instances_without_an_error() -> None:
    per_instance: dict[Instance, list[Stat]] = {
        make_instance(3, subset="A"): [Stat(MetricName("abs_error")).add(1.0)],
        make_instance(3, subset="B"): [Stat(MetricName("failed_request")).add(1.0)],
    }
    derived = stats_by_name(RoboRewardMetric().derive_per_instance_stats(per_instance))
    # MAE: subset B has no error, so it is not a subset of the macro mean. A plain run computes no reward-model
    # statistics (the summarizer and the report do, from the rows the run wrote).
    assert derived == {"num_instances": 2.0, "macro_mae": 1.0, "num_subsets": 1.0, "error_rows": 1.0,
                       **{f"predicted_score_gold_{gold}_rows": 0.0 for gold in range(1, 6)}}
    expected = stats_by_name(RoboRewardMetric(score="expected").derive_per_instance_stats(per_instance))
    # Under score=expected: two gold-3 rows in two subsets make no pair, ladder or clip (counts 0, accuracies
    # absent); success detection without a gold 5 has no recall, F1 or AUROC, and MCC is 0 by its documented
    # convention (an empty margin).
    assert {name: expected[name] for name in ("preference_pairs", "ladder_videos", "clip_episodes", "success_mcc")} \
        == {"preference_pairs": 0.0, "ladder_videos": 0.0, "clip_episodes": 0.0, "success_mcc": 0.0}
    assert RoboRewardMetric().derive_per_instance_stats({}) == []


def _success_run(failed: str) -> dict[str, float]:
    """A run whose gold-5 row failed: under skip it leaves every statistic, under max_error it counts as 1."""
    states = [
        make_request_state(make_instance(5, subset="A"), answered("ANSWER: 5")),
        make_request_state(make_instance(2, subset="A"), answered("ANSWER: 2")),
        make_request_state(make_instance(5, subset="A"), failed_like_executor()),
    ]
    result = run_metric(states, failed=failed, score="expected")  # the metric's reward-model statistics
    return {name: run_mean(result, name) for name in ("success_recall", "success_auroc", "success_f1",
                                                      "success_mcc", "success_precision")}


def test_failed_skip_leaves_a_failed_row_out_of_success_detection() -> None:
    assert _success_run("skip") == {"success_recall": 1.0, "success_auroc": 1.0, "success_f1": 1.0,
                                    "success_mcc": 1.0, "success_precision": 1.0}
    official = _success_run("max_error")  # the official charge: the failed gold-5 row is a predicted 1
    assert official["success_recall"] == 0.5 and official["success_auroc"] == 0.5
    assert official["success_f1"] == pytest.approx(2 / 3)


def test_failed_skip_leaves_a_failed_row_out_of_the_ordering_statistics() -> None:
    def task_instance(gold: int) -> Instance:
        instance = make_instance(gold, subset="A")
        return Instance(instance.input, instance.references, instance.split, id=instance.id,
                        extra_data={**(instance.extra_data or {}), "task": "stack the cups"})

    states = [make_request_state(task_instance(4), answered("ANSWER: 4")),
              make_request_state(task_instance(2), answered("ANSWER: 2")),
              make_request_state(task_instance(5), failed_like_executor())]  # would be a wrong pair with each
    skipped = run_metric(states, failed="skip", score="expected")  # the metric's reward-model statistics
    assert run_mean(skipped, "preference_pairs") == 1 and run_mean(skipped, "preference_accuracy") == 1.0
    official = run_metric(states, failed="max_error", score="expected")
    assert run_mean(official, "preference_pairs") == 3
    assert run_mean(official, "preference_accuracy") == pytest.approx(1 / 3)


def test_failed_skip_leaves_a_failed_row_out_of_the_expected_score_coverage() -> None:
    answered_row, failed_row = make_instance(5, subset="A"), make_instance(2, subset="A")
    per_instance: dict[Instance, list[Stat]] = {
        answered_row: [Stat(MetricName(name)).add(value) for name, value in (
            ("failed_request", 0.0), ("abs_error", 0.0), ("predicted_score", 5.0), ("expected_score_available", 1.0),
            ("expected_score", 4.8), ("success_probability", 0.9))],
        failed_row: [Stat(MetricName("failed_request")).add(1.0)],
    }
    derived = stats_by_name(RoboRewardMetric(failed="skip", score="expected").derive_per_instance_stats(per_instance))
    assert derived["expected_score_coverage"] == 1.0  # the failed row is not a row without a distribution
