"""Stable import path of the vLLM / OpenAI-compatible client (model deployment YAML).

HELM records ``helm_roboreward.clients.openai_video_client.<class>``; the implementation is
:mod:`helm_roboreward.helm_layer.clients.openai_video_client`. Suites and configuration written by earlier versions
keep working through this module.
"""

from helm_roboreward.helm_layer.clients.openai_video_client import OpenAIVideoClient

__all__ = ["OpenAIVideoClient"]
