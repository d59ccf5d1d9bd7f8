"""The peer metrics (core/peer_metrics.py) by hand: micro and macro, exact and within 1, mean prediction per label."""

import pytest

from helm_roboreward.protocol.reward_statistics import PeerRow, exact_match, peer_metrics, within_one


@pytest.mark.parametrize("error, exact, within", [(0.0, 1.0, 1.0), (0.5, 0.0, 1.0), (1.0, 0.0, 1.0),
                                                  (1.5, 0.0, 0.0), (4.0, 0.0, 0.0)])
def test_exact_and_within_one_from_the_error(error: float, exact: float, within: float) -> None:
    assert (exact_match(error), within_one(error)) == (exact, within)


def test_macro_weighs_subsets_micro_weighs_rows() -> None:
    rows = [PeerRow("big", 3, 3.0, 0.0)] * 3 + [PeerRow("big", 1, 3.0, 2.0)]  # MAE 0.5, exact 3/4, within 3/4
    rows += [PeerRow("small", 5, None, 4.0)]  # unparseable: error 4, neither exact nor within 1, no prediction
    rows += [PeerRow("small", 4, None, None)]  # failed under failed=skip: no row at all
    found = peer_metrics(rows)
    assert (found.rows, found.subsets) == (5, 2)
    assert found.macro_mae == pytest.approx((0.5 + 4.0) / 2) and found.micro_mae == pytest.approx(6 / 5)
    assert found.exact_macro == pytest.approx((0.75 + 0) / 2) and found.exact_micro == pytest.approx(3 / 5)
    assert found.within_one_macro == pytest.approx(0.375) and found.within_one_micro == pytest.approx(3 / 5)
    assert found.mean_prediction == {1: 3.0, 2: None, 3: 3.0, 4: None, 5: None}
    assert found.prediction_rows == {1: 1, 2: 0, 3: 3, 4: 0, 5: 0}


def test_no_rows_no_values() -> None:
    found = peer_metrics([])
    assert found.rows == 0 and found.macro_mae is None and found.micro_mae is None and found.within_one_micro is None
