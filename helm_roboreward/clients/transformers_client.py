"""Stable import path of the in-process transformers client (model deployment YAML).

HELM records ``helm_roboreward.clients.transformers_client.<class>``; the implementation is
:mod:`helm_roboreward.helm_layer.clients.transformers_client`. Suites and configuration written by earlier versions
keep working through this module.
"""

from helm_roboreward.helm_layer.clients.transformers_client import TransformersQwen3VLClient

__all__ = ["TransformersQwen3VLClient"]
