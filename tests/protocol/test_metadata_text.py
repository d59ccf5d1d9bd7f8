"""``metadata.jsonl`` as JSON Lines: lines end at "\\n" only, tasks keep every character, invisible tasks are refused.

``str.splitlines`` also splits at U+2028, U+2029, U+0085, \\x1c..\\x1e, \\x0b and \\x0c. JSON allows the first three
raw inside a string (``json.dumps(..., ensure_ascii=False)`` writes them so), and a row holding one must read as
one row, with the line numbers of later rows unchanged.
"""

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helm_roboreward.protocol.data_sources import sample_root
from helm_roboreward.protocol.rows import (
    DataError,
    MetadataRow,
    _plain_rows,
    checked_rows,
    locate_video,
    metadata_path,
    read_metadata,
)

LINE_BREAKERS = "\u2028\u2029\u0085\x1c\x1d\x1e\x0b\x0c"
"""Every character ``str.splitlines`` breaks at, besides \\n and \\r."""

ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"


def row(name: str, task: str = "put the cup on the plate", reward: int = 3) -> dict[str, Any]:
    return {"file_name": f"sim/{name}.mp4", "task": task, "reward": reward}


def write_rows(path: Path, rows: list[dict[str, Any]], newline: str = "\n") -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + newline for r in rows), encoding="utf-8",
                    newline="")
    return path


def test_a_task_holding_every_line_breaking_character_reads_as_one_row(tmp_path: Path) -> None:
    task = f"pick{LINE_BREAKERS}the block"
    path = write_rows(tmp_path / "metadata.jsonl", [row("a"), row("b", task), row("c")])
    raw = path.read_text(encoding="utf-8")
    assert "\u2028" in raw and "\u2029" in raw and "\u0085" in raw  # written raw, as JSON allows
    rows = read_metadata(str(path))
    assert [(r.line, r.file_name) for r in rows] == [(1, "sim/a.mp4"), (2, "sim/b.mp4"), (3, "sim/c.mp4")]
    assert rows[1].task == task  # verbatim


def test_an_invalid_row_after_it_reports_its_own_line(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "metadata.jsonl",
                      [row("a"), row("b", f"pick{LINE_BREAKERS}the block"), row("c"), row("d", reward=6)])
    with pytest.raises(DataError) as error:
        read_metadata(str(path))
    message = str(error.value)
    assert "1 invalid row(s)" in message
    assert "line 4, field 'reward': 6 is outside 1..5" in message


def test_crlf_line_endings_are_tolerated(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "metadata.jsonl", [row("a"), row("b", "stack\u2028it"), row("c", reward=0)],
                      newline="\r\n")
    with pytest.raises(DataError, match=r"line 3, field 'reward': 0 is outside 1..5"):
        read_metadata(str(path))
    path = write_rows(tmp_path / "metadata.jsonl", [row("a"), row("b", "stack\u2028it")], newline="\r\n")
    assert [r.task for r in read_metadata(str(path))] == ["put the cup on the plate", "stack\u2028it"]


def test_a_raw_control_character_inside_a_string_is_invalid_json_on_its_own_line(tmp_path: Path) -> None:
    # JSON requires U+0000..U+001F to be escaped; json.dumps always does. A raw one is reported, on its line.
    path = tmp_path / "metadata.jsonl"
    lines = [json.dumps(row("a")), json.dumps(row("b")).replace("the plate", "the\x0bplate"), json.dumps(row("c"))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as error:
        read_metadata(str(path))
    assert "1 invalid row(s)" in str(error.value)
    assert "line 2: not valid JSON (Invalid control character" in str(error.value)


def test_a_line_of_only_separator_characters_is_not_taken_for_a_blank_line(tmp_path: Path) -> None:
    path = tmp_path / "metadata.jsonl"
    path.write_text(json.dumps(row("a")) + "\n\u2028\n" + json.dumps(row("b")) + "\n\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"line 2: not valid JSON"):
        read_metadata(str(path))


@pytest.mark.parametrize("task", [
    "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", ZERO_WIDTH, f" \t{ZERO_WIDTH}\u00a0\u3000 ", "\u2028\u2029",
])
def test_a_task_with_no_visible_character_is_refused(tmp_path: Path, task: str) -> None:
    path = write_rows(tmp_path / "metadata.jsonl", [row("a"), row("b", task)])
    with pytest.raises(DataError) as error:
        read_metadata(str(path))
    message = str(error.value)
    assert str(path) in message and "fix or re-download the metadata file" in message
    assert "line 2, field 'task': has no visible characters" in message
    assert "write the robot's task instruction" in message


@pytest.mark.parametrize("task", [f"pick{ZERO_WIDTH}up the block", "\u200bpick up", "stack\u200d the cups\ufeff",
                                  "家族\u200dの写真", "x"])
def test_a_task_that_contains_invisible_characters_is_kept_verbatim(tmp_path: Path, task: str) -> None:
    path = write_rows(tmp_path / "metadata.jsonl", [row("a", task)])
    assert read_metadata(str(path))[0].task == task


def test_a_folder_named_like_a_video_says_what_it_is_and_what_to_do(tmp_path: Path) -> None:
    split = tmp_path / "test"
    (split / "sim" / "a.mp4").mkdir(parents=True)
    with pytest.raises(DataError) as error:
        locate_video(str(split), MetadataRow(line=7, file_name="sim/a.mp4", task="t", gold_score=3))
    message = str(error.value)
    assert "line 7, field 'file_name'" in message
    assert f"{split / 'sim' / 'a.mp4'} is a folder, not a video file" in message
    assert "Replace it with the mp4" in message and "Re-download the subset 'sim'" in message


PLAIN_VALUES = {"file_name": st.from_regex(r"sim/([a-z]{1,2}|e_attempt_1_score_[1-5])\.mp4", fullmatch=True),
                "task": st.sampled_from(["pick it", "!", "~", " x\t"]), "reward": st.integers(1, 5)}
OTHER_VALUES: dict[str, list[Any]] = {
    "file_name": ["sim/x/c.mp4", "sim/\u00e9.mp4", "sim/.a.mp4", "sim/-a.mp4", "sim/a b.mp4", "a.mp4", "/sim/a.mp4",
                  "sim//a.mp4", "sim/../a.mp4", "sim/./a.mp4", "sim/..", "C:/sim/a.mp4", "c:a/b.mp4", "sim\\a.mp4",
                  "sim/a\x00.mp4", "sim/", 3],
    "task": ["", " ", "\t", ZERO_WIDTH, "\u00a0", "\u00e9", "\u5bb6\u65cf", "a\u200b", None, 7],
    "reward": [0, 6, -1, True, False, 3.0, "3", None, float("nan")],
}


def read_both(raw: bytes, check_clip_name_scores: bool) -> list[object]:
    """What read_metadata and the full rules (rows.checked_rows) make of the same file: rows or a message."""
    outcomes: list[object] = []
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "metadata.jsonl")
        Path(path).write_bytes(raw)
        for read in (read_metadata, lambda p, check: checked_rows(p, raw, check)):
            try:
                outcomes.append(read(path, check_clip_name_scores))
            except DataError as error:
                outcomes.append(str(error))
    return outcomes


@pytest.mark.parametrize(("field", "value"), [(field, value) for field, values in OTHER_VALUES.items()
                                               for value in values])
def test_a_row_that_is_not_plain_reads_as_the_full_rules_read_it(field: str, value: Any) -> None:
    # read_metadata accepts plain rows by a narrower check of its own (data/rows.py): it must never accept
    # what the full rules refuse, nor read a row otherwise.
    raw = (json.dumps(row("a")) + "\n" + json.dumps({**row("b"), field: value}) + "\n").encode()
    first, second = read_both(raw, check_clip_name_scores=True)
    assert first == second


@st.composite
def records(draw: st.DrawFn) -> dict[str, Any]:
    """A plain row, or one with one field missing or holding another value (which the full rules may accept)."""
    record = draw(st.fixed_dictionaries(PLAIN_VALUES))
    field = draw(st.sampled_from([None, None, "file_name", "task", "reward"]))
    if field and draw(st.booleans()):
        record[field] = draw(st.sampled_from(OTHER_VALUES[field]))
    elif field:
        del record[field]
    return record


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(records(), max_size=3), check_clip_name_scores=st.booleans())
def test_rows_read_exactly_as_the_full_rules_read_them(rows: list[dict[str, Any]],
                                                       check_clip_name_scores: bool) -> None:
    first, second = read_both("".join(json.dumps(record) + "\n" for record in rows).encode(), check_clip_name_scores)
    assert first == second


def test_the_rows_of_the_sample_are_plain() -> None:
    # The default run validates them without loading the full rules (core/validation.py, data/problems.py).
    raw = Path(metadata_path(sample_root())).read_bytes()
    assert _plain_rows(raw, check_clip_name_scores=True) == read_metadata(metadata_path(sample_root()))
