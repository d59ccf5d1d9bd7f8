"""The reward-model ordering and success statistics on hand-built rows: every pair pinned (docs/reward_metrics.md)."""

import math

import pytest

from helm_roboreward.protocol.reward_statistics import (
    ScoredRow,
    auroc,
    clip_groups,
    kendall_tau_b,
    ladder_groups,
    macro,
    ordered_right,
    pair_accuracy,
    preference_pairs,
    subset_ordering,
    success_counts,
)


def row(instance_id: str, gold: float, score: float | None, task: str = "pick the cube", video: str = "",
        episode: str = "", kind: str = "clip", subset: str = "s") -> ScoredRow:
    return ScoredRow(instance_id, subset, task, video or f"video-{instance_id}", episode or f"ep-{instance_id}", kind,
                     gold, score)


def ids(pairs: list[tuple[ScoredRow, ScoredRow]]) -> set[tuple[str, str]]:
    return {(a.instance_id, b.instance_id) for a, b in pairs}


# --- preference pairs ----------------------------------------------------------------------------------------


def test_preference_pairs_are_same_subset_same_task_different_gold() -> None:
    rows = [
        row("a", 5, 5), row("b", 3, 4), row("c", 3, 2),             # same task: a-b, a-c (b-c share gold 3)
        row("d", 1, 1, task="stack the blocks"),                      # alone on its task
        row("e", 2, 2, subset="other"),                               # same task text, other subset
        row("f", 4, 3, task="stack the blocks"),                      # d-f
    ]
    assert ids(preference_pairs(rows)) == {("a", "b"), ("a", "c"), ("d", "f")}


def test_ordering_counts_ties_half_and_follows_gold() -> None:
    assert ordered_right(row("a", 5, 4), row("b", 2, 3)) == 1.0
    assert ordered_right(row("a", 2, 4), row("b", 5, 3)) == 0.0
    assert ordered_right(row("a", 5, 3), row("b", 2, 3)) == 0.5
    assert ordered_right(row("a", 5, None), row("b", 2, 1)) == 0.5  # unparseable counts as 1: tied with 1
    assert ordered_right(row("a", 5, None), row("b", 2, 2)) == 0.0


def test_a_constant_model_gets_exactly_one_half() -> None:
    rows = [row(str(i), gold, 3) for i, gold in enumerate([1, 2, 3, 4, 5, 5, 2])]
    pairs = preference_pairs(rows)
    assert len(pairs) == 7 * 6 // 2 - 2 and pair_accuracy(pairs) == 0.5  # two pairs share gold (5-5, 2-2)
    assert subset_ordering("s", rows).preference_accuracy == 0.5


def test_a_perfect_model_gets_one() -> None:
    rows = [row(str(i), gold, gold) for i, gold in enumerate([1, 2, 3, 4, 5])]
    assert pair_accuracy(preference_pairs(rows)) == 1.0


# --- counterfactual ladder ------------------------------------------------------------------------------------


def ladder_rows() -> list[ScoredRow]:
    """One video, the original (5) and three relabels (1, 2, 3); another video with one task only."""
    return [
        row("orig", 5, 4, task="put the cube in the tray", video="v1", kind="original"),
        row("r1", 1, 1, task="put the cube in the bowl", video="v1", kind="counterfactual"),
        row("r2", 2, 3, task="put the cube on the plate", video="v1", kind="counterfactual"),
        row("r3", 3, 3, task="put the cube by the tray", video="v1", kind="counterfactual"),
        row("x", 5, 5, task="lift the cube", video="v2", kind="original"),
        row("x2", 5, 2, task="lift the cube", video="v2", kind="clip"),  # same task: not a ladder
    ]


def test_ladder_groups_share_a_video_with_different_tasks() -> None:
    (group,) = ladder_groups(ladder_rows())
    assert {r.instance_id for r in group} == {"orig", "r1", "r2", "r3"}


def test_ladder_accuracy_and_tau_b() -> None:
    (group,) = ladder_groups(ladder_rows())
    ordering = subset_ordering("s", ladder_rows())
    # 6 pairs: orig>r1 ok, orig>r2 ok, orig>r3 ok, r2>r1 ok, r3>r1 ok, r3 vs r2 tie (3=3) -> 5.5/6
    assert ordering.ladder_accuracy == pytest.approx(5.5 / 6) and ordering.ladder_videos == 1
    rewards, gold = [4, 1, 3, 3], [5, 1, 2, 3]
    concordant, discordant, tied_x = 5, 0, 1
    expected_tau = (concordant - discordant) / math.sqrt((6 - tied_x) * 6)
    assert kendall_tau_b(group) == pytest.approx(expected_tau)
    assert sorted(rewards) != gold  # the example is not trivial


def test_tau_b_is_zero_when_every_reward_ties() -> None:
    group = [row(str(i), gold, 3, video="v", task=f"t{i}") for i, gold in enumerate([1, 3, 5])]
    assert kendall_tau_b(group) == 0.0


# --- clips ----------------------------------------------------------------------------------------------------


def test_clip_groups_are_an_episodes_clips_and_original() -> None:
    rows = [
        row("c1", 2, 2, episode="e", kind="clip"), row("c2", 4, 3, episode="e", kind="clip"),
        row("o", 5, 5, episode="e", kind="original"),
        row("cf", 1, 1, episode="e", kind="counterfactual"),  # a relabel is not on the episode's timeline
        row("lone", 3, 3, episode="f", kind="clip"),
    ]
    (group,) = clip_groups(rows)
    assert {r.instance_id for r in group} == {"c1", "c2", "o"}
    assert subset_ordering("s", rows).clip_accuracy == 1.0 and subset_ordering("s", rows).clip_episodes == 1


# --- success detection ----------------------------------------------------------------------------------------


def test_auroc_with_ties_and_empty_classes() -> None:
    assert auroc([5, 4], [1, 4]) == pytest.approx((1 + 1 + 1 + 0.5) / 4)
    assert auroc([3, 3], [3]) == 0.5
    assert auroc([], [1]) is None and auroc([1], []) is None


def test_success_counts_precision_recall_f1_mcc() -> None:
    rows = [row("a", 5, 5), row("b", 5, 4), row("c", 3, 5), row("d", 2, 2), row("e", 5, None)]
    counts = success_counts(rows)
    assert (counts.true_positive, counts.false_positive, counts.false_negative, counts.true_negative) == (1, 1, 2, 1)
    assert counts.precision == 0.5 and counts.recall == pytest.approx(1 / 3)
    assert counts.f1 == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))
    assert counts.mcc == pytest.approx((1 * 1 - 1 * 2) / math.sqrt(2 * 3 * 2 * 3))


def test_a_model_that_never_says_success() -> None:
    counts = success_counts([row("a", 5, 3), row("b", 2, 3)])
    assert counts.precision is None and counts.recall == 0.0 and counts.f1 == 0.0 and counts.mcc == 0.0


def test_expected_scores_say_success_from_four_and_a_half() -> None:
    rows = [row("a", 5, 4.6), row("b", 2, 4.4)]
    assert success_counts(rows, continuous=True).true_positive == 1
    assert success_counts(rows).true_positive == 0  # parsed: only a 5 says success


def test_macro_skips_undefined_subsets() -> None:
    with_pairs = subset_ordering("a", [row("1", 5, 5, subset="a"), row("2", 1, 1, subset="a")])
    without = subset_ordering("b", [row("3", 2, 2, subset="b")])
    assert without.preference_accuracy is None and without.success_auroc is None
    assert macro([with_pairs, without])["preference_accuracy"] == 1.0
