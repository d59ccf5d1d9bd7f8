"""Reading a LeRobotDataset: its info, cameras, episodes, and where each episode's frames lie in which video.

Two layouts, as LeRobot itself writes them (lerobot is not a dependency; these are its documented files):

- **v3.0** (lerobot 0.4, ``src/lerobot/datasets/utils.py``): ``meta/info.json``; episodes in
  ``meta/episodes/chunk-XXX/file-XXX.parquet`` with, per camera ``<key>``, the columns
  ``videos/<key>/chunk_index``, ``videos/<key>/file_index``, ``videos/<key>/from_timestamp`` and
  ``videos/<key>/to_timestamp``; many episodes concatenated in one mp4 (``info["video_path"]``, by default
  ``videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4``); an episode's frame at time ``t`` lies
  at ``from_timestamp + t`` of that file (``LeRobotDataset._query_videos``); tasks in ``meta/tasks.parquet``.
- **v2.1** (and v2.0, the same files; huggingface/lerobot ``lerobot/common/datasets/utils.py``, commit 000e447):
  ``meta/episodes.jsonl`` (``episode_index``, ``tasks``, ``length``), ``meta/tasks.jsonl``, one mp4 per episode
  and camera at ``info["video_path"]``, by default
  ``videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4`` with
  ``episode_chunk = episode_index // chunks_size``.

Every problem raises :class:`LeRobotFormatError` naming the file, the episode or the field, and what to do.
"""

import dataclasses
import glob
import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow.parquet as pq

from helm_roboreward.core.files import file_digest
from helm_roboreward.data.rows import DataError, jsonl_lines
from helm_roboreward.media.containment import is_inside

V30 = "v3.0"
V2_VERSIONS = ("v2.0", "v2.1")
SUPPORTED_VERSIONS = (*V2_VERSIONS, V30)
INFO_FILE = "meta/info.json"
EPISODES_JSONL = "meta/episodes.jsonl"
EPISODES_GLOB = "meta/episodes/*/*.parquet"
SUCCESS_FEATURE = "next.success"
DEFAULT_CHUNKS_SIZE = 1000


class LeRobotFormatError(DataError):
    """A LeRobot dataset that cannot be read as documented; the message names the file, episode or field."""


@dataclasses.dataclass(frozen=True)
class Camera:
    """One video feature of the dataset (``dtype: video`` in ``info.json``)."""

    key: str
    width: int
    height: int
    codec: str
    fps: float
    is_depth_map: bool


@dataclasses.dataclass(frozen=True)
class Episode:
    """One episode and where its frames are, for one camera."""

    index: int
    """``episode_index``."""

    length: int
    """Frames in the episode."""

    tasks: tuple[str, ...]
    video_file: str
    """The mp4 holding its frames, relative to the dataset root (``/`` separated)."""

    from_timestamp: float
    """Seconds into ``video_file`` where the episode starts (0 for v2.1: one file per episode)."""

    to_timestamp: float
    """Seconds into ``video_file`` where it ends (exclusive)."""

    first_frame_index: int
    """The dataset-wide ``index`` of its first frame (LeRobot's progress files are keyed by it)."""

    data_file: str
    """The parquet file holding its frames' rows, relative to the dataset root."""


@dataclasses.dataclass(frozen=True)
class DatasetInfo:
    """``meta/info.json`` of one dataset, checked."""

    root: str
    codebase_version: str
    fps: float
    features: dict[str, Any]
    raw: dict[str, Any]

    @property
    def info_path(self) -> str:
        """The path of its ``meta/info.json`` (what messages about its fields name)."""
        return info_path(self.root)

    @property
    def video_keys(self) -> list[str]:
        """The video features, in ``info.json`` order."""
        return [key for key, feature in self.features.items() if feature.get("dtype") == "video"]

    @property
    def is_v3(self) -> bool:
        """True for the v3.0 layout (episodes concatenated in shared files)."""
        return self.codebase_version == V30

    def camera(self, key: str) -> Camera:
        """The camera of a video feature (its ``info`` block; v2.0 calls it ``video_info``)."""
        feature = self.features[key]
        details = feature.get("info") or feature.get("video_info") or {}
        shape = list(feature.get("shape") or [0, 0, 0])
        names = list(feature.get("names") or [])
        height, width = (shape[1], shape[2]) if names[:1] in (["channels"], ["channel"]) else (shape[0], shape[1])
        return Camera(
            key=key,
            width=int(details.get("video.width", width)),
            height=int(details.get("video.height", height)),
            codec=str(details.get("video.codec", "unknown")),
            fps=float(details.get("video.fps", self.fps)),
            is_depth_map=bool(details.get("video.is_depth_map", False)),
        )


def info_path(root: str) -> str:
    """The path of ``meta/info.json`` under a dataset root."""
    return os.path.join(root, *INFO_FILE.split("/"))


def _load_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        raise LeRobotFormatError(f"{path}: not found. A LeRobot dataset root holds {INFO_FILE}; give the folder "
                                 "that contains meta/ (or --repo-id for a hub dataset).") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise LeRobotFormatError(f"{path}: cannot be read as JSON ({error}). Re-download the dataset.") from None


def read_info(root: str) -> DatasetInfo:
    """Read and check ``meta/info.json``.

    Raises:
        LeRobotFormatError: The file is missing or not JSON, its ``codebase_version`` is not one this reader
            knows, or ``fps`` / ``features`` are missing.
    """
    path = info_path(root)
    info = _load_json(path)
    if not isinstance(info, dict):
        raise LeRobotFormatError(f"{path}: expected a JSON object, got {type(info).__name__}")
    version = info.get("codebase_version")
    if version not in SUPPORTED_VERSIONS:
        raise LeRobotFormatError(
            f"{path}, field 'codebase_version': {version!r} is not a LeRobot layout this importer reads "
            f"({', '.join(SUPPORTED_VERSIONS)}). Convert the dataset with LeRobot's own converter "
            "(lerobot.datasets.v30.convert_dataset_v21_to_v30 for v2.1; older versions convert to v2.1 first).")
    features = info.get("features")
    if not isinstance(features, dict) or not features:
        raise LeRobotFormatError(f"{path}, field 'features': missing or empty; the dataset lists no features")
    fps = info.get("fps")
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or fps <= 0:
        raise LeRobotFormatError(f"{path}, field 'fps': expected a positive number, got {fps!r}")
    for template in ("video_path", "data_path"):
        if not isinstance(info.get(template), str):
            raise LeRobotFormatError(f"{path}, field {template!r}: missing; LeRobot writes a path template there")
    return DatasetInfo(root=os.path.abspath(root), codebase_version=str(version), fps=float(fps),
                       features=features, raw=info)


def choose_camera(info: DatasetInfo, requested: str | None) -> Camera:
    """The camera to import: ``requested``, else the only colour video feature.

    Raises:
        LeRobotFormatError: No video feature, several and none requested, an unknown key, or a depth map.
    """
    keys = info.video_keys
    where = info.info_path
    if not keys:
        images = [key for key, feature in info.features.items() if feature.get("dtype") == "image"]
        stored = f" (its cameras are stored as images: {', '.join(images)})" if images else ""
        raise LeRobotFormatError(f"{where}: the dataset has no video feature{stored}; only video datasets can be "
                                 "imported (LeRobot's default, use_videos=True)")
    if requested is None:
        colour = [key for key in keys if not info.camera(key).is_depth_map]
        if len(colour) != 1:
            depth = [key for key in keys if key not in colour]
            depth_note = f"; depth maps, which cannot be imported: {', '.join(depth)}" if depth else ""
            raise LeRobotFormatError(f"{where}: the dataset has {len(colour)} colour cameras ({', '.join(colour)}"
                                     f"{depth_note}); choose one with --camera KEY" if colour else
                                     f"{where}: the dataset's only cameras are depth maps ({', '.join(depth)}); a "
                                     "reward model judges colour video")
        requested = colour[0]
    if requested not in keys:
        raise LeRobotFormatError(f"{where}: --camera {requested!r} is not a video feature of the dataset; its "
                                 f"cameras: {', '.join(keys)}")
    camera = info.camera(requested)
    if camera.is_depth_map:
        others = [key for key in keys if not info.camera(key).is_depth_map]
        hint = f"; its colour cameras: {', '.join(others)}" if others else ""
        raise LeRobotFormatError(f"{where}: camera {requested!r} is a depth map (video.is_depth_map); a reward model "
                                 f"judges colour video{hint}")
    return camera


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


def _rows_of_parquet(path: str, columns: Sequence[str], optional: Sequence[str] = ()) -> list[dict[str, Any]]:
    try:
        schema_names = set(pq.read_schema(path).names)
    except (OSError, ValueError) as error:
        raise LeRobotFormatError(f"{path}: cannot be read as parquet ({error}). Re-download the dataset.") from None
    missing = [column for column in columns if column not in schema_names]
    if missing:
        raise LeRobotFormatError(f"{path}: column(s) {', '.join(repr(c) for c in missing)} missing (present: "
                                 f"{', '.join(sorted(schema_names)[:12])}...)")
    wanted = list(columns) + [column for column in optional if column in schema_names]
    return list(pq.read_table(path, columns=wanted).to_pylist())


def _inside(info: DatasetInfo, relative: str, what: str) -> str:
    path = os.path.join(info.root, *relative.split("/"))
    if not is_inside(path, info.root) or ".." in relative.split("/"):
        raise LeRobotFormatError(f"{info.root}: the {what} path {relative!r} leads out of the dataset folder")
    return relative


def _format_path(info: DatasetInfo, template_field: str, what: str, **values: Any) -> str:
    template = str(info.raw[template_field])
    try:
        relative = template.format(**values)
    except (KeyError, IndexError, ValueError) as error:
        raise LeRobotFormatError(f"{info.info_path}, field {template_field!r}: "
                                 f"{template!r} cannot be filled ({error})") from None
    return _inside(info, relative, what)


def _tasks(value: Any, where: str) -> tuple[str, ...]:
    tasks = [value] if isinstance(value, str) else list(value or [])
    if not tasks or not all(isinstance(task, str) and task.strip() for task in tasks):
        raise LeRobotFormatError(f"{where}, field 'tasks': expected the episode's task text(s), got {value!r}; "
                                 "give the task in the labels file (column 'task')")
    return tuple(tasks)


def _check_span(episode: Episode, where: str) -> Episode:
    if episode.length <= 0 or episode.to_timestamp <= episode.from_timestamp:
        raise LeRobotFormatError(
            f"{where}, episode {episode.index}: zero-length episode (length {episode.length}, video "
            f"{episode.from_timestamp:g}..{episode.to_timestamp:g} s); leave it out with --episodes")
    return episode


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
        for row in _rows_of_parquet(path, columns, optional):
            numbered_by_dataset = numbered_by_dataset and row.get("dataset_from_index") is not None
            index = int(row["episode_index"])
            where = f"{path}, episode {index}"
            video = _format_path(info, "video_path", "video", video_key=camera.key,
                                 chunk_index=int(row[prefix + "chunk_index"]),
                                 file_index=int(row[prefix + "file_index"]))
            data = _format_path(info, "data_path", "data", chunk_index=int(row.get("data/chunk_index") or 0),
                                file_index=int(row.get("data/file_index") or 0))
            episodes.append(_check_span(Episode(
                index=index, length=int(row["length"]), tasks=_tasks(row["tasks"], where), video_file=video,
                from_timestamp=float(row[prefix + "from_timestamp"]), to_timestamp=float(row[prefix + "to_timestamp"]),
                first_frame_index=int(row.get("dataset_from_index") or 0), data_file=data), path))
    return episodes if numbered_by_dataset else _with_cumulative_indices(episodes)


def _with_cumulative_indices(episodes: Iterable[Episode]) -> list[Episode]:
    """Global frame indices as LeRobot numbers them: episodes in order, frames back to back."""
    out, start = [], 0
    for episode in sorted(episodes, key=lambda item: item.index):
        out.append(dataclasses.replace(episode, first_frame_index=start))
        start += episode.length
    return out


def _v2_episodes(info: DatasetInfo, camera: Camera) -> list[Episode]:
    path = os.path.join(info.root, *EPISODES_JSONL.split("/"))
    try:
        with open(path, encoding="utf-8") as handle:
            lines = jsonl_lines(handle.read())
    except FileNotFoundError:
        raise LeRobotFormatError(f"{path}: not found; a {info.codebase_version} dataset lists its episodes there. "
                                 "Re-download the dataset (meta/ folder).") from None
    chunks_size = int(info.raw.get("chunks_size") or DEFAULT_CHUNKS_SIZE)
    episodes: list[Episode] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            index, length = int(row["episode_index"]), int(row["length"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            raise LeRobotFormatError(f"{path}, line {number}: expected an object with 'episode_index', 'tasks' and "
                                     f"'length' ({type(error).__name__}: {error})") from None
        where = f"{path}, line {number}"
        chunk = index // chunks_size
        video = _format_path(info, "video_path", "video", episode_chunk=chunk, video_key=camera.key,
                             episode_index=index)
        data = _format_path(info, "data_path", "data", episode_chunk=chunk, episode_index=index)
        episodes.append(_check_span(Episode(
            index=index, length=length, tasks=_tasks(row.get("tasks"), where), video_file=video,
            from_timestamp=0.0, to_timestamp=length / camera.fps, first_frame_index=0, data_file=data), where))
    return _with_cumulative_indices(episodes)


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
        path = os.path.join(info.root, *relative.split("/"))
        if not os.path.isfile(path):
            raise LeRobotFormatError(f"{path}: data file not found (needed for {SUCCESS_FEATURE}); re-download the "
                                     "dataset's data/ folder")
        for row in _rows_of_parquet(path, ["episode_index", "frame_index", SUCCESS_FEATURE]):
            index = int(row["episode_index"])
            if index not in wanted:
                continue
            value = row[SUCCESS_FEATURE]
            flag = bool(value[0] if isinstance(value, list) and value else value)
            frame = int(row["frame_index"])
            if index not in last or frame > last[index][0]:
                last[index] = (frame, flag)
    missing = sorted(wanted - set(last))
    if missing:
        raise LeRobotFormatError(f"{info.root}: episode(s) {', '.join(map(str, missing[:10]))} have no rows in their "
                                 f"data files, so {SUCCESS_FEATURE} is unknown; re-download the data/ folder")
    return {index: flag for index, (_, flag) in last.items()}


def metadata_fingerprint(info: DatasetInfo) -> str:
    """A digest of the dataset's ``meta/`` files: what identifies a local dataset's version (no hub commit)."""
    digest = hashlib.sha256()
    meta = os.path.join(info.root, "meta")
    for path in sorted(glob.glob(os.path.join(meta, "**", "*"), recursive=True)):
        if os.path.isfile(path):
            digest.update(os.path.relpath(path, meta).encode("utf-8") + b"\x00")
            digest.update(bytes.fromhex(file_digest(path)))
    return digest.hexdigest()[:16]
