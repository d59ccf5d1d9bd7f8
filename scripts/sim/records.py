"""Rows of the sample: task texts, the label-check note, metadata lines and the counts table (pure Python).

The metadata layout is exactly the real test split's: ``test/metadata.jsonl`` with the keys
``file_name``, ``task``, ``reward`` and ``gpt5_mini_check``, sorted by ``file_name``, UTF-8, ``\\n``.
Everything else about a row (its kind and simulator state) goes to ``sim_state.jsonl`` beside the
sample's README, never under ``test/``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

SPLIT = "test"
METADATA_FILE = "metadata.jsonl"
STATE_FILE = "sim_state.jsonl"
METADATA_KEYS = ("file_name", "task", "reward", "gpt5_mini_check")
KIND_ORDER = ("natural", "original", "clip", "counterfactual")

TEMPLATES: dict[str, tuple[str, ...]] = {
    "tray": ("put the {obj} in the tray", "place the {obj} into the tray", "pick up the {obj} and put it in the tray"),
    "circle": ("place the {obj} on the {goal}", "put the {obj} onto the {goal}", "move the {obj} to the {goal}"),
    "stack": ("stack the {obj} on the {goal}", "put the {obj} on top of the {goal}", "place the {obj} on the {goal}"),
    "push": ("push the {obj} onto the {goal}", "slide the {obj} to the {goal}", "push the {obj} into the {goal}"),
}
"""Task texts per goal kind (``push`` for push tasks); ``{goal}`` is e.g. ``green circle`` or ``blue cube``."""

PREPOSITIONS = {"tray": "in", "circle": "on", "stack": "on top of", "push": "on"}


@dataclass(frozen=True)
class Row:
    """One metadata row plus what the sidecar stores about it."""

    file_name: str
    task: str
    reward: int
    check: str
    kind: str
    state: dict[str, Any]
    """The ``sim_state.jsonl`` entry (without ``file_name``, added on writing)."""

    @property
    def subset(self) -> str:
        """First path component of ``file_name``."""
        return self.file_name.split("/", 1)[0]

    def metadata_line(self) -> str:
        """The row as one ``metadata.jsonl`` line (no newline)."""
        record = {"file_name": self.file_name, "task": self.task, "reward": self.reward, "gpt5_mini_check": self.check}
        return json.dumps(record, ensure_ascii=False)

    def state_line(self) -> str:
        """The row's ``sim_state.jsonl`` line (no newline)."""
        return json.dumps({"file_name": self.file_name, "kind": self.kind, **self.state}, ensure_ascii=False)


def task_text(template: str, obj: str, goal: str) -> str:
    """A task instruction; the real data has 4..207 characters."""
    text = template.format(obj=obj, goal=goal)
    if not 4 <= len(text) <= 207:
        raise ValueError(f"task text length {len(text)} outside 4..207: {text!r}")
    return text


def check_text(rule: str, obj: str, goal: str, template_kind: str, held: bool) -> str:
    """A short note in the style of the dataset's ``gpt5_mini_check`` field, from the applied rule."""
    where = PREPOSITIONS[template_kind]
    small = (f"the {obj} is held but still far from the {goal}" if held
             else f"the {obj} moved only a little toward the {goal}")
    details = {
        "rests_at_goal": f"the {obj} rests {where} the {goal} and the gripper has let go",
        "held_above_goal": f"the {obj} is still held above the {goal}; it was never released",
        "released_near_goal": f"the {obj} was left just outside the {goal}",
        "good_progress": f"the {obj} got most of the way to the {goal} but is not {where} it",
        "small_change": small,
        "no_change": f"the {obj} shows no progress toward the {goal}",
    }
    return f"The label matches the final frame: {details[rule]}."


def metadata_text(rows: Sequence[Row]) -> str:
    """The whole ``metadata.jsonl``: rows sorted by file name, one per line."""
    return "".join(row.metadata_line() + "\n" for row in sorted(rows, key=lambda r: r.file_name))


def state_text(rows: Sequence[Row]) -> str:
    """The whole ``sim_state.jsonl``, in the same order as the metadata."""
    return "".join(row.state_line() + "\n" for row in sorted(rows, key=lambda r: r.file_name))


def counts_table(rows: Sequence[tuple[str, str, int]], subsets: Sequence[str]) -> list[str]:
    """Markdown lines: rows per (subset, kind) and label, from (subset, kind, reward) triples."""
    counts = Counter(rows)
    groups = sorted({(subset, kind) for subset, kind, _ in counts},
                    key=lambda g: (list(subsets).index(g[0]), KIND_ORDER.index(g[1])))
    lines = ["| subset | kind | 1 | 2 | 3 | 4 | 5 | rows |", "|---|---|---|---|---|---|---|---|"]
    for subset, kind in groups:
        cells = [counts[(subset, kind, label)] for label in range(1, 6)]
        lines.append(f"| {subset} | {kind} | " + " | ".join(str(c) for c in cells) + f" | {sum(cells)} |")
    totals = [sum(n for (_, _, label), n in counts.items() if label == score) for score in range(1, 6)]
    lines.append("| **all** | | " + " | ".join(str(c) for c in totals) + f" | {sum(totals)} |")
    return lines
