"""Published numbers as tests: RoboReward 8B's per-subset MAEs on the leaderboard give its published 0.665.

Source: the RoboRewardBench leaderboard (HELM project ``robo-reward-bench`` v0.0.1), RoboReward 8B's 23
per-subset MAEs in official column order, and the test split's row counts (docs/protocol.md, sections 1 and
8). The overall number is the unweighted mean of the subset MAEs (0.665); the instance-weighted mean would be
0.696. Both the metric's macro code (what helm-run writes) and the report's (``roboreward report``) must
give the published number, and the report's ``leaderboard.csv`` lists the subsets in the official order.
"""

import csv
from pathlib import Path

import pytest
from helm.benchmark.metrics.metric_name import MetricName
from helm.benchmark.metrics.statistic import Stat
from helm.benchmark.scenarios.scenario import TEST_SPLIT, Input, Instance, Output, Reference

from helm_roboreward.helm_frontend.metrics import RoboRewardMetric
from helm_roboreward.helm_frontend.run_rows import InstanceRow, ModelRows, SuiteRows
from helm_roboreward.protocol.rules import OFFICIAL_SUBSETS
from helm_roboreward.results.report.analysis import Settings, analyse
from helm_roboreward.results.report.csv_tables import LEADERBOARD_FILE
from helm_roboreward.results.report.writer import write_report

PUBLISHED_SUBSET_MAE = [
    0.768, 0.701, 0.340, 0.538, 0.577, 0.674, 0.770, 0.587, 0.474, 0.670, 0.830, 0.807, 0.720, 0.396, 0.485,
    0.890, 0.473, 0.493, 0.947, 0.100, 0.452, 1.394, 1.200,
]
"""RoboReward 8B on the published leaderboard, one MAE per subset in the official column order."""

PUBLISHED_MACRO = 0.665
PUBLISHED_INSTANCE_WEIGHTED = 0.696
SPLIT_ROWS = [1000, 87, 100, 91, 71, 86, 100, 92, 19, 100, 100, 83, 100, 53, 97, 91, 91, 71, 95, 100, 73, 71, 60]
"""Rows per subset of the test split (dataset card), official order: 2,831 in all."""


def test_the_registry_holds_the_official_subsets_in_order() -> None:
    from helm_roboreward.protocol.published import PUBLISHED_SUBSET_MAE as PACKAGE_COPY

    assert len(OFFICIAL_SUBSETS) == len(PUBLISHED_SUBSET_MAE) == 23
    assert list(PACKAGE_COPY["teetone/roboreward-8b"]) == [subset.id for subset in OFFICIAL_SUBSETS]
    assert list(PACKAGE_COPY["teetone/roboreward-8b"].values()) == PUBLISHED_SUBSET_MAE  # PROTOCOL section 7
    assert [subset.num_rows for subset in OFFICIAL_SUBSETS] == SPLIT_ROWS
    assert sum(SPLIT_ROWS) == 2831
    assert OFFICIAL_SUBSETS[0].id == "robo_arena" and OFFICIAL_SUBSETS[-1].id == "viola"


def _instance(subset: str, index: int) -> Instance:
    return Instance(input=Input(text=""), references=[Reference(Output(text="3"), tags=["correct"])],
                    split=TEST_SPLIT, id=f"{subset}-{index}", extra_data={"subset": subset})


def _per_instance_errors() -> dict[str, list[float]]:
    """Rows whose errors average to the published MAE of their subset (each error exactly that MAE)."""
    return {subset.id: [mae] * subset.num_rows for subset, mae in zip(OFFICIAL_SUBSETS, PUBLISHED_SUBSET_MAE,
                                                                          strict=True)}


def test_the_metric_macro_gives_the_published_number() -> None:
    per_instance = {
        _instance(subset, index): [Stat(MetricName("abs_error", split=TEST_SPLIT)).add(error)]
        for subset, errors in _per_instance_errors().items() for index, error in enumerate(errors)
    }
    derived = {stat.name.name: stat.mean for stat in RoboRewardMetric().derive_per_instance_stats(per_instance)}
    assert derived["num_subsets"] == 23
    macro = derived["macro_mae"]
    assert macro is not None
    assert round(macro, 3) == PUBLISHED_MACRO
    weighted = sum(rows * mae for rows, mae in zip(SPLIT_ROWS, PUBLISHED_SUBSET_MAE, strict=True)) / sum(SPLIT_ROWS)
    assert round(weighted, 3) == PUBLISHED_INSTANCE_WEIGHTED
    assert round(weighted, 3) != round(macro, 3)


@pytest.fixture(scope="module")
def published_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rows = [
        InstanceRow(f"{subset}-{index}", subset, "robot", "clip", f"{subset}/episode_{index}", f"{subset}-{index}",
                    3.0, None, error, False, False)
        for subset, errors in _per_instance_errors().items() for index, error in enumerate(errors)
    ]
    suite = SuiteRows("published", [ModelRows("teetone/roboreward-8b", "RoboReward 8B", rows,
                                              {subset.id: "run" for subset in OFFICIAL_SUBSETS})])
    data = analyse(suite, Settings(resamples=50))
    assert data.models[0].macro is not None and round(data.models[0].macro.estimate, 3) == PUBLISHED_MACRO
    out = tmp_path_factory.mktemp("published")
    write_report(data, str(out))
    return out


def test_the_report_macro_gives_the_published_number(published_report: Path) -> None:
    with open(published_report / LEADERBOARD_FILE, encoding="utf-8") as handle:
        (row,) = list(csv.DictReader(handle))
    assert round(float(row["mean"]), 3) == PUBLISHED_MACRO
    assert [round(float(row[subset.id]), 3) for subset in OFFICIAL_SUBSETS] == PUBLISHED_SUBSET_MAE


def test_leaderboard_csv_columns_are_in_the_official_order(published_report: Path) -> None:
    with open(published_report / LEADERBOARD_FILE, encoding="utf-8") as handle:
        header = next(csv.reader(handle))
    assert header == ["model", "mean", *[subset.id for subset in OFFICIAL_SUBSETS], "model_id", "missing_subsets",
                      "failed_subsets", "comparable", "comparability"]
