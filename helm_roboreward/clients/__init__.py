"""Stable import paths of the package's HELM clients.

Model deployment YAML records them; the implementations are in :mod:`helm_roboreward.clients`.
"""
