"""The one rule for a task, a gold score, an episode span and a frame rate (protocol/validation.py).

``roboreward prepare`` (protocol/rows.py) and ``import-lerobot`` / ``label`` (robot_data) decide with these functions;
the commands' own tests check the messages users see (tests/robot_data/test_import_integrity.py).
"""

import math

import pytest

from helm_roboreward.protocol.validation import (
    episode_span,
    frame_rate_problem,
    gold_score_value,
    integer_value,
    overlapping_spans,
    task_problem,
)


@pytest.mark.parametrize("task", ["", None, 3, "\u200b\u2060", " \t", "\ufeff", "\u3164"])
def test_a_task_needs_a_visible_character(task: object) -> None:
    assert task_problem(task) is not None


def test_a_task_with_invisible_characters_among_others_is_kept() -> None:
    assert task_problem("open\u200b the drawer") is None and task_problem("³") is None


@pytest.mark.parametrize(("value", "text", "expected"), [
    (3, False, 3), ("3", True, 3), (" 5 ", True, 5), ("+2", True, 2)])
def test_rewards(value: object, text: bool, expected: int) -> None:
    assert gold_score_value(value, text) == expected


@pytest.mark.parametrize(("value", "text", "problem"), [
    ("3", False, "expected an integer 1..5, got '3'"), (3.0, True, "expected an integer 1..5, got 3.0"),
    (True, True, "got True"), ("³", True, "got '³'"), ("--1", True, "got '--1'"), ("٣", True, "got '٣'"),
    (6, False, "6 is outside 1..5"), (0, True, "0 is outside 1..5"), (None, True, "got None")])
def test_refused_rewards(value: object, text: bool, problem: str) -> None:
    with pytest.raises(ValueError, match=problem.replace("(", r"\(").replace(".", r"\.")):
        gold_score_value(value, text)


def test_integers() -> None:
    assert integer_value(7) == 7 and integer_value(7.0) == 7 and integer_value("-2", text=True) == -2
    for value in (7.5, math.nan, math.inf, None, "7", True):
        with pytest.raises(ValueError, match="expected an integer"):
            integer_value(value)


def test_spans() -> None:
    assert episode_span(8, 0.8, 1.6) == (8, 0.8, 1.6)
    for arguments, problem in [((None, 0, 1), "field 'length': expected an integer, got None"),
                               ((3, 0, math.nan), "field 'to_timestamp': expected a finite number, got nan"),
                               ((3, None, 1), "field 'from_timestamp': expected a finite number, got None"),
                               ((0, 0, 0), r"zero-length episode \(length 0, video 0..0 s\)"),
                               ((3, 1, 1), "zero-length episode"),
                               ((3, -1, 1), "field 'from_timestamp': -1 s is before the start of the video")]:
        with pytest.raises(ValueError, match=problem):
            episode_span(*arguments)


def test_frame_rates() -> None:
    assert frame_rate_problem(10) is None and frame_rate_problem(29.97) is None
    for fps in (1e-300, 0, -5, math.nan, math.inf, 1e6, "10", True):
        assert frame_rate_problem(fps) is not None


def test_overlaps() -> None:
    touching = [(0, "a.mp4", 0.0, 0.8), (1, "a.mp4", 0.8, 1.7), (2, "b.mp4", 0.0, 1.0)]
    assert overlapping_spans(touching) == []
    assert overlapping_spans([*touching, (3, "a.mp4", 0.0, 0.8)]) == [(0, 3)]  # the same span
    assert overlapping_spans([(0, "a", 0.0, 5.0), (1, "a", 1.0, 2.0), (2, "a", 3.0, 4.0)]) == [(0, 1), (0, 2)]
    assert overlapping_spans([(0, "a", 0.0, 0.8), (1, "a", 0.78, 1.6)], tolerance=0.05) == []  # rounding
    assert overlapping_spans([(0, "", 0, 8), (1, "", 3, 12)]) == [(0, 1)]  # frame-index ranges
