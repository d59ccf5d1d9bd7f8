"""The report's statistics, checked by hand: clusters, the clustered bootstrap, paired differences, tables."""

import numpy as np
import pytest

from helm_roboreward.helm_frontend.run_rows import InstanceRow, ModelRows, SuiteRows
from helm_roboreward.results.report.analysis import (
    CONFUSION_COLUMNS,
    Settings,
    analyse,
    confusion_matrix,
    failure_modes,
    subset_order,
)
from helm_roboreward.results.report.bootstrap import (
    Interval,
    SubsetSample,
    bootstrap_macro_mae,
    bootstrap_paired_differences,
    cluster_ids,
    draw_cluster_weights,
    ratio_replicates,
)

# --- clusters (union-find) ---------------------------------------------------------------------------------


def test_rows_sharing_an_episode_or_a_video_form_one_cluster():
    # 0-1 share episode a, 1-2 share video y: {0, 1, 2}; 3 is alone.
    assert cluster_ids(["a", "a", "b", "c"], ["x", "y", "y", "z"]).tolist() == [0, 0, 0, 1]


def test_links_are_transitive_across_both_keys():
    # 0-2 by video, 2-3 by episode, 3-5 by video, 1 and 4 alone.
    episodes = ["e0", "e1", "e2", "e2", "e4", "e5"]
    videos = ["v0", "v1", "v0", "v3", "v4", "v3"]
    assert cluster_ids(episodes, videos).tolist() == [0, 1, 0, 0, 2, 0]


def test_empty_keys_link_nothing_and_numbering_follows_first_appearance():
    assert cluster_ids(["", "", ""], ["", "", ""]).tolist() == [0, 1, 2]
    assert cluster_ids(["b", "a", "b", ""], ["", "", "", ""]).tolist() == [0, 1, 0, 2]


def test_dataset_shapes_camera_views_clips_and_counterfactuals():
    # RoboArena: two camera views of one episode (different videos, same episode).
    assert cluster_ids(["arena/u_1", "arena/u_1", "arena/w_2"], ["l1", "r1", "l2"]).tolist() == [0, 0, 1]
    # OXE: original + clip share the episode; the counterfactual relabel shares only the original's video.
    episodes = ["oxe/ep1", "oxe/ep1", "oxe/ep1_relabel_0", "oxe/ep2"]
    videos = ["orig1", "clip1", "orig1", "orig2"]
    assert cluster_ids(episodes, videos).tolist() == [0, 0, 0, 1]


def test_cluster_weights_draw_as_many_clusters_as_there_are():
    weights = draw_cluster_weights(7, 50, np.random.default_rng(0))
    assert weights.shape == (50, 7)
    assert (weights.sum(axis=1) == 7).all() and (weights >= 0).all()


# --- the estimator -----------------------------------------------------------------------------------------


def sample(name, errors, clusters=None):
    errors = np.asarray(errors, dtype=float)
    errors = errors[:, None] if errors.ndim == 1 else errors
    clusters = np.arange(len(errors)) if clusters is None else np.asarray(clusters)
    return SubsetSample(name, clusters, errors)


def test_ratio_replicate_equals_the_mean_of_the_explicitly_resampled_rows():
    errors = np.array([1.0, 3.0, 0.0, 2.0, 4.0])
    clusters = np.array([0, 0, 1, 2, 2])
    weights = np.array([[2.0, 0.0, 1.0], [0.0, 3.0, 0.0]])
    replicates = ratio_replicates(errors[:, None], np.ones((5, 1), bool), clusters, weights)[:, 0]
    # Replicate 1: cluster 0 twice (1, 3, 1, 3) and cluster 2 once (2, 4); replicate 2: cluster 1 three times.
    assert replicates.tolist() == pytest.approx([np.mean([1, 3, 1, 3, 2, 4]), 0.0])


def test_point_estimate_is_the_unweighted_mean_of_subset_maes():
    # Subset MAEs 2.0 (3 rows) and 2.0 (2 rows) then 0.5 (2 rows): macro (2 + 0.5) / 2, not the row mean.
    result = bootstrap_macro_mae([sample("a", [1, 2, 3]), sample("b", [0, 1])], 100, 0, 0.95)
    assert result.macro[0].estimate == pytest.approx(1.25)
    assert result.subsets[0][0].estimate == pytest.approx(2.0)
    assert result.subsets[1][0].estimate == pytest.approx(0.5)


def test_a_model_missing_a_subset_is_averaged_over_the_subsets_it_has():
    errors_a = np.array([[1.0, 2.0], [1.0, 2.0]])
    errors_b = np.array([[3.0, np.nan], [3.0, np.nan]])
    result = bootstrap_macro_mae([sample("a", errors_a), sample("b", errors_b)], 100, 0, 0.95)
    assert result.macro[0].estimate == pytest.approx(2.0)  # (1 + 3) / 2
    assert result.macro[1].estimate == pytest.approx(2.0)  # subset a only
    assert result.subsets[1][1] is None


def simulated_dataset(rng, cluster_counts=(40, 60, 25), beta=((2, 3), (1, 3), (3, 2))):
    """Errors 0..4 ~ Binomial(4, p_cluster), p_cluster ~ Beta(a, b): correlated within a cluster."""
    samples = []
    for index, (clusters, (a, b)) in enumerate(zip(cluster_counts, beta, strict=True)):
        sizes = rng.integers(1, 5, size=clusters)
        p = rng.beta(a, b, size=clusters)
        errors = rng.binomial(4, np.repeat(p, sizes)).astype(float)
        samples.append(sample(f"s{index}", errors, np.repeat(np.arange(clusters), sizes)))
    true_macro = float(np.mean([4 * a / (a + b) for a, b in beta]))
    return samples, true_macro


def test_clustered_bootstrap_covers_the_true_macro_mae_at_about_the_nominal_rate():
    rng = np.random.default_rng(12345)
    covered = 0
    for trial in range(200):
        samples, truth = simulated_dataset(rng)
        interval = bootstrap_macro_mae(samples, 500, trial, 0.95).macro[0]
        covered += interval.low <= truth <= interval.high
    assert 0.90 <= covered / 200 <= 0.99


def test_clustering_widens_the_interval_when_cluster_rows_are_identical():
    rng = np.random.default_rng(7)
    per_cluster = rng.integers(0, 5, size=40).astype(float)
    errors = np.repeat(per_cluster, 5)  # 40 clusters of 5 identical errors
    clusters = np.repeat(np.arange(40), 5)
    clustered = bootstrap_macro_mae([sample("s", errors, clusters)], 2000, 0, 0.95).macro[0]
    naive = bootstrap_macro_mae([sample("s", errors)], 2000, 0, 0.95).macro[0]
    assert clustered.estimate == pytest.approx(naive.estimate)
    # Rows counted as independent understate the spread by about sqrt(5).
    assert clustered.half_width > 1.8 * naive.half_width


def test_same_seed_same_intervals_other_seed_other_intervals():
    samples, _ = simulated_dataset(np.random.default_rng(3))
    first = bootstrap_macro_mae(samples, 300, 11, 0.95)
    assert bootstrap_macro_mae(samples, 300, 11, 0.95) == first
    assert bootstrap_macro_mae(samples, 300, 12, 0.95).macro[0] != first.macro[0]


def test_a_subsets_draws_do_not_depend_on_the_other_subsets():
    samples, _ = simulated_dataset(np.random.default_rng(4))
    alone = bootstrap_macro_mae(samples[1:2], 300, 0, 0.95).subsets[0][0]
    assert bootstrap_macro_mae(samples, 300, 0, 0.95).subsets[1][0] == alone


# --- paired differences ------------------------------------------------------------------------------------


def test_identical_models_differ_by_exactly_zero():
    samples, _ = simulated_dataset(np.random.default_rng(5))
    doubled = [SubsetSample(s.name, s.clusters, np.hstack([s.errors, s.errors])) for s in samples]
    difference = bootstrap_paired_differences(doubled, [(0, 1)], 2000, 0, 0.95)[0]
    assert difference.interval == Interval(0.0, 0.0, 0.0)
    assert not difference.interval.excludes_zero
    assert difference.num_rows == sum(len(s.clusters) for s in samples) and difference.num_subsets == 3


def test_a_constant_shift_is_recovered_exactly_and_excludes_zero():
    samples, _ = simulated_dataset(np.random.default_rng(6))
    shifted = [SubsetSample(s.name, s.clusters, np.hstack([s.errors, s.errors + 1.0])) for s in samples]
    difference = bootstrap_paired_differences(shifted, [(0, 1), (1, 0)], 500, 0, 0.95)
    assert difference[0].interval.estimate == pytest.approx(-1.0)
    assert difference[0].interval.low == pytest.approx(-1.0) and difference[0].interval.high == pytest.approx(-1.0)
    assert difference[0].interval.excludes_zero and difference[1].interval.estimate == pytest.approx(1.0)


def test_pairs_use_only_the_rows_both_models_have():
    errors = np.array([[1.0, 0.0], [1.0, np.nan], [3.0, 1.0], [np.nan, 2.0]])
    difference = bootstrap_paired_differences([sample("s", errors)], [(0, 1)], 200, 0, 0.95)[0]
    assert difference.num_rows == 2
    assert difference.interval.estimate == pytest.approx(((1 - 0) + (3 - 1)) / 2)
    disjoint = np.array([[1.0, np.nan], [np.nan, 2.0]])
    assert bootstrap_paired_differences([sample("s", disjoint)], [(0, 1)], 50, 0, 0.95) == [None]


# --- tables ------------------------------------------------------------------------------------------------


def row(instance_id, gold, predicted, subset="s", episode="", video="", invalid=False, failed=False):
    error = None if failed else (4.0 if invalid else abs(predicted - gold))
    return InstanceRow(instance_id, subset, "robot", "clip", episode or instance_id, video, gold,
                       None if invalid or failed else predicted, error, invalid, failed)


def test_failure_modes_by_hand():
    rows = [row("a", 5, 5), row("b", 5, 3), row("c", 2, 5), row("d", 1, 1), row("e", 5, 0, invalid=True),
            row("f", 3, 0, failed=True), row("g", 4, 4.5)]
    modes = failure_modes(rows)
    assert (modes.rows, modes.failed_requests, modes.answered, modes.invalid_outputs) == (7, 1, 6, 1)
    assert (modes.exact_matches, modes.false_successes, modes.answered_gold_score_below_max) == (2, 1, 3)
    assert (modes.missed_successes, modes.answered_gold_score_max) == (2, 3)
    assert modes.signed_bias == pytest.approx((0 - 2 + 3 + 0 + 0.5) / 5)


def test_confusion_matrix_columns_and_exclusions():
    rows = [row("a", 5, 5), row("b", 2, 3), row("c", 2, 3), row("d", 1, 0), row("e", 4, 3.5),
            row("f", 3, 0, invalid=True), row("g", 3, 0, failed=True)]
    matrix = confusion_matrix(rows)
    assert matrix.shape == (5, len(CONFUSION_COLUMNS)) and matrix.sum() == 6
    assert matrix[4, 4] == 1 and matrix[1, 2] == 2
    assert matrix[0, CONFUSION_COLUMNS.index("other")] == 1 and matrix[3, CONFUSION_COLUMNS.index("other")] == 1
    assert matrix[2, CONFUSION_COLUMNS.index("invalid")] == 1


def test_subset_order_official_then_sample_then_others():
    assert subset_order(["zeta", "sim_kuka", "droid", "robo_arena", "sim_arena", "bridge"]) == [
        "robo_arena", "bridge", "droid", "sim_arena", "sim_kuka", "zeta"]


def test_analyse_ranks_models_flags_small_subsets_and_pairs_them():
    rng = np.random.default_rng(0)
    big = [(f"big-{i}", "big", int(rng.integers(1, 6))) for i in range(200)]
    small = [(f"small-{i}", "small", int(rng.integers(1, 6))) for i in range(10)]

    def model(name, noise):
        return ModelRows(name, name.upper(), [row(i, g, min(5, g + noise), subset=s) for i, s, g in big + small], {})

    data = analyse(SuiteRows("t", [model("worse", 1), model("better", 0)]), Settings(resamples=300))
    assert [m.model for m in data.models] == ["better", "worse"]
    flags = {s.id: s.too_small for s in data.subsets}
    assert flags["big"] is None and flags["small"].startswith("10 clusters < 30")
    assert len(data.pairs) == 1 and data.pairs[0].first_model == "better"
    assert data.pairs[0].difference.interval.excludes_zero


def test_a_failed_row_the_run_left_out_leaves_every_reward_model_statistic():
    """failed=skip: the failed gold-5 row has no error; it must not count as a predicted 1 in success detection."""
    from helm_roboreward.protocol.rules import PARSED
    from helm_roboreward.results.report.calibration import summarize_calibration
    from helm_roboreward.results.report.reward_model import summarize_model

    answered = [row("a", 5, 5), row("b", 2, 2)]
    skipped = ModelRows("m", "M", answered + [row("c", 5, 0, failed=True)], {})
    summary = summarize_model(skipped, PARSED, resamples=50, seed=0, confidence=0.95)
    assert summary is not None
    assert (summary.values["success_recall"], summary.values["success_auroc"], summary.values["success_f1"]) == (
        1.0, 1.0, 1.0)
    charged = InstanceRow("c", "s", "robot", "clip", "c", "", 5, None, 4.0, False, True)  # failed=max_error
    official = summarize_model(ModelRows("m", "M", answered + [charged], {}), PARSED, 50, 0, 0.95)
    assert official is not None and official.values["success_recall"] == 0.5
    with_expected = [InstanceRow(r.instance_id, r.subset, r.robot, r.kind, r.episode, r.video_sha256, r.gold_score,
                                 r.predicted, r.abs_error, r.invalid_output, r.failed_request, expected=r.predicted,
                                 success_probability=1.0 if r.predicted == 5 else 0.0) for r in answered]
    calibration = summarize_calibration(ModelRows("m", "M", with_expected + [row("c", 5, 0, failed=True)], {}))
    assert calibration is not None and (calibration.rows, calibration.with_distribution) == (2, 2)


# --- report text: names that would break Markdown ----------------------------------------------------------


def _cells(line):
    """A Markdown table row's cells, split at pipes no backslash escapes (GFM), still escaped."""
    cells, current, escaped = [], "", False
    for character in line.strip()[1:-1]:
        if character == "|" and not escaped:
            cells.append(current.strip())
            current = ""
        else:
            current += character
        escaped = character == "\\" and not escaped
    return cells + [current.strip()]


def _unescaped(cell):
    import html
    import re

    return html.unescape(re.sub(r"\\(.)", r"\1", cell))


HOSTILE = "Evil\nmodel | `x` \\ [beta]\r\u2028end"


def test_every_table_row_stays_one_row_whatever_the_display_name():
    from helm_roboreward.results.report.writer import render_markdown

    rng = np.random.default_rng(1)
    rows = [(f"r{i}", "s", int(rng.integers(1, 6))) for i in range(40)]

    def model(name, display, noise):
        return ModelRows(name, display, [row(i, g, min(5, g + noise), subset=s) for i, s, g in rows], {})

    data = analyse(SuiteRows("t", [model("evil/m", HOSTILE, 1), model("plain/m", "Plain", 0)],
                             warnings=[f"run x: {HOSTILE}"], notes=[f"note about {HOSTILE}"]), Settings(resamples=50))
    text = render_markdown(data)
    lines = text.split("\n")
    assert not any(line.startswith(("model |", "end")) for line in lines)  # no row or item split in two
    tables = [line for line in lines if line.startswith("|")]
    assert tables and all(line.endswith("|") for line in tables)
    names = [_unescaped(cells[0]) for cells in map(_cells, tables) if "Evil" in cells[0]]
    names += [_unescaped(cells[1]) for cells in map(_cells, tables) if len(cells) > 1 and "Evil" in cells[1]]
    assert names and set(names) == {HOSTILE}  # every table shows the name itself, escaped
    width = None
    for line in lines:  # every row of a table has its header's number of cells
        if not line.startswith("|"):
            width = None
        elif width is None:
            width = len(_cells(line))
        else:
            assert len(_cells(line)) == width, line
    items = [line for line in lines if line.startswith("- ") and "Evil" in line]
    assert len(items) >= 2 and all("end" in line for line in items)  # warning and note: one line each
    assert "![" not in text or all(line.count("](") <= 1 for line in lines if line.startswith("!["))


def test_the_interval_depends_on_the_rows_not_the_order_a_source_lists_them_in():
    """A HELM run lists rows in the data's order, an Inspect log by sample id: the same rows, the same interval."""
    rng = np.random.default_rng(7)
    rows = [row(f"r{rng.integers(10**6)}-{i}", int(rng.integers(1, 6)), int(rng.integers(1, 6)), subset="s",
                episode=f"e{i % 9}") for i in range(60)]

    def interval(listed):
        data = analyse(SuiteRows("t", [ModelRows("m", "M", listed, {})]), Settings(resamples=300))
        return data.models[0].macro

    forward, backward = interval(rows), interval(list(reversed(rows)))
    assert (forward.low, forward.high) == (backward.low, backward.high)
