"""Writing a LeRobot dataset's episodes as a local copy in the benchmark layout, with its provenance.

The copy is what ``data=<DIR>`` reads: ``DIR/test/metadata.jsonl`` and ``DIR/test/<subset>/<name>.mp4``, one
H.264 yuv420p mp4 per episode (the episode's frames at its fps, :mod:`~helm_roboreward.robot_data.episode_clips`),
named ``episode_<index>.mp4`` (a prefix clip ``episode_<index>_upto_<end>.mp4``): no name carries a label.
``DIR/roboreward_import.json`` records the source (path or hub id, requested and resolved revision), the camera,
the label source (and whether it is coarse), the encoder, when it was made, and per row the episode, its time
span in the source video and its file.

Nothing half-written is left: the copy is built in a sibling folder ``DIR.partial-<pid>`` and renamed into place at
the end; any failure removes it, and one left by a killed import (its process gone) is removed by the next. An
existing ``DIR`` is reused when it holds the same import (same source, camera, subset, episodes, labels and
encoding) and refused otherwise. ``DIR`` may not be a link, nor lie inside the source dataset.
"""

import datetime
import glob
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import av
from tqdm import tqdm

from helm_roboreward.protocol.published import IMPORT_RECORD
from helm_roboreward.protocol.rules import ALL_KNOWN_SUBSETS, METADATA_FILE, MIN_SCORE, TEST_SPLIT
from helm_roboreward.protocol.safe_files import file_digest, is_inside, write_atomically
from helm_roboreward.protocol.validation import task_problem
from helm_roboreward.robot_data.episode_clips import (
    DEFAULT_CRF,
    ENCODER,
    PIXEL_FORMAT,
    PRESET,
    ClipTarget,
    cut_episode,
    open_video,
)
from helm_roboreward.robot_data.labels import (
    LABEL_SOURCES,
    ImportRequestError,
    Label,
    check_label_episodes,
    read_labels,
    select_episodes,
    success_labels,
)
from helm_roboreward.robot_data.lerobot_episodes import check_spans, read_episodes, read_success_flags
from helm_roboreward.robot_data.lerobot_format import (
    SUCCESS_FEATURE,
    Camera,
    DatasetInfo,
    Episode,
    LeRobotFormatError,
    choose_camera,
    dataset_file,
    link_root,
    read_info,
)
from helm_roboreward.robot_data.progress import anchor_end_frames

PROVENANCE_FILE = IMPORT_RECORD
IMPORT_FORMAT = "roboreward-lerobot-import-1"
"""Changes when the copy's layout or provenance fields change (an older copy is then re-made, not reused)."""
PLACEHOLDER_GOLD_SCORE = MIN_SCORE
"""The gold score every row of an unlabelled copy carries (the layout needs one); never shown to a model."""
MAX_CRF = 51
"""x264's worst quality for 8-bit video (0 is lossless)."""
_SUBSET_CHARACTERS = re.compile(r"[^a-z0-9_]+")


@dataclass(frozen=True)
class ImportRequest:
    """What to import, from where, into where."""

    root: str
    """The dataset's local root (for a hub dataset: its downloaded snapshot)."""

    out: str
    source: dict[str, str]
    """Where the dataset came from: ``{"kind": "local", "path": ...}`` or ``{"kind": "hub", "repo_id", ...}``."""

    camera: str | None = None
    subset: str | None = None
    episodes: str | None = None
    labels_file: str | None = None
    labels_from: str | None = None
    placeholder_labels: bool = False
    """No labels: every row gets :data:`PLACEHOLDER_GOLD_SCORE` (``roboreward label``'s working copy)."""

    anchors: int = 0
    """0: one clip per episode; K: the K prefix clips ``[0, t_k]`` of each (the last is the episode)."""

    crf: int = DEFAULT_CRF


@dataclass(frozen=True)
class CopyRow:
    """One row of the copy: a clip of one episode."""

    file_name: str
    episode_index: int
    end_frame: int
    """Frames ``[0, end_frame)`` of the episode; ``end_frame == length`` for the whole episode."""

    length: int
    task: str
    gold_score: int


@dataclass
class ImportResult:
    """What an import wrote (or found already written)."""

    out: str
    subset: str
    rows: list[CopyRow]
    provenance: dict[str, Any]
    reused: bool
    seconds: float = 0.0
    episodes: list[Episode] = field(default_factory=list)


def default_subset(name: str) -> str:
    """A subset id from a dataset name: lower case, ``[a-z0-9_]`` (``lerobot/Aloha-Sim`` -> ``aloha_sim``)."""
    slug = _SUBSET_CHARACTERS.sub("_", name.rsplit("/", 1)[-1].lower()).strip("_")
    return slug or "lerobot"


def check_subset(subset: str) -> str:
    """A subset id for the copy: a plain folder name, not one of the benchmark's own subsets.

    Raises:
        ImportRequestError: The name is not ``[A-Za-z0-9][A-Za-z0-9_.-]*`` or is an official / sample subset id.
    """
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]*", subset):
        raise ImportRequestError(f"--subset {subset!r}: use letters, digits, '_', '.', '-' (a folder name)")
    if subset in ALL_KNOWN_SUBSETS:
        raise ImportRequestError(f"--subset {subset!r} is a RoboRewardBench subset; your data would be shown as "
                                 f"{ALL_KNOWN_SUBSETS[subset].display_name}. Choose another name")
    return subset


def plan_import(request: ImportRequest, ensure_files: Callable[[list[str]], None] | None = None,
                ) -> tuple[DatasetInfo, Camera, list[Episode], dict[int, Label], str]:
    """Read the dataset, pick the camera and episodes, and find each episode's label (nothing is written).

    ``ensure_files`` is called with the data files ``--labels-from next.success`` reads, before reading them.

    Raises:
        LeRobotFormatError, ImportRequestError: See :mod:`~helm_roboreward.robot_data.lerobot_format` and
            :mod:`~helm_roboreward.robot_data.labels`.
    """
    if not 0 <= request.crf <= MAX_CRF:
        raise ImportRequestError(f"--crf {request.crf}: x264's quality runs from 0 (lossless) to {MAX_CRF} (worst); "
                                 f"{DEFAULT_CRF}, the default, is visually lossless")
    info = read_info(request.root)
    camera = choose_camera(info, request.camera)
    dataset = read_episodes(info, camera)
    where = describe_source(request.source)
    subset = check_subset(request.subset or default_subset(request.source.get("repo_id") or request.root))
    if request.labels_file:
        labels = read_labels(request.labels_file)
        # With a labels file and no --episodes, the labelled episodes are imported.
        selection = request.episodes or ",".join(str(index) for index in sorted(labels) if index >= 0)
        check_label_episodes(labels, dataset, [], request.labels_file, where)
        selected = select_episodes(dataset, selection, where)
        check_label_episodes(labels, dataset, selected, request.labels_file, where)
        check_spans(selected, camera.fps)
        return info, camera, selected, labels, subset
    selected = select_episodes(dataset, request.episodes, where)
    check_spans(selected, camera.fps)
    if request.labels_from:
        if request.labels_from not in LABEL_SOURCES:
            raise ImportRequestError(f"--labels-from {request.labels_from!r}: only {SUCCESS_FEATURE} is known")
        if ensure_files is not None:
            ensure_files(sorted({episode.data_file for episode in selected}))
        return info, camera, selected, success_labels(read_success_flags(info, selected)), subset
    if request.placeholder_labels:
        return info, camera, selected, {e.index: Label(e.index, PLACEHOLDER_GOLD_SCORE) for e in selected}, subset
    raise ImportRequestError("give the labels: --labels FILE (episode_index, reward 1..5[, task]) or --labels-from "
                             f"{SUCCESS_FEATURE}; to score unlabelled episodes with a model, use `roboreward label`")


def describe_source(source: dict[str, str]) -> str:
    """``org/name@rev`` for a hub dataset, the folder for a local one (for messages)."""
    if source.get("kind") == "hub":
        return f"{source['repo_id']}@{source.get('revision', 'main')}"
    return source.get("path", "the dataset")


def copy_rows(episodes: Sequence[Episode], labels: dict[int, Label], subset: str, anchors: int) -> list[CopyRow]:
    """The rows of the copy, in episode order (prefix clips before their whole episode).

    Raises:
        ImportRequestError: An episode's task (the labels file's, else the dataset's) is not a task the benchmark reads
            (:func:`~helm_roboreward.protocol.validation.task_problem`, the rule ``roboreward prepare`` applies).
    """
    rows: list[CopyRow] = []
    for episode in episodes:
        label = labels[episode.index]
        task = label.task or "; ".join(episode.tasks)
        problem = "the episode metadata gives no task" if not task else task_problem(task)
        if problem:
            raise ImportRequestError(f"{episode.where}, field 'tasks': {problem}; give its task in a labels file "
                                     "(column 'task'), or leave the episode out with --episodes")
        ends = anchor_end_frames(episode.length, anchors) if anchors else [episode.length]
        for end in ends:
            suffix = "" if end == episode.length else f"_upto_{end:06d}"
            rows.append(CopyRow(f"{subset}/episode_{episode.index:06d}{suffix}.mp4", episode.index, end,
                                episode.length, task, label.gold_score))
    return rows


def import_key(request: ImportRequest, camera: Camera, rows: Sequence[CopyRow], subset: str) -> str:
    """What identifies an import: two imports with the same key write the same copy."""
    payload = {
        "format": IMPORT_FORMAT, "source": {k: v for k, v in request.source.items() if k != "revision"},
        "camera": camera.key, "subset": subset, "crf": request.crf, "labels_from": request.labels_from,
        "placeholder": request.placeholder_labels,
        "rows": [[row.file_name, row.episode_index, row.end_frame, row.task, row.gold_score] for row in rows],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def existing_import(out: str) -> dict[str, Any] | None:
    """The provenance of the import in ``out`` (None: no folder, or an empty one).

    Raises:
        ImportRequestError: ``out`` is a file, or a non-empty folder that holds no import.
    """
    if not os.path.exists(out):
        return None
    if not os.path.isdir(out):
        raise ImportRequestError(f"--out {out}: is a file; give a folder for the copy")
    if not os.listdir(out):
        return None
    path = os.path.join(out, PROVENANCE_FILE)
    try:
        with open(path, encoding="utf-8") as handle:
            record = json.load(handle)
    except (OSError, json.JSONDecodeError):
        raise ImportRequestError(f"--out {out}: the folder is not empty and holds no import ({PROVENANCE_FILE}); "
                                 "give a new or empty folder") from None
    return record if isinstance(record, dict) else {}


def import_lerobot(request: ImportRequest, ensure_files: Callable[[list[str]], None] | None = None,
                   progress: bool = True) -> ImportResult:
    """Import a LeRobot dataset's episodes as a local benchmark copy in ``request.out``.

    Args:
        request: What to import.
        ensure_files: Called with the dataset-relative files the import will read (a hub dataset downloads them).
        progress: Show a progress bar over episodes.

    Raises:
        LeRobotFormatError, ImportRequestError: Bad data, labels or options; nothing is written.
    """
    started = time.monotonic()
    out = os.path.abspath(request.out)
    check_out(out, request)
    info, camera, episodes, labels, subset = plan_import(request, ensure_files)
    rows = copy_rows(episodes, labels, subset, request.anchors)
    key = import_key(request, camera, rows, subset)
    existing = existing_import(out)
    if existing is not None:
        if existing.get("import_key") == key:
            return ImportResult(out, subset, rows, existing, reused=True, episodes=episodes)
        # An unlabelled working copy (roboreward label's) is the command's own: another mode or selection replaces it.
        if not (request.placeholder_labels and (existing.get("labels") or {}).get("source") == "placeholder"):
            raise ImportRequestError(_different_import(out, existing, request, camera, subset))
    if ensure_files is not None:
        ensure_files(sorted({episode.video_file for episode in episodes}))
    remove_abandoned_copies(out)
    staging = f"{out}{PARTIAL}{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        spans = _write_clips(info, camera, episodes, rows, staging, request.crf, progress)
        provenance = _provenance(request, info, camera, subset, rows, spans, key, episodes)
        _write_metadata(staging, rows, request.placeholder_labels)
        write_atomically(os.path.join(staging, PROVENANCE_FILE),
                         (json.dumps(provenance, indent=2, sort_keys=True, allow_nan=False) + "\n").encode("utf-8"))
        if existing is not None:
            shutil.rmtree(out)  # a working copy being replaced
        elif os.path.isdir(out):
            os.rmdir(out)  # empty (checked above)
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
        os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ImportResult(out, subset, rows, provenance, reused=False, seconds=time.monotonic() - started,
                        episodes=episodes)


PARTIAL = ".partial-"


def check_out(out: str, request: ImportRequest) -> None:
    """``--out`` may be a new folder, an empty one or an earlier import; never a link, nor inside the source.

    The copy is renamed into place at the end, so a link there would fail only after every episode was encoded.

    Raises:
        ImportRequestError: ``out`` is a link (or a dangling one), or lies inside the source dataset.
    """
    if os.path.islink(out):
        target = os.readlink(out)
        state = "" if os.path.exists(out) else ", which does not exist"
        raise ImportRequestError(f"--out {out} is a link (to {target}{state}); the copy is renamed into place, so "
                                 "give the real path of the folder, or remove the link")
    for root in {request.root, link_root(request.root)}:
        if is_inside(out, root):
            raise ImportRequestError(f"--out {out} lies inside the source dataset {os.path.realpath(root)}; the "
                                     "source is never written to: give a folder outside it")


def remove_abandoned_copies(out: str) -> list[str]:
    """Remove the ``<out>.partial-<pid>`` folders of imports whose process is gone (killed); returns them.

    A folder whose process still runs (another import into the same ``out``) is left alone.
    """
    removed = []
    for path in glob.glob(glob.escape(out) + PARTIAL + "*"):
        pid = path[len(out) + len(PARTIAL):]
        if not pid.isdigit() or pid == str(os.getpid()) or _process_exists(int(pid)):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _different_import(out: str, existing: dict[str, Any], request: ImportRequest, camera: Camera,
                      subset: str) -> str:
    source = existing.get("source") or {}
    found = (f"{describe_source(source)}, camera {existing.get('camera', {}).get('key', '?')}, subset "
             f"{existing.get('subset', '?')}, {len(existing.get('rows') or [])} rows")
    wanted = f"{describe_source(request.source)}, camera {camera.key}, subset {subset}"
    return (f"--out {out} already holds a different import ({found}; {PROVENANCE_FILE}); this one is {wanted} "
            "(or other episodes, labels or settings). Give another --out, or delete the folder to replace it")


def _write_clips(info: DatasetInfo, camera: Camera, episodes: Sequence[Episode], rows: Sequence[CopyRow],
                 staging: str, crf: int, progress: bool) -> dict[int, dict[str, Any]]:
    split = os.path.join(staging, TEST_SPLIT)
    targets: dict[int, list[ClipTarget]] = {}
    for row in rows:
        path = os.path.join(split, *row.file_name.split("/"))
        targets.setdefault(row.episode_index, []).append(ClipTarget(path, row.end_frame))
    os.makedirs(os.path.dirname(next(iter(targets.values()))[0].path), exist_ok=True)
    spans: dict[int, dict[str, Any]] = {}
    by_file: dict[str, list[Episode]] = {}
    for episode in episodes:
        by_file.setdefault(episode.video_file, []).append(episode)
    with tqdm(total=len(episodes), desc="importing episodes", unit="episode", disable=not progress) as bar:
        for relative, group in by_file.items():
            source = dataset_file(info, relative)
            container = _open(source, group[0])
            try:
                for episode in sorted(group, key=lambda item: item.from_timestamp):
                    cut = cut_episode(source, episode, camera.fps, targets[episode.index], crf, container)
                    spans[episode.index] = {"first_frame_time": cut.first_time, "last_frame_time": cut.last_time}
                    bar.update(1)
            finally:
                if container is not None:
                    container.close()
    return spans


def _open(source: str, episode: Episode) -> "av.container.InputContainer | None":
    if not os.path.isfile(source):
        return None  # cut_episode names the missing file
    try:
        return open_video(source)
    except av.FFmpegError as error:
        raise LeRobotFormatError(f"{source}, episode {episode.index}: the video cannot be opened ({error}); "
                                 "re-download it, or leave its episodes out with --episodes") from None


def _write_metadata(staging: str, rows: Sequence[CopyRow], placeholder: bool) -> None:
    lines = []
    for row in rows:
        record: dict[str, Any] = {"file_name": row.file_name, "task": row.task, "reward": row.gold_score}
        if placeholder:
            record["reward_is_placeholder"] = True
        lines.append(json.dumps(record, ensure_ascii=False))
    write_atomically(os.path.join(staging, TEST_SPLIT, METADATA_FILE), ("\n".join(lines) + "\n").encode("utf-8"))


def _labels_record(request: ImportRequest) -> dict[str, Any]:
    if request.labels_file:
        return {"source": "file", "file": os.path.abspath(request.labels_file),
                "file_sha256": file_digest(request.labels_file), "coarse": False}
    if request.labels_from:
        return {"source": request.labels_from, "coarse": True,
                "note": f"coarse: 5 when the episode's last frame has {SUCCESS_FEATURE} true, else 1 (never 2..4)"}
    return {"source": "placeholder", "coarse": False, "placeholder_reward": PLACEHOLDER_GOLD_SCORE,
            "note": "unlabelled: every gold score is a placeholder, so any MAE or other statistic against the gold "
                    "scores of a run on this copy is meaningless"}


def _provenance(request: ImportRequest, info: DatasetInfo, camera: Camera, subset: str, rows: Sequence[CopyRow],
                spans: dict[int, dict[str, Any]], key: str, imported: Sequence[Episode]) -> dict[str, Any]:
    episodes = {episode.index: episode for episode in imported}
    return {
        "format": IMPORT_FORMAT,
        "import_key": key,
        "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "source": {**request.source, "codebase_version": info.codebase_version},
        "camera": {"key": camera.key, "codec": camera.codec, "fps": camera.fps, "width": camera.width,
                   "height": camera.height},
        "subset": subset,
        "labels": _labels_record(request),
        "encoding": {"encoder": ENCODER, "codec": "h264", "pix_fmt": PIXEL_FORMAT, "crf": request.crf,
                     "preset": PRESET, "fps": camera.fps},
        "anchors": request.anchors,
        "rows": [{
            "file_name": row.file_name, "episode_index": row.episode_index, "end_frame": row.end_frame,
            "length": row.length, "task": row.task, "reward": row.gold_score,
            "source_video": episodes[row.episode_index].video_file,
            "from_timestamp": episodes[row.episode_index].from_timestamp,
            "to_timestamp": episodes[row.episode_index].to_timestamp,
            "first_frame_index": episodes[row.episode_index].first_frame_index,
            **spans[row.episode_index],
        } for row in rows],
    }
