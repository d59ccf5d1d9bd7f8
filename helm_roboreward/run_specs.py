"""Stable import path of the run spec module (``helm-run --plugins helm_roboreward.run_specs`` in earlier docs).

The implementation is :mod:`helm_roboreward.helm_layer.run_specs`.
"""

from helm_roboreward.helm_layer.run_specs import RoboRewardRunSpec, get_roboreward_spec

__all__ = ["RoboRewardRunSpec", "get_roboreward_spec"]
