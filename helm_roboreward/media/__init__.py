"""The media a model receives: frames or video copies of each rollout, prepared and verified (docs/media.md).

Imports the core and the data only; no HELM.
"""
