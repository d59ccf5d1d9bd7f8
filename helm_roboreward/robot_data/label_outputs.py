"""The files ``roboreward label`` writes: episode rewards, LeRobot progress, plots, a contact sheet, low scores.

- ``episode_rewards.parquet``: one row per episode, columns :data:`EPISODE_COLUMNS`; the schema metadata holds
  the model, deployment, the reward model's settings, source and camera (JSON under ``roboreward``).
- ``roboreward_progress.parquet`` (prefix mode): LeRobot's progress schema (see
  :mod:`~helm_roboreward.robot_data.progress`), schema metadata ``reward_model_path`` = the model.
- ``roboreward_frame_signals.parquet`` (``--format frame-signals`` or ``both``): LeRobot's frame-signal file,
  schema v1 (:mod:`~helm_roboreward.robot_data.frame_signals`), provenance ``model.id`` = the model.
- ``progress.png`` (prefix mode, needs matplotlib): each episode's progress curve with its anchors.
- ``last_frames.png``: each episode's last frame with its score (the first :data:`MAX_SHEET_TILES`).
- ``low_score_episodes.json`` (``--low-score N``): the episodes scored at or below N, also as an ``--episodes``
  value for filtering.
"""

import io
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import av
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image, ImageDraw

from helm_roboreward.protocol.rules import MAX_SCORE, PROMPT_VERSION
from helm_roboreward.protocol.safe_files import write_atomically
from helm_roboreward.reward.api import Reward
from helm_roboreward.robot_data.frame_signals import FRAME_SIGNALS_FILE, frame_signals_model
from helm_roboreward.robot_data.labels import format_selection
from helm_roboreward.robot_data.progress import REWARD_MODEL_KEY, EpisodeProgress, progress_columns

EPISODE_REWARDS_FILE = "episode_rewards.parquet"
PROGRESS_FILE = "roboreward_progress.parquet"
PROGRESS_PLOT = "progress.png"
CONTACT_SHEET = "last_frames.png"
LOW_SCORE_FILE = "low_score_episodes.json"
SETTINGS_KEY = b"roboreward"
MAX_SHEET_TILES = 200
TILE_WIDTH = 160
CAPTION_HEIGHT = 18
SHEET_COLUMNS = 8

EPISODE_SCHEMA = pa.schema([
    ("episode_index", pa.int64()), ("task", pa.string()), ("camera_key", pa.string()), ("model", pa.string()),
    ("score", pa.float64()), ("progress", pa.float64()), ("success", pa.bool_()), ("raw_output", pa.string()),
    ("prompt_version", pa.string()), ("request_failed", pa.bool_()), ("error", pa.string()),
])
EPISODE_COLUMNS = tuple(EPISODE_SCHEMA.names)


@dataclass(frozen=True)
class EpisodeScore:
    """One episode's score (its whole-episode clip)."""

    episode_index: int
    task: str
    reward: Reward
    """What the model answered for the whole-episode clip (``score`` None when unparseable or failed)."""

    video: str
    """The episode's clip in the working copy (for the contact sheet)."""


def _parquet_bytes(table: pa.Table) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def write_episode_rewards(path: str, scores: Sequence[EpisodeScore], camera_key: str,
                          settings: dict[str, Any]) -> None:
    """``episode_rewards.parquet`` with the run's settings in its schema metadata."""
    rows = []
    for item in scores:
        score = item.reward.score
        rows.append({
            "episode_index": item.episode_index, "task": item.task, "camera_key": camera_key,
            "model": str(settings.get("model", "")), "score": score,
            "progress": None if score is None else (score - 1) / (MAX_SCORE - 1),
            "success": None if score is None else score == MAX_SCORE, "raw_output": item.reward.output,
            "prompt_version": PROMPT_VERSION, "request_failed": item.reward.failed, "error": item.reward.error,
        })
    metadata = {SETTINGS_KEY: json.dumps(settings, sort_keys=True).encode("utf-8"),
                b"model": str(settings.get("model", "")).encode("utf-8"),
                b"deployment": str(settings.get("deployment", "")).encode("utf-8")}
    table = pa.Table.from_pylist(rows, schema=EPISODE_SCHEMA.with_metadata(metadata))
    write_atomically(path, _parquet_bytes(table))


def write_progress(path: str, episodes: Sequence[EpisodeProgress], reward_model: str) -> None:
    """``roboreward_progress.parquet`` in LeRobot's schema (int64 keys, float32 progress, sorted by index)."""
    columns = progress_columns(episodes)
    table = pa.table({
        "index": pa.array(columns["index"], pa.int64()),
        "episode_index": pa.array(columns["episode_index"], pa.int64()),
        "frame_index": pa.array(columns["frame_index"], pa.int64()),
        "progress_sparse": pa.array(columns["progress_sparse"], pa.float32()),
    }).replace_schema_metadata({REWARD_MODEL_KEY.encode(): reward_model.encode("utf-8")})
    write_atomically(path, _parquet_bytes(table))


def plot_progress(path: str, curves: Sequence[tuple[EpisodeProgress, Sequence[int], Sequence[float]]],
                  model: str) -> bool:
    """Progress curves per episode (x: share of the episode), anchors marked. False: matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as pyplot
    except ImportError:
        return False
    figure, axes = pyplot.subplots(figsize=(7.5, 4.2))
    for episode, anchor_frames, anchor_values in curves:
        length = max(1, len(episode.values) - 1)
        line = axes.plot([frame / length for frame in range(len(episode.values))], episode.values,
                         label=f"episode {episode.episode_index}", linewidth=1.2)
        axes.plot([(frame - 1) / length for frame in anchor_frames], anchor_values, "o",
                  color=line[0].get_color(), markersize=3)
    axes.set_xlabel("share of the episode (anchors: end of each scored prefix)")
    axes.set_ylabel("progress = (score - 1) / 4")
    axes.set_ylim(-0.05, 1.05)
    axes.set_title(f"RoboReward progress, {model}")
    if len(curves) <= 12:
        axes.legend(fontsize=7, ncols=2)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, dpi=110, format="png")
    pyplot.close(figure)
    write_atomically(path, buffer.getvalue())
    return True


def last_frame(video: str) -> Image.Image:
    """The last decodable frame of a (short) video."""
    last = None
    with av.open(video) as container:
        for frame in container.decode(container.streams.video[0]):
            last = frame
    if last is None:
        raise ValueError(f"{video}: no frame decodes")
    image: Image.Image = last.to_image()
    return image


def write_contact_sheet(path: str, scores: Sequence[EpisodeScore]) -> int:
    """A grid of each episode's last frame captioned with its score; returns the tiles drawn."""
    shown = list(scores)[:MAX_SHEET_TILES]
    tiles = []
    for item in shown:
        image = last_frame(item.video)
        height = max(1, round(image.height * TILE_WIDTH / image.width))
        tiles.append((item, image.resize((TILE_WIDTH, height))))
    tile_height = max(image.height for _, image in tiles) + CAPTION_HEIGHT
    columns = min(SHEET_COLUMNS, len(tiles))
    rows = math.ceil(len(tiles) / columns)
    sheet = Image.new("RGB", (columns * TILE_WIDTH, rows * tile_height), "white")
    draw = ImageDraw.Draw(sheet)
    for number, (item, image) in enumerate(tiles):
        x, y = (number % columns) * TILE_WIDTH, (number // columns) * tile_height
        sheet.paste(image, (x, y))
        score = item.reward.score
        caption = f"ep {item.episode_index}: " + ("n/a" if score is None else f"{score:g}")
        draw.text((x + 4, y + image.height + 3), caption, fill="black")
    buffer = io.BytesIO()
    sheet.save(buffer, format="PNG")
    write_atomically(path, buffer.getvalue())
    return len(tiles)


def write_low_scores(path: str, threshold: float, scores: Sequence[EpisodeScore], model: str) -> list[int]:
    """The episodes scored at or below ``threshold`` (unscored ones are listed apart); returns their indices."""
    low = [item for item in scores if item.reward.score is not None and item.reward.score <= threshold]
    unscored = [item.episode_index for item in scores if item.reward.score is None]
    record = {
        "threshold": threshold, "model": model, "count": len(low),
        "episodes": [{"episode_index": item.episode_index, "score": item.reward.score, "task": item.task}
                     for item in low],
        "episodes_option": format_selection([item.episode_index for item in low]),
        "unscored_episodes": unscored,
    }
    write_atomically(path, (json.dumps(record, indent=2) + "\n").encode("utf-8"))
    return [item.episode_index for item in low]


def labelling_model(out: str, model: str, deployment: str | None) -> str | None:
    """The model (and deployment) whose labels ``out`` holds when it is not ``model`` (None: none, or this one's).

    Read from each output's own record: ``episode_rewards.parquet``'s and ``roboreward_progress.parquet``'s schema
    metadata, ``roboreward_frame_signals.parquet``'s provenance, ``low_score_episodes.json``'s ``model``; a file
    that cannot be read counts as another model's.
    """
    found: list[tuple[str, str | None]] = []
    rewards = output_path(out, EPISODE_REWARDS_FILE)
    if os.path.isfile(rewards):
        try:
            metadata = pq.read_schema(rewards).metadata or {}
            found.append((metadata.get(b"model", b"").decode("utf-8", "replace"),
                          metadata.get(b"deployment", b"").decode("utf-8", "replace")))
        except (OSError, ValueError):
            found.append((f"an unreadable {EPISODE_REWARDS_FILE}", None))
    progress = output_path(out, PROGRESS_FILE)
    if os.path.isfile(progress):
        try:
            metadata = pq.read_schema(progress).metadata or {}
            found.append((metadata.get(b"reward_model_path", b"").decode("utf-8", "replace"), None))
        except (OSError, ValueError):
            found.append((f"an unreadable {PROGRESS_FILE}", None))
    signals = output_path(out, FRAME_SIGNALS_FILE)
    if os.path.isfile(signals):
        try:
            found.append((frame_signals_model(signals), None))
        except (OSError, ValueError):
            found.append((f"an unreadable {FRAME_SIGNALS_FILE}", None))
    low = output_path(out, LOW_SCORE_FILE)
    if os.path.isfile(low):
        try:
            with open(low, encoding="utf-8") as handle:
                found.append((str(json.load(handle).get("model", "")), None))
        except (OSError, ValueError, AttributeError):
            found.append((f"an unreadable {LOW_SCORE_FILE}", None))
    for other, other_deployment in found:
        if other != model or (deployment and other_deployment and other_deployment != deployment):
            return other + (f" ({other_deployment})" if other_deployment and other_deployment != other else "")
    return None


OPTIONAL_OUTPUTS = (PROGRESS_FILE, FRAME_SIGNALS_FILE, PROGRESS_PLOT, LOW_SCORE_FILE)
"""The files a label run writes only in some modes or with some options."""


def remove_other_outputs(out: str, written: Sequence[str]) -> list[str]:
    """Remove the optional outputs in ``out`` that this run did not write (an earlier run's); returns them."""
    removed = []
    for name in OPTIONAL_OUTPUTS:
        path = output_path(out, name)
        if path not in written and os.path.lexists(path):
            os.remove(path)
            removed.append(path)
    return removed


def output_path(out: str, name: str) -> str:
    """A file of the label output folder."""
    return os.path.join(out, name)
