"""Stable import path of the summarizer class (``--summarizer-class-name``).

HELM records ``helm_roboreward.summarizer.<class>``; the implementation is
:mod:`helm_roboreward.helm_layer.summarizer`. Suites and configuration written by earlier versions keep working
through this module.
"""

from helm_roboreward.helm_layer.summarizer import RoboRewardSummarizer

__all__ = ["RoboRewardSummarizer"]
