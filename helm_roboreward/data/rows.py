"""Benchmark rows from ``<root>/test/metadata.jsonl``, validated (rules: docs/data.md), with kind and episode."""

import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from helm_roboreward.core.validation import reward_value, task_problem
from helm_roboreward.data.naming import CLIP_NAME, OXE_EPISODE_NAME, clip_name_score, cluster_of, episode_of
from helm_roboreward.protocol import ALL_KNOWN_SUBSETS, MAX_SCORE, METADATA_FILE, TEST_SPLIT, subset_info

MAX_REPORTED_PROBLEMS = 20

NATURAL, CLIP, COUNTERFACTUAL, ORIGINAL = "natural", "clip", "counterfactual", "original"
KINDS = (NATURAL, CLIP, COUNTERFACTUAL, ORIGINAL)
"""Augmentation kinds (docs/protocol.md, section 1); the dataset has no field for them, they are inferred."""

_JSON_WHITESPACE = " \t\r"  # what may surround a JSON value on one line (RFC 8259)


_VALIDATED: dict[tuple[str, bool], tuple[bytes, tuple["MetadataRow", ...]]] = {}
"""The rows last validated per file, by the SHA-256 of its bytes."""


class DataError(ValueError):
    """A problem with the benchmark data that the user must fix; the message says where and how."""


@dataclass(frozen=True)
class MetadataRow:
    """One validated line of ``metadata.jsonl``."""

    line: int  # 1-based
    file_name: str  # relative to the split folder: <subset>/<name>.mp4
    task: str
    reward: int

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
    if subset_info(row.subset).natural:
        return NATURAL
    if row.subset not in ALL_KNOWN_SUBSETS and not (CLIP_NAME.match(row.stem) or OXE_EPISODE_NAME.match(row.stem)):
        return NATURAL
    if CLIP_NAME.match(row.stem):
        return CLIP
    return COUNTERFACTUAL if row.reward < MAX_SCORE else ORIGINAL


def episode_key(row: MetadataRow) -> str:
    """The source-episode key, ``<subset>/<episode>`` (rules: ``data/naming.py``)."""
    return f"{row.subset}/{episode_of(row.stem, subset_info(row.subset).natural)}"


def cluster_key(row: MetadataRow) -> str:
    """The bootstrap cluster key by name, ``<subset>/<key>``: a RoboArena session, else the episode."""
    return f"{row.subset}/{cluster_of(row.stem, subset_info(row.subset).natural)}"


def clip_label_problem(row: MetadataRow) -> str | None:
    """The data error of a temporal clip whose name's score is not its label, or None."""
    if infer_kind(row) != CLIP:
        return None
    named = clip_name_score(row.stem)
    if named == row.reward:
        return None
    return (f"line {row.line}, field 'reward': {row.file_name!r} is a temporal clip named score {named}, but its "
            f"reward is {row.reward}; a clip's name score is its label in the test split. Correct the reward or "
            "the file name, or re-download the metadata and this video")


def jsonl_lines(text: str) -> list[str]:
    r"""The lines of a JSON Lines text: split at "\n" only (not ``str.splitlines``), one trailing "\r" dropped."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def metadata_path(root: str) -> str:
    """The metadata file of the test split under a data root."""
    return os.path.join(root, TEST_SPLIT, METADATA_FILE)


def read_metadata(path: str, check_clip_labels: bool = True) -> list[MetadataRow]:
    """The validated rows of ``metadata.jsonl`` in file order; ``check_clip_labels=False``: for ``audit``."""
    raw = _read_bytes(path)
    key, digest = (path, check_clip_labels), hashlib.sha256(raw).digest()
    if key in _VALIDATED and _VALIDATED[key][0] == digest:  # one helm-run reads it once per subset entry
        return list(_VALIDATED[key][1])
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
        if not line.strip(_JSON_WHITESPACE):
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
        mismatch = clip_label_problem(row) if check_clip_labels else None
        if mismatch:
            problems.append(mismatch)
            continue
        rows.append(row)
    if problems:
        raise DataError(_listing(f"{path}: {len(problems)} invalid row(s); fix or re-download the metadata file:",
                                 problems, "  "))
    if not rows:
        raise DataError(f"{path}: no rows. The metadata file is empty; re-download the dataset.")
    _VALIDATED[key] = (digest, tuple(rows))
    return rows


def _read_bytes(path: str) -> bytes:
    if not os.path.exists(path):
        raise DataError(f"{path}: metadata file not found. A data folder must contain {TEST_SPLIT}/{METADATA_FILE} "
                        f"and {TEST_SPLIT}/<subset>/*.mp4 (the layout of the Hugging Face dataset).")
    if os.path.isdir(path):
        raise DataError(f"{path}: is a folder, expected the metadata file {METADATA_FILE}.")
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise DataError(f"{path}: cannot read the metadata file ({error.strerror}). Check its permissions.") from None


def _listing(header: str, problems: list[str], indent: str = "") -> str:
    """``header``, then the first :data:`MAX_REPORTED_PROBLEMS` problems and how many more there are."""
    shown = problems[:MAX_REPORTED_PROBLEMS]
    lines = [header] + [indent + problem for problem in shown]
    if len(problems) > len(shown):
        lines.append(f"{indent}... and {len(problems) - len(shown)} more")
    return "\n".join(lines)


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
    file_name, task, reward = record["file_name"], record["task"], record["reward"]
    if not isinstance(file_name, str):
        raise DataError(f"line {number}, field 'file_name': expected a string, got {type(file_name).__name__}")
    _check_file_name(file_name, number)
    problem = task_problem(task)  # the rules import-lerobot and label apply too
    if problem:
        raise DataError(f"line {number}, field 'task': {problem}")
    try:
        reward = reward_value(reward)
    except ValueError as error:
        raise DataError(f"line {number}, field 'reward': {error}") from None
    return MetadataRow(line=number, file_name=file_name, task=task, reward=reward)


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


def select_rows(rows: Sequence[MetadataRow], subsets: Sequence[str] | None, source: str) -> list[MetadataRow]:
    """The rows of the requested subsets (all when ``subsets`` is None); an unknown subset is a :class:`DataError`."""
    if subsets is None:
        return list(rows)
    available = sorted({row.subset for row in rows})
    missing = [subset for subset in subsets if subset not in available]
    if missing:
        raise DataError(
            f"subset {', '.join(repr(s) for s in missing)} not found in {source}. "
            f"Available subsets: {', '.join(available)}. Use subset=all (roboreward prepare: --subset all) for "
            "every subset."
        )
    wanted = set(subsets)
    return [row for row in rows if row.subset in wanted]


def locate_video(split_dir: str, row: MetadataRow, trusted_root: str | None = None) -> str:
    """The real path of a row's video: an existing, non-empty regular file inside ``trusted_root or split_dir``."""
    path = os.path.join(split_dir, *row.file_name.split("/"))
    where = f"{os.path.join(split_dir, METADATA_FILE)}, line {row.line}, field 'file_name'"
    real = os.path.realpath(path)
    root = os.path.realpath(trusted_root or split_dir)
    if os.path.commonpath([real, root]) != root:
        raise DataError(f"{where}: {row.file_name!r} resolves to {real}, outside the data folder {root}. "
                        "Replace the link with the file itself.")
    if not os.path.exists(real):
        raise DataError(f"{where}: video {path} not found. Re-download the subset {row.subset!r}.")
    fix = (f"Replace it with the mp4 the row names (Re-download the subset {row.subset!r}), or remove the row from "
           f"{METADATA_FILE}.")
    if os.path.isdir(real):
        raise DataError(f"{where}: {path} is a folder, not a video file (not a regular file). {fix}")
    if not os.path.isfile(real):
        raise DataError(f"{where}: {path} is not a regular file (a device, socket or pipe). {fix}")
    if os.path.getsize(real) == 0:
        raise DataError(f"{where}: video {path} is empty (0 bytes). Re-download the subset {row.subset!r}.")
    return real


def collect_rollouts(
    root: str, subsets: Sequence[str] | None, source: str, trusted_root: str | None = None
) -> tuple[list[Rollout], list[str]]:
    """The rollouts whose video was found, and one message per row whose video was not (``source``: for messages)."""
    split_dir = os.path.join(root, TEST_SPLIT)
    rows = select_rows(read_metadata(metadata_path(root)), subsets, source)
    rollouts: list[Rollout] = []
    problems: list[str] = []
    for row in rows:
        try:
            path = locate_video(split_dir, row, trusted_root)
        except DataError as problem:
            problems.append(str(problem))
            continue
        rollouts.append(
            Rollout(row=row, video_path=path, kind=infer_kind(row), episode=episode_key(row),
                    robot=subset_info(row.subset).robot, cluster=cluster_key(row))
        )
    return rollouts, problems


def load_rollouts(
    root: str, subsets: Sequence[str] | None, source: str, trusted_root: str | None = None
) -> list[Rollout]:
    """Like :func:`collect_rollouts`, but any missing or unusable video is a :class:`DataError`."""
    rollouts, problems = collect_rollouts(root, subsets, source, trusted_root)
    if problems:
        raise DataError(_listing(f"{len(problems)} video problem(s) in {source}:", problems))
    return rollouts
