"""Fuzzing the answer parser against an independent reading of PROTOCOL section 6, plus a corpus of real answer styles.

PROTOCOL section 6, as implemented by :func:`reference_parse` below (a hand-written scanner, no regular
expression, nothing imported from the package):

1. Search the completion, case-insensitively, for the word ``answer`` (a word boundary on both sides: no word
   character just before or just after it) followed by optional spaces, a colon, optional spaces and a number
   (optional minus sign, digits, optional decimal part). The FIRST match wins.
2. Otherwise, if the stripped completion starts with such a number followed by a word boundary, use it.
3. Otherwise the completion is unparseable.

Readings made explicit here (the official implementation is Python's ``re`` module, Unicode mode):

- "spaces" are Unicode whitespace (``str.isspace``: newlines, tabs, no-break spaces ...);
- "digits" are Unicode decimal digits (``str.isdecimal``: ASCII, full-width, Arabic-Indic ...); the
  minus sign is ASCII ``-`` only; a decimal part needs at least one digit after the ``.``;
- case-insensitive follows Unicode case mapping (``ſ``, the long s, upper-cases to ``S``);
- a word boundary after the number: the next character is not a word character (``str.isalnum`` or
  ``_``) or there is none; "such a number" may stop before a decimal part that is followed by a letter
  ("4.5abc" starts with the number 4 followed by a boundary);
- no clamping; the one deviation the package documents (README "Known differences"): a number whose
  magnitude exceeds 1e75 is unparseable, since HELM squares its squared error (1e300 at most).

Hypothesis runs seeded (``derandomize=True``, no example database); the number of generated completions is
counted per strategy and printed by the last test (at least 10,000 in total).
"""

import collections
import math
import sys
import time
import unicodedata
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helm_roboreward.protocol.rules import parse_progress_score, score_prediction
from tests.helpers.metric_inputs import answered, generation_stats, make_instance

pytestmark = pytest.mark.slow  # 10,500 fuzzed completions against a reference parser

MAX_MAGNITUDE = 1e75
"""README: numbers too large for a finite squared error are unparseable (the package's documented deviation)."""

UNPARSEABLE_ERROR = 4.0

# --------------------------------------------------------------------------------------------- the reference


def _letter_matches(char: str, letter: str) -> bool:
    return char.lower() == letter or char.upper() == letter.upper()


def _number_at(text: str, start: int) -> tuple | None:
    """``(integer part end, decimal part end or None)`` of the number starting at ``start``, or None.

    The integer part is the longest run of decimal digits after an optional ``-``; the decimal part, when
    present, a ``.`` and the longest run of digits after it.
    """
    index = start
    if index < len(text) and text[index] == "-":
        index += 1
    digits_start = index
    while index < len(text) and text[index].isdecimal():
        index += 1
    if index == digits_start:
        return None
    integer_end = index
    decimal_end = None
    if index + 1 < len(text) and text[index] == "." and text[index + 1].isdecimal():
        index += 1
        while index < len(text) and text[index].isdecimal():
            index += 1
        decimal_end = index
    return integer_end, decimal_end


def _value(number: str) -> float | None:
    ascii_number = "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in number)
    value = float(ascii_number)
    if not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
        return None
    return value


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def reference_parse(completion: str) -> float | None:
    """PROTOCOL section 6, read independently (see the module docstring)."""
    word = "answer"
    # Rule 1: the first "answer <spaces> : <spaces> <number>".
    for start in range(len(completion) - len(word) + 1):
        if not all(_letter_matches(completion[start + k], word[k]) for k in range(len(word))):
            continue
        index = start + len(word)
        if (start > 0 and _is_word(completion[start - 1])) or (index < len(completion) and _is_word(completion[index])):
            continue  # "final_answer", "reanswer", "answers": not the word answer
        while index < len(completion) and completion[index].isspace():
            index += 1
        if index >= len(completion) or completion[index] != ":":
            continue
        index += 1
        while index < len(completion) and completion[index].isspace():
            index += 1
        number = _number_at(completion, index)
        if number is None:
            continue
        integer_end, decimal_end = number
        return _value(completion[index:decimal_end if decimal_end is not None else integer_end])
    # Rule 2: the stripped completion starts with a number followed by a word boundary.
    stripped = completion.strip()
    number = _number_at(stripped, 0)
    if number is None:
        return None
    integer_end, decimal_end = number
    for end in (decimal_end, integer_end):
        if end is not None and (end == len(stripped) or not _is_word(stripped[end])):
            return _value(stripped[:end])
    return None


# --------------------------------------------------------------------------------------------- shared checks

GENERATED: dict[str, int] = collections.Counter()
"""Completions generated per strategy (printed by the last test)."""

STAT_SAFE_ERROR = math.sqrt(math.sqrt(sys.float_info.max))
"""About 1.16e77. HELM's ``Stat.add`` squares every value (``mean ** 2``), so a ``squared_error`` above
sqrt(max float), i.e. an error above this, would raise OverflowError inside the metric; the parser's bound
(``MAX_PARSED_MAGNITUDE`` = 1e75) keeps every error below it (:func:`test_metric_survives_a_huge_answer`)."""


def check(completion: str, gold: int) -> None:
    """Parser == reference; every error term and per-instance stat finite and consistent."""
    expected = reference_parse(completion)
    parsed = parse_progress_score(completion)
    if expected is None:
        assert parsed is None, (completion[:300], parsed)
    else:
        assert parsed is not None and parsed == expected, (completion[:300], parsed, expected)
        assert isinstance(parsed, float)
    scored = score_prediction(completion, gold)
    terms = [scored.abs_error, scored.squared_error, scored.exact_match, scored.invalid_output,
             scored.false_success, scored.missed_success]
    if scored.signed_error is not None:
        terms.append(scored.signed_error)
    assert all(math.isfinite(term) for term in terms), (completion[:300], scored)
    assert scored.abs_error == (UNPARSEABLE_ERROR if expected is None else abs(expected - gold))
    assert scored.abs_error < STAT_SAFE_ERROR, (completion[:300], scored.abs_error)
    stats = generation_stats(make_instance(gold), answered(completion))
    assert all(math.isfinite(value) for value in stats.values()), (completion[:300], stats)
    assert stats["abs_error"] == scored.abs_error and stats["failed_request"] == 0


def fuzz(strategy: st.SearchStrategy, name: str, examples: int) -> Callable[[], None]:
    """A seeded hypothesis test running :func:`check` on ``examples`` completions from ``strategy``."""

    @settings(derandomize=True, database=None, max_examples=examples, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])
    @given(completion=strategy, gold=st.integers(1, 5))
    def run(completion: str, gold: int) -> None:
        GENERATED[name] += 1
        check(completion, gold)

    return run


# --------------------------------------------------------------------------------------------- strategies

ANSWER_WORDS = ["answer", "ANSWER", "Answer", "aNsWeR", "anſwer", "ANſWER", "answers", "Final answer",
                "reanswer", "ANSWER", "answ er", "ANSWE R", "final_answer", "Final_Answer", "answer_", "answer2",
                "2answer", "ANSWERS", "xanswer", "ánswer", "answerä"]
SEPARATORS = [":", ": ", " : ", ":\n", "\n:\n", ":\t", ":\u00a0", "\u2003:\u3000", "：", " - ", " ", "=", "::",
              ": **", "** :", ":*", ": `", ": #"]
ODD_TOKENS = ["**", "__", "`", "```", "#", "- ", "* ", "> ", "\n", "\n\n", " ", "\t", "\u00a0", "\u200b", "\ufeff",
              "−", "–", "+", ".", "..", "/5", "/", ",", "_", "e3", "E-2", "x", "%", "(", ")", "½", "³", "Ⅳ",
              "<think>", "</think>", "score", "score_3", "Score: ", "SCORE:", "rating: ", "ANSWER:", "answer:"]
UNICODE_DIGITS = st.text(alphabet=st.characters(categories=["Nd"]), min_size=1, max_size=4)
ASCII_NUMBERS = st.from_regex(r"-?[0-9]{1,4}(\.[0-9]{1,3})?", fullmatch=True)
LONG_DIGITS = st.text(alphabet="0123456789", min_size=140, max_size=420)
NUMBERS = st.one_of(ASCII_NUMBERS, st.integers(-3, 9).map(str), UNICODE_DIGITS, LONG_DIGITS,
                    st.tuples(st.sampled_from(["-", ""]), UNICODE_DIGITS, st.sampled_from(["", "."]),
                              UNICODE_DIGITS).map("".join),
                    st.floats(allow_nan=True, allow_infinity=True).map(repr))
ANSWER_LINES = st.tuples(st.sampled_from(ANSWER_WORDS), st.sampled_from(SEPARATORS), NUMBERS,
                         st.sampled_from(["", ".", "/5", "**", " ", "\n", "x", "_", ".5", ".x", ")"])).map("".join)
SHORT_TEXT = st.text(max_size=30)
PROSE = st.text(alphabet=st.characters(categories=["L", "Zs", "P"]), max_size=200)

STRATEGIES = {
    # any Unicode text at all
    "random unicode": st.text(max_size=300),
    # fragments mixed at random: answer words, separators, numbers (ASCII, Unicode, huge, negative, decimal),
    # markdown, look-alike characters, short random text
    "injected fragments": st.lists(st.one_of(st.sampled_from(ANSWER_WORDS), st.sampled_from(SEPARATORS),
                                             st.sampled_from(ODD_TOKENS), NUMBERS, SHORT_TEXT),
                                   max_size=12).map("".join),
    # several ANSWER lines, with prose around them
    "several answer lines": st.lists(st.one_of(ANSWER_LINES, PROSE), min_size=2, max_size=6).map("\n".join),
    # reasoning paragraphs, then the answer
    "reasoning then answer": st.tuples(PROSE, st.sampled_from(["\n", "\n\n", " ", ""]), ANSWER_LINES).map("".join),
    # a leading number (rule 2) then anything
    "leading number": st.tuples(st.sampled_from(["", " ", "\n", "\t ", "**"]), NUMBERS,
                                st.sampled_from(["", " ", ".", ".5", ".5x", "x", "_", "/5", "\n", ",", "٤"]),
                                SHORT_TEXT).map("".join),
    # markdown around the answer
    "markdown": st.tuples(st.sampled_from(["", "**", "__", "`", "# ", "> ", "- "]), ANSWER_LINES,
                          st.sampled_from(["", "**", "__", "`"]), SHORT_TEXT).map("".join),
}
EXAMPLES = {"random unicode": 2000, "injected fragments": 2500, "several answer lines": 1500,
            "reasoning then answer": 1500, "leading number": 1500, "markdown": 1500}
MINIMUM_TOTAL = 10_000


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_parser_matches_the_reference(name: str) -> None:
    fuzz(STRATEGIES[name], name, EXAMPLES[name])()


# --------------------------------------------------------------------------------------------- the corpus

REASONING = ("The gripper approaches the red block and closes around it. It lifts the block about two "
             "centimetres and carries it halfway to the bowl, then the episode ends with the block still held.\n\n"
             "Scoring: the block never reaches the bowl, but there is a small change toward the goal.\n\n")
LONG_OUTPUT = ("The arm moves toward the bowl. " * 4000)[: 100_000 - len("\nANSWER: 3")] + "\nANSWER: 3"

# (completion, the official result: the parsed score or None for unparseable)
CORPUS = {
    "bold number": ("**4**", None),
    "answer then bold number": ("ANSWER: **4**", None),
    "bold answer label": ("**ANSWER:** 4", None),
    "dash instead of colon": ("Answer - 4", None),
    "answer as a fraction": ("ANSWER: 4/5", 4.0),
    "bare fraction": ("4/5", 4.0),
    "score label": ("score: 4", None),
    "score then answer": ("Score: 4\nANSWER: 3", 3.0),
    "reasoning paragraphs then answer": (REASONING + "ANSWER: 2", 2.0),
    "several answer lines": ("ANSWER: 2\nOn reflection the block is in the bowl.\nANSWER: 5\nANSWER: 4", 2.0),
    "answer with a full stop": ("ANSWER:4.", 4.0),
    "answer with a decimal": ("ANSWER: 4.0", 4.0),
    "full-width digit": ("ANSWER: ４", 4.0),
    "Arabic-Indic digit": ("ANSWER: ٤", 4.0),
    "100,000 characters then the answer": (LONG_OUTPUT, 3.0),
    "number inside prose": ("I'd say 3", None),
    "bare number": ("3", 3.0),
    "number as a word": ("three", None),
    "negative answer": ("ANSWER: -1", -1.0),
    "zero answer": ("ANSWER: 0", 0.0),
    "newline after the colon": ("Answer:\n5", 5.0),
    "space before the colon": ("answer : 2", 2.0),
    "underscore before answer": ("final_answer: 3", None),
    "letters glued to answer": ("reanswer: 3", None),
    "plural answers": ("Answers: 3", None),
    "underscore label then answer": ("final_answer: 3\nANSWER: 4", 4.0),
    "answer after punctuation": ("(answer: 3)", 3.0),
    "markdown answer heading": ("## Answer: 3", 3.0),
}


@pytest.mark.parametrize("style", list(CORPUS))
def test_real_world_answer_styles(style: str) -> None:
    completion, expected = CORPUS[style]
    assert reference_parse(completion) == expected, "the reference disagrees with the corpus"
    started = time.perf_counter()
    parsed = parse_progress_score(completion)
    elapsed = time.perf_counter() - started
    assert parsed == expected
    assert elapsed < 2.0, f"parsing took {elapsed:.2f} s"
    for gold in range(1, 6):
        scored = score_prediction(completion, gold)
        assert scored.abs_error == (UNPARSEABLE_ERROR if expected is None else abs(expected - gold))
        assert scored.invalid_output == (1.0 if expected is None else 0.0)
        stats = generation_stats(make_instance(gold), answered(completion))
        assert stats["abs_error"] == scored.abs_error
        assert all(math.isfinite(value) for value in stats.values())


@pytest.mark.parametrize("completion", ["ANSWER: 1" + "0" * 78, "ANSWER: " + "9" * 100, "1" + "0" * 149],
                         ids=["answer-1e78", "answer-100-nines", "leading-1e149"])
def test_metric_survives_a_huge_answer(completion: str) -> None:
    stats = generation_stats(make_instance(3), answered(completion))
    assert all(math.isfinite(value) for value in stats.values())


def test_corpus_covers_the_no_clamping_rule() -> None:
    assert score_prediction("ANSWER: -1", 1).abs_error == 2.0
    assert score_prediction("ANSWER: 0", 5).abs_error == 5.0  # more than the unparseable charge of 4


# --------------------------------------------------------------------------------------------- the count


def test_generated_examples_total(capsys: pytest.CaptureFixture[str]) -> None:
    """Runs last in this file: the fuzz tests above generated at least 10,000 completions in total."""
    if set(GENERATED) != set(STRATEGIES):
        pytest.skip(f"only {sorted(GENERATED)} of the fuzz strategies ran in this session")
    total = sum(GENERATED.values())
    with capsys.disabled():
        print(f"\n[parser fuzz] {total} generated completions: "
              + ", ".join(f"{name} {count}" for name, count in GENERATED.items()))
    assert total >= MINIMUM_TOTAL, dict(GENERATED)
