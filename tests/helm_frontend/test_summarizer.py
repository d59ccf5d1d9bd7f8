"""RoboRewardSummarizer's table logic on hand-built HELM objects (``Run``, ``RunSpec``, ``Stat``, ``Table``).

No helm-summarize here (the end-to-end, browser and missing-media tests run it): the aggregators (macro over
subsets, per robot, pooled, summed), the mean column fix (direction, bold, ranking), bolding, short table names,
the breakdown tables built from runs, and the missing-media helpers. Every expected number is computed by hand.
"""

import os
from pathlib import Path

import pytest
from helm.benchmark.adaptation.adapter_spec import AdapterSpec
from helm.benchmark.metrics.metric_name import MetricName
from helm.benchmark.metrics.statistic import Stat
from helm.benchmark.presentation.summarize import Run
from helm.benchmark.presentation.table import Cell, HeaderCell, Table
from helm.benchmark.run_spec import RunSpec
from helm.benchmark.scenarios.scenario import ScenarioSpec

from helm_roboreward.helm_frontend import predictions_pages, summarizer
from helm_roboreward.helm_frontend.summarizer import (
    MEAN_DISPLAY,
    MEAN_HEADER,
    RoboRewardSummarizer,
    missing_media,
    missing_media_message,
    table_name,
)
from helm_roboreward.protocol.rows import KINDS
from helm_roboreward.protocol.stat_catalogue import COST, FAILURE_MODES, REWARD_MODEL, in_group, kind_mae

BOLD = {"font-weight": "bold"}


def stat(name: str, *values: float, split: str = "test") -> Stat:
    """A run-level stat over ``values`` (one observation each), as the metric's aggregation writes it."""
    result = Stat(MetricName(name, split=split))
    for value in values:
        result.add(value)
    return result


def run(subset: str, *stats: Stat, model: str = "baseline/constant-3") -> Run:
    """A RoboReward run of one subset with these stats."""
    name = f"roboreward:subset={subset},data=sample,video=frames,model={model.replace('/', '_')}"
    spec = RunSpec(name=name,
                   scenario_spec=ScenarioSpec(class_name="helm_roboreward.helm_frontend.scenario.RoboRewardScenario",
                                              args={"subset": subset}),
                   adapter_spec=AdapterSpec(model=model, model_deployment=model), metric_specs=[],
                   groups=[f"roboreward_{subset}"])
    return Run(run_path=f"/nowhere/{name}", run_spec=spec, stats=list(stats))


def values(table: Table, model: str) -> dict[str, object]:
    """Column title -> cell value of one model's row."""
    (row,) = [row for row in table.rows if row[0].value == model]
    return {str(header.value): cell.value for header, cell in zip(table.header[1:], row[1:], strict=True)}


def bold_columns(table: Table, model: str) -> set[str]:
    (row,) = [row for row in table.rows if row[0].value == model]
    return {str(header.value) for header, cell in zip(table.header, row, strict=True)
            if (cell.style or {}).get("font-weight") == "bold"}


# --------------------------------------------------------------------------------------------- table names


LONGEST = "utokyo_pr2_tabletop_manipulation_converted_externally_to_rlds"


def test_table_names_read_like_run_names() -> None:
    frames = {"subset": "bridge", "video": "frames"}
    assert table_name("roboreward", "roboreward_bridge", frames) == "bridge_video=frames"
    assert table_name("roboreward_bridge", "roboreward_bridge", frames) == "video=frames"  # the subset's own page
    name = table_name("roboreward", "roboreward_bridge", {**frames, "frames_per_second": 0.5,
                                                          "include_last_frame": True})
    assert name == "bridge_video=frames,fps=0.5,last_frame=1"
    revision = table_name("roboreward", "roboreward_bridge", {"subset": "bridge", "revision": "refs/pr/1",
                                                              "video": "native"})
    assert revision == "bridge_revision=refs%2Fpr%2F1,video=native"


@pytest.mark.parametrize("group", ["roboreward", f"roboreward_{LONGEST}"])
@pytest.mark.parametrize("source", ["data", "revision"])
def test_the_longest_table_file_name_fits_the_file_system(tmp_path, group: str, source: str) -> None:
    folder = tmp_path / ("a-very-long-folder-name-of-a-local-copy-" * 6)
    args = {"subset": LONGEST, "video": "frames", "frames_per_second": 0.123456789, "include_last_frame": True,
            "max_frames": 768, "max_side": 4096,
            **({"data": str(folder)} if source == "data" else {"revision": "0123456789abcdef" * 2 + "01234567"})}
    name = table_name(group, f"roboreward_{LONGEST}", args)
    assert "#" not in name and "/" not in name
    assert name.endswith("fps=0.123456789,last_frame=1,max_frames=768,max_side=4096")  # readable, not cut
    assert len(f"{group}_{name}.json".encode()) <= 255
    if source == "data":
        other = table_name(group, f"roboreward_{LONGEST}", {**args, "data": str(folder) + "x"})
        assert other != name  # the path's hash keeps two copies apart


def test_a_pathological_value_is_cut_with_a_digest() -> None:
    absurd = table_name("roboreward_x", "roboreward_x", {"subset": "x", "revision": "r" * 400, "video": "frames"})
    longer = table_name("roboreward_x", "roboreward_x", {"subset": "x", "revision": "r" * 401, "video": "frames"})
    assert len(f"roboreward_x_{absurd}.json".encode()) <= 255 and absurd != longer


# --------------------------------------------------------------------------------------------- aggregators


def test_macro_over_subsets_weighs_every_subset_equally() -> None:
    # As HELM writes them: a run's mean of a per-instance stat (count 1), and its row count beside it.
    runs = [run("bridge", stat("abs_error", 1), stat("error_rows", 4)),  # 4 rows, MAE 1
            run("jaco_play", stat("abs_error", 3), stat("error_rows", 1))]  # 1 row, MAE 3
    assert summarizer._macro_over_subsets("abs_error")(runs) == pytest.approx(2.0)  # not 7/5
    assert summarizer._pooled("abs_error", "error_rows")(runs) == pytest.approx(7 / 5)


def test_macro_over_subsets_skips_runs_without_the_stat_and_is_none_without_any() -> None:
    runs = [run("bridge", stat("abs_error", 2)), run("jaco_play", stat("invalid_output", 1))]
    assert summarizer._macro_over_subsets("abs_error")(runs) == pytest.approx(2.0)
    assert summarizer._macro_over_subsets("mae_kind_clip")(runs) is None
    assert summarizer._macro_over_subsets("abs_error")([]) is None


def test_a_stat_with_no_observation_or_of_another_split_is_absent() -> None:
    runs = [run("bridge", Stat(MetricName("abs_error", split="test")), stat("abs_error", 4, split="valid"))]
    assert summarizer._stat(runs[0], "abs_error") is None
    assert summarizer._macro_over_subsets("abs_error")(runs) is None
    assert summarizer._pooled("abs_error")(runs) is None
    assert summarizer._summed("abs_error")(runs) is None


def test_macro_per_robot_takes_only_that_robots_subsets() -> None:
    # bridge: WidowX; jaco_play: Jaco 2; sim_kuka: KUKA iiwa (simulated)
    runs = [run("bridge", stat("abs_error", 1)), run("jaco_play", stat("abs_error", 2)),
            run("sim_kuka", stat("abs_error", 3, 5))]
    assert summarizer._macro_over_subsets("abs_error", robot="WidowX")(runs) == pytest.approx(1.0)
    assert summarizer._macro_over_subsets("abs_error", robot="KUKA iiwa (simulated)")(runs) == pytest.approx(4.0)
    assert summarizer._macro_over_subsets("abs_error", robot="Franka (simulated)")(runs) is None


def test_pooled_is_the_per_instance_mean_over_all_runs() -> None:
    runs = [run("bridge", stat("num_frames", 15), stat("num_instances", 2)),
            run("jaco_play", stat("num_frames", 60), stat("num_instances", 1)),
            run("sim_kuka"), run("droid", stat("num_frames", 1000))]  # no row count (an older run): left out
    assert summarizer._pooled("num_frames")(runs) == pytest.approx((15 * 2 + 60) / 3)  # not (15 + 60) / 2


def test_summed_adds_the_runs_sums() -> None:
    runs = [run("bridge", stat("preference_pairs", 7)), run("jaco_play", stat("preference_pairs", 5)),
            run("sim_kuka")]
    assert summarizer._summed("preference_pairs")(runs) == 12


# --------------------------------------------------------------------------------------------- bold and mean


def table_with_mean(rows: list[tuple[str, float | None, float | None, float | None]],
                    directions: tuple[bool | None, bool | None] = (True, True)) -> Table:
    header = [HeaderCell("Model/adapter"), HeaderCell(MEAN_HEADER), HeaderCell("Bridge", lower_is_better=directions[0]),
              HeaderCell("Jaco Play", lower_is_better=directions[1])]
    return Table(title="MAE", header=header, name="accuracy",
                 rows=[[Cell(model), Cell(mean), Cell(a), Cell(b)] for model, mean, a, b in rows])


def test_bold_best_marks_every_tie_and_follows_each_columns_direction() -> None:
    header = [HeaderCell("Model"), HeaderCell("MAE", lower_is_better=True), HeaderCell("Acc.", lower_is_better=False),
              HeaderCell("# pairs", lower_is_better=None)]
    rows = [[Cell("a"), Cell(0.5), Cell(0.9), Cell(10)], [Cell("b"), Cell(0.5), Cell(0.7), Cell(20)],
            [Cell("c"), Cell(None), Cell(None), Cell(30)]]
    table = summarizer._bold_best(Table(title="t", header=header, rows=rows))
    assert bold_columns(table, "a") == {"MAE", "Acc."}
    assert bold_columns(table, "b") == {"MAE"}
    assert bold_columns(table, "c") == set()  # no bold for missing values, none for directionless columns


def test_bold_best_keeps_other_styles_and_skips_empty_columns() -> None:
    header = [HeaderCell("Model"), HeaderCell("MAE", lower_is_better=True)]
    rows = [[Cell("a"), Cell(1.0, style={"color": "red"})], [Cell("b"), Cell(2.0)]]
    table = summarizer._bold_best(Table(title="t", header=header, rows=rows))
    assert table.rows[0][1].style == {"color": "red", **BOLD}
    empty = summarizer._bold_best(Table(title="t", header=header, rows=[[Cell("a"), Cell(None)]]))
    assert empty.rows[0][1].style is None


def test_the_mean_column_gets_the_direction_bold_and_ranking() -> None:
    table = summarizer._fix_mean_column(table_with_mean([
        ("Uniform random", 1.6, 1.5, 1.7), ("Missing", None, None, None), ("Constant 3", 1.2, 1.3, 1.1)]))
    mean = table.header[1]
    assert mean.value == MEAN_DISPLAY and mean.lower_is_better is True
    assert mean.description and "Unweighted mean of the subset columns" in mean.description
    assert [row[0].value for row in table.rows] == ["Constant 3", "Uniform random", "Missing"]  # lower first, None last
    assert bold_columns(table, "Constant 3") == {MEAN_DISPLAY, "Bridge", "Jaco Play"}
    assert bold_columns(table, "Uniform random") == set()


def test_a_higher_is_better_mean_ranks_the_highest_first() -> None:
    table = summarizer._fix_mean_column(table_with_mean([("a", 0.2, 0.1, 0.3), ("b", 0.8, 0.7, 0.9)],
                                                        directions=(False, False)))
    assert table.header[1].lower_is_better is False
    assert [row[0].value for row in table.rows] == ["b", "a"]
    assert MEAN_DISPLAY in bold_columns(table, "b")


@pytest.mark.parametrize("directions", [(True, False), (None, None), (True, None)])
def test_a_mean_over_columns_of_mixed_or_no_direction_is_left_alone(directions: tuple[bool | None, bool | None]
                                                                    ) -> None:
    table = summarizer._fix_mean_column(table_with_mean([("a", 2.0, 1.0, 3.0), ("b", 1.0, 1.0, 1.0)], directions))
    assert table.header[1].value == MEAN_HEADER and table.header[1].lower_is_better is None
    assert [row[0].value for row in table.rows] == ["a", "b"]  # not re-ranked
    assert bold_columns(table, "b") == set()


def test_a_table_without_a_mean_column_is_unchanged() -> None:
    header = [HeaderCell("Model"), HeaderCell("Bridge", lower_is_better=True)]
    table = Table(title="t", header=header, rows=[[Cell("a"), Cell(2.0)], [Cell("b"), Cell(1.0)]])
    assert summarizer._fix_mean_column(table) is table
    assert [row[0].value for row in table.rows] == ["a", "b"] and bold_columns(table, "b") == set()


# --------------------------------------------------------------------------------------------- breakdown tables


@pytest.fixture()
def breakdowns(tmp_path: Path) -> dict[str, Table]:
    """The summarizer's breakdown tables for two models on three subsets (two robots of the sample, one real)."""
    instance = RoboRewardSummarizer(release=None, suites=None, suite="s", schema_path=None, output_path=str(tmp_path),
                                    verbose=False, num_threads=1, allow_unknown_models=True)
    runs_by_model = {
        "Constant 3": [
            run("bridge", stat("abs_error", 1, 3), stat(kind_mae("clip"), 2), stat("invalid_output", 0, 1),
                stat("num_frames", 4, 6), stat("preference_pairs", 5), stat("preference_accuracy", 1.0),
                stat("within_one", 1, 0), stat("exact_match", 0, 0), stat("predicted_score_gold_2", 3),
                stat("num_instances", 2), stat("error_rows", 2), stat("predicted_score_gold_2_rows", 1)),
            run("sim_kuka", stat("abs_error", 1), stat(kind_mae("clip"), 4), stat(kind_mae("original"), 2),
                stat("invalid_output", 0), stat("num_frames", 20), stat("preference_pairs", 2),
                stat("preference_accuracy", 0.5), stat("within_one", 1), stat("exact_match", 0),
                stat("predicted_score_gold_2", 1, 2), stat("num_instances", 1), stat("error_rows", 1),
                stat("predicted_score_gold_2_rows", 2)),
            run("sim_panda", stat("abs_error", 0, 2), stat("num_frames", 10), stat("num_instances", 2),
                stat("error_rows", 2)),
        ],
        "Uniform random": [run("bridge", stat("abs_error", 4), model="baseline/uniform-random")],
    }
    tables = instance._breakdown_tables(runs_by_model)
    names = [table.name for table in tables]
    assert len(names) == len(set(names)) and all(name is not None for name in names)
    return {str(table.name): table for table in tables}


def test_the_breakdown_tables_and_their_order(breakdowns: dict[str, Table]) -> None:
    assert list(breakdowns)[:4] == ["robot_breakdown", "kind_breakdown_all", "failure_modes_all", "cost_all"]
    assert {"reward_model_all", "peer_metrics_all"} <= set(breakdowns)
    for table in breakdowns.values():
        assert [str(row[0].value) for row in table.rows] == ["Constant 3", "Uniform random"]  # sorted by model
        assert table.header[0].value == "Model"


def test_mae_by_robot_is_macro_over_each_robots_subsets(breakdowns: dict[str, Table]) -> None:
    table = breakdowns["robot_breakdown"]
    robots = ["Franka (simulated)", "KUKA iiwa (simulated)", "WidowX"]
    assert [header.value for header in table.header[1:]] == robots  # the robots of the runs, sorted
    assert all(header.lower_is_better is True for header in table.header[1:])
    assert values(table, "Constant 3") == pytest.approx({"Franka (simulated)": 1.0, "KUKA iiwa (simulated)": 1.0,
                                                         "WidowX": 2.0})
    assert values(table, "Uniform random") == {"Franka (simulated)": None, "KUKA iiwa (simulated)": None,
                                               "WidowX": 4.0}
    assert bold_columns(table, "Constant 3") == set(robots)  # 2 < 4 on WidowX; alone on the others
    assert bold_columns(table, "Uniform random") == set()


def test_mae_by_kind_is_macro_over_the_subsets_that_have_the_kind(breakdowns: dict[str, Table]) -> None:
    table = breakdowns["kind_breakdown_all"]
    assert [header.value for header in table.header[1:]] == list(KINDS)
    expected = {"natural": None, "clip": 3.0, "counterfactual": None, "original": 2.0}
    assert values(table, "Constant 3") == expected
    row = next(row for row in table.rows if row[0].value == "Constant 3")
    assert [cell.display_value for cell in row[1:]] == [None, "3.000", None, "2.000"]


def test_failure_modes_follow_the_catalogue(breakdowns: dict[str, Table]) -> None:
    table = breakdowns["failure_modes_all"]
    columns = in_group(FAILURE_MODES)
    assert [header.value for header in table.header[1:]] == [column.display_name for column in columns]
    assert [header.lower_is_better for header in table.header[1:]] == [column.lower_is_better for column in columns]
    shown = values(table, "Constant 3")
    assert shown["Invalid output"] == pytest.approx((0.5 + 0.0) / 2)  # macro over the two subsets that have it


def test_cost_is_pooled_per_instance(breakdowns: dict[str, Table]) -> None:
    table = breakdowns["cost_all"]
    columns = in_group(COST)
    assert [header.value for header in table.header[1:]] == [c.table_title or c.display_name for c in columns]
    assert all(header.lower_is_better is None for header in table.header[1:])
    frames = next(c.table_title or c.display_name for c in columns if c.name == "num_frames")
    assert values(table, "Constant 3")[frames] == pytest.approx((5 * 2 + 20 * 1 + 10 * 2) / 5)  # run means by rows
    assert bold_columns(table, "Constant 3") == set()  # no direction, no bold


def test_reward_model_counts_are_summed_and_statistics_macro(breakdowns: dict[str, Table]) -> None:
    table = breakdowns["reward_model_all"]
    columns = {column.name: column for column in in_group(REWARD_MODEL)}
    shown = values(table, "Constant 3")
    assert shown[columns["preference_pairs"].display_name] == 7
    assert shown[columns["preference_accuracy"].display_name] == pytest.approx(0.75)
    descriptions = {str(header.value): header.description or "" for header in table.header[1:]}
    assert descriptions[columns["preference_pairs"].display_name].endswith("Summed over subsets.")
    assert descriptions[columns["preference_accuracy"].display_name].endswith("Macro over subsets.")


def test_peer_metrics_are_macro_and_micro_and_the_mean_prediction_pooled(breakdowns: dict[str, Table]) -> None:
    table = breakdowns["peer_metrics_all"]
    headers = [str(header.value) for header in table.header[1:]]
    assert headers[:6] == ["MAE (macro)", "MAE (micro)", "Exact match (macro)", "Exact match (micro)",
                           "Within 1 (macro)", "Within 1 (micro)"]
    assert headers[6:] == [f"Mean pred. (gold {gold})" for gold in range(1, 6)]
    assert [header.lower_is_better for header in table.header[1:]] == [True, True, False, False, False, False] + [
        None] * 5
    shown = values(table, "Constant 3")
    assert shown["MAE (macro)"] == pytest.approx((2 + 1 + 1) / 3)  # bridge 2, sim_kuka 1, sim_panda 1
    assert shown["MAE (micro)"] == pytest.approx((2 * 2 + 1 * 1 + 1 * 2) / 5)  # each run's MAE by its error_rows
    assert shown["Within 1 (macro)"] == pytest.approx((0.5 + 1) / 2)  # the subsets that report it
    assert shown["Within 1 (micro)"] == pytest.approx(2 / 3)
    assert shown["Mean pred. (gold 2)"] == pytest.approx((3 * 1 + 1.5 * 2) / 3)  # pooled over the runs' answers
    assert shown["Mean pred. (gold 1)"] is None
    assert bold_columns(table, "Constant 3") >= {"Within 1 (micro)"} and "Mean pred. (gold 2)" not in bold_columns(
        table, "Constant 3")


# --------------------------------------------------------------------------------------------- missing media


def write_state(run_dir: Path, locations: list[str]) -> None:
    import json

    run_dir.mkdir(parents=True, exist_ok=True)
    media = [{"content_type": "text/plain", "text": "prompt"}]
    media += [{"content_type": "image/jpeg", "location": location} for location in locations]
    state = {"request_states": [{"request": {"multimodal_prompt": {"media_objects": media}}}]}
    (run_dir / "scenario_state.json").write_text(json.dumps(state), encoding="utf-8")


def test_missing_media_lists_the_absent_local_files_relative_to_the_working_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "benchmark_output").mkdir()
    (tmp_path / "benchmark_output" / "here.jpg").write_bytes(b"\xff\xd8")
    run_dir = tmp_path / "runs" / "r"
    write_state(run_dir, ["benchmark_output/here.jpg", "benchmark_output/gone-b.jpg", "benchmark_output/gone-a.jpg",
                          "https://example.org/remote.jpg", "benchmark_output/gone-a.jpg"])
    assert missing_media(str(run_dir)) == ["benchmark_output/gone-a.jpg", "benchmark_output/gone-b.jpg"]
    assert missing_media(str(tmp_path / "runs" / "no-such-run")) == []
    (run_dir / "scenario_state.json").write_text("{cut")
    assert missing_media(str(run_dir)) == []


def test_the_missing_media_line_names_a_file_the_counts_and_the_fix() -> None:
    skipped = [(f"run-{index}", [f"m/{index}.jpg", "m/shared.jpg"]) for index in (4, 2, 3, 1)]
    line = missing_media_message(skipped)
    assert "\n" not in line
    assert "media file m/1.jpg does not exist (5 missing file(s) in all" in line
    assert f"from the folder {os.getcwd()}" in line
    assert "predictions pages of 4 run(s) are skipped: run-1, run-2, run-3 and 1 more." in line
    assert "copy scenarios/ too" in line and "roboreward prepare / helm-run" in line


def test_stale_predictions_pages_are_removed_and_fresh_ones_kept(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    write_state(run_dir, [])
    state_time = (run_dir / "scenario_state.json").stat().st_mtime
    for name, offset in (("instances.json", -60), ("display_predictions.json", -60), ("display_requests.json", 60)):
        (run_dir / name).write_text("[]")
        os.utime(run_dir / name, (state_time + offset, state_time + offset))
    predictions_pages._remove_stale_display_files(str(run_dir))
    assert sorted(path.name for path in run_dir.iterdir()) == ["display_requests.json", "scenario_state.json"]
    predictions_pages._remove_stale_display_files(str(tmp_path / "no-such-run"))  # nothing to do, no error
