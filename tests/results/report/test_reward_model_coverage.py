"""The reward-model intervals under the null model: a reward model that answers at random.

Rows are built as a run produces them (the report's :class:`InstanceRow`), named with the real patterns
(``tests/helpers/real_pattern_copy.py``) and keyed by the rows module's own rules (``episode_key``,
``infer_kind``); the video hash stands for the bytes (relabels share their episode's video). The answers are
drawn uniformly from 1..5 with ``numpy.random.default_rng(seed)`` in row order (the uniform-random baseline
draws them from a hash of the seed and the request instead; both are independent of gold).

With at least 40 clusters behind every statistic in every subset, the 95% intervals of preference, ladder and
clip accuracy and of the success AUROC must hold chance (0.5) for at least 17 of 20 seeds, and none is flagged
too small. A copy with the real pattern copy's handful of clusters gets every interval flagged.
"""

import hashlib
from pathlib import Path

import numpy as np
import pytest

from helm_roboreward.helm_frontend.run_rows import InstanceRow, ModelRows
from helm_roboreward.protocol.rows import MetadataRow, episode_key, infer_kind
from helm_roboreward.protocol.rules import PARSED, subset_info
from helm_roboreward.results.report.reward_model import RewardModelSummary, summarize_model
from tests.helpers.real_pattern_copy import (
    CopyRow,
    OxeEpisode,
    Relabel,
    Session,
    arena_rows,
    make_real_pattern_copy,
    oxe_rows,
)

CLUSTERS = 45
"""Sessions (RoboArena) or episodes (each OXE subset) of the large copy: every one holds a pair, a ladder video
and a clip episode."""

OXE_SUBSETS = ("bridge", "jaco_play")
SEEDS = range(20)
RESAMPLES = 1000
CHANCE = {"preference_accuracy": 0.5, "ladder_accuracy": 0.5, "clip_accuracy": 0.5, "success_auroc": 0.5}
MIN_COVERED = 17


def large_copy_rows() -> list[CopyRow]:
    """RoboArena sessions of 2-3 rollouts with different gold scores (two views each); OXE episodes with an original,
    1-2 clips and 1-2 relabels, originals with and without a duplicate suffix."""
    sessions = tuple(Session(f"arena task {number}", tuple(
        ("ABCDEFG"[rollout], 1 + (number + 2 * rollout) % 5) for rollout in range(2 + number % 2)))
        for number in range(CLUSTERS))
    episodes = tuple(
        OxeEpisode(subset, "train", number, f"{subset} task {number}", ("", "_1")[number % 2],
                   clips=tuple(1 + (number + clip) % 4 for clip in range(1 + number % 2)),
                   relabels=tuple(Relabel(("", "_2")[relabel], f"{subset} task {number} relabel {relabel}",
                                          1 + (number + 2 * relabel + 1) % 4)
                                  for relabel in range(1 + number % 3 // 2)))
        for subset in OXE_SUBSETS for number in range(CLUSTERS))
    return arena_rows(sessions) + oxe_rows(episodes)


def answered_at_random(copy_rows: list[CopyRow], seed: int) -> ModelRows:
    """The rows a run of the null model produces: a uniform answer in 1..5 per row, independent of gold."""
    answers = np.random.default_rng(seed).integers(1, 6, size=len(copy_rows))
    rows = []
    for line, (copy_row, answer) in enumerate(zip(copy_rows, answers, strict=True), start=1):
        row = MetadataRow(line, copy_row.file_name, copy_row.task, copy_row.reward)
        rows.append(InstanceRow(
            f"rr-{line}", row.subset, subset_info(row.subset).robot, infer_kind(row), episode_key(row),
            hashlib.sha256(copy_row.video.encode()).hexdigest(), float(row.gold_score), float(answer),
            abs(float(answer) - row.gold_score), False, False, row.task))
    return ModelRows("baseline/uniform-random", "Uniform random", rows, {})


def summary_of(copy_rows: list[CopyRow], seed: int) -> RewardModelSummary:
    summary = summarize_model(answered_at_random(copy_rows, seed), PARSED, RESAMPLES, 0, 0.95)
    assert summary is not None
    return summary


@pytest.fixture(scope="module")
def large() -> list[RewardModelSummary]:
    rows = large_copy_rows()
    return [summary_of(rows, seed) for seed in SEEDS]


def test_every_statistic_rests_on_at_least_40_clusters_per_subset(large: list[RewardModelSummary]) -> None:
    summary = large[0]
    assert sorted(summary.subset_support) == sorted(("robo_arena", *OXE_SUBSETS))
    for subset, support in summary.subset_support.items():
        expected = CHANCE if subset in OXE_SUBSETS else ("preference_accuracy", "success_auroc")  # no ladder, clip
        assert set(expected) <= set(support), subset
        for name in expected:
            assert support[name].clusters >= 40, (subset, name, support[name])
            assert support[name].clusters == CLUSTERS  # one session or episode: one cluster
    for name in CHANCE:
        if name in ("ladder_accuracy", "clip_accuracy"):  # OXE only (RoboArena has no ladder, no clip)
            assert summary.support[name].clusters == CLUSTERS * len(OXE_SUBSETS)
        else:
            assert summary.support[name].clusters == CLUSTERS * (1 + len(OXE_SUBSETS))
        assert summary.support[name].too_small is None
        assert all(s.support[name].too_small is None for s in large)


def test_the_null_models_intervals_hold_chance(large: list[RewardModelSummary]) -> None:
    covered = {name: sum(s.macro[name] is not None and s.macro[name].low <= chance <= s.macro[name].high  # type: ignore[union-attr]
                         for s in large) for name, chance in CHANCE.items()}
    assert all(count >= MIN_COVERED for count in covered.values()), covered


def test_a_handful_of_clusters_is_flagged_too_small(tmp_path: Path) -> None:
    copy = make_real_pattern_copy(tmp_path)  # 7 RoboArena sessions, 2-4 episodes per OXE subset
    summary = summary_of(copy.rows, 0)
    for name in CHANCE:
        reason = summary.support[name].too_small
        assert reason is not None and reason.startswith(f"{summary.support[name].clusters} clusters < 30")
    arena = summary.subset_support["robo_arena"]["success_auroc"]
    assert arena.clusters == copy.true_clusters("robo_arena") == 7 and arena.too_small == "7 clusters < 30"
