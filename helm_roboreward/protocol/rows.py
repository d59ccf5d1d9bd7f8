"""Benchmark rows from ``<root>/test/metadata.jsonl``, validated (docs/data.md), with kind, episode and cluster.

Plain metadata is read fast; anything else goes through the full rules, and each problem says where it is and
how to fix it. Clusters (rows sharing a name key or identical video bytes) serve the audit and the bootstrap.
"""

import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from helm_roboreward.protocol.rules import (
    ALL_KNOWN_SUBSETS,
    MAX_SCORE,
    METADATA_FILE,
    MIN_SCORE,
    TEST_SPLIT,
    subset_info,
)
from helm_roboreward.protocol.validation import gold_score_value, jsonl_lines, task_problem

NATURAL, CLIP, COUNTERFACTUAL, ORIGINAL = "natural", "clip", "counterfactual", "original"
KINDS = (NATURAL, CLIP, COUNTERFACTUAL, ORIGINAL)
"""Augmentation kinds (docs/protocol.md, section 1); the dataset has no field for them, they are inferred."""

JSON_WHITESPACE = " \t\r"  # what may surround a JSON value on one line (RFC 8259)
# Plain values, which the full rules (checked_rows below) accept too: a simple relative path, a visible ASCII task.
_PLAIN_FILE_NAME = re.compile(r"[\w-][\w.-]*(?:/[\w-][\w.-]*)+")
_VISIBLE_ASCII = re.compile(r"[!-~]")

_VALIDATED: dict[tuple[str, bool], tuple[bytes, tuple["MetadataRow", ...]]] = {}  # by file: (SHA-256, rows)

# What a file stem says (docs/protocol.md, "File names"): its episode and cluster, a clip's gold score, a duplicate.
CLIP_NAME = re.compile(r"^(?P<episode>.+)_attempt_(?P<attempt>\d+)_score_(?P<score>\d+)$")
ARENA_NAME = re.compile(r"^(?P<session>.+)_(?P<rollout>[A-Z])_(?P<view>left|right)$")
CAMERA_VIEW = re.compile(r"^(?P<episode>.+)_(?P<view>left|right)$")
OXE_EPISODE_NAME = re.compile(r"^(?P<episode>.+_originalsplit_[A-Za-z]+_index_\d+)(?:_(?P<duplicate>\d+))?$")


def clip_name_score(stem: str) -> int | None:
    """The ``k`` of a clip name ``..._attempt_<m>_score_<k>``, or None for any other name."""
    clip = CLIP_NAME.match(stem)
    return int(clip.group("score")) if clip else None


def episode_of(stem: str, natural: bool) -> str:
    """The source episode a file stem belongs to."""
    if natural:  # <name>_<left|right> is the episode <name> (RoboArena: <uuid>_<letter>)
        view = CAMERA_VIEW.match(stem)
        return view.group("episode") if view else stem
    clip = CLIP_NAME.match(stem)
    base = clip.group("episode") if clip else stem
    episode = OXE_EPISODE_NAME.match(base)
    return episode.group("episode") if episode else base


def cluster_of(stem: str, natural: bool) -> str:
    """The bootstrap cluster of a file stem by its name: a RoboArena session, else its episode."""
    arena = ARENA_NAME.match(stem) if natural else None
    return arena.group("session") if arena else episode_of(stem, natural)


class DataError(ValueError):
    """A problem with the benchmark data that the user must fix; the message says where and how."""


@dataclass(frozen=True)
class MetadataRow:
    """One validated line of ``metadata.jsonl``."""

    line: int  # 1-based
    file_name: str  # relative to the split folder: <subset>/<name>.mp4
    task: str
    gold_score: int

    @property
    def subset(self) -> str:
        """The first path component of ``file_name``."""
        return self.file_name.split("/", 1)[0]

    @property
    def stem(self) -> str:
        """The file name without folders and extension."""
        return os.path.splitext(self.file_name.rsplit("/", 1)[-1])[0]


@dataclass(frozen=True)
class Rollout:
    """A benchmark row whose video was found: everything needed to build an instance."""

    row: MetadataRow
    video_path: str  # absolute
    kind: str  # one of KINDS
    episode: str  # episode_key
    robot: str
    cluster: str = ""  # cluster_key


def infer_kind(row: MetadataRow) -> str:
    """The augmentation kind of a row (docs/protocol.md, section 1; unknown subsets: docs/data.md)."""
    clip = CLIP_NAME.match(row.stem)
    unknown_name = row.subset not in ALL_KNOWN_SUBSETS and not (clip or OXE_EPISODE_NAME.match(row.stem))
    if subset_info(row.subset).natural or unknown_name:
        return NATURAL
    if clip:
        return CLIP
    return COUNTERFACTUAL if row.gold_score < MAX_SCORE else ORIGINAL


def episode_key(row: MetadataRow) -> str:
    """The source-episode key, ``<subset>/<episode>`` (rules: :func:`episode_of`)."""
    return f"{row.subset}/{episode_of(row.stem, subset_info(row.subset).natural)}"


def cluster_key(row: MetadataRow) -> str:
    """The bootstrap cluster key by name, ``<subset>/<key>``: a RoboArena session, else the episode."""
    return f"{row.subset}/{cluster_of(row.stem, subset_info(row.subset).natural)}"


def clip_name_score_matches(row: MetadataRow) -> bool:
    """Whether a row is no temporal clip, or one whose name's score is its gold score (else: a data error)."""
    return infer_kind(row) != CLIP or clip_name_score(row.stem) == row.gold_score


def metadata_path(root: str) -> str:
    """The metadata file of the test split under a data root."""
    return os.path.join(root, TEST_SPLIT, METADATA_FILE)


def read_metadata(path: str, check_clip_name_scores: bool = True) -> list[MetadataRow]:
    """The validated rows of ``metadata.jsonl`` in file order; ``check_clip_name_scores=False``: for ``audit``."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except (OSError, ValueError) as error:  # ValueError: a NUL in the path
        raise DataError(unreadable_metadata(path, error)) from None
    key, digest = (path, check_clip_name_scores), hashlib.sha256(raw).digest()
    if key in _VALIDATED and _VALIDATED[key][0] == digest:  # one helm-run reads it once per subset entry
        return list(_VALIDATED[key][1])
    rows = _plain_rows(raw, check_clip_name_scores)
    if rows is None:  # not plain, maybe invalid: the full rules decide, and list every problem
        rows = checked_rows(path, raw, check_clip_name_scores)
    _VALIDATED[key] = (digest, tuple(rows))
    return rows


def _plain_rows(raw: bytes, check_clip_name_scores: bool) -> list[MetadataRow] | None:
    """The rows when there are some and each is plain and valid (as in the real split), else None."""
    try:
        lines = raw.decode("utf-8-sig").split("\n")  # as jsonl_lines: a line's final "\r" is JSON whitespace
        rows = [_plain_row(line, number) for number, line in enumerate(lines, start=1) if line.strip(JSON_WHITESPACE)]
    except (ValueError, AttributeError):  # not UTF-8, not JSON, not a JSON object (no .get) or not plain
        return None
    distinct = len({row.file_name for row in rows}) == len(rows) > 0
    return rows if distinct and (not check_clip_name_scores or all(map(clip_name_score_matches, rows))) else None


def _plain_row(line: str, number: int) -> MetadataRow:
    record = json.loads(line)
    file_name, task, gold_score = record.get("file_name"), record.get("task"), record.get("reward")
    if (isinstance(file_name, str) and _PLAIN_FILE_NAME.fullmatch(file_name) and isinstance(task, str)
            and _VISIBLE_ASCII.search(task) and type(gold_score) is int and MIN_SCORE <= gold_score <= MAX_SCORE):
        return MetadataRow(line=number, file_name=file_name, task=task, gold_score=gold_score)
    raise ValueError("not a plain row")


def select_rows(rows: Sequence[MetadataRow], subsets: Sequence[str] | None, source: str) -> list[MetadataRow]:
    """The rows of the requested subsets (all when ``subsets`` is None); an unknown subset is a :class:`DataError`."""
    if subsets is None:
        return list(rows)
    wanted = set(subsets)
    if not wanted <= {row.subset for row in rows}:
        raise DataError(missing_subsets(rows, subsets, source))
    return [row for row in rows if row.subset in wanted]


def locate_video(split_dir: str, row: MetadataRow, trusted_root: str | None = None) -> str:
    """The real path of a row's video: an existing, non-empty regular file inside ``trusted_root or split_dir``."""
    real = os.path.realpath(os.path.join(split_dir, *row.file_name.split("/")))
    root = os.path.realpath(trusted_root or split_dir)
    if os.path.commonpath([real, root]) != root or not os.path.isfile(real) or os.path.getsize(real) == 0:
        raise DataError(video_problem(split_dir, row, root))
    return real


def collect_rollouts(root: str, subsets: Sequence[str] | None, source: str,
                     trusted_root: str | None = None) -> tuple[list[Rollout], list[str]]:
    """The rollouts whose video was found, and one message per row whose video was not (``source``: for messages)."""
    split_dir = os.path.join(root, TEST_SPLIT)
    rows = select_rows(read_metadata(metadata_path(root)), subsets, source)
    rollouts, problems = [], []
    for row in rows:
        try:
            path = locate_video(split_dir, row, trusted_root)
        except DataError as problem:
            problems.append(str(problem))
            continue
        rollouts.append(Rollout(row=row, video_path=path, kind=infer_kind(row), episode=episode_key(row),
                                robot=subset_info(row.subset).robot, cluster=cluster_key(row)))
    return rollouts, problems


def load_rollouts(root: str, subsets: Sequence[str] | None, source: str,
                  trusted_root: str | None = None) -> list[Rollout]:
    """Like :func:`collect_rollouts`, but any missing or unusable video is a :class:`DataError`."""
    rollouts, problems = collect_rollouts(root, subsets, source, trusted_root)
    if problems:
        raise DataError(listing(f"{len(problems)} video problem(s) in {source}:", problems))
    return rollouts


def cluster_numbers(keys: Sequence[str], video_hashes: Sequence[str]) -> list[int]:
    """Cluster number of each row: rows sharing a non-empty key or video hash are one cluster (docs/data.md)."""
    parent = list(range(len(keys)))

    def root(item: int) -> int:
        while parent[item] != item:
            parent[item] = parent[parent[item]]  # path halving
            item = parent[item]
        return item

    for values in (keys, video_hashes):
        first_row: dict[str, int] = {}
        for row, value in enumerate(values):
            if value:
                parent[root(row)] = root(first_row.setdefault(value, row))
    numbers: dict[int, int] = {}
    return [numbers.setdefault(root(row), len(numbers)) for row in range(len(parent))]


MAX_REPORTED_PROBLEMS = 20


def checked_rows(path: str, raw: bytes, check_clip_name_scores: bool) -> list[MetadataRow]:
    """The rows of the metadata ``raw`` (read from ``path``) by the full rules; a :class:`DataError` lists the bad."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        bad_line = raw[: error.start].count(b"\n") + 1
        raise DataError(f"{path}, line {bad_line}: not valid UTF-8 ({error.reason} at byte {error.start}). "
                        "Re-download the metadata or re-save it as UTF-8.") from None
    rows: list[MetadataRow] = []
    problems: list[str] = []
    first_line_of: dict[str, int] = {}
    for number, line in enumerate(jsonl_lines(text), start=1):
        if not line.strip(JSON_WHITESPACE):
            continue
        try:
            row = _parse_row(line, number)
        except DataError as problem:
            problems.append(str(problem))
            continue
        if row.file_name in first_line_of:
            problems.append(
                f"line {number}, field 'file_name': {row.file_name!r} already appears on line "
                f"{first_line_of[row.file_name]}; every row needs its own video file"
            )
            continue
        first_line_of[row.file_name] = number
        mismatch = clip_name_score_problem(row) if check_clip_name_scores else None
        if mismatch:
            problems.append(mismatch)
            continue
        rows.append(row)
    if problems:
        raise DataError(listing(f"{path}: {len(problems)} invalid row(s); fix or re-download the metadata file:",
                                problems, "  "))
    if not rows:
        raise DataError(f"{path}: no rows. The metadata file is empty; re-download the dataset.")
    return rows


def _parse_row(line: str, number: int) -> MetadataRow:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise DataError(f"line {number}: not valid JSON ({error.msg}: column {error.colno})") from None
    if not isinstance(record, dict):
        raise DataError(f"line {number}: expected a JSON object, got {type(record).__name__}")
    for field in ("file_name", "task", "reward"):
        if field not in record:
            raise DataError(f"line {number}, field {field!r}: missing")
    file_name, task, gold_score = record["file_name"], record["task"], record["reward"]
    if not isinstance(file_name, str):
        raise DataError(f"line {number}, field 'file_name': expected a string, got {type(file_name).__name__}")
    _check_file_name(file_name, number)
    problem = task_problem(task)  # the rules import-lerobot and label apply too
    if problem:
        raise DataError(f"line {number}, field 'task': {problem}")
    try:
        gold_score = gold_score_value(gold_score)
    except ValueError as error:
        raise DataError(f"line {number}, field 'reward': {error}") from None
    return MetadataRow(line=number, file_name=file_name, task=task, gold_score=gold_score)


def _check_file_name(file_name: str, number: int) -> None:
    where = f"line {number}, field 'file_name'"
    if file_name.startswith("/") or "\\" in file_name or re.match(r"^[A-Za-z]:", file_name):
        raise DataError(f"{where}: {file_name!r} must be a relative path '<subset>/<name>.mp4'")
    parts = file_name.split("/")
    if len(parts) < 2 or any(part in ("", ".", "..") for part in parts):
        raise DataError(f"{where}: {file_name!r} must be '<subset>/<name>.mp4' inside the split folder "
                        "(no empty, '.' or '..' components)")
    if "\x00" in file_name:
        raise DataError(f"{where}: contains a NUL character")


def listing(header: str, problems: list[str], indent: str = "") -> str:
    """``header``, then the first :data:`MAX_REPORTED_PROBLEMS` problems and how many more there are."""
    shown = problems[:MAX_REPORTED_PROBLEMS]
    lines = [header] + [indent + problem for problem in shown]
    if len(problems) > len(shown):
        lines.append(f"{indent}... and {len(problems) - len(shown)} more")
    return "\n".join(lines)


def clip_name_score_problem(row: MetadataRow) -> str | None:
    """The data error of a temporal clip whose name's score is not its gold score, or None."""
    if clip_name_score_matches(row):
        return None
    return (f"line {row.line}, field 'reward': {row.file_name!r} is a temporal clip named score "
            f"{clip_name_score(row.stem)}, but its reward is {row.gold_score}; a clip's name score is its gold "
            "score in the test split. Correct the reward or the file name, or re-download the metadata and this video")


def unreadable_metadata(path: str, error: OSError | ValueError) -> str:
    """Why the metadata file at ``path`` could not be read (``error``: what ``open`` raised)."""
    if not os.path.exists(path):  # also a path holding a NUL character (open raises ValueError)
        return (f"{path}: metadata file not found. A data folder must contain {TEST_SPLIT}/{METADATA_FILE} "
                f"and {TEST_SPLIT}/<subset>/*.mp4 (the layout of the Hugging Face dataset).")
    if os.path.isdir(path):
        return f"{path}: is a folder, expected the metadata file {METADATA_FILE}."
    reason = error.strerror if isinstance(error, OSError) else error
    return f"{path}: cannot read the metadata file ({reason}). Check its permissions."


def not_a_local_copy(data: str, root: str) -> str:
    """Why ``data`` (the folder ``root``) is not a local copy of the dataset."""
    layout = f"{TEST_SPLIT}/metadata.jsonl and {TEST_SPLIT}/<subset>/*.mp4."
    if not os.path.isdir(root):
        return (f"data={data!r}: not 'hf', 'sample' or an existing folder. Give the folder of a local copy "
                f"holding {layout}")
    return f"data={data!r}: {metadata_path(root)} not found. A local copy must use the dataset layout: {layout}"


def missing_subsets(rows: Sequence[MetadataRow], subsets: Sequence[str], source: str) -> str:
    """The message for requested ``subsets`` of which some have no rows in ``source``."""
    available = sorted({row.subset for row in rows})
    missing = [subset for subset in subsets if subset not in available]
    return (f"subset {', '.join(repr(s) for s in missing)} not found in {source}. "
            f"Available subsets: {', '.join(available)}. Use subset=all (roboreward prepare: --subset all) for "
            "every subset.")


def video_problem(split_dir: str, row: MetadataRow, root: str) -> str:
    """Why a row's video is not an existing, non-empty regular file inside the real folder ``root``."""
    path = os.path.join(split_dir, *row.file_name.split("/"))
    where = f"{os.path.join(split_dir, METADATA_FILE)}, line {row.line}, field 'file_name'"
    real = os.path.realpath(path)
    if os.path.commonpath([real, root]) != root:
        return (f"{where}: {row.file_name!r} resolves to {real}, outside the data folder {root}. "
                "Replace the link with the file itself.")
    if not os.path.exists(real):
        return f"{where}: video {path} not found. Re-download the subset {row.subset!r}."
    fix = (f"Replace it with the mp4 the row names (Re-download the subset {row.subset!r}), or remove the row from "
           f"{METADATA_FILE}.")
    if os.path.isdir(real):
        return f"{where}: {path} is a folder, not a video file (not a regular file). {fix}"
    if not os.path.isfile(real):
        return f"{where}: {path} is not a regular file (a device, socket or pipe). {fix}"
    return f"{where}: video {path} is empty (0 bytes). Re-download the subset {row.subset!r}."
