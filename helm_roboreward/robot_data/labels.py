"""Which episodes to import, and their gold scores (labels): a labels file (JSON Lines or CSV) or ``next.success``.

- ``--episodes 0:200,305``: comma-separated items, each an episode index or a half-open range ``a:b``
  (``a`` .. ``b - 1``, as Python slices). A single index must exist; a range selects the episodes it covers and
  must cover at least one.
- ``--labels FILE``: one record per episode with ``episode_index``, ``reward`` (an integer 1..5) and optionally
  ``task`` (replaces the dataset's task text). ``.csv`` files need a header row; anything else is read as JSON
  Lines. Every bad record is listed at once with its line and field.
- ``--labels-from next.success``: 5 when the episode's last frame has ``next.success`` true, else 1. Coarse: it
  never gives 2..4, and "not succeeded by the last frame" is not "no progress".
"""

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass

from helm_roboreward.protocol.rows import DataError
from helm_roboreward.protocol.rules import MAX_SCORE, MIN_SCORE
from helm_roboreward.protocol.validation import gold_score_value, integer_value, jsonl_lines, task_problem
from helm_roboreward.robot_data.lerobot_format import SUCCESS_FEATURE, Episode

SUCCESS_GOLD_SCORE = MAX_SCORE
FAILURE_GOLD_SCORE = MIN_SCORE
LABEL_SOURCES = (SUCCESS_FEATURE,)
"""What ``--labels-from`` accepts."""
MAX_LISTED = 20


class ImportRequestError(DataError):
    """An import request that cannot be used: its labels file, episode selection, ``--subset``, ``--crf`` or ``--out``.

    The message names the option, or the file, line and field.
    """


@dataclass(frozen=True)
class Label:
    """One episode's label: its gold score and optionally its task."""

    episode_index: int
    gold_score: int
    task: str | None = None
    """Task text replacing the dataset's (None: keep the dataset's)."""

    line: int = 0
    """Line of the labels file (0: not from a file)."""


def parse_episode_selection(text: str) -> list[tuple[int, int | None]]:
    """``"0:200,305"`` as items ``(start, stop)`` (``stop`` None: the single index ``start``).

    Raises:
        ImportRequestError: An item is not an index or ``a:b`` with ``0 <= a < b``.
    """
    items: list[tuple[int, int | None]] = []
    for raw in text.split(","):
        item = raw.strip()
        try:
            if ":" in item:
                first, last = item.split(":", 1)
                start, stop = int(first), int(last)
                if not 0 <= start < stop:
                    raise ValueError
                items.append((start, stop))
            else:
                index = int(item)
                if index < 0:
                    raise ValueError
                items.append((index, None))
        except ValueError:
            raise ImportRequestError(f"--episodes {text!r}: {item!r} is not an episode index or a range a:b with 0 "
                                     "<= a < b (e.g. --episodes 0:200,305)") from None
    return items


def select_episodes(episodes: Sequence[Episode], selection: str | None, source: str) -> list[Episode]:
    """The episodes an ``--episodes`` value names (all when None), in dataset order.

    Raises:
        ImportRequestError: A named index is not in the dataset, or a range covers none of its episodes.
    """
    if selection is None:
        return list(episodes)
    by_index = {episode.index: episode for episode in episodes}
    chosen: set[int] = set()
    for start, stop in parse_episode_selection(selection):
        if stop is None:
            if start not in by_index:
                raise ImportRequestError(f"--episodes: episode {start} is not in {source} (its episodes: "
                                         f"{format_selection(sorted(by_index))})")
            chosen.add(start)
            continue
        covered = [index for index in by_index if start <= index < stop]
        if not covered:
            raise ImportRequestError(f"--episodes: the range {start}:{stop} covers no episode of {source} (its "
                                     f"episodes: {format_selection(sorted(by_index))})")
        chosen.update(covered)
    return [episode for episode in episodes if episode.index in chosen]


def format_selection(indices: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` as ``0:3,5`` (the --episodes syntax)."""
    parts: list[str] = []
    start = previous = None
    for index in list(indices) + [None]:
        if start is not None and (index is None or previous is None or index != previous + 1):
            parts.append(str(start) if previous == start else f"{start}:{(previous or 0) + 1}")
            start = None
        if index is not None and start is None:
            start = index
        previous = index
    return ",".join(parts) or "none"


def read_labels(path: str) -> dict[int, Label]:
    """Read and validate a labels file (CSV when it ends in ``.csv``, else JSON Lines).

    Raises:
        ImportRequestError: The file is missing or unreadable, or records are invalid or duplicated (all are listed).
    """
    try:
        with open(path, encoding="utf-8-sig") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise ImportRequestError(f"--labels {path}: file not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ImportRequestError(f"--labels {path}: cannot be read as UTF-8 text ({error})") from None
    records = _csv_records(text, path) if path.lower().endswith(".csv") else _jsonl_records(text, path)
    labels: dict[int, Label] = {}
    problems: list[str] = []
    for line, record in records:
        try:
            label = _label(record, line)
        except ImportRequestError as problem:
            problems.append(str(problem))
            continue
        if label.episode_index in labels:
            problems.append(f"line {line}, field 'episode_index': episode {label.episode_index} is already labelled "
                            f"on line {labels[label.episode_index].line}; keep one label per episode")
            continue
        labels[label.episode_index] = label
    if problems:
        shown = problems[:MAX_LISTED] + ([f"... and {len(problems) - MAX_LISTED} more"]
                                         if len(problems) > MAX_LISTED else [])
        raise ImportRequestError(f"--labels {path}: {len(problems)} invalid label(s):\n"
                                 + "\n".join(f"  {p}" for p in shown))
    if not labels:
        raise ImportRequestError(f"--labels {path}: no labels in the file")
    return labels


def _jsonl_records(text: str, path: str) -> list[tuple[int, object]]:
    records: list[tuple[int, object]] = []
    for number, line in enumerate(jsonl_lines(text), start=1):
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except json.JSONDecodeError as error:
            raise ImportRequestError(f"--labels {path}, line {number}: not valid JSON ({error.msg}); a labels file "
                                     "holds one JSON object per line, or is a .csv with a header row") from None
    return records


def _csv_records(text: str, path: str) -> list[tuple[int, object]]:
    reader = csv.DictReader(io.StringIO(text))
    fields = reader.fieldnames or []
    for required in ("episode_index", "reward"):
        if required not in fields:
            raise ImportRequestError(f"--labels {path}: the header row has no column {required!r} (columns: "
                                     f"{', '.join(fields) or 'none'}); write episode_index,reward[,task]")
    return [(reader.line_num, dict(row)) for row in reader]


def _label(record: object, line: int) -> Label:
    if not isinstance(record, dict):
        raise ImportRequestError(f"line {line}: expected an object with episode_index and reward, got "
                                 f"{type(record).__name__}")
    for field in ("episode_index", "reward"):
        if record.get(field) in (None, ""):
            raise ImportRequestError(f"line {line}, field {field!r}: missing")
    try:
        episode = integer_value(record["episode_index"], text=True)
        if episode < 0:
            raise ValueError(f"expected an episode index >= 0, got {episode}")
    except ValueError as problem:
        raise ImportRequestError(f"line {line}, field 'episode_index': {problem}") from None
    try:
        gold_score = gold_score_value(record["reward"], text=True)
    except ValueError as problem:
        raise ImportRequestError(f"line {line}, field 'reward': {problem} (the rubric's scale)") from None
    task = record.get("task")
    if task in (None, ""):
        return Label(episode, gold_score, None, line)
    task_issue = task_problem(task)
    if task_issue:
        raise ImportRequestError(f"line {line}, field 'task': {task_issue}")
    return Label(episode, gold_score, str(task), line)


def check_label_episodes(labels: dict[int, Label], dataset: Sequence[Episode], selected: Sequence[Episode],
                         path: str, source: str) -> None:
    """Every label names an episode of the dataset, and every selected episode has a label.

    Raises:
        ImportRequestError: Labels for unknown episodes, or selected episodes without a label.
    """
    known = {episode.index for episode in dataset}
    unknown = sorted(set(labels) - known)
    if unknown:
        lines = ", ".join(f"{index} (line {labels[index].line})" for index in unknown[:MAX_LISTED])
        raise ImportRequestError(f"--labels {path}: label(s) for episode(s) not in {source}: {lines}. Its episodes: "
                                 f"{format_selection(sorted(known))}")
    unlabelled = [episode.index for episode in selected if episode.index not in labels]
    if unlabelled:
        raise ImportRequestError(f"--labels {path}: no label for selected episode(s) {format_selection(unlabelled)}; "
                                 "label them, or select only labelled episodes with --episodes (without it: the "
                                 "labelled ones)")


def success_labels(flags: dict[int, bool]) -> dict[int, Label]:
    """``next.success`` of each episode's last frame as a label: 5 when true, else 1."""
    return {index: Label(index, SUCCESS_GOLD_SCORE if flag else FAILURE_GOLD_SCORE) for index, flag in flags.items()}
