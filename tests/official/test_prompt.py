"""``helm_roboreward.protocol.rules``: the exact PROTOCOL section 3 text, with the task inserted verbatim."""

import pytest

from helm_roboreward.protocol.rules import RUBRIC_PROMPT_TEMPLATE, build_prompt
from tests.helpers.protocol import RUBRIC

EXPECTED_PREFIX = RUBRIC  # PROTOCOL section 3, kept once in tests/helpers/protocol.py


def test_exact_text() -> None:
    task = "put the red block in the blue bowl"
    assert build_prompt(task) == EXPECTED_PREFIX + task


def test_template_matches_protocol() -> None:
    assert RUBRIC_PROMPT_TEMPLATE == EXPECTED_PREFIX + "{task}"


def test_structure() -> None:
    prompt = build_prompt("wipe the table")
    lines = prompt.split("\n")
    assert len(lines) == 9
    assert lines[7] == ""  # exactly one blank line before "Task:"
    assert lines[6] != ""
    assert lines[8] == "Task: wipe the table"
    assert not prompt.startswith((" ", "\n"))
    assert prompt.endswith("wipe the table")  # nothing after the task
    assert all(line == line.lstrip() for line in lines)  # no indentation
    assert "\r" not in prompt and "\t" not in prompt
    assert prompt.count("ANSWER: <score>") == 1


@pytest.mark.parametrize(
    "task",
    [
        "pick up the {block} and {task}",  # braces must not be treated as a format string
        "{task}",
        "{}",
        "{0} {{x}} %s %(name)s",
        "place the tasse in the bol — déjà vu ✓ 把杯子放进碗里 🍎",
        "line one\nline two\n",
        "  leading and trailing spaces  ",
        "\\n is not a newline, \\ backslash",
        "a",
        "x" * 207,
    ],
)
def test_task_inserted_verbatim(task: str) -> None:
    assert build_prompt(task) == EXPECTED_PREFIX + task


def test_task_containing_the_placeholder_is_not_expanded_twice() -> None:
    prompt = build_prompt("{task}{task}")
    assert prompt.endswith("Task: {task}{task}")
    assert prompt.count("Given the task") == 1
