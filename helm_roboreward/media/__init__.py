"""The media a model receives: frames or mp4 copies of each rollout, prepared and verified; no HELM (docs/media.md)."""
