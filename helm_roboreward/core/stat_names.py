"""The names of the metric's per-group stats, which the metric writes and every reader looks up."""

from helm_roboreward.protocol import robot_slug

SUBSET_MAE_PREFIX = "mae_subset_"
ROBOT_MAE_PREFIX = "mae_robot_"
KIND_MAE_PREFIX = "mae_kind_"


def subset_mae(subset_id: str) -> str:
    """The ``abs_error`` copy of one subset's rows."""
    return SUBSET_MAE_PREFIX + subset_id


def robot_mae(robot: str) -> str:
    """The ``abs_error`` copy of one robot's rows."""
    return ROBOT_MAE_PREFIX + robot_slug(robot)


def kind_mae(kind: str) -> str:
    """The ``abs_error`` copy of one augmentation kind's rows."""
    return KIND_MAE_PREFIX + kind


def gold_prediction(gold: int) -> str:
    """The ``predicted_score`` copy of the rows labelled ``gold`` (its mean: the mean prediction per label)."""
    return f"predicted_score_gold_{gold}"


def gold_prediction_rows(gold: int) -> str:
    """The run-level count of the rows carrying :func:`gold_prediction` (its weight when pooled over runs)."""
    return f"{gold_prediction(gold)}_rows"
