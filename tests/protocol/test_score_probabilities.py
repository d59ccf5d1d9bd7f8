"""score_distribution with hand-built candidates: which token is read, how alternatives combine, when there is none."""

import math
from typing import Any

import pytest

from helm_roboreward.protocol import rules as protocol
from helm_roboreward.protocol.score_probabilities import (
    expected_score,
    no_distribution_reason,
    parsed_number_span,
    score_distribution,
    success_probability,
)


def candidate(offset: int, text: str, **top: float) -> dict[str, Any]:
    return {"offset": offset, "text": text, "top": dict(top)}


def with_top(offset: int, text: str, top: dict[Any, Any]) -> dict[str, Any]:
    return {"offset": offset, "text": text, "top": top}


@pytest.mark.parametrize("text", ["ANSWER: 3", "  ANSWER : 4  ", "answer:5", "3", " 2 because", "\n\n ANSWER: 3.5",
                                  "The robot ... ANSWER: 1. Then answer: 2", "ANSWER: -1", "ANSWER: 10", "٤"])
def test_the_span_is_the_number_the_official_rule_parses(text: str) -> None:
    span = parsed_number_span(text)
    assert span is not None
    assert float(text[span[0]:span[1]]) == protocol.parse_progress_score(text)


@pytest.mark.parametrize("text", ["", "   ", "final_answer: 3", "no digits here", "score 3", "ANSWER: " + "9" * 80])
def test_no_span_where_the_official_rule_parses_nothing(text: str) -> None:
    assert parsed_number_span(text) is None
    assert score_distribution(text, [candidate(0, text or "x", **{"3": -0.1})]) is None


def test_answer_3_combines_spellings_and_ignores_other_tokens() -> None:
    text = "ANSWER: 3"
    top = {"3": -0.1, "4": -2.5, " 3": -4.0, "x": -1.0}
    distribution = score_distribution(text, [candidate(0, "ANSWER"), candidate(6, ":"), with_top(8, "3", top)])
    p3, p4 = math.exp(-0.1) + math.exp(-4.0), math.exp(-2.5)
    assert distribution is not None
    assert distribution == pytest.approx({1: 0.0, 2: 0.0, 3: p3 / (p3 + p4), 4: p4 / (p3 + p4), 5: 0.0}, abs=1e-15)
    assert sum(distribution.values()) == pytest.approx(1.0, abs=1e-15)
    assert expected_score(distribution) == pytest.approx((3 * p3 + 4 * p4) / (p3 + p4))
    assert success_probability(distribution) == 0.0


def test_renormalisation_is_exact() -> None:
    top = {str(score): math.log(weight) for score, weight in zip(range(1, 6), (0.05, 0.10, 0.15, 0.20, 0.30),
                                                                   strict=True)}
    top["ANSWER"] = math.log(0.2)  # 20% of the mass is not a score: renormalised away
    distribution = score_distribution("5", [with_top(0, "5", top)])
    assert distribution is not None
    assert distribution == pytest.approx({1: 0.0625, 2: 0.125, 3: 0.1875, 4: 0.25, 5: 0.375}, abs=1e-12)
    assert expected_score(distribution) == pytest.approx(1 * 0.0625 + 2 * 0.125 + 3 * 0.1875 + 4 * 0.25 + 5 * 0.375)
    assert success_probability(distribution) == pytest.approx(0.375)


def test_log_probabilities_far_below_zero_do_not_underflow() -> None:
    distribution = score_distribution("4", [with_top(0, "4", {"4": -9000.0, "5": -9000.0 - math.log(3)})])
    assert distribution == pytest.approx({1: 0.0, 2: 0.0, 3: 0.0, 4: 0.75, 5: 0.25})


def test_the_token_covering_the_number_is_read_even_when_split_oddly() -> None:
    # "ANSWER: 4" tokenised as "ANS", "WER:", " 4" (the digit shares a token with the space before it)
    text = "ANSWER: 4"
    candidates = [candidate(0, "ANS", **{"3": -0.1}), candidate(3, "WER:", **{"2": -0.1}),
                  with_top(7, " 4", {" 4": -0.2, " 5": -1.9, "4": -3.0, " five": -0.5})]
    distribution = score_distribution(text, candidates)
    assert distribution is not None
    p4, p5 = math.exp(-0.2) + math.exp(-3.0), math.exp(-1.9)
    assert distribution[4] == pytest.approx(p4 / (p4 + p5)) and distribution[5] == pytest.approx(p5 / (p4 + p5))


def test_reasoning_digits_before_the_answer_are_not_read() -> None:
    text = "I watched 3 grasps over 12 s; the block is in the bowl.\nANSWER: 5"
    answer_at = text.index("5", text.index("ANSWER"))
    candidates = [with_top(text.index("3"), "3", {"3": -0.01, "2": -5.0}),
                  with_top(text.index("12"), "1", {"1": -0.01}), with_top(text.index("12") + 1, "2", {"2": -0.01}),
                  with_top(answer_at, "5", {"5": -0.3, "4": -1.5, "1": -6.0})]
    distribution = score_distribution(text, candidates)
    assert distribution is not None
    weights = {5: math.exp(-0.3), 4: math.exp(-1.5), 1: math.exp(-6.0)}
    assert distribution == pytest.approx({score: weights.get(score, 0.0) / sum(weights.values())
                                          for score in range(1, 6)})


def test_only_the_first_answer_counts_as_the_official_rule() -> None:
    text = "ANSWER: 2 ... answer: 4"
    candidates = [with_top(8, "2", {"2": -0.5, "3": -1.0}), with_top(22, "4", {"4": -0.1})]
    distribution = score_distribution(text, candidates)
    assert distribution is not None and distribution[2] > distribution[3] > 0 and distribution[4] == 0.0


def test_leading_whitespace_is_kept_in_the_offsets() -> None:
    # The official rule reads the stripped text; the candidates count in the text as given.
    text = "\n\n  3"
    distribution = score_distribution(text, [with_top(4, "3", {"3": -0.1, "2": -2.3})])
    assert distribution is not None and distribution[3] > distribution[2] > 0


def test_no_digits_in_the_answer() -> None:
    assert score_distribution("The robot failed.", [candidate(0, "The", **{"3": -0.1})]) is None


def test_no_candidate_covers_the_number() -> None:
    assert score_distribution("ANSWER: 3", []) is None
    assert score_distribution("ANSWER: 3", [with_top(0, "ANSWER", {"3": -0.1})]) is None
    assert score_distribution("ANSWER: 3", [with_top(7, " ", {"3": -0.1})]) is None  # ends before the digit


def test_no_alternative_among_1_to_5() -> None:
    assert score_distribution("ANSWER: 3", [with_top(8, "3", {"x": -0.1, "6": -1.0, "0": -2.0, "33": -3.0})]) is None
    assert score_distribution("ANSWER: 3", [with_top(8, "3", {})]) is None
    assert score_distribution("ANSWER: 3", [with_top(8, "3", {"3": -math.inf})]) is None


@pytest.mark.parametrize("text", ["ANSWER: 10", "ANSWER: -1", "ANSWER: 3.5", "315242", "ANSWER: 05"])
def test_a_number_longer_than_one_character_has_no_distribution(text: str) -> None:
    """The covering token's alternatives describe only the number's first character ("1" of "10"): None."""
    start = parsed_number_span(text)
    assert start is not None
    candidates = [with_top(start[0] + i, ch, {"1": -0.5, "2": -1.0, "3": -1.5}) for i, ch in
                  enumerate(text[start[0]:start[1]])]
    assert score_distribution(text, candidates) is None


def test_a_single_digit_outside_1_to_5_gets_its_1_to_5_alternatives() -> None:
    distribution = score_distribution("ANSWER: 7", [with_top(8, "7", {"7": -0.1, "5": -1.0, "4": -2.0})])
    weights = {5: math.exp(-1.0), 4: math.exp(-2.0)}
    assert distribution == pytest.approx({score: weights.get(score, 0.0) / sum(weights.values())
                                          for score in range(1, 6)})


def test_malformed_candidates_are_skipped() -> None:
    candidates: list[dict[str, Any]] = [
        {"offset": "8", "text": "3", "top": {"1": -0.1}}, {"text": "3"}, {"offset": 8, "text": None},
        {"offset": 8, "text": "3", "top": ["3"]}, with_top(8, "3", {"3": -0.2, 4: -0.1})]
    assert score_distribution("ANSWER: 3", candidates[:4]) is None
    assert score_distribution("ANSWER: 3", candidates[:3] + candidates[4:]) == {1: 0.0, 2: 0.0, 3: 1.0, 4: 0.0, 5: 0.0}


@pytest.mark.parametrize("value, reason", [
    (math.nan, "is NaN"),
    (0.5, "is positive (0.5)"),
    (math.inf, "is positive (inf)"),
    ("x", "is not a number ('x')"),
    (True, "is not a number (True)"),
])
@pytest.mark.parametrize("alternative", ["3", "4", "other"])
def test_an_impossible_log_probability_leaves_the_row_without_a_distribution(value: Any, reason: str,
                                                                             alternative: str) -> None:
    """NaN, a positive value or a non-number at the answer token: the record is broken, so no distribution (before:
    NaN was dropped and {3: NaN, 4: -0.7, 5: -0.7} gave P(4) = P(5) = 0.5), and the reason names the alternative."""
    top = {"3": -0.1, "4": -0.7, "5": -0.7, "other": -3.0, alternative: value}
    assert score_distribution("ANSWER: 3", [with_top(8, "3", top)]) is None
    why = no_distribution_reason("ANSWER: 3", [with_top(8, "3", top)])
    assert why is not None and f"log-probability of {alternative!r} {reason}" in why


def test_rounding_just_above_zero_is_a_probability_of_one() -> None:
    distribution = score_distribution("ANSWER: 3", [with_top(8, "3", {"3": 1e-9, "4": -math.inf, "x": -30.0})])
    assert distribution == {1: 0.0, 2: 0.0, 3: 1.0, 4: 0.0, 5: 0.0}
    assert no_distribution_reason("ANSWER: 3", [with_top(8, "3", {"3": 1e-9})]) is None


@pytest.mark.parametrize("text, candidates, reason", [
    ("no answer", [], "the official rule parses no number"),
    ("ANSWER: 10", [], "the parsed number '10' is not one character"),
    ("ANSWER: 3", [], "no log-probability record covers the parsed number"),
    ("ANSWER: 3", [{"offset": 8, "text": "3", "top": ["3"]}], "no log-probability record covers the parsed number"),
    ("ANSWER: 3", [{"offset": 8, "text": "3", "top": {"x": -0.1}}], "no alternative among 1..5"),
])
def test_the_reason_for_a_missing_distribution(text: str, candidates: list[dict[str, Any]], reason: str) -> None:
    assert score_distribution(text, candidates) is None
    assert no_distribution_reason(text, candidates) == reason


def test_expected_score_of_an_empty_distribution_is_an_error() -> None:
    with pytest.raises(ValueError, match="positive mass"):
        expected_score({1: 0.0, 2: 0.0})
