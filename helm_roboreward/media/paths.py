"""Media locations in HELM's files: how to find them in a scenario state."""

from collections.abc import Iterator


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
