"""Where HELM's web viewer fetches a media file: the part of its recorded path after ``benchmark_output/``."""

import os

MARKER = "benchmark_output/"
"""HELM's frontend shows media only under a ``benchmark_output/`` folder of the served output."""


def viewer_relative_path(location: str) -> str:
    """The path, under the served output folder, at which the frontend fetches a media file."""
    normalized = location.replace(os.sep, "/")
    index = normalized.find(MARKER)
    if index < 0:
        raise ValueError(f"{location}: not under a 'benchmark_output' folder, so HELM's viewer cannot show it")
    return normalized[index + len(MARKER):]
