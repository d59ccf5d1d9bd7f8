"""Paths a command reads or writes stay inside the folder it was given, and files are written atomically.

Every ``roboreward`` command has a root per side: ``export-media`` reads under ``--output-path`` and writes
under ``--export-path``, ``report`` writes under ``--out``, ``files`` under ``--out``, ``prepare`` under
``--output-path``. A path recorded in a file (``scenario_state.json``) or a link planted inside a root could
point anywhere; this module resolves every path (``os.path.realpath``: links and ``..`` followed) and refuses
one that leaves its root, with a message naming the path, where it leads and what to do.

Writes go through :func:`helm_roboreward.media.store.write_atomically`: a unique temporary file created
exclusively in the destination folder, then a rename, so a reader never sees a partial file and a link
planted at the destination (or at any fixed temporary name) is replaced, never written through.
"""

import os
from collections.abc import Iterator, Sequence

from helm_roboreward.core.files import write_atomically


class UnsafePathError(ValueError):
    """A path that leaves its root (through ``..`` or a link) or is not what the command may touch."""


def is_inside(path: str, root: str) -> bool:
    """True when ``path``, with every link and ``..`` resolved, is ``root`` or lies under it (also resolved)."""
    real, real_root = os.path.realpath(path), os.path.realpath(root)
    return os.path.commonpath([real, real_root]) == real_root


def require_inside(path: str, root: str, what: str, fix: str) -> str:
    """The resolved ``path``; :class:`UnsafePathError` when it leaves ``root``.

    Args:
        path: The path to check.
        root: The folder it must stay in.
        what: What the path is, for the message (``"media file"``).
        fix: What the user should do, for the message.
    """
    real = os.path.realpath(path)
    if not is_inside(real, root):
        raise UnsafePathError(f"{what} {path} resolves to {real}, outside {os.path.realpath(root)}; {fix}")
    return real


def relative_parts(relative: str, what: str) -> list[str]:
    """The ``/``-separated components of a relative path, refusing ones that could leave the folder.

    Raises:
        UnsafePathError: The path is absolute or has an empty, ``.`` or ``..`` component, a backslash or a NUL.
    """
    parts = relative.split("/")
    if relative.startswith("/") or any(part in ("", ".", "..") or "\\" in part or "\x00" in part for part in parts):
        raise UnsafePathError(f"{what} {relative!r} is not a plain relative path (it has an empty, '.' or '..' "
                              "component, a backslash or starts with '/')")
    return parts


def folder_inside(root: str, parts: Sequence[str], fix: str) -> str:
    """``root/parts...``, created one level at a time; every level must be a folder that resolves inside ``root``.

    A link planted at one of the levels is followed only when it leads to a folder inside ``root``; nothing is
    ever created outside it.

    Raises:
        UnsafePathError: A level is a file, or resolves outside ``root``.
        OSError: A folder cannot be created.
    """
    if os.path.lexists(root) and not os.path.isdir(root):
        raise UnsafePathError(f"{root} is a file, not a folder; {fix}")
    os.makedirs(root, exist_ok=True)  # the root itself is the folder the user named
    current = root
    for part in parts:
        current = os.path.join(current, part)
        if not os.path.lexists(current):
            try:
                os.mkdir(current)
            except FileExistsError:
                pass  # another process made it: checked below like any existing level
        if os.path.islink(current):
            require_inside(current, root, "folder", fix)
        if not os.path.isdir(current):
            raise UnsafePathError(f"{current} is a file where a folder is needed; {fix}")
    return current


def write_inside(root: str, relative: str, data: bytes, fix: str) -> str:
    """Write ``data`` to ``root/relative`` atomically, refusing any path that would leave ``root``.

    Args:
        root: The folder the command was given.
        relative: The file's ``/``-separated path under it.
        data: The bytes.
        fix: What the user should do when the path is refused, for the message.

    Returns:
        The path written.

    Raises:
        UnsafePathError: ``relative`` is not a plain relative path, a folder on the way resolves outside
            ``root``, or a folder stands where the file goes.
        OSError: The file cannot be written.
    """
    parts = relative_parts(relative, "file")
    folder = folder_inside(root, parts[:-1], fix)
    path = os.path.join(folder, parts[-1])
    if os.path.isdir(path) and not os.path.islink(path):
        raise UnsafePathError(f"{path} is a folder where a file is to be written; {fix}")
    write_atomically(path, data)  # a link planted at ``path`` is replaced by the file, not followed
    return path


# --- where media are recorded, and where HELM's viewer looks for them -------------------------------------

MARKER = "benchmark_output/"
"""HELM's frontend shows media only under a ``benchmark_output/`` folder of the served output."""


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
