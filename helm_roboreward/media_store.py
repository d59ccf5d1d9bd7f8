"""The content-addressed file store under the media folder: digests, atomic writes, stamps, containment.

Shared by frame extraction and video copies. Nothing here takes a lock: files are written to a
unique temporary file created exclusively in the target folder and renamed, so readers on any
machine see a complete file or none, and identical inputs produce identical names and bytes.

File modes follow the process umask as a plain ``open`` would (``0o666 & ~umask`` for files; folders
``0o777 & ~umask``): 0644 under the usual umask 022, 0664 under 002, so a cache shared by a group stays
readable by it. (``tempfile.mkstemp`` alone would leave every file 0600.)

Verification stamps make re-checking a cache entry cheap: after an entry's files were checked against
their content digests, a stamp records each file's inode, size, modification and change time. A later
check compares ``lstat`` results with the stamp and re-reads the bytes only when something differs. The
change time (ctime) cannot be set by any user: writing to a file, renaming it or changing its mode or
times all move it, so a file changed since its digest check never matches its stamp.
"""

import errno
import fcntl
import hashlib
import json
import os
import shutil
import stat
import tempfile
import threading
import time
from typing import Dict, List, Optional, Sequence

MANIFEST_FILE = "frames.json"
"""Written last into a frame folder: its presence marks the folder complete (see extraction)."""

STAMP_FILE = "verified.json"
"""Written into a frame folder after its files matched their digests: ``name -> [ino, size, mtime, ctime]``."""

_HASH_BLOCK = 1 << 20
_FICLONE = 0x40049409
"""Linux ``ioctl`` request that makes the destination share the source's blocks copy-on-write (Btrfs, XFS)."""

_UMASK_LOCK = threading.Lock()


def file_digest(path: str) -> str:
    """The SHA-256 of a file's bytes (hex), read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_HASH_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def current_umask() -> int:
    """The process umask, read without changing it where the system allows (Linux ``/proc``)."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:  # elsewhere: set and restore (briefly visible to other threads, hence the lock)
        mask = os.umask(0o022)
        os.umask(mask)
        return mask


def file_mode() -> int:
    """The mode a new cache file gets: what ``open`` would give under the current umask."""
    return 0o666 & ~current_umask()


def _temporary_in(directory: str) -> "tuple[int, str]":
    """A new, exclusively created temporary file in ``directory`` (never an existing name or a link)."""
    return tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=directory)


def _discard(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def write_atomically(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` through a unique temporary file in the same folder and a rename.

    Readers see either no file or the complete file; concurrent writers of identical content
    simply replace each other. A link planted at ``path`` is replaced, never written through. The
    temporary file is removed if anything fails.
    """
    handle, temporary = _temporary_in(os.path.dirname(path) or ".")
    try:
        with os.fdopen(handle, "wb") as out:
            os.fchmod(out.fileno(), file_mode())
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        _discard(temporary)
        raise


def copy_atomically(source: str, target: str) -> None:
    """Copy ``source`` to ``target`` as a new file (never a link to it), through a temporary file and a rename.

    Where the file system can, the copy shares the source's blocks copy-on-write (a reflink: instant, no
    extra space, and still a separate file: writing to one never changes the other); otherwise the bytes
    are copied.
    """
    handle, temporary = _temporary_in(os.path.dirname(target) or ".")
    try:
        with os.fdopen(handle, "wb") as out, open(source, "rb") as src:
            os.fchmod(out.fileno(), file_mode())
            try:
                fcntl.ioctl(out.fileno(), _FICLONE, src.fileno())
            except OSError:
                shutil.copyfileobj(src, out, _HASH_BLOCK)
        os.replace(temporary, target)
    except BaseException:
        _discard(temporary)
        raise


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


def read_json_file(path: str) -> Optional[Dict[str, object]]:
    """A JSON object from a regular file (not a link), or None when absent, unreadable or not an object."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def contained_directory_problem(root: str, directory: str) -> Optional[str]:
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


def file_stamp(path: str) -> Optional[List[int]]:
    """``[inode, size, mtime_ns, ctime_ns]`` of a regular file (not a link), or None."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return [info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def stamps_match(directory: str, names: Sequence[str], stamp_path: str,
                 known: Optional[Dict[str, List[int]]] = None) -> bool:
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
