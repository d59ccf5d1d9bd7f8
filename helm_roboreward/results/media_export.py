"""Making the media a model saw visible in HELM's web viewer, also after ``helm-server --export-path``.

HELM's frontend shows an image only when its recorded path starts with ``benchmark_output/`` (it
drops that prefix and fetches the rest from the served output folder), and a video when the path
contains ``benchmark_output/``. The scenario therefore records media paths relative to the working
directory (``benchmark_output/scenarios/roboreward/...`` for the default ``-o``). ``helm-server
--export-path`` copies ``runs/`` but not ``scenarios/``: :func:`export_media` copies exactly the
media files a suite's runs point to into the export, at the place the frontend will ask for them.

A recorded location is data, not a trusted path: export-media reads only media files that resolve inside
``--output-path`` and writes only inside ``--export-path`` (:mod:`helm_roboreward.protocol.safe_files`).
"""

import json
import os
import stat
from dataclasses import dataclass

from helm_roboreward.helm_frontend.run_rows import MARKER, check_suite_name, media_objects, viewer_relative_path
from helm_roboreward.protocol.safe_files import UnsafePathError, relative_parts, require_inside, write_inside

__all__ = ["MARKER", "viewer_relative_path", "media_objects", "export_media"]

MAX_LISTED = 10


MEDIA_TYPES = {".jpg": "image/", ".jpeg": "image/", ".png": "image/", ".mp4": "video/"}
"""File extensions export-media copies, with the content-type family each must be recorded with."""

_SOURCE_FIX = ("export-media copies only the frames and videos helm-run wrote under --output-path: run it from the "
               "folder helm-run ran in, with helm-run's -o as --output-path, and rerun helm-run if the run's "
               "scenario_state.json was edited")
_TARGET_FIX = "remove the link or file from the export folder, or export into a fresh folder"


def _suite_runs(output_path: str, suite: str) -> list[str]:
    suite_dir = os.path.join(output_path, "runs", check_suite_name(suite))  # a path would read runs elsewhere
    if not os.path.isdir(suite_dir):
        raise FileNotFoundError(f"suite {suite!r} not found: {suite_dir} does not exist")
    return [os.path.join(suite_dir, run) for run in sorted(os.listdir(suite_dir)) if run.startswith("roboreward:")]


def suite_media_objects(output_path: str, suite: str) -> list[tuple[str, str]]:
    """Every distinct ``(content_type, location)`` the suite's RoboReward runs recorded (``scenario_state.json``).

    Raises:
        FileNotFoundError: The suite does not exist.
        UnsafePathError: A run's ``scenario_state.json`` resolves outside ``output_path`` (a link).
    """
    found: set[tuple[str, str]] = set()
    for run_dir in _suite_runs(output_path, suite):
        path = os.path.join(run_dir, "scenario_state.json")
        if os.path.isfile(path):
            real = require_inside(path, output_path, "run file", _SOURCE_FIX)
            with open(real, encoding="utf-8") as handle:
                found.update(media_objects(json.load(handle)))
    return sorted(found)


@dataclass(frozen=True)
class _Copy:
    source: str
    """The resolved source file, inside the output folder."""

    target: str
    """The target's path relative to the export folder (``benchmark_output/...``)."""


def _plan_copy(content_type: str, location: str, output_path: str, export_path: str) -> _Copy:
    """Where one recorded media file comes from and goes; refuses anything that leaves either root.

    Raises:
        UnsafePathError: The source resolves outside ``output_path``, is not a media file (extension and
            recorded content type), or the target would leave ``export_path``.
        FileNotFoundError: The source does not exist (it may be moved; the message says what to do).
    """
    extension = os.path.splitext(location)[1].lower()
    family = MEDIA_TYPES.get(extension)
    if family is None or not content_type.startswith(family):
        raise UnsafePathError(f"{location} (recorded as {content_type}): not a media file export-media copies "
                              f"({', '.join(sorted(MEDIA_TYPES))} recorded as image/ or video/); {_SOURCE_FIX}")
    relative = viewer_relative_path(location)
    target = "/".join([MARKER.rstrip("/"), *relative_parts(relative, f"media location {location}: the path")])
    if not os.path.lexists(location):  # recorded relative to the folder helm-run ran in
        raise FileNotFoundError(f"{location}: file not found (run this command from where helm-run ran)")
    source = require_inside(location, output_path, "media file", _SOURCE_FIX)
    if not os.path.isfile(source):
        raise UnsafePathError(f"{location}: not a regular file; {_SOURCE_FIX}")
    require_inside(os.path.join(export_path, *target.split("/")[:-1]), export_path, "export folder", _TARGET_FIX)
    return _Copy(source, target)


def _same_size_file(path: str, size: int) -> bool:
    """True when ``path`` is a regular file (not a link) of ``size`` bytes."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size == size


def export_media(output_path: str, suite: str, export_path: str) -> tuple[int, int, list[str]]:
    """Copy a suite's media into a ``helm-server --export-path`` folder.

    Every source must resolve inside ``output_path`` and be a media file (``.jpg``/``.jpeg``/``.png`` recorded as
    ``image/...``, ``.mp4`` as ``video/...``); every target must resolve inside ``export_path`` (no ``..``, no link
    leading out). All paths are checked before anything is copied; files are written atomically (a link planted
    at a target's name is replaced, never written through).

    Returns:
        ``(files copied, bytes copied, problems)``; a problem names a missing file or a path the viewer cannot
        show. Files already present with the same size are skipped.

    Raises:
        UnsafePathError: Some recorded path would read outside ``output_path``, read a non-media file or write
            outside ``export_path``; nothing was copied (the message lists them).
    """
    plans: list[_Copy] = []
    problems: list[str] = []
    refused: list[str] = []
    for content_type, location in suite_media_objects(output_path, suite):
        if MARKER not in location.replace(os.sep, "/"):
            problems.append(f"{location}: not under a 'benchmark_output' folder, so HELM's viewer cannot show it")
            continue
        try:
            plans.append(_plan_copy(content_type, location, output_path, export_path))
        except UnsafePathError as error:
            refused.append(str(error))
        except FileNotFoundError as error:
            problems.append(str(error))
    if refused:
        shown = "\n  ".join(refused[:MAX_LISTED])
        more = f"\n  ... and {len(refused) - MAX_LISTED} more" if len(refused) > MAX_LISTED else ""
        raise UnsafePathError(f"refused {len(refused)} recorded media path(s) of suite {suite!r}; nothing was "
                              f"copied:\n  {shown}{more}")
    copied, total = 0, 0
    for plan in plans:
        target = os.path.join(export_path, *plan.target.split("/"))
        size = os.path.getsize(plan.source)
        if _same_size_file(target, size):
            continue
        with open(plan.source, "rb") as handle:
            data = handle.read()
        write_inside(export_path, plan.target, data, _TARGET_FIX)
        copied, total = copied + 1, total + len(data)
    return copied, total, problems
