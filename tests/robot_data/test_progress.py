"""Prefix anchors and per-frame progress: LeRobot's interpolation, its schema's ordering."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helm_roboreward.robot_data.progress import (
    EpisodeProgress,
    anchor_end_frames,
    interpolate_progress,
    progress_columns,
    score_progress,
)


def test_anchors_are_evenly_spaced_and_end_with_the_episode() -> None:
    assert anchor_end_frames(12, 4) == [3, 6, 9, 12]
    assert anchor_end_frames(10, 3) == [3, 7, 10]
    assert anchor_end_frames(2, 5) == [1, 2]
    assert anchor_end_frames(1, 1) == [1]
    with pytest.raises(ValueError):
        anchor_end_frames(0, 3)
    with pytest.raises(ValueError):
        anchor_end_frames(10, 0)


@given(st.integers(1, 500), st.integers(1, 50))
def test_anchor_invariants(length: int, anchors: int) -> None:
    ends = anchor_end_frames(length, anchors)
    assert ends[-1] == length and ends[0] >= 1 and ends == sorted(set(ends)) and len(ends) <= anchors


def test_scores_map_to_progress() -> None:
    assert [score_progress(s) for s in (1, 2, 3, 4, 5)] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert score_progress(0) == 0.0 and score_progress(7) == 1.0
    assert math.isnan(score_progress(None)) and math.isnan(score_progress(float("nan")))


def test_interpolation_is_lerobots() -> None:
    # np.interp over the finite anchors: linear between them, edge values held (as interpolate_progress in
    # lerobot/policies/sarm/compute_rabc_weights.py).
    values = interpolate_progress([2, 5, 9], [0.0, 0.75, 1.0], 10)
    assert values == pytest.approx([0.0, 0.0, 0.0, 0.25, 0.5, 0.75, 0.8125, 0.875, 0.9375, 1.0])
    assert interpolate_progress([2, 5], [math.nan, 0.5], 4) == [0.5] * 4
    assert all(math.isnan(v) for v in interpolate_progress([2, 5], [math.nan, math.nan], 3))
    assert np.array(interpolate_progress([0, 3], [0.1, 0.2], 4)).dtype == np.float64


def test_columns_are_sorted_by_the_dataset_index() -> None:
    columns = progress_columns([EpisodeProgress(7, 10, (0.5, 0.75)), EpisodeProgress(2, 0, (0.0, 0.25, 1.0))])
    assert columns == {"index": [0, 1, 2, 10, 11], "episode_index": [2, 2, 2, 7, 7], "frame_index": [0, 1, 2, 0, 1],
                       "progress_sparse": [0.0, 0.25, 1.0, 0.5, 0.75]}
