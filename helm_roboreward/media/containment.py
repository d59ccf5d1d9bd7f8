"""Paths a ``roboreward`` command reads or writes stay inside the folder it was given; files are written atomically.

A recorded path or a planted link could point anywhere: every path is resolved (links and ``..`` followed) and
refused, with a message naming it, when it leaves its root. Which roots each command has: docs/media.md.
"""

import os
from collections.abc import Sequence

from helm_roboreward.core.files import write_atomically


class UnsafePathError(ValueError):
    """A path that leaves its root (through ``..`` or a link) or is not what the command may touch."""


def is_inside(path: str, root: str) -> bool:
    """True when ``path``, with every link and ``..`` resolved, is ``root`` or lies under it (also resolved)."""
    real, real_root = os.path.realpath(path), os.path.realpath(root)
    return os.path.commonpath([real, real_root]) == real_root


def require_inside(path: str, root: str, what: str, fix: str) -> str:
    """The resolved ``path``; :class:`UnsafePathError` when it leaves ``root``.

    ``what`` names the path in the message (``"media file"``); ``fix`` says what the user should do.
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
    """Write ``data`` to ``root/relative`` atomically and return the path, refusing any path that would leave ``root``.

    ``fix`` says what the user should do when the path is refused.

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
