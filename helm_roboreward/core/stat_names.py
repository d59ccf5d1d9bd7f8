"""The names of the metric's per-group stats, which the metric writes and every reader looks up."""

from helm_roboreward.protocol import robot_slug

SUBSET_MAE_PREFIX = "mae_subset_"
ROBOT_MAE_PREFIX = "mae_robot_"
KIND_MAE_PREFIX = "mae_kind_"
# name(key) -> stat: the abs_error copy of one subset's or augmentation kind's rows; the predicted_score copy of the
# rows labelled ``gold`` (its mean: the mean prediction per label) and its run-level count (its weight when pooled).
subset_mae = (SUBSET_MAE_PREFIX + "{}").format
kind_mae = (KIND_MAE_PREFIX + "{}").format
gold_prediction = "predicted_score_gold_{}".format
gold_prediction_rows = "predicted_score_gold_{}_rows".format


def robot_mae(robot: str) -> str:
    """The ``abs_error`` copy of one robot's rows (named by its slug)."""
    return ROBOT_MAE_PREFIX + robot_slug(robot)
