"""Progress from scores: prefix anchors, per-frame interpolation, and LeRobot's progress-file schema. Pure.

Prefix mode scores the clips ``[0, t_k]`` at ``K`` evenly spaced end times ``t_k = k / K`` of the episode
(``k = 1..K``; the last clip is the whole episode). Anchor ``k`` is the clip's last frame, with progress
``(score - 1) / 4`` (the rubric's 1..5 mapped onto LeRobot's 0..1). Frames between anchors are linearly
interpolated and frames before the first anchor take its value, exactly as LeRobot's
``interpolate_progress`` (``lerobot/policies/sarm/compute_rabc_weights.py``: ``np.interp`` over the finite
anchors; none finite: NaN; one: that value everywhere). An unparseable or failed anchor is NaN and is skipped.

The file (``roboreward_progress.parquet``) has LeRobot's columns (same source, ``compute_sarm_progress``):
``index``, ``episode_index``, ``frame_index`` (int64), ``progress_sparse`` (float32, 0..1), sorted by
``index``, and the schema metadata ``reward_model_path``. LeRobot's RA-BC reads ``progress_sparse``
(``lerobot.utils.rabc.RABCWeights``, ``--use_rabc=true --rabc_progress_path=<file>`` in lerobot 0.4).
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from helm_roboreward.protocol.rules import MAX_SCORE, MIN_SCORE

PROGRESS_COLUMN = "progress_sparse"
REWARD_MODEL_KEY = "reward_model_path"
MAX_ANCHORS = 1000


def anchor_end_frames(length: int, anchors: int) -> list[int]:
    """End frames (exclusive) of the ``anchors`` prefix clips of a ``length``-frame episode, increasing.

    ``round(k * length / anchors)`` for ``k = 1..anchors``, at least 1 frame; the last is ``length`` (the whole
    episode). Episodes shorter than ``anchors`` frames get one clip per distinct end.

    Raises:
        ValueError: ``length`` < 1, or ``anchors`` outside 1..MAX_ANCHORS.
    """
    if length < 1:
        raise ValueError(f"an episode needs at least one frame, got {length}")
    if not 1 <= anchors <= MAX_ANCHORS:
        raise ValueError(f"--anchors must be 1..{MAX_ANCHORS}, got {anchors}")
    ends = {max(1, int(math.floor(k * length / anchors + 0.5))) for k in range(1, anchors + 1)}
    return sorted(ends | {length})


def score_progress(score: float | None) -> float:
    """A 1..5 score as LeRobot progress 0..1, clipped; None (unparseable or failed) is NaN."""
    if score is None or not math.isfinite(score):
        return math.nan
    return min(1.0, max(0.0, (score - MIN_SCORE) / (MAX_SCORE - MIN_SCORE)))


def interpolate_progress(anchor_frames: Sequence[int], anchor_values: Sequence[float], length: int) -> list[float]:
    """Per-frame progress for frames ``0..length-1`` from anchor values at ``anchor_frames``, as LeRobot does."""
    frames = np.asarray(anchor_frames, dtype=np.float64)
    values = np.asarray(anchor_values, dtype=np.float64)
    finite = np.isfinite(values)
    if not finite.any():
        return [math.nan] * length
    if finite.sum() == 1:
        return [float(values[finite][0])] * length
    out = np.interp(np.arange(length, dtype=np.float64), frames[finite], values[finite])
    return [float(value) for value in out.astype(np.float32)]


@dataclass(frozen=True)
class EpisodeProgress:
    """One episode's per-frame progress, keyed as LeRobot keys frames."""

    episode_index: int
    first_frame_index: int
    """The dataset-wide ``index`` of its frame 0."""

    values: tuple[float, ...]


def progress_columns(episodes: Sequence[EpisodeProgress]) -> dict[str, list[float] | list[int]]:
    """The progress file's columns, rows sorted by the dataset-wide ``index``."""
    rows = sorted(((episode.first_frame_index + frame, episode.episode_index, frame, value)
                   for episode in episodes for frame, value in enumerate(episode.values)))
    return {
        "index": [row[0] for row in rows],
        "episode_index": [row[1] for row in rows],
        "frame_index": [row[2] for row in rows],
        PROGRESS_COLUMN: [row[3] for row in rows],
    }
