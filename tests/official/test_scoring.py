"""``helm_roboreward.protocol.rules``: the official parse rule and per-instance error terms (PROTOCOL section 6)."""

import math

import pytest

from helm_roboreward.protocol.rules import (
    UNPARSEABLE_ABS_ERROR,
    ScoredPrediction,
    parse_progress_score,
    score_prediction,
)

# (completion, expected official parse). Rule 1: first "answer <spaces> : <spaces> <number>" anywhere,
# case-insensitive. Rule 2: the stripped completion starts with a number followed by a word boundary.
PARSE_TABLE = [
    # rule 1, the format the prompt asks for
    ("ANSWER: 4", 4.0),
    ("ANSWER:4", 4.0),
    ("answer:3.5", 3.5),
    ("ANSWER:0", 0.0),
    ("Answer : 2", 2.0),
    ("aNsWeR   :   1", 1.0),
    ("ANSWER:\n\t 2", 2.0),  # \s covers newlines and tabs
    ("**ANSWER: 4**", 4.0),
    ("The robot placed the cup.\nANSWER: 5", 5.0),
    ("Final answer: 3", 3.0),
    ("ANSWER: 10", 10.0),  # no clamping
    ("ANSWER: 45", 45.0),
    ("ANSWER: -1", -1.0),
    ("ANSWER: -2.5", -2.5),
    ("ANSWER: 3.", 3.0),  # a decimal part needs digits; the dot is left over
    ("ANSWER: 3.5.2", 3.5),
    ("ANSWER: 5x", 5.0),  # rule 1 has no word-boundary requirement
    ("ANSWER: 1e3", 1.0),  # no exponent syntax: the number is "1"
    # several answers: the first match wins, even over a leading number
    ("ANSWER: 2 ... on reflection ANSWER: 5", 2.0),
    ("answer: 1\nANSWER: 4", 1.0),
    ("4\nANSWER: 2", 2.0),
    ("I think 5. ANSWER: 3", 3.0),
    ("Answer: maybe. ANSWER: 4", 4.0),  # the first *complete* match
    # rule 2, a leading number followed by a word boundary
    ("4", 4.0),
    ("4 because the cup is in the bowl", 4.0),
    ("  3\n", 3.0),
    ("\n\n2.5 points", 2.5),
    ("4,", 4.0),
    ("3/5", 3.0),
    ("-2", -2.0),
    ("3.abc", 3.0),
    # "4.5abc": "4.5" is followed by a letter (no boundary), the regex backtracks to "4" + "." (a boundary)
    ("4.5abc", 4.0),
    ("4abc", None),
    ("45abc", None),
    # unparseable
    ("ANSWER - 4", None),  # no colon and the text does not start with a number
    ("ANSWER 4", None),
    ("**ANSWER:** 4", None),  # after the colon come '*', not spaces and a number
    ("ANSWER：4", None),  # full-width colon is not ':'
    ("ANSWER: .5", None),
    ("ANSWER: +3", None),
    ("- 2", None),
    ("The answer is 4", None),
    ("answers: 4", None),
    ("I cannot tell.", None),
    ("", None),
    ("   \n\t", None),
    ("score four", None),
    # Unicode digits: Python's \d is any Unicode decimal digit and float() accepts them
    ("ANSWER: ٤", 4.0),  # Arabic-Indic four
    ("ANSWER: ４", 4.0),  # full-width four
    ("٣", 3.0),
    ("ANSWER: ٣.٥", 3.5),
]


@pytest.mark.parametrize(("completion", "expected"), PARSE_TABLE)
def test_parse_progress_score_table(completion: str, expected: float | None) -> None:
    result = parse_progress_score(completion)
    if expected is None:
        assert result is None
    else:
        assert result == expected
        assert isinstance(result, float)


def test_parse_negative_zero_is_zero() -> None:
    assert parse_progress_score("-0") == 0.0
    assert parse_progress_score("ANSWER: -0") == 0.0


@pytest.mark.parametrize(
    "completion",
    [
        "ANSWER: " + "9" * 400,
        "9" * 400,
        "ANSWER: " + "1" * 5000,
        "ANSWER: " + "9" * 400 + ".5",
    ],
)
def test_digit_strings_too_long_for_a_float_are_unparseable(completion: str) -> None:
    assert parse_progress_score(completion) is None
    scored = score_prediction(completion, 3)
    assert scored.invalid_output == 1.0
    assert scored.abs_error == 4.0


def test_long_but_finite_number_parses_unclamped() -> None:
    assert parse_progress_score("ANSWER: " + "1" + "0" * 30) == 1e30
    assert parse_progress_score("ANSWER: 0." + "0" * 50 + "1") == pytest.approx(1e-51)


def test_huge_completion_is_fast_and_first_answer_wins() -> None:
    completion = "thinking " * 50_000 + "ANSWER: 2 " + "ANSWER: 5 " * 100
    assert parse_progress_score(completion) == 2.0


# --------------------------------------------------------------------------- score_prediction


def test_unparseable_constant() -> None:
    assert UNPARSEABLE_ABS_ERROR == 4.0


@pytest.mark.parametrize(
    ("completion", "gold", "abs_error", "squared_error", "exact", "signed"),
    [
        ("ANSWER: 3", 3, 0.0, 0.0, 1.0, 0.0),
        ("ANSWER: 3.0", 3, 0.0, 0.0, 1.0, 0.0),
        ("ANSWER: 1", 5, 4.0, 16.0, 0.0, -4.0),
        ("ANSWER: 5", 1, 4.0, 16.0, 0.0, 4.0),
        ("ANSWER: 2", 4, 2.0, 4.0, 0.0, -2.0),
        ("ANSWER: 3.5", 3, 0.5, 0.25, 0.0, 0.5),
        ("ANSWER: 3.5", 4, 0.5, 0.25, 0.0, -0.5),
        # no clamping of out-of-range predictions
        ("ANSWER: 0", 1, 1.0, 1.0, 0.0, -1.0),
        ("ANSWER: 0", 5, 5.0, 25.0, 0.0, -5.0),
        ("ANSWER: 10", 1, 9.0, 81.0, 0.0, 9.0),
        ("ANSWER: -3", 2, 5.0, 25.0, 0.0, -5.0),
        ("4", 4, 0.0, 0.0, 1.0, 0.0),
    ],
)
def test_score_prediction_parsed(
    completion: str, gold: int, abs_error: float, squared_error: float, exact: float, signed: float
) -> None:
    scored = score_prediction(completion, gold)
    assert isinstance(scored, ScoredPrediction)
    assert scored.predicted == parse_progress_score(completion)
    assert scored.gold_score == gold
    assert scored.abs_error == pytest.approx(abs_error)
    assert scored.squared_error == pytest.approx(squared_error)
    assert scored.exact_match == exact
    assert scored.invalid_output == 0.0
    assert scored.signed_error == pytest.approx(signed)


@pytest.mark.parametrize("gold", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("completion", ["", "The answer is 4", "**ANSWER:** 5", "ANSWER - 3", "no idea"])
def test_score_prediction_unparseable(completion: str, gold: int) -> None:
    scored = score_prediction(completion, gold)
    assert scored.predicted is None
    assert scored.gold_score == gold
    # the maximum error regardless of the gold label (even for gold 3, where no parsed answer in 1..5 is 4 off)
    assert scored.abs_error == 4.0
    assert scored.squared_error == 16.0
    assert scored.exact_match == 0.0
    assert scored.invalid_output == 1.0
    assert scored.signed_error is None
    assert scored.false_success == 0.0
    # unparseable counts as missing a success
    assert scored.missed_success == (1.0 if gold == 5 else 0.0)


@pytest.mark.parametrize(
    ("completion", "gold", "false_success", "missed_success"),
    [
        ("ANSWER: 5", 1, 1.0, 0.0),
        ("ANSWER: 5", 4, 1.0, 0.0),
        ("ANSWER: 5.0", 4, 1.0, 0.0),
        ("ANSWER: 5", 5, 0.0, 0.0),
        ("ANSWER: 4", 5, 0.0, 1.0),
        ("ANSWER: 4.999", 5, 0.0, 1.0),
        ("ANSWER: 6", 5, 0.0, 1.0),  # not a 5, so the success was missed
        ("ANSWER: 6", 3, 0.0, 0.0),  # not a 5, so not a false success either
        ("ANSWER: 1", 5, 0.0, 1.0),
        ("ANSWER: 3", 3, 0.0, 0.0),
        ("nonsense", 5, 0.0, 1.0),
        ("nonsense", 2, 0.0, 0.0),
    ],
)
def test_success_errors(completion: str, gold: int, false_success: float, missed_success: float) -> None:
    scored = score_prediction(completion, gold)
    assert scored.false_success == false_success
    assert scored.missed_success == missed_success


def test_score_prediction_is_frozen() -> None:
    scored = score_prediction("ANSWER: 3", 3)
    with pytest.raises(AttributeError):
        scored.abs_error = 0.0  # type: ignore[misc]


def test_squared_error_is_abs_error_squared_for_parsed() -> None:
    for completion in ["ANSWER: 1", "ANSWER: 2.25", "ANSWER: 0", "ANSWER: 7"]:
        for gold in range(1, 6):
            scored = score_prediction(completion, gold)
            assert math.isclose(scored.squared_error, scored.abs_error**2)
            assert scored.signed_error is not None
            assert math.isclose(abs(scored.signed_error), scored.abs_error)
