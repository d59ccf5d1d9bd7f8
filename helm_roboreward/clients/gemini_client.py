"""Stable import path of the one-message Gemini client (model deployment YAML).

HELM records ``helm_roboreward.clients.gemini_client.<class>``; the implementation is
:mod:`helm_roboreward.helm_layer.clients.gemini_client`. Suites and configuration written by earlier versions keep
working through this module.
"""

from helm_roboreward.helm_layer.clients.gemini_client import OneMessageGoogleGenAIClient

__all__ = ["OneMessageGoogleGenAIClient"]
