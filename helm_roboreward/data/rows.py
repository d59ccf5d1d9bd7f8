"""Benchmark rows from ``<root>/test/metadata.jsonl``, validated (docs/data.md), with kind, episode and cluster."""

import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from helm_roboreward.protocol import ALL_KNOWN_SUBSETS, MAX_SCORE, METADATA_FILE, MIN_SCORE, TEST_SPLIT, subset_info

NATURAL, CLIP, COUNTERFACTUAL, ORIGINAL = "natural", "clip", "counterfactual", "original"
KINDS = (NATURAL, CLIP, COUNTERFACTUAL, ORIGINAL)
"""Augmentation kinds (docs/protocol.md, section 1); the dataset has no field for them, they are inferred."""

JSON_WHITESPACE = " \t\r"  # what may surround a JSON value on one line (RFC 8259)
# Plain values, which the full rules (data/problems.py) accept too: a simple relative path, a visible ASCII task.
_PLAIN_FILE_NAME = re.compile(r"[\w-][\w.-]*(?:/[\w-][\w.-]*)+")
_VISIBLE_ASCII = re.compile(r"[!-~]")

_VALIDATED: dict[tuple[str, bool], tuple[bytes, tuple["MetadataRow", ...]]] = {}  # by file: (SHA-256, rows)

# What a file stem says (docs/protocol.md, "File names"): its episode and cluster, a clip's label.
CLIP_NAME = re.compile(r"^(?P<episode>.+)_attempt_(?P<attempt>\d+)_score_(?P<score>\d+)$")
ARENA_NAME = re.compile(r"^(?P<session>.+)_(?P<rollout>[A-Z])_(?P<view>left|right)$")
CAMERA_VIEW = re.compile(r"^(?P<episode>.+)_(?P<view>left|right)$")
OXE_EPISODE_NAME = re.compile(r"^(?P<episode>.+_originalsplit_[A-Za-z]+_index_\d+)(?:_(?P<copy>\d+))?$")


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
    clip = CLIP_NAME.match(row.stem)
    unknown_name = row.subset not in ALL_KNOWN_SUBSETS and not (clip or OXE_EPISODE_NAME.match(row.stem))
    if subset_info(row.subset).natural or unknown_name:
        return NATURAL
    if clip:
        return CLIP
    return COUNTERFACTUAL if row.reward < MAX_SCORE else ORIGINAL


def episode_key(row: MetadataRow) -> str:
    """The source-episode key, ``<subset>/<episode>`` (rules: :func:`episode_of`)."""
    return f"{row.subset}/{episode_of(row.stem, subset_info(row.subset).natural)}"


def cluster_key(row: MetadataRow) -> str:
    """The bootstrap cluster key by name, ``<subset>/<key>``: a RoboArena session, else the episode."""
    return f"{row.subset}/{cluster_of(row.stem, subset_info(row.subset).natural)}"


def clip_label_matches(row: MetadataRow) -> bool:
    """Whether a row is no temporal clip, or one whose name's score is its label (else: a data error)."""
    return infer_kind(row) != CLIP or clip_name_score(row.stem) == row.reward


def metadata_path(root: str) -> str:
    """The metadata file of the test split under a data root."""
    return os.path.join(root, TEST_SPLIT, METADATA_FILE)


def read_metadata(path: str, check_clip_labels: bool = True) -> list[MetadataRow]:
    """The validated rows of ``metadata.jsonl`` in file order; ``check_clip_labels=False``: for ``audit``."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except (OSError, ValueError) as error:  # ValueError: a NUL in the path
        from helm_roboreward.data.problems import unreadable_metadata

        raise DataError(unreadable_metadata(path, error)) from None
    key, digest = (path, check_clip_labels), hashlib.sha256(raw).digest()
    if key in _VALIDATED and _VALIDATED[key][0] == digest:  # one helm-run reads it once per subset entry
        return list(_VALIDATED[key][1])
    rows = _plain_rows(raw, check_clip_labels)
    if rows is None:  # not plain, maybe invalid: the full rules decide, and list every problem
        from helm_roboreward.data.problems import checked_rows

        rows = checked_rows(path, raw, check_clip_labels)
    _VALIDATED[key] = (digest, tuple(rows))
    return rows


def _plain_rows(raw: bytes, check_clip_labels: bool) -> list[MetadataRow] | None:
    """The rows when there are some and each is plain and valid (as in the real split), else None."""
    try:
        lines = raw.decode("utf-8-sig").split("\n")  # as jsonl_lines: a line's final "\r" is JSON whitespace
        rows = [_plain_row(line, number) for number, line in enumerate(lines, start=1) if line.strip(JSON_WHITESPACE)]
    except (ValueError, AttributeError):  # not UTF-8, not JSON, not a JSON object (no .get) or not plain
        return None
    distinct = len({row.file_name for row in rows}) == len(rows) > 0
    return rows if distinct and (not check_clip_labels or all(map(clip_label_matches, rows))) else None


def _plain_row(line: str, number: int) -> MetadataRow:
    record = json.loads(line)
    file_name, task, reward = record.get("file_name"), record.get("task"), record.get("reward")
    if (isinstance(file_name, str) and _PLAIN_FILE_NAME.fullmatch(file_name) and isinstance(task, str)
            and _VISIBLE_ASCII.search(task) and type(reward) is int and MIN_SCORE <= reward <= MAX_SCORE):
        return MetadataRow(line=number, file_name=file_name, task=task, reward=reward)
    raise ValueError("not a plain row")


def select_rows(rows: Sequence[MetadataRow], subsets: Sequence[str] | None, source: str) -> list[MetadataRow]:
    """The rows of the requested subsets (all when ``subsets`` is None); an unknown subset is a :class:`DataError`."""
    if subsets is None:
        return list(rows)
    wanted = set(subsets)
    if not wanted <= {row.subset for row in rows}:
        from helm_roboreward.data.problems import missing_subsets

        raise DataError(missing_subsets(rows, subsets, source))
    return [row for row in rows if row.subset in wanted]


def locate_video(split_dir: str, row: MetadataRow, trusted_root: str | None = None) -> str:
    """The real path of a row's video: an existing, non-empty regular file inside ``trusted_root or split_dir``."""
    real = os.path.realpath(os.path.join(split_dir, *row.file_name.split("/")))
    root = os.path.realpath(trusted_root or split_dir)
    if os.path.commonpath([real, root]) != root or not os.path.isfile(real) or os.path.getsize(real) == 0:
        from helm_roboreward.data.problems import video_problem

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
        from helm_roboreward.data.problems import listing

        raise DataError(listing(f"{len(problems)} video problem(s) in {source}:", problems))
    return rollouts
