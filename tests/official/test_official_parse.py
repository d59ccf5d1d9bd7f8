"""Differential test: our parser against a literal transcription of the official answer extraction.

The official metric is ``RoboRewardBenchProgressPredictionMetric.extract_answer`` on HELM's ``rob``
branch (``src/helm/benchmark/metrics/robo_reward_bench_metrics.py``). :func:`official_extract_answer`
below transcribes its body statement by statement (written here from its published behaviour; nothing is
imported from the package). The two must agree on every string of a fixed corpus of at least 300: hand-written
edge cases plus strings generated from a seeded grammar of answer words, separators, numbers and noise.

The one documented known difference (docs/protocol.md, section 6): a number beyond 1e75 in magnitude is
unparseable for us (HELM squares every stat and would overflow), so the comparison applies that bound to
the official result; :func:`test_the_magnitude_guard_is_the_only_difference` pins it.
"""

import itertools
import random
import re

import pytest

from helm_roboreward.protocol.rules import MAX_PARSED_MAGNITUDE, parse_progress_score


def official_extract_answer(raw_completion: str) -> float | None:
    """The official function, transcribed literally."""
    if not raw_completion:
        return None
    text = str(raw_completion).strip()
    m = re.search(r"(?i)\banswer\b\s*:\s*(-?\d+(?:\.\d+)?)", text)
    if m:
        return float(m.group(1))
    m = re.search(r"^\s*(-?\d+(?:\.\d+)?)\b", text)
    if m:
        return float(m.group(1))
    return None


def official_with_guard(completion: str) -> float | None:
    value = official_extract_answer(completion)
    if value is None or abs(value) > MAX_PARSED_MAGNITUDE:
        return None
    return value


HAND_WRITTEN: list[str] = [
    # the word boundary before and after "answer"
    "final_answer: 3", "Final_Answer: 4", "FINAL_ANSWER:5", "_answer: 2", "answer_: 2", "__answer__: 2",
    "reanswer: 3", "xANSWER: 3", "answerA: 3", "answers: 3", "ANSWERS: 3", "answer2: 3", "2answer: 3",
    "3answer: 4", "ánswer: 3", "answerä: 3", "Ωanswer: 3", "answer٤: 3", "final answer: 3", "Final Answer: 4",
    "final-answer: 3", "final.answer: 3", "(answer: 3)", "[ANSWER: 3]", "'answer': 3", '"answer": 3',
    "answer:3", "ANSWER : 3", "answer\t:\t3", "answer\n:\n3", "answer\u00a0:\u00a03", "answer\u2003:3",
    "answer : : 3", "answer :: 3", "answer - 3", "answer = 3", "answer：3", "answ er: 3", "an-swer: 3",
    "anſwer: 3", "ANſWER: 4", "ANSWER: 3 final_answer: 4", "final_answer: 4 ANSWER: 3", "reanswer: 1\nanswer: 2",
    # markdown
    "**ANSWER:** 4", "**ANSWER: 4**", "ANSWER: **4**", "`ANSWER: 4`", "## Answer: 3", "> ANSWER: 2", "- answer: 5",
    "__ANSWER__: 4", "*answer*: 4", "**4**", "# 4", "```\nANSWER: 3\n```", "ANSWER:\n\n```4```",
    # unicode digits
    "ANSWER: ٤", "ANSWER: ４", "ANSWER: ૩", "ANSWER: ３.５", "ANSWER: -٢", "٣", "４ is my score", "ANSWER: ½",
    "ANSWER: ³", "ANSWER: Ⅳ", "ANSWER: ⑤", "ANSWER: 𝟒", "ANSWER: ᠓",
    # newlines, several answers
    "ANSWER: 2\nANSWER: 5", "Reasoning...\nANSWER: 3\nActually ANSWER: 4", "\n\n  ANSWER: 1  \n", "\n5\n",
    "The robot...\n\nAnswer:\n5", "answer:\n\n\n4", "ANSWER:", "ANSWER: ", "ANSWER: \n", "answer: three",
    # signs, decimals, leading numbers
    "ANSWER: -1", "ANSWER: +3", "ANSWER: −3", "ANSWER: –3", "ANSWER: 0", "ANSWER: 3.5", "ANSWER: 3.", "ANSWER: .5",
    "ANSWER: 3.5.1", "ANSWER: 3,5", "ANSWER: 4/5", "ANSWER: 4e2", "ANSWER: 004", "ANSWER: -0", "ANSWER: -0.0",
    "3", "3.", "3.5", "3.5x", "3x", "3_", "3_ out of 5", "4/5", "4 out of 5", "-2", "--2", "+2", " 2", "\t2 ", "2.0.1",
    ".5", "5abc", "5.5abc", "٤abc", "12345678901234567890", "0.000001", "1e3",
    # nothing to parse
    "", " ", "\n", "\t\n ", "three", "I'd say 3", "score: 4", "Score: 4\nANSWER: 3", "The score is 4.", "none",
    "<think>ANSWER: 2</think>", "ANSWER: <4>", "ANSWER: [4]", "ANSWER: (4)", "ANSWER: four",
    # huge numbers (the guard) and long outputs
    "ANSWER: 1" + "0" * 78, "9" * 100, "ANSWER: " + "9" * 400, "ANSWER: 1" + "0" * 74,
    "word " * 5000 + "ANSWER: 3",
]


def generated(count: int, seed: int = 20261201) -> list[str]:
    """``count`` strings from a seeded grammar: prefix noise, an answer word, a separator, a number, a tail."""
    rng = random.Random(seed)
    words = ["answer", "ANSWER", "Answer", "aNsWeR", "final_answer", "Final Answer", "reanswer", "answers",
             "answer_", "_answer", "answer2", "2answer", "ánswer", "anſwer", "my answer", "the-answer", "answ"]
    separators = [":", ": ", " : ", ":\n", "\n:", "\t:\t", "::", "：", " = ", " - ", "", " ", ":\u00a0", ": **"]
    numbers = ["3", "5", "1", "0", "-1", "4.5", "3.", ".5", "-2.25", "٤", "４", "10", "007", "1" + "0" * 80, "x", "",
               "three", "+4", "−4", "3/5", "2e1"]
    tails = ["", ".", " ", "\n", "**", "_", "x", ".5", ".x", " because...", "\nANSWER: 2", "/5", ")"]
    heads = ["", " ", "\n", "**", "Reasoning: the arm stops short.\n", "5 ", "3.5 ", "_", "x", "(", "# ", "4\n"]
    out = []
    for _ in range(count):
        parts = [rng.choice(heads), rng.choice(words), rng.choice(separators), rng.choice(numbers), rng.choice(tails)]
        if rng.random() < 0.2:
            parts = parts[:1] + parts[3:]  # no answer word: rule 2 or unparseable
        if rng.random() < 0.15:
            parts.append(rng.choice(words) + rng.choice(separators) + rng.choice(numbers))  # a second answer
        out.append("".join(parts))
    return out


CORPUS: list[str] = list(dict.fromkeys(HAND_WRITTEN + generated(600)))


def test_corpus_is_large_and_varied() -> None:
    assert len(CORPUS) >= 300
    results = [official_with_guard(text) for text in CORPUS]
    assert sum(result is None for result in results) >= 50, "too few unparseable strings"
    assert len({result for result in results if result is not None}) >= 10, "too few distinct scores"
    assert any(official_extract_answer(t) is None and re.search(r"(?i)answer\s*:\s*\d", t) for t in CORPUS), (
        "the corpus must hold strings only the word boundary rejects"
    )


def test_parser_agrees_with_the_official_function_on_every_string(capsys: pytest.CaptureFixture[str]) -> None:
    disagreements = [(text, parse_progress_score(text), official_with_guard(text)) for text in CORPUS
                     if parse_progress_score(text) != official_with_guard(text)]
    with capsys.disabled():
        print(f"\n[official parse] {len(CORPUS) - len(disagreements)} of {len(CORPUS)} strings agree")
    assert not disagreements, disagreements[:10]


def test_the_magnitude_guard_is_the_only_difference() -> None:
    differences = [text for text in CORPUS if parse_progress_score(text) != official_extract_answer(text)]
    assert differences, "the corpus should exercise the guard"
    for text in differences:
        value = official_extract_answer(text)
        assert value is not None and abs(value) > MAX_PARSED_MAGNITUDE, text[:80]
        assert parse_progress_score(text) is None


@pytest.mark.parametrize(("text", "expected"), [
    ("final_answer: 3", None), ("reanswer: 3", None), ("answers: 3", None), ("ANSWER : 3", 3.0), ("answer:5", 5.0),
    ("final_answer: 3\nANSWER: 4", 4.0), ("4 ANSWER: 2", 2.0), ("", None),
])
def test_protocol_examples(text: str, expected: float | None) -> None:
    assert parse_progress_score(text) == expected == official_extract_answer(text)


def test_every_unicode_decimal_digit_reads_like_float() -> None:
    digits = [chr(c) for c in range(0x110000) if re.fullmatch(r"\d", chr(c))]
    for digit, other in itertools.islice(itertools.product(digits, ["", "5"]), None):
        text = f"ANSWER: {digit}{other}"
        assert parse_progress_score(text) == official_extract_answer(text)
