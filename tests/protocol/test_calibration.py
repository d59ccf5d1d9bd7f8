"""Reliability bins, expected calibration error and Brier score of P(5) (protocol/score_probabilities.py)."""

import math
import random

import pytest

from helm_roboreward.protocol.score_probabilities import ECE_BINS, brier_score, calibration_error, reliability_bins


def test_bin_edges_are_half_open_and_the_last_bin_holds_one() -> None:
    pairs = [(0.0, 0.0), (0.1, 0.0), (0.0999, 1.0), (0.9, 1.0), (1.0, 1.0)]
    found = reliability_bins(pairs)
    assert [(b.low, b.high, b.count) for b in found] == [(0.0, 0.1, 2), (0.1, 0.2, 1), (0.9, 1.0, 2)]
    assert found[0].mean_probability == pytest.approx(0.0999 / 2) and found[0].success_rate == 0.5
    assert found[2].mean_probability == pytest.approx(0.95) and found[2].success_rate == 1.0


def test_ece_by_hand() -> None:
    # bin [0.2, 0.3): p 0.2, 0.2, outcomes 0, 1 -> |0.2 - 0.5| = 0.3 over 2 rows; bin [0.8, 0.9): p 0.8, outcome 1
    # -> |0.8 - 1| = 0.2 over 1 row. ECE = (2 * 0.3 + 1 * 0.2) / 3
    pairs = [(0.2, 0.0), (0.2, 1.0), (0.8, 1.0)]
    assert calibration_error(pairs) == pytest.approx((2 * 0.3 + 0.2) / 3)
    assert brier_score(pairs) == pytest.approx((0.04 + 0.64 + 0.04) / 3)


def test_perfect_and_worst_calibration() -> None:
    assert calibration_error([(1.0, 1.0), (0.0, 0.0)]) == 0.0
    assert brier_score([(1.0, 1.0), (0.0, 0.0)]) == 0.0
    assert calibration_error([(1.0, 0.0), (0.0, 1.0)]) == 1.0
    assert brier_score([(1.0, 0.0), (0.0, 1.0)]) == 1.0


def test_ece_is_row_weighted_and_matches_a_direct_computation() -> None:
    rng = random.Random(7)
    pairs = [(rng.random(), float(rng.random() < 0.3)) for _ in range(500)]
    direct = 0.0
    for index in range(ECE_BINS):
        members = [(p, y) for p, y in pairs if min(int(p * ECE_BINS), ECE_BINS - 1) == index]
        if members:
            gap = abs(sum(p for p, _ in members) / len(members) - sum(y for _, y in members) / len(members))
            direct += len(members) / len(pairs) * gap
    assert calibration_error(pairs) == pytest.approx(direct, abs=1e-12)
    assert sum(b.count for b in reliability_bins(pairs)) == 500
    assert calibration_error(pairs, bins=1) == pytest.approx(
        abs(sum(p for p, _ in pairs) / 500 - sum(y for _, y in pairs) / 500))


def test_no_pairs_give_no_number() -> None:
    assert calibration_error([]) is None and brier_score([]) is None and reliability_bins([]) == []


@pytest.mark.parametrize("pair", [(-0.01, 0.0), (1.01, 1.0), (math.nan, 0.0), (0.5, 0.5), (0.5, 2.0)])
def test_bad_pairs_are_rejected_with_the_value(pair: tuple[float, float]) -> None:
    for function in (reliability_bins, calibration_error, brier_score):
        with pytest.raises(ValueError, match="not a probability"):
            function([(0.5, 1.0), pair])


def test_bins_must_be_positive() -> None:
    with pytest.raises(ValueError, match="bins must be at least 1"):
        reliability_bins([(0.5, 1.0)], bins=0)
