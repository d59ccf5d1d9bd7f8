"""LeRobot's frame-signal file, schema v1: what ``roboreward label --format frame-signals`` writes. Pure.

The contract is LeRobot's offline reward scoring (huggingface/lerobot pull request #4554, "add resumable offline
dataset scoring", open; not on lerobot main at 7427f318, 2026-08-23): ``src/lerobot/rewards/scoring/schema.py`` at
commit def00e39536122e0bd98827e4b331e398713c92c and the ``SignalDescriptor`` of ``types.py`` at
259bdf24535deddc93629a0c29e6231b77559fc8. A parquet table with

- the columns ``index`` (the dataset-wide frame index), ``episode_index`` and ``frame_index`` (int64, no nulls),
  then one column per signal (bool, integer or float, no nulls; NaN only where the signal's descriptor allows it);
- rows ordered by episode, ``index`` strictly increasing, ``index - frame_index`` constant within an episode;
- schema metadata: ``lerobot.reward_scoring.format`` = ``lerobot.frame_signals``, ``...schema_version`` = ``1``,
  ``...descriptors`` (per signal: ``description``, ``direction`` higher/lower/none, ``bounds`` or null, ``unit``
  or null, ``missing_values`` forbidden/nan), ``...provenance`` (a JSON object) and ``...episode_indices`` (the
  sorted episode selection), each as canonical JSON (sorted keys, no spaces, no NaN).

The signals here (named ``reward.<model family>.<signal>`` as LeRobot's RoboMeter and RynnValue scorers name
theirs): :data:`PROGRESS_SIGNAL`, :data:`SCORE_SIGNAL` and :data:`SCORED_SIGNAL`. In prefix mode every frame of an
episode has a row (progress interpolated between the scored clips, as in the RA-BC file); in episode mode each
episode has one row, at its last frame (the only frame a whole-episode score speaks for).
"""

import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from helm_roboreward.protocol.safe_files import write_atomically

FRAME_SIGNALS_FILE = "roboreward_frame_signals.parquet"
SCORING_FORMAT = "lerobot.frame_signals"
SCHEMA_VERSION = 1
RESERVED_COLUMNS = ("index", "episode_index", "frame_index")
FORMAT_KEY = b"lerobot.reward_scoring.format"
SCHEMA_VERSION_KEY = b"lerobot.reward_scoring.schema_version"
PROVENANCE_KEY = b"lerobot.reward_scoring.provenance"
DESCRIPTORS_KEY = b"lerobot.reward_scoring.descriptors"
EPISODE_INDICES_KEY = b"lerobot.reward_scoring.episode_indices"
ADAPTER_ID = "helm_roboreward.label"
"""``provenance.adapter.id`` (``.episode`` or ``.prefix`` appended)."""

PROGRESS_SIGNAL = "reward.roboreward.progress"
SCORE_SIGNAL = "reward.roboreward.score"
SCORED_SIGNAL = "reward.roboreward.is_scored_frame"
DESCRIPTORS: dict[str, dict[str, Any]] = {
    PROGRESS_SIGNAL: {
        "description": "RoboReward progress (score - 1) / 4 of the clip from the episode's start to this frame, "
                       "clipped to 0..1; between scored frames linearly interpolated (LeRobot's interpolate_progress); "
                       "NaN where no clip of the episode has a score (unparseable answer or failed request).",
        "direction": "higher", "bounds": [0.0, 1.0], "unit": None, "missing_values": "nan"},
    SCORE_SIGNAL: {
        "description": "RoboReward score (the official parse of the model's answer; 1..5 for a well-behaved model) "
                       "of the clip from the episode's start to this frame; NaN on frames where no clip ends, and "
                       "where the answer has no score or the request failed.",
        "direction": "higher", "bounds": None, "unit": None, "missing_values": "nan"},
    SCORED_SIGNAL: {
        "description": "Whether a clip ending at this frame was sent to the model (else its progress is "
                       "interpolated).",
        "direction": "none", "bounds": None, "unit": None, "missing_values": "forbidden"},
}
"""One descriptor per signal: the fields of LeRobot's ``SignalDescriptor`` at the commit named above."""
DIRECTIONS = ("higher", "lower", "none")
MISSING_VALUES = ("forbidden", "nan")


@dataclass(frozen=True)
class EpisodeSignals:
    """One episode's rows: episode-local frame indices (increasing) and each signal's value there."""

    episode_index: int
    first_frame_index: int
    """The dataset-wide ``index`` of the episode's frame 0."""

    frames: tuple[int, ...]
    progress: tuple[float, ...]
    score: tuple[float, ...]
    scored: tuple[bool, ...]


def _number(value: float | None) -> float:
    return math.nan if value is None or not math.isfinite(value) else float(value)


def episode_signals(episode_index: int, first_frame_index: int, length: int, score: float | None,
                    progress: float | None) -> EpisodeSignals:
    """Episode mode: one row at the episode's last frame."""
    return EpisodeSignals(episode_index, first_frame_index, (length - 1,), (_number(progress),), (_number(score),),
                          (True,))


def prefix_signals(episode_index: int, first_frame_index: int, progress: Sequence[float],
                   scores_by_end: Mapping[int, float | None]) -> EpisodeSignals:
    """Prefix mode: every frame; ``scores_by_end`` maps each scored clip's end (exclusive) to its score."""
    last_frames = {end - 1: score for end, score in scores_by_end.items()}
    frames = tuple(range(len(progress)))
    return EpisodeSignals(episode_index, first_frame_index, frames, tuple(_number(v) for v in progress),
                          tuple(_number(last_frames[f]) if f in last_frames else math.nan for f in frames),
                          tuple(f in last_frames for f in frames))


def canonical_json(value: Any) -> bytes:
    """LeRobot's metadata encoding: sorted keys, no spaces; NaN and infinity refused (ValueError)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


def frame_signals_table(episodes: Sequence[EpisodeSignals], provenance: Mapping[str, Any]) -> pa.Table:
    """The table, episodes in index order, with its metadata; checked by :func:`check_frame_signals`.

    Raises:
        ValueError: The rows break the contract (episodes whose dataset-wide indices are not increasing with the
            episode index, for one), or the provenance is not JSON.
    """
    ordered = sorted(episodes, key=lambda episode: episode.episode_index)
    names = (*RESERVED_COLUMNS, PROGRESS_SIGNAL, SCORE_SIGNAL, SCORED_SIGNAL)
    column: dict[str, list[Any]] = {name: [] for name in names}
    for episode in ordered:
        for position, frame in enumerate(episode.frames):
            column["index"].append(episode.first_frame_index + frame)
            column["episode_index"].append(episode.episode_index)
            column["frame_index"].append(frame)
            column[PROGRESS_SIGNAL].append(episode.progress[position])
            column[SCORE_SIGNAL].append(episode.score[position])
            column[SCORED_SIGNAL].append(episode.scored[position])
    types = {PROGRESS_SIGNAL: pa.float32(), SCORE_SIGNAL: pa.float32(), SCORED_SIGNAL: pa.bool_()}
    table = pa.table({name: pa.array(values, types.get(name, pa.int64())) for name, values in column.items()})
    metadata = {FORMAT_KEY: SCORING_FORMAT.encode(), SCHEMA_VERSION_KEY: str(SCHEMA_VERSION).encode(),
                PROVENANCE_KEY: canonical_json(dict(provenance)), DESCRIPTORS_KEY: canonical_json(DESCRIPTORS),
                EPISODE_INDICES_KEY: canonical_json(sorted({e.episode_index for e in ordered}))}
    table = table.replace_schema_metadata(metadata)
    check_frame_signals(table)
    return table


def _metadata_json(metadata: Mapping[bytes, bytes], key: bytes) -> Any:
    if key not in metadata:
        raise ValueError(f"schema metadata {key.decode()} is missing")
    try:
        return json.loads(metadata[key])
    except json.JSONDecodeError:
        raise ValueError(f"schema metadata {key.decode()} is not JSON") from None


def _check_descriptors(descriptors: Any) -> None:
    if not isinstance(descriptors, dict):
        raise ValueError("the signal descriptors are not a JSON object")
    for name, value in descriptors.items():
        if name in RESERVED_COLUMNS or not isinstance(value, dict) or not str(value.get("description", "")).strip():
            raise ValueError(f"signal {name!r}: a descriptor needs a description and a name not in {RESERVED_COLUMNS}")
        bounds = value.get("bounds")
        if (value.get("direction") not in DIRECTIONS or value.get("missing_values") not in MISSING_VALUES
                or not (value.get("unit") is None or str(value["unit"]).strip())
                or not (bounds is None or (isinstance(bounds, list) and len(bounds) == 2 and bounds[0] <= bounds[1]))):
            raise ValueError(f"signal {name!r}: a bad direction, missing_values, unit or bounds in {value}")


def check_frame_signals(table: pa.Table) -> None:
    """The table meets the schema-v1 contract (the module's docstring).

    Raises:
        ValueError: The first rule it breaks.
    """
    metadata = table.schema.metadata or {}
    if metadata.get(FORMAT_KEY) != SCORING_FORMAT.encode() or metadata.get(SCHEMA_VERSION_KEY) != b"1":
        raise ValueError("the table does not declare lerobot.frame_signals schema version 1")
    descriptors = _metadata_json(metadata, DESCRIPTORS_KEY)
    _check_descriptors(descriptors)
    if not isinstance(_metadata_json(metadata, PROVENANCE_KEY), dict):
        raise ValueError("the provenance is not a JSON object")
    selection = _metadata_json(metadata, EPISODE_INDICES_KEY)
    if not (isinstance(selection, list) and all(type(i) is int and i >= 0 for i in selection)
            and selection == sorted(set(selection))):
        raise ValueError("the episode selection is not a sorted list of distinct whole numbers >= 0")
    if set(table.column_names) != set(RESERVED_COLUMNS) | set(descriptors):
        raise ValueError(f"the columns {table.column_names} are not {list(RESERVED_COLUMNS)} and the described signals")
    for name in RESERVED_COLUMNS:
        if not pa.types.is_int64(table[name].type) or table[name].null_count:
            raise ValueError(f"column {name!r} must be int64 without nulls")
    index, episode, frame = (table[name].to_numpy() for name in RESERVED_COLUMNS)
    if index.size > 1 and np.any(np.diff(index) <= 0):
        raise ValueError("the dataset-wide frame indices must increase strictly, episode after episode (the "
                         "episodes' dataset_from_index must grow with their episode_index)")
    if np.any(np.diff(episode) < 0) or not set(episode.tolist()) <= set(selection):
        raise ValueError("rows must be ordered by episode, each episode in the selection")
    for number in np.unique(episode):
        frames, offsets = frame[episode == number], (index - frame)[episode == number]
        if np.any(frames < 0) or np.any(np.diff(frames) <= 0) or np.unique(offsets).size > 1:
            raise ValueError(f"episode {number}: frame indices must increase from 0 up, in step with the index")
    for name, descriptor in descriptors.items():
        column = table[name]
        if column.null_count or not (pa.types.is_boolean(column.type) or pa.types.is_integer(column.type)
                                     or pa.types.is_floating(column.type)):
            raise ValueError(f"signal {name!r} must be bool, integer or float, without nulls")
        values = column.to_numpy(zero_copy_only=False)
        if np.issubdtype(values.dtype, np.floating):
            if np.isinf(values).any() or (descriptor["missing_values"] == "forbidden" and np.isnan(values).any()):
                raise ValueError(f"signal {name!r} holds infinity, or NaN its descriptor forbids")
            values = values[np.isfinite(values)]
        bounds = descriptor.get("bounds")
        if bounds is not None and values.size and (values.min() < bounds[0] or values.max() > bounds[1]):
            raise ValueError(f"signal {name!r} holds values outside its bounds {bounds}")


def write_frame_signals(path: str, episodes: Sequence[EpisodeSignals], provenance: Mapping[str, Any]) -> None:
    """The file, written whole or not at all.

    Raises:
        ValueError: As :func:`frame_signals_table`.
    """
    buffer = io.BytesIO()
    pq.write_table(frame_signals_table(episodes, provenance), buffer)
    write_atomically(path, buffer.getvalue())


def frame_signals_model(path: str) -> str:
    """The model a frame-signal file names (``provenance.model.id``; "" when it names none).

    Raises:
        OSError, ValueError: The file cannot be read as a frame-signal parquet.
    """
    provenance = _metadata_json(pq.read_schema(path).metadata or {}, PROVENANCE_KEY)
    model = provenance.get("model") if isinstance(provenance, dict) else None
    return str(model.get("id", "")) if isinstance(model, dict) else ""
