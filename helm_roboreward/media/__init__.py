"""The media a model receives.

Which frames (selection), decoding, the verified frame cache, video copies, the content-addressed store,
contained paths, and preparing all of it for a set of rows.

Imports the core and the data only; no HELM.
"""
