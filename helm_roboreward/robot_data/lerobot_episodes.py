"""A LeRobot dataset's episodes: where each one's frames lie in which video, checked value by value.

The layouts are described in :mod:`~helm_roboreward.robot_data.lerobot_format`. Every value of an episode is
checked by the rules of :mod:`~helm_roboreward.protocol.validation` (a null or NaN length or timestamp, a negative
index, a span that is empty or shares frames with another episode's) and refused with a
:class:`~helm_roboreward.robot_data.lerobot_format.LeRobotFormatError` naming the file, the episode and the field.
An episode's task is not checked here: a labels file may give it (``importing.copy_rows`` applies the task rule).
"""

import dataclasses
import glob
import json
import os
from collections.abc import Iterable, Sequence
from typing import Any

from helm_roboreward.protocol.validation import episode_span, integer_value, jsonl_lines, overlapping_spans
from helm_roboreward.robot_data.lerobot_format import (
    DEFAULT_CHUNKS_SIZE,
    EPISODES_GLOB,
    EPISODES_JSONL,
    SUCCESS_FEATURE,
    Camera,
    DatasetInfo,
    Episode,
    LeRobotFormatError,
    dataset_file,
    format_path,
    rows_of_parquet,
)


def read_episodes(info: DatasetInfo, camera: Camera) -> list[Episode]:
    """Every episode of the dataset with its video span for ``camera``, sorted by ``episode_index``.

    Raises:
        LeRobotFormatError: A metadata file is missing or lacks a field, an episode appears twice, is empty
            (length 0 or no time span), or a path template leads out of the dataset.
    """
    episodes = _v3_episodes(info, camera) if info.is_v3 else _v2_episodes(info, camera)
    seen: dict[int, Episode] = {}
    for episode in episodes:
        if episode.index in seen:
            raise LeRobotFormatError(f"{info.root}: episode {episode.index} is listed twice in the episode metadata")
        seen[episode.index] = episode
    if not seen:
        raise LeRobotFormatError(f"{info.root}: the episode metadata lists no episodes")
    return [seen[index] for index in sorted(seen)]


def _tasks(value: Any) -> tuple[str, ...]:
    """The task texts an episode's ``tasks`` field holds; anything else is no task (checked where it is used)."""
    tasks = [value] if isinstance(value, str) else value if isinstance(value, (list, tuple)) else []
    return tuple(task for task in tasks if isinstance(task, str))


def _span(where: str, index: int, length: Any, start: Any, end: Any) -> tuple[int, float, float]:
    try:
        return episode_span(length, start, end)
    except ValueError as problem:
        text = str(problem)
        fix = "; leave it out with --episodes" if text.startswith("zero-length") else \
            "; re-download the dataset's meta/ folder, or leave the episode out with --episodes"
        raise LeRobotFormatError(f"{where}, episode {index}: {text}{fix}") from None


def _index(where: str, row: dict[str, Any], column: str, episode: object = None) -> int:
    """A non-negative integer column of an episode row (``None`` in ``data/*`` columns reads as 0)."""
    value = row.get(column)
    try:
        number = integer_value(0 if value is None and column.startswith("data/") else value)
        if number < 0:
            raise ValueError(f"expected an index >= 0, got {number}")
    except ValueError as problem:
        episode_part = "" if episode is None else f", episode {episode}"
        raise LeRobotFormatError(f"{where}{episode_part}, field {column!r}: {problem}; re-download the dataset's "
                                 "meta/ folder") from None
    return number


def _v3_episodes(info: DatasetInfo, camera: Camera) -> list[Episode]:
    files = sorted(glob.glob(os.path.join(info.root, *EPISODES_GLOB.split("/"))))
    if not files:
        raise LeRobotFormatError(f"{info.root}: no {EPISODES_GLOB} files; a v3.0 dataset keeps its episode "
                                 "metadata there. Re-download the dataset (meta/ folder).")
    prefix = f"videos/{camera.key}/"
    columns = ["episode_index", "length", "tasks", prefix + "chunk_index", prefix + "file_index",
               prefix + "from_timestamp", prefix + "to_timestamp"]
    optional = ["dataset_from_index", "data/chunk_index", "data/file_index"]
    episodes: list[Episode] = []
    numbered_by_dataset = True
    for path in files:
        for number, row in enumerate(rows_of_parquet(path, columns, optional), start=1):
            index = _index(f"{path}, row {number}", row, "episode_index")
            first = row.get("dataset_from_index")
            # No dataset_from_index (or a null one): every episode is numbered as LeRobot numbers them.
            numbered_by_dataset = numbered_by_dataset and first is not None and first == first
            video = format_path(info, "video_path", "video", video_key=camera.key,
                                 chunk_index=_index(path, row, prefix + "chunk_index", index),
                                 file_index=_index(path, row, prefix + "file_index", index))
            data = format_path(info, "data_path", "data", chunk_index=_index(path, row, "data/chunk_index", index),
                                file_index=_index(path, row, "data/file_index", index))
            length, start, end = _span(path, index, row["length"], row[prefix + "from_timestamp"],
                                       row[prefix + "to_timestamp"])
            episodes.append(Episode(
                index=index, length=length, tasks=_tasks(row["tasks"]), video_file=video, from_timestamp=start,
                to_timestamp=end, first_frame_index=_index(path, row, "dataset_from_index", index)
                if numbered_by_dataset else 0, data_file=data, where=f"{path}, episode {index}"))
    return episodes if numbered_by_dataset else _with_cumulative_indices(episodes)


def _with_cumulative_indices(episodes: Iterable[Episode]) -> list[Episode]:
    """Global frame indices as LeRobot numbers them: episodes in order, frames back to back."""
    out, start = [], 0
    for episode in sorted(episodes, key=lambda item: item.index):
        out.append(dataclasses.replace(episode, first_frame_index=start))
        start += episode.length
    return out


def _chunks_size(info: DatasetInfo) -> int:
    value = info.raw.get("chunks_size")
    if value is None:
        return DEFAULT_CHUNKS_SIZE
    try:
        size = integer_value(value)
        if size < 1:
            raise ValueError
    except ValueError:
        raise LeRobotFormatError(f"{info.info_path}, field 'chunks_size': expected a positive integer (episodes per "
                                 f"chunk folder, LeRobot writes 1000), got {value!r}") from None
    return size


def _v2_episodes(info: DatasetInfo, camera: Camera) -> list[Episode]:
    path = os.path.join(info.root, *EPISODES_JSONL.split("/"))
    try:
        with open(path, encoding="utf-8") as handle:
            lines = jsonl_lines(handle.read())
    except FileNotFoundError:
        raise LeRobotFormatError(f"{path}: not found; a {info.codebase_version} dataset lists its episodes there. "
                                 "Re-download the dataset (meta/ folder).") from None
    except (OSError, UnicodeDecodeError) as error:
        raise LeRobotFormatError(f"{path}: cannot be read as UTF-8 text ({error}). Re-download the dataset.") from None
    chunks_size = _chunks_size(info)
    episodes: list[Episode] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise LeRobotFormatError(f"{where}: not valid JSON ({error.msg}); expected an object with "
                                     "'episode_index', 'tasks' and 'length'") from None
        if not isinstance(row, dict):
            raise LeRobotFormatError(f"{where}: expected an object with 'episode_index', 'tasks' and 'length', got "
                                     f"{type(row).__name__}")
        index = _index(where, row, "episode_index")
        length, start, end = _span(where, index, row.get("length"), 0.0,
                                   _v2_end(row.get("length"), camera.fps))
        chunk = index // chunks_size
        video = format_path(info, "video_path", "video", episode_chunk=chunk, video_key=camera.key,
                             episode_index=index)
        data = format_path(info, "data_path", "data", episode_chunk=chunk, episode_index=index)
        episodes.append(Episode(
            index=index, length=length, tasks=_tasks(row.get("tasks")), video_file=video, from_timestamp=start,
            to_timestamp=end, first_frame_index=0, data_file=data, where=where))
    return _with_cumulative_indices(episodes)


def _v2_end(length: Any, fps: float) -> Any:
    """Where a v2 episode ends in its own video (its length is checked by the span rule)."""
    return length / fps if isinstance(length, (int, float)) and not isinstance(length, bool) else 0.0


def check_spans(episodes: Sequence[Episode], fps: float) -> None:
    """No two of ``episodes`` share frames of one video (spans closer than half a frame only touch).

    Raises:
        LeRobotFormatError: The first pair whose spans are the same or overlap, named with both spans.
    """
    by_index = {episode.index: episode for episode in episodes}
    pairs = overlapping_spans([(e.index, e.video_file, e.from_timestamp, e.to_timestamp) for e in episodes],
                              tolerance=0.5 / fps)
    if pairs:
        first, second = (by_index[item] for item in pairs[0])
        same = (first.from_timestamp, first.to_timestamp) == (second.from_timestamp, second.to_timestamp)
        relation = "the same span" if same else "overlapping spans"
        raise LeRobotFormatError(
            f"{first.where}: episodes {first.index} and {second.index} have {relation} of {first.video_file} "
            f"({first.from_timestamp:g}..{first.to_timestamp:g} s and {second.from_timestamp:g}.."
            f"{second.to_timestamp:g} s); an episode's frames belong to it alone, so the metadata is wrong"
            f"{f' ({len(pairs)} such pairs)' if len(pairs) > 1 else ''}. Re-download the dataset's meta/ folder, "
            "or leave one of them out with --episodes")


def check_frame_indices(episodes: Sequence[Episode]) -> None:
    """No two episodes claim the same dataset-wide frame ``index`` (``dataset_from_index`` + frame).

    Raises:
        LeRobotFormatError: The first pair whose index ranges overlap.
    """
    by_index = {episode.index: episode for episode in episodes}
    pairs = overlapping_spans([(e.index, "", e.first_frame_index, e.first_frame_index + e.length) for e in episodes])
    if pairs:
        first, second = (by_index[item] for item in pairs[0])
        raise LeRobotFormatError(
            f"{first.where}: episodes {first.index} and {second.index} both claim frame indices "
            f"{max(first.first_frame_index, second.first_frame_index)}.."
            f"{min(first.first_frame_index + first.length, second.first_frame_index + second.length) - 1} "
            "(field 'dataset_from_index' with 'length'); LeRobot's progress file is keyed by that index, so one "
            "episode's progress would be read for the other's frames. Re-download the dataset's meta/ folder, or "
            "use --mode episode (it writes no per-frame file)")


def read_success_flags(info: DatasetInfo, episodes: Sequence[Episode]) -> dict[int, bool]:
    """``next.success`` of each episode's last frame (the largest ``frame_index``).

    Raises:
        LeRobotFormatError: The dataset has no ``next.success`` feature, a data file is missing, or an episode
            has no rows in its data file.
    """
    if SUCCESS_FEATURE not in info.features:
        raise LeRobotFormatError(f"{info.info_path}: the dataset has no "
                                 f"{SUCCESS_FEATURE!r} feature; give the labels with --labels FILE instead")
    wanted = {episode.index for episode in episodes}
    last: dict[int, tuple[int, bool]] = {}
    for relative in dict.fromkeys(episode.data_file for episode in episodes):
        path = dataset_file(info, relative)
        if not os.path.isfile(path):
            raise LeRobotFormatError(f"{path}: data file not found (needed for {SUCCESS_FEATURE}); re-download the "
                                     "dataset's data/ folder")
        for number, row in enumerate(rows_of_parquet(path, ["episode_index", "frame_index", SUCCESS_FEATURE]),
                                     start=1):
            index = _index(f"{path}, row {number}", row, "episode_index")
            if index not in wanted:
                continue
            value = row[SUCCESS_FEATURE]
            flag = bool(value[0] if isinstance(value, list) and value else value)
            frame = _index(f"{path}, row {number}", row, "frame_index", index)
            if index not in last or frame > last[index][0]:
                last[index] = (frame, flag)
    missing = sorted(wanted - set(last))
    if missing:
        raise LeRobotFormatError(f"{info.root}: episode(s) {', '.join(map(str, missing[:10]))} have no rows in their "
                                 f"data files, so {SUCCESS_FEATURE} is unknown; re-download the data/ folder")
    return {index: flag for index, (_, flag) in last.items()}
