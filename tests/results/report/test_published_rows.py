"""The published leaderboard beside the suite's models, and the peer metrics, in ``report.md`` and the CSVs.

The suite is RoboReward 8B's published per-subset MAEs as per-instance errors (every row of a subset has that
subset's MAE, as in test_published_numbers.py), recorded as read from the hub, from the sample or from a local copy.
"""

import csv
from pathlib import Path

import pytest

from helm_roboreward.helm_frontend.run_rows import InstanceRow, ModelRows, RunData, SuiteRows
from helm_roboreward.protocol.published import PUBLISHED_LEADERBOARD, PUBLISHED_SUBSET_MAE
from helm_roboreward.protocol.rules import OFFICIAL_SUBSET_IDS, OFFICIAL_SUBSETS
from helm_roboreward.results.report.analysis import ReportData, Settings, analyse
from helm_roboreward.results.report.csv_tables import PEER_FILE
from helm_roboreward.results.report.published_rows import split_problem, would_rank
from helm_roboreward.results.report.writer import render_markdown, write_report

COMMIT = "0123456789abcdef0123456789abcdef01234567"
HUB = RunData("hf", (COMMIT,))


def test_the_per_subset_table_is_the_protocols() -> None:
    assert list(PUBLISHED_SUBSET_MAE["teetone/roboreward-8b"]) == OFFICIAL_SUBSET_IDS
    assert len(PUBLISHED_SUBSET_MAE["teetone/roboreward-8b"]) == 23  # the values: test_published_numbers
    assert len(PUBLISHED_LEADERBOARD) == 25


def test_would_rank_counts_the_strictly_better_published_models() -> None:
    assert would_rank(0.1) == 1
    assert would_rank(0.66) == 2  # 0.63 is better; the published 0.66 ties and shares the rank
    assert would_rank(0.6646) == 3
    assert would_rank(9.0) == 26


@pytest.mark.parametrize("source, reason", [
    (RunData("sample", ("sample-0123456789abcdef",)), "the runs read the bundled sample (data=sample)"),
    (RunData("/data/copy", ("local-0123456789abcdef",)), "the runs read a local copy (data=/data/copy)"),
    (RunData("hf", ("sample-0123456789abcdef",)), "run r says data=hf but its instances record a copy's revision"),
])
def test_anything_but_the_hub_split_is_not_the_public_split(source: RunData, reason: str) -> None:
    problem = split_problem({"r": source, "h": HUB}, ["r", "h"])
    assert problem is not None and problem.startswith(reason)
    assert split_problem({"r": source, "h": HUB}, ["h"]) is None  # only the runs the report uses count
    assert split_problem({"h": RunData("hf")}, ["h"]) is None  # a run without recorded revisions: its data= says


def _suite(source: RunData, subsets: list[str] | None = None, model: str = "teetone/roboreward-8b") -> SuiteRows:
    maes = PUBLISHED_SUBSET_MAE["teetone/roboreward-8b"]
    chosen = subsets or OFFICIAL_SUBSET_IDS
    rows = [InstanceRow(f"{subset}-{index}", subset, "robot", "clip", f"{subset}/episode_{index}", f"{subset}-{index}",
                        3.0, 3.0 + maes[subset], maes[subset], False, False)
            for subset in chosen for index in range(next(s.num_rows for s in OFFICIAL_SUBSETS if s.id == subset))]
    runs = {subset: f"run-{subset}" for subset in chosen}
    return SuiteRows("hub", [ModelRows(model, "Our RoboReward 8B", rows, runs)],
                     sources={run: source for run in runs.values()})


def _report(suite: SuiteRows, published: bool = True) -> tuple[ReportData, str]:
    data = analyse(suite, Settings(resamples=20, published=published))
    return data, render_markdown(data)


def test_on_the_public_split_the_published_rows_are_shown_and_the_model_placed() -> None:
    data, text = _report(_suite(HUB))
    assert data.published is not None and data.published.left_out is None
    assert "## Published leaderboard (published, not rerun)" in text
    assert "| would rank 3 | Our RoboReward 8B | 0.665 | this suite (published for this model: 0.665) |" in text
    assert "| 1 | GPT-5.5 (xhigh reasoning) | 0.630 | published, not rerun |" in text
    assert "| 25 | Qwen2.5-VL Instruct (3B) | 1.610 | published, not rerun |" in text
    table = [line for line in text.split("\n") if line.endswith(("published, not rerun |", "0.665) |"))]
    assert len(table) == 26 and table.index(next(line for line in table if "would rank 3" in line)) == 2
    reference = next(line for line in text.split("\n") if line.startswith("| RoboReward 8B (published, not rerun)"))
    assert reference.split(" | ")[1:3] == ["0.665", "0.768"]  # its mean, then RoboArena


def test_a_partial_suite_is_not_placed_and_the_reference_row_covers_its_subsets() -> None:
    data, text = _report(_suite(HUB, subsets=["robo_arena", "bridge"]))
    assert data.published is not None and [p.rank for p in data.published.placements] == [None]
    assert "- Our RoboReward 8B: 2 of 23 subsets" in text and "| would rank" not in text
    reference = next(line for line in text.split("\n") if line.startswith("| RoboReward 8B (published, not rerun)"))
    assert reference == "| RoboReward 8B (published, not rerun) | 0.769 | 0.768 | 0.770 |"  # (0.768 + 0.770) / 2


def test_on_the_sample_one_line_says_why_they_are_left_out() -> None:
    data, text = _report(_suite(RunData("sample", ("sample-0123456789abcdef",))))
    assert data.published is not None and data.published.left_out is not None
    lines = [line for line in text.split("\n") if "published" in line.lower()]
    assert lines == ["Published leaderboard rows left out: the runs read the bundled sample (data=sample), not the "
                     "public test split the published numbers are on."]


def test_no_published_turns_them_off() -> None:
    data, text = _report(_suite(HUB), published=False)
    assert data.published is None and "published" not in text.lower()


def test_peer_metrics_in_the_report_and_their_csv(tmp_path: Path) -> None:
    data, text = _report(_suite(HUB))
    peer = data.models[0].peer
    assert peer is not None and peer.rows == 2831
    assert peer.macro_mae == pytest.approx(sum(PUBLISHED_SUBSET_MAE["teetone/roboreward-8b"].values()) / 23)
    assert peer.micro_mae == pytest.approx(0.696, abs=5e-4)  # the instance-weighted mean of the protocol card
    assert peer.exact_micro == 0.0 and peer.within_one_micro == pytest.approx(1 - (71 + 60) / 2831)  # 1.394, 1.2
    assert peer.mean_prediction[3] == pytest.approx(3.0 + (peer.micro_mae or 0)) and peer.prediction_rows[3] == 2831
    assert "## Peer metrics" in text and "| Our RoboReward 8B | 0.665 | 0.696 | 0.000 | 0.000 |" in text
    write_report(data, str(tmp_path))
    with open(tmp_path / PEER_FILE, encoding="utf-8") as handle:
        rows = {row["statistic"]: row for row in csv.DictReader(handle)}
    assert float(rows["mae_micro"]["value"]) == pytest.approx(peer.micro_mae, abs=1e-6)
    assert rows["mean_prediction_gold_1"] == {"model": "teetone/roboreward-8b", "statistic": "mean_prediction_gold_1",
                                              "value": "-", "rows": "0"}
