"""The data: metadata rows (validated, with their kind and episode), where they come from (hub, local copy, sample).

Imports the core only; no HELM.
"""
