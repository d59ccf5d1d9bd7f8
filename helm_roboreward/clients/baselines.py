"""Stable import path of the baseline clients (model deployment YAML).

HELM records ``helm_roboreward.clients.baselines.<class>``; the implementation is
:mod:`helm_roboreward.helm_layer.clients.baselines`. Suites and configuration written by earlier versions keep
working through this module.
"""

from helm_roboreward.helm_layer.clients.baselines import ConstantScoreClient, RandomScoreClient

__all__ = ["ConstantScoreClient", "RandomScoreClient"]
