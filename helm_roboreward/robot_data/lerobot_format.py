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
This module reads ``info.json``, its cameras and path templates; :mod:`~helm_roboreward.robot_data.lerobot_episodes`
reads the episodes.
"""

import dataclasses
import glob
import hashlib
import json
import os
from collections.abc import Sequence
from typing import Any

import pyarrow.parquet as pq

from helm_roboreward.protocol.rows import DataError
from helm_roboreward.protocol.safe_files import UnsafePathError, file_digest, is_inside, relative_parts
from helm_roboreward.protocol.validation import frame_rate_problem, integer_value

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
    """Its task texts (empty: the metadata gives none; a labels file may give it)."""

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

    where: str = ""
    """Where its metadata is (``<file>, episode N`` or ``<file>, line N``), for messages."""


@dataclasses.dataclass(frozen=True)
class DatasetInfo:
    """``meta/info.json`` of one dataset, checked."""

    root: str
    codebase_version: str
    fps: float
    features: dict[str, Any]
    raw: dict[str, Any]
    link_root: str = ""
    """Where a link among its files may lead (the root itself; a hub snapshot: the repository's cache folder,
    whose ``blobs/`` hold the files its snapshot links to)."""

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
        """The camera of a video feature (its ``info`` block; v2.0 calls it ``video_info``).

        Raises:
            LeRobotFormatError: Its size or frame rate is not a number.
        """
        feature = self.features[key]
        details = feature.get("info") or feature.get("video_info") or {}
        where = f"{self.info_path}, feature {key!r}"
        try:
            shape = [integer_value(value) for value in list(feature.get("shape") or [0, 0, 0])]
            names = list(feature.get("names") or [])
            height, width = (shape[1], shape[2]) if names[:1] in (["channels"], ["channel"]) else (shape[0], shape[1])
            width, height = (integer_value(details.get("video.width", width)),
                             integer_value(details.get("video.height", height)))
        except (ValueError, IndexError, TypeError) as problem:
            raise LeRobotFormatError(f"{where}: its frame size (shape, video.width, video.height) is not a pair of "
                                     f"integers ({problem}); re-download meta/info.json") from None
        fps = details.get("video.fps", self.fps)
        rate_problem = frame_rate_problem(fps)
        if rate_problem:
            raise LeRobotFormatError(f"{where}, field 'video.fps': {rate_problem}; re-download meta/info.json")
        return Camera(key=key, width=width, height=height, codec=str(details.get("video.codec", "unknown")),
                      fps=float(fps), is_depth_map=bool(details.get("video.is_depth_map", False)))


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


def link_root(root: str) -> str:
    """Where links among a dataset's files may lead: its root, or the repository's cache folder for a snapshot.

    A ``huggingface_hub`` snapshot is ``<repository>/snapshots/<commit>`` beside ``<repository>/blobs``; its files
    are links into those blobs.
    """
    root = os.path.abspath(root)
    snapshots = os.path.dirname(root)
    repository = os.path.dirname(snapshots)
    if os.path.basename(snapshots) == "snapshots" and os.path.isdir(os.path.join(repository, "blobs")):
        return repository
    return root


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
    problem = frame_rate_problem(fps)
    if problem or not isinstance(fps, (int, float)):
        raise LeRobotFormatError(f"{path}, field 'fps': {problem}")
    for template in ("video_path", "data_path"):
        if not isinstance(info.get(template), str):
            raise LeRobotFormatError(f"{path}, field {template!r}: missing; LeRobot writes a path template there")
    return DatasetInfo(root=os.path.abspath(root), codebase_version=str(version), fps=float(fps),
                       features=features, raw=info, link_root=link_root(root))


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


def rows_of_parquet(path: str, columns: Sequence[str], optional: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The rows of a parquet file: ``columns`` (each required) and those of ``optional`` it has."""
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


def _relative(info: DatasetInfo, template_field: str, relative: str, what: str) -> str:
    """A path a template gave, refused unless it is plain and relative.

    LeRobot's templates name files under the dataset root; an absolute path or ``..`` could read any file of the
    machine into the copy.
    """
    try:
        relative_parts(relative, what)
    except UnsafePathError:
        kind = "is absolute" if relative.startswith("/") else "leads out of the dataset folder"
        raise LeRobotFormatError(f"{info.info_path}, field {template_field!r}: the {what} path {relative!r} {kind}; "
                                 "LeRobot's path templates name files under the dataset root (e.g. "
                                 "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4)") from None
    return relative


def dataset_file(info: DatasetInfo, relative: str) -> str:
    """The absolute path of a dataset file (``relative``: checked by the template rule), before it is read.

    The path is checked where it sits under the root, not where links lead: a hub snapshot's files are links into
    its repository's ``blobs/`` (``huggingface_hub``'s cache). A link (of the file or a folder above it) is
    followed only when it leads inside :attr:`DatasetInfo.link_root`.

    Raises:
        LeRobotFormatError: The path, with its links followed, leaves :attr:`DatasetInfo.link_root`.
    """
    path = os.path.join(info.root, *relative.split("/"))
    if os.path.lexists(path) and not is_inside(path, info.link_root):
        raise LeRobotFormatError(f"{path}: a link to {os.path.realpath(path)}, outside the dataset folder "
                                 f"{info.link_root}; replace the link with the file itself")
    return path


def format_path(info: DatasetInfo, template_field: str, what: str, **values: Any) -> str:
    """A path template of ``info.json`` filled in, refused unless it names a file under the root."""
    template = str(info.raw[template_field])
    try:
        relative = template.format(**values)
    except (KeyError, IndexError, ValueError) as error:
        raise LeRobotFormatError(f"{info.info_path}, field {template_field!r}: "
                                 f"{template!r} cannot be filled ({error})") from None
    return _relative(info, template_field, relative, what)


def metadata_fingerprint(info: DatasetInfo) -> str:
    """A digest of the dataset's ``meta/`` files: what identifies a local dataset's version (no hub commit)."""
    digest = hashlib.sha256()
    meta = os.path.join(info.root, "meta")
    for path in sorted(glob.glob(os.path.join(meta, "**", "*"), recursive=True)):
        if os.path.isfile(path):
            digest.update(os.path.relpath(path, meta).encode("utf-8") + b"\x00")
            digest.update(bytes.fromhex(file_digest(path)))
    return digest.hexdigest()[:16]
