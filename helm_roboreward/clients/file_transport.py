"""``video_transport=file_url``: the video by its path, for a server on this machine that reads the file itself."""

import os
from collections.abc import Callable
from typing import Any

from helm_roboreward.core.files import file_digest


def file_url(location: str) -> str:
    """The ``file://`` URL of a video a server on this machine reads itself."""
    return "file://" + os.path.abspath(location)


def file_url_part(location: str) -> tuple[Callable[[], dict[str, Any]], dict[str, Any]]:
    """A video part's builder and its cache-key stand-in (the file's SHA-256, never its path)."""
    return (lambda: {"type": "video_url", "video_url": {"url": file_url(location)}},
            {"type": "video_url", "sha256": file_digest(location), "transport": "file_url"})
