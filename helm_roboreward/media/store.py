"""What frame entries and video copies share: containment checks, verification stamps, stale temporaries.

Nothing here takes a lock: files are written atomically, so many processes and machines share one cache.
Why a stamp can stand in for re-reading the bytes: docs/media.md.
"""

import json
import os
import stat
import time
from collections.abc import Sequence

from helm_roboreward.core.files import read_json_file, write_atomically

STALE_TEMPORARY_SECONDS = 600.0
"""A temporary file older than this belongs to a writer that died (a live one renames it in milliseconds)."""


def remove_stale_temporaries(directory: str) -> None:
    """Delete the temporary files killed writers left in a cache folder.

    Only old ones go: on a shared file system another machine may be writing a fresh one right now.
    """
    now = time.time()
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if name.startswith(".tmp-") and name.endswith(".part"):
            path = os.path.join(directory, name)
            try:
                if now - os.path.getmtime(path) > STALE_TEMPORARY_SECONDS:
                    os.unlink(path)
            except OSError:
                pass  # another process removed or renamed it first


def contained_directory_problem(root: str, directory: str) -> str | None:
    """Why ``directory`` is not a real folder of the cache under ``root`` (a link on the way?), or None.

    ``root`` itself is the user's choice and may be a link; the cache's own levels may not.
    """
    relative = os.path.relpath(directory, root)
    if relative == os.curdir or relative.startswith(os.pardir):
        return f"is not inside the cache {root}"
    path = directory
    for _ in relative.split(os.sep):
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return "is missing"
        except OSError as error:
            return f"cannot be read ({error.strerror or error})"
        if stat.S_ISLNK(info.st_mode):
            return f"lies in a link ({path} -> {os.path.realpath(path)}), not in a folder of the cache"
        if not stat.S_ISDIR(info.st_mode):
            return f"lies in {path}, which is not a folder"
        path = os.path.dirname(path)
    return None


def file_stamp(path: str) -> list[int] | None:
    """``[inode, size, mtime_ns, ctime_ns]`` of a regular file (not a link), or None."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return [info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def stamps_match(directory: str, names: Sequence[str], stamp_path: str,
                 known: dict[str, list[int]] | None = None) -> bool:
    """True when every named file is unchanged since the stamp at ``stamp_path`` was written.

    ``known``: stamps the caller already took (``name -> file_stamp``), to spare a second ``lstat``.
    """
    stamps = read_json_file(stamp_path)
    if stamps is None or set(stamps) != set(names):
        return False
    known = known or {}
    return all((known.get(name) or file_stamp(os.path.join(directory, name))) == stamps[name] for name in names)


def write_stamps(directory: str, names: Sequence[str], stamp_path: str) -> None:
    """Record the current stamps of the named files (call right after checking their digests)."""
    stamps = {name: file_stamp(os.path.join(directory, name)) for name in names}
    if any(value is None for value in stamps.values()):
        return  # a file vanished meanwhile: no stamp, the next check reads the bytes again
    write_atomically(stamp_path, json.dumps(stamps, sort_keys=True).encode("utf-8"))
