"""Stable import path of the scenario class (``run_spec.json``).

HELM records ``helm_roboreward.scenario.<class>``; the implementation is :mod:`helm_roboreward.helm_layer.scenario`.
Suites and configuration written by earlier versions keep working through this module.
"""

from helm_roboreward.helm_layer.scenario import RoboRewardScenario

__all__ = ["RoboRewardScenario"]
