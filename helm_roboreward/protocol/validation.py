"""What a JSON Lines line, a task, a gold score, an episode's span and a frame rate may be: one rule each.

``roboreward prepare`` reads ``metadata.jsonl`` rows, ``import-lerobot`` and ``label`` write them from a LeRobot
dataset and a labels file; both decide with these functions, so a copy one writes is a copy the other reads. Each
returns the problem as a phrase (or raises :class:`ValueError` with it); callers add the file, line and field.
Pure: no I/O.
"""

import math
import numbers
import re
import unicodedata
from collections.abc import Sequence
from typing import TypeVar

from helm_roboreward.protocol.rules import MAX_SCORE, MIN_SCORE

# Characters that draw nothing: controls, format characters, separators, and blank letters of other categories.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})
_BLANK_CHARACTERS = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u2800\u3164\uffa0")
# ASCII digits only: str.isdigit() also takes "³" and "١", which int() then refuses.
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
Item = TypeVar("Item")
MIN_FPS = 0.01
MAX_FPS = 1000.0
"""Frame rates a video of an episode may have (the output's rate is a fraction with a denominator up to 1001)."""


def jsonl_lines(text: str) -> list[str]:
    r"""The lines of a JSON Lines text: split at "\n" only (not ``str.splitlines``), one trailing "\r" dropped."""
    lines = text.removesuffix("\n").split("\n") if text else []  # a final "\n" ends the last line
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def has_visible_character(text: str) -> bool:
    """True when ``text`` holds at least one character that is drawn (not whitespace, not zero-width)."""
    return any(
        not character.isspace()
        and character not in _BLANK_CHARACTERS
        and unicodedata.category(character) not in _INVISIBLE_CATEGORIES
        for character in text
    )


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be written as UTF-8 (a prompt, a JSON file), or None.

    A lone surrogate is what ``bytes.decode(errors="surrogateescape")`` leaves for a byte that is not UTF-8.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return (f"is not valid text: character {error.start + 1} is a lone surrogate "
                f"(U+{ord(text[error.start]):04X}), left by decoding bytes that are not UTF-8 with "
                "errors='surrogateescape'; decode the bytes with their real encoding")
    return None


def task_problem(task: object) -> str | None:
    """Why ``task`` cannot be a row's task instruction, or None: valid text with at least one visible character."""
    if not isinstance(task, str) or not task:
        return f"expected a non-empty string, got {task!r}"
    if not has_visible_character(task):
        return (f"has no visible characters ({task!r}: only whitespace or zero-width characters such as U+200B or "
                "U+FEFF); write the robot's task instruction")
    return text_problem(task)


def integer_value(value: object, text: bool = False) -> int:
    """``value`` as an integer: an ``int`` (not a bool), an integral finite float, or with ``text`` ASCII digits.

    Raises:
        ValueError: Anything else (the message is the problem, e.g. ``expected an integer, got '³'``).
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if text and isinstance(value, str) and _INTEGER_TEXT.fullmatch(value.strip()):
        return int(value.strip())
    raise ValueError(f"expected an integer, got {value!r}")


def gold_score_value(value: object, text: bool = False) -> int:
    """A gold score (a row's ``reward`` field): an integer ``MIN_SCORE``..``MAX_SCORE`` of the rubric.

    ``text`` also takes ASCII digits (a CSV cell, a labels file's ``"3"``); a float (``3.0``) is always refused.

    Raises:
        ValueError: Not an integer, or outside the rubric's scale.
    """
    if isinstance(value, float):  # 3.0 is not a score the rubric gives
        raise ValueError(f"expected an integer {MIN_SCORE}..{MAX_SCORE}, got {value!r}")
    try:
        gold_score = integer_value(value, text)
    except ValueError:
        raise ValueError(f"expected an integer {MIN_SCORE}..{MAX_SCORE}, got {value!r}") from None
    if not MIN_SCORE <= gold_score <= MAX_SCORE:
        raise ValueError(f"{gold_score} is outside {MIN_SCORE}..{MAX_SCORE}")
    return gold_score


def is_number(value: object) -> bool:
    """Any real number but a bool: Python's, numpy's (a pandas or parquet column gives ``np.float32``), Fraction.

    numpy registers its numbers as :class:`numbers.Real` and its bool as none.
    """
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def finite_number(value: object) -> float:
    """``value`` as a finite float (a real number, not a bool, not NaN or infinite).

    Raises:
        ValueError: Anything else.
    """
    if not is_number(value) or not math.isfinite(value):  # type: ignore[arg-type]  # a numbers.Real
        raise ValueError(f"expected a finite number, got {value!r}")
    return float(value)  # type: ignore[arg-type]


def frame_rate_problem(fps: object) -> str | None:
    """Why ``fps`` cannot be a video's frame rate, or None: a number :data:`MIN_FPS`..:data:`MAX_FPS`."""
    if not is_number(fps) or not MIN_FPS <= fps <= MAX_FPS:  # type: ignore[operator]  # a numbers.Real
        return f"expected a frame rate {MIN_FPS:g}..{MAX_FPS:g} frames per second, got {fps!r}"
    return None


def episode_span(length: object, from_timestamp: object, to_timestamp: object) -> tuple[int, float, float]:
    """An episode's frame count and its time span in its video: ``length >= 1``, ``0 <= from < to``, finite.

    Raises:
        ValueError: The problem, naming the field (``'length': expected an integer, got None``; zero-length).
    """
    try:
        frames = integer_value(length)
    except ValueError as problem:
        raise ValueError(f"field 'length': {problem}") from None
    times = []
    for name, value in (("from_timestamp", from_timestamp), ("to_timestamp", to_timestamp)):
        try:
            times.append(finite_number(value))
        except ValueError as problem:
            raise ValueError(f"field {name!r}: {problem}") from None
    start, end = times
    if frames <= 0 or end <= start:
        raise ValueError(f"zero-length episode (length {frames}, video {start:g}..{end:g} s)")
    if start < 0:
        raise ValueError(f"field 'from_timestamp': {start:g} s is before the start of the video")
    return frames, start, end


def overlapping_spans(spans: Sequence[tuple[Item, str, float, float]],
                      tolerance: float = 0.0) -> list[tuple[Item, Item]]:
    """Pairs of items whose spans ``[start, end)`` overlap by more than ``tolerance`` in the same group.

    ``spans`` holds ``(item, group, start, end)``: episodes in one video file, or frame-index ranges of one
    dataset. Spans that only touch (one ends where the next starts) do not overlap; identical spans do.
    """
    pairs: list[tuple[Item, Item]] = []
    ordered = sorted(spans, key=lambda span: (span[1], span[2], span[3]))
    reaching: tuple[Item, str, float] | None = None
    """The item of the current group whose span reaches furthest so far: (item, group, end)."""
    for item, group, start, end in ordered:
        if reaching is not None and reaching[1] == group and start < reaching[2] - tolerance:
            pairs.append((reaching[0], item))
        if reaching is None or reaching[1] != group or end > reaching[2]:
            reaching = (item, group, end)
    return pairs
