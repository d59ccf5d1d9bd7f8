"""The content-addressed store under the media folder: manifests, verification stamps, containment, cleanup.

Shared by frame extraction and video copies. Nothing here takes a lock: files are written with
:func:`helm_roboreward.core.files.write_atomically` (a unique temporary file in the target folder, then a
rename), so readers on any machine see a complete file or none, and identical inputs produce identical
names and bytes.

Verification stamps make re-checking a cache entry cheap: after an entry's files were checked against
their content digests, a stamp records each file's inode, size, modification and change time. A later
check compares ``lstat`` results with the stamp and re-reads the bytes only when something differs. The
change time (ctime) cannot be set by any user: writing to a file, renaming it or changing its mode or
times all move it, so a file changed since its digest check never matches its stamp.
"""

import errno
import json
import os
import stat
import time
from collections.abc import Sequence

from helm_roboreward.core.files import read_json_file, write_atomically

MANIFEST_FILE = "frames.json"
"""Written last into a frame folder: its presence marks the folder complete (see extraction)."""

STAMP_FILE = "verified.json"
"""Written into a frame folder after its files matched their digests: ``name -> [ino, size, mtime, ctime]``."""

def is_disk_full(error: BaseException) -> bool:
    """True for the errors of a full disk or an exhausted quota."""
    return isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)


STALE_TEMPORARY_SECONDS = 600.0
"""A temporary file older than this belongs to a writer that died (a live one renames it in milliseconds)."""


def remove_stale_temporaries(directory: str, max_age_seconds: float = STALE_TEMPORARY_SECONDS) -> int:
    """Delete temporary files that killed writers left in a cache folder; returns how many.

    Only old ones go: on a shared file system another machine may be writing a fresh one right now.
    """
    removed = 0
    now = time.time()
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    for name in names:
        if not (name.startswith(".tmp-") and name.endswith(".part")):
            continue
        path = os.path.join(directory, name)
        try:
            if now - os.path.getmtime(path) > max_age_seconds:
                os.unlink(path)
                removed += 1
        except OSError:
            pass  # another process removed or renamed it first
    return removed


def contained_directory_problem(root: str, directory: str) -> str | None:
    """Why ``directory`` is not a real folder of the cache under ``root``, or None when it is.

    Every folder from ``directory`` up to (not including) ``root`` must be a real folder, not a link: the
    cache's own levels (``<key[:2]>/<key>``) cannot then lead elsewhere. ``root`` itself is the user's choice.
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
    """True when every named file in ``directory`` is unchanged since the stamp at ``stamp_path`` was written.

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
