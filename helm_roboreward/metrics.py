"""Stable import path of the metric class (``run_spec.json``).

HELM records ``helm_roboreward.metrics.<class>``; the implementation is :mod:`helm_roboreward.helm_layer.metrics`.
Suites and configuration written by earlier versions keep working through this module.
"""

from helm_roboreward.helm_layer.metrics import RoboRewardMetric

__all__ = ["RoboRewardMetric"]
