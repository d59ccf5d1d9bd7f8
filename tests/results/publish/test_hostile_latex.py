"""``leaderboard.tex`` with hostile display names: it compiles with a stock pdflatex whatever the names (issue 36).

Line breaks and control characters print as spaces, ``<``, ``>`` and ``|`` as themselves (not the ``¡ ¿ —`` of
pdflatex's default font encoding), accented letters without their accents, and any other non-ASCII character as its
code point; a comment at the top of the file lists each name so changed.
"""

import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helm_roboreward.results.publish.comparability import Comparability
from helm_roboreward.results.publish.evidence import suite_facts
from helm_roboreward.results.publish.latex import LEADERBOARD_TEX, escape, leaderboard_tex
from tests.helpers.suite import SUITE, SuiteCopy

PDFLATEX_MISSING = "pdflatex not found: install Debian's texlive-latex-base and texlive-latex-recommended"
CONSTANT, RANDOM = "baseline/constant-3", "baseline/uniform-random"
HOSTILE = [
    "two\n\nlines", "cr\r\nlf", "<less> >greater| bar", "emoji \U0001f600 model", "CJK \u6a21\u578b",
    "Caf\u00e9 M\u00fcller", "\ufb01ne \uff21\uff06\uff22", "tab\there", "nul\x00bell\x07del\x7f",
    "[bracket] first", "*star", " [spaced", "back\\slash {brace} $dollar$ %pct #hash _u ~t ^c &amp",
    "rtl \u202e override", "e\u0301 combining", "stra\u00dfe", "line\u2028sep", "nbsp\u00a0x",
    "\ud800 lone surrogate", "\u201cquoted\u201d \u2013 dash",
]
PLAIN = {"tab\there": "tab here", "Caf\u00e9 M\u00fcller": "Cafe Muller", "\ufb01ne \uff21\uff06\uff22": r"fine A\&B",
         "emoji \U0001f600 model": r"emoji \texttt{U+1F600} model", "<less> >greater| bar":
         r"\textless{}less\textgreater{} \textgreater{}greater\textbar{} bar", "stra\u00dfe": "strasse",
         "e\u0301 combining": "e combining", "two\n\nlines": "two  lines", "*star": "*star"}


@given(st.text())
def test_any_text_escapes_to_one_line_of_ascii_without_raw_brackets(text: str) -> None:
    escaped = escape(text)
    assert escaped.isascii() and escaped.isprintable()  # no line break, no control character, nothing non-ASCII
    assert not re.search(r"[<>|]", escaped)


def hostile_table(copy: SuiteCopy, names: list[str]) -> str:
    """The demo suite's table with one row per name (its two rows repeated), the odd rows for a reason of their own,
    so that the caption names them too."""
    facts = suite_facts(str(copy.output), SUITE)
    models = []
    for index, name in enumerate(names):
        model = facts.models[index % len(facts.models)]
        verdict = Comparability(False, (f"reason {index % 2}",)) if index % 2 else model.verdict
        models.append(replace(model, key=f"{model.key}#{index}", display_name=name, verdict=verdict))
    return leaderboard_tex(replace(facts, models=models))


def rows_of(text: str) -> list[str]:
    lines = text.splitlines()
    return lines[lines.index(r"\midrule") + 1:lines.index(r"\bottomrule")]


def test_hostile_display_names_print_as_ascii_and_are_listed(copy_suite: Callable[..., SuiteCopy]) -> None:
    copy = copy_suite(summarized=False, media="none")
    text = hostile_table(copy, HOSTILE)
    # Before: a line break left a blank line in the table, < > | stayed raw, emoji and CJK stayed as they were.
    assert text.isascii(), [character for character in text if not character.isascii()]
    assert "\n\n" not in text and not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", text)
    rows = rows_of(text)
    caption = next(line for line in text.splitlines() if line.startswith(r"\caption{"))
    assert not re.search(r"[<>|]", " ".join(rows) + caption)
    assert escape(", ".join(HOSTILE[1::2])) in caption
    assert len(rows) == len(HOSTILE)
    for row in rows:
        assert not row.lstrip().startswith(("[", "*"))  # \\ or \midrule would read it as their option
    for name in HOSTILE:
        assert any(row.startswith(("{}" + escape(name), escape(name))) for row in rows), name
        assert (f"%   {ascii(name)}" in text.splitlines()) == (not (name.isascii() and name.isprintable()))
    assert {name: escape(name) for name in PLAIN} == PLAIN
    clean = hostile_table(copy, ["Constant 3", "Uniform random"])
    assert "%   " not in clean and "changed to print" not in clean


def test_the_table_compiles_for_every_hostile_name(copy_suite: Callable[..., SuiteCopy], tmp_path: Path) -> None:
    if shutil.which("pdflatex") is None:
        pytest.skip(PDFLATEX_MISSING)
    (tmp_path / LEADERBOARD_TEX).write_text(hostile_table(copy_suite(summarized=False, media="none"), HOSTILE),
                                            encoding="utf-8")
    # Before: emoji and CJK stopped pdflatex ("Unicode character ... not set up for use with LaTeX").
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", LEADERBOARD_TEX], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:]
    assert (tmp_path / "leaderboard.pdf").stat().st_size > 1000
