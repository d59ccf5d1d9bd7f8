"""Media locations in HELM's files: how the scenario records them, and how to find them in a scenario state."""

import os
from collections.abc import Iterator


def recorded_path(path: str) -> str:
    """How a media path is recorded: relative to the working directory when under it, so HELM's viewer finds it."""
    relative = os.path.relpath(path) if os.path.isabs(path) else os.pardir
    return path if relative.startswith(os.pardir) else relative


def media_objects(state: object) -> Iterator[tuple[str, str]]:
    """``(content_type, location)`` of every non-text media object in a JSON value (e.g. a scenario state)."""
    if isinstance(state, dict):
        if "content_type" in state and isinstance(state.get("location"), str):
            if not str(state["content_type"]).startswith("text/"):
                yield str(state["content_type"]), state["location"]
        for value in state.values():
            yield from media_objects(value)
    elif isinstance(state, list):
        for item in state:
            yield from media_objects(item)
