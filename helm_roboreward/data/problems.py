"""Bad benchmark data: the full rules a metadata row follows, and what each problem says (where, and how to fix it).

Loaded only when something is not plain: ``rows.py`` accepts the rows of the real split by a narrower check of its
own; any other file is read here, where the full rules (those ``import-lerobot`` and ``label`` apply too) decide.
"""

import json
import os
import re
from collections.abc import Sequence

from helm_roboreward.core.validation import jsonl_lines, reward_value, task_problem
from helm_roboreward.data.rows import (
    JSON_WHITESPACE,
    DataError,
    MetadataRow,
    clip_label_matches,
    clip_name_score,
    metadata_path,
)
from helm_roboreward.protocol import METADATA_FILE, TEST_SPLIT

MAX_REPORTED_PROBLEMS = 20


def checked_rows(path: str, raw: bytes, check_clip_labels: bool) -> list[MetadataRow]:
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
        mismatch = clip_label_problem(row) if check_clip_labels else None
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


def listing(header: str, problems: list[str], indent: str = "") -> str:
    """``header``, then the first :data:`MAX_REPORTED_PROBLEMS` problems and how many more there are."""
    shown = problems[:MAX_REPORTED_PROBLEMS]
    lines = [header] + [indent + problem for problem in shown]
    if len(problems) > len(shown):
        lines.append(f"{indent}... and {len(problems) - len(shown)} more")
    return "\n".join(lines)


def clip_label_problem(row: MetadataRow) -> str | None:
    """The data error of a temporal clip whose name's score is not its label, or None."""
    if clip_label_matches(row):
        return None
    return (f"line {row.line}, field 'reward': {row.file_name!r} is a temporal clip named score "
            f"{clip_name_score(row.stem)}, but its reward is {row.reward}; a clip's name score is its label in the "
            "test split. Correct the reward or the file name, or re-download the metadata and this video")


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
