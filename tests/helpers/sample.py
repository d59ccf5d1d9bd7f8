"""Facts about the bundled sample (``helm_roboreward/sample``), read from its own files when a test runs.

Tests take counts, file names and expected values from here instead of hard-coding them, so that
they keep working when the sample is regenerated. Everything is read from the sample's files:
``test/metadata.jsonl`` (rows), ``sim_state.jsonl`` (the simulator state and the kind of each
row) and the video bytes (SHA-256). The package's own loader is not used, so tests can compare
its output with these values.
"""

import functools
import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SAMPLE_DIR = REPO / "helm_roboreward" / "sample"
SAMPLE = SAMPLE_DIR / "test"

CLIP_NAME = re.compile(r"^(?P<episode>.+)_attempt_(?P<attempt>\d+)_score_(?P<score>\d+)$")


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@functools.cache
def _rows() -> tuple[str, ...]:
    return tuple(json.dumps(row) for row in _read_jsonl(SAMPLE / "metadata.jsonl"))


def sample_rows() -> list[dict[str, Any]]:
    """The metadata rows, in file order (fresh dicts: callers may change them)."""
    return [json.loads(row) for row in _rows()]


def subset_of(file_name: str) -> str:
    return file_name.split("/", 1)[0]


def stem_of(file_name: str) -> str:
    return file_name.rsplit("/", 1)[-1][: -len(".mp4")]


def rows_of(subset: str) -> list[dict[str, Any]]:
    return [row for row in sample_rows() if subset_of(row["file_name"]) == subset]


def sample_subsets() -> list[str]:
    """The subsets of the sample, sorted by name."""
    return sorted({subset_of(row["file_name"]) for row in sample_rows()})


@functools.cache
def sample_states() -> dict[str, dict[str, Any]]:
    """``sim_state.jsonl`` by file name (the simulator state, ``kind`` and ``source`` of each row)."""
    return {state["file_name"]: state for state in _read_jsonl(SAMPLE_DIR / "sim_state.jsonl")}


def kind_of(file_name: str) -> str:
    """The row's kind as the generator recorded it: natural, original, clip or counterfactual."""
    return str(sample_states()[file_name]["kind"])


@functools.cache
def video_sha256(file_name: str) -> str:
    return hashlib.sha256((SAMPLE / file_name).read_bytes()).hexdigest()


def distinct_videos(subset: str | None = None) -> dict[str, str]:
    """SHA-256 -> the first row's file name with those bytes (relabels are byte-identical duplicates)."""
    out: dict[str, str] = {}
    for row in sample_rows():
        if subset is None or subset_of(row["file_name"]) == subset:
            out.setdefault(video_sha256(row["file_name"]), row["file_name"])
    return out


def clip_rows(subset: str, min_frames: int = 0) -> list[dict[str, Any]]:
    """The subset's temporal clips (``<episode>_attempt_<n>_score_<k>``) of at least ``min_frames`` frames."""
    states = sample_states()
    return [row for row in rows_of(subset)
            if CLIP_NAME.match(stem_of(row["file_name"])) and states[row["file_name"]]["frame"] + 1 >= min_frames]


def constant_mae(rows: list[dict[str, Any]], prediction: float = 3) -> float:
    """The MAE of always predicting ``prediction`` over ``rows`` (3: the constant baseline's answer)."""
    return float(sum(abs(prediction - row["reward"]) for row in rows) / len(rows))


def documented_counts() -> tuple[Counter[tuple[str, str, int]], int, int]:
    """The sample README's counts table: rows by (subset, kind, reward), total rows, distinct videos."""
    readme = (SAMPLE_DIR / "README.md").read_text(encoding="utf-8")
    totals = re.search(r"\((\d+) rows; (\d+) distinct videos", readme)
    assert totals, "the sample README states no row and distinct video totals"
    counts: Counter[tuple[str, str, int]] = Counter()
    line = re.compile(r"^\| (\w+) \| (natural|original|clip|counterfactual) "
                      r"\| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", flags=re.MULTILINE)
    for match in line.finditer(readme):
        by_reward = [int(n) for n in match.groups()[2:7]]
        assert sum(by_reward) == int(match.group(8)), match.group(0)
        for reward, number in enumerate(by_reward, start=1):
            if number:
                counts[(match.group(1), match.group(2), reward)] = number
    assert counts, "no counts table in the sample README"
    return counts, int(totals.group(1)), int(totals.group(2))
