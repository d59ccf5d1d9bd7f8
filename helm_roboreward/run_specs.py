"""Stable import path of the run expanders.

HELM records ``helm_roboreward.run_specs.<class>``; the implementation is
:mod:`helm_roboreward.helm_layer.run_specs`. Suites and configuration written by earlier versions keep working
through this module.
"""

from helm_roboreward.helm_layer.run_specs import RoboRewardModelDeploymentRunExpander, RoboRewardModelRunExpander

__all__ = ["RoboRewardModelRunExpander", "RoboRewardModelDeploymentRunExpander"]
