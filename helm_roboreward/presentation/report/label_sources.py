"""Where a local copy's labels came from, when a LeRobot import says so (``roboreward import-lerobot``).

An import records its label source in ``<copy>/roboreward_import.json`` (``labels``): a labels file (the user's
own 1..5 rewards), ``next.success`` (coarse: 5 when the episode's last frame succeeded, else 1, never 2..4), or
placeholders (a ``roboreward label`` working copy: no real labels at all). The report says so next to the numbers,
because an MAE against coarse labels is not comparable with one against the benchmark's graded labels, and one
against placeholders means nothing.
"""

import json
import os
from collections.abc import Iterable

from helm_roboreward.core.published_split import IMPORT_RECORD


def label_notes(data_folders: Iterable[str]) -> list[str]:
    """One warning per local copy whose labels are coarse or placeholders (none for other data, or no record)."""
    notes = []
    for folder in sorted(set(data_folders)):
        if folder in ("hf", "sample"):
            continue
        try:
            with open(os.path.join(folder, IMPORT_RECORD), encoding="utf-8") as handle:
                labels = json.load(handle).get("labels") or {}
        except (OSError, ValueError, AttributeError):
            continue
        source = labels.get("source") if isinstance(labels, dict) else None
        if source == "placeholder":
            notes.append(f"data {folder}: placeholder labels (a `roboreward label` working copy): every statistic "
                         "against gold here is meaningless")
        elif isinstance(labels, dict) and labels.get("coarse"):
            notes.append(f"data {folder}: coarse labels from {source} (5 when the episode's last frame succeeded, "
                         "else 1; never 2..4): its MAE and per-label statistics are not comparable with the "
                         "benchmark's graded labels")
    return notes
