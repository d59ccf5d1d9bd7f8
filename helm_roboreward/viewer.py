"""Making the media a model saw visible in HELM's web viewer, also after ``helm-server --export-path``.

HELM's frontend shows an image only when its recorded path starts with ``benchmark_output/`` (it
drops that prefix and fetches the rest from the served output folder), and a video when the path
contains ``benchmark_output/``. The scenario therefore records media paths relative to the working
directory (``benchmark_output/scenarios/roboreward/...`` for the default ``-o``). ``helm-server
--export-path`` copies ``runs/`` but not ``scenarios/``: :func:`export_media` copies exactly the
media files a suite's runs point to into the export, at the place the frontend will ask for them.
"""

import json
import os
import shutil
from typing import Iterator, List, Set, Tuple

MARKER = "benchmark_output/"


def recorded_path(path: str) -> str:
    """How a media path is recorded: relative to the working directory when it lies under it.

    HELM passes the scenario folder as given by ``-o``; an absolute ``-o`` inside the working
    directory becomes relative so the viewer can resolve it.
    """
    if os.path.isabs(path):
        relative = os.path.relpath(path)
        if not relative.startswith(os.pardir):
            return relative
    return path


def viewer_relative_path(location: str) -> str:
    """The path, under the served output folder, at which the frontend fetches a media file."""
    normalized = location.replace(os.sep, "/")
    index = normalized.find(MARKER)
    if index < 0:
        raise ValueError(f"{location}: not under a 'benchmark_output' folder, so HELM's viewer cannot show it")
    return normalized[index + len(MARKER):]


def _media_locations(state: object) -> Iterator[str]:
    if isinstance(state, dict):
        if "content_type" in state and isinstance(state.get("location"), str):
            if not str(state["content_type"]).startswith("text/"):
                yield state["location"]
        for value in state.values():
            yield from _media_locations(value)
    elif isinstance(state, list):
        for item in state:
            yield from _media_locations(item)


def suite_media(output_path: str, suite: str) -> List[str]:
    """Every distinct media location the suite's RoboReward runs recorded (from ``scenario_state.json``)."""
    suite_dir = os.path.join(output_path, "runs", suite)
    if not os.path.isdir(suite_dir):
        raise FileNotFoundError(f"suite {suite!r} not found: {suite_dir} does not exist")
    locations: Set[str] = set()
    for run in sorted(os.listdir(suite_dir)):
        if not run.startswith("roboreward:"):
            continue
        path = os.path.join(suite_dir, run, "scenario_state.json")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                locations.update(_media_locations(json.load(handle)))
    return sorted(locations)


def export_media(output_path: str, suite: str, export_path: str) -> Tuple[int, int, List[str]]:
    """Copy a suite's media into a ``helm-server --export-path`` folder.

    Returns:
        ``(files copied, bytes copied, problems)``; a problem names a missing file or a path the
        viewer cannot show. Files already present with the same size are skipped.
    """
    target_root = os.path.join(export_path, "benchmark_output")
    copied, total, problems = 0, 0, []
    for location in suite_media(output_path, suite):
        try:
            relative = viewer_relative_path(location)
        except ValueError as error:
            problems.append(str(error))
            continue
        source = location  # recorded relative to the folder helm-run ran in (or absolute)
        if not os.path.isfile(source):
            problems.append(f"{location}: file not found (run this command from where helm-run ran)")
            continue
        target = os.path.join(target_root, *relative.split("/"))
        size = os.path.getsize(source)
        if os.path.isfile(target) and os.path.getsize(target) == size:
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(source, target)
        copied, total = copied + 1, total + size
    return copied, total, problems
