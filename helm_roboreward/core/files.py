"""Reading and writing files safely: a file's digest, atomic writes and copies, file modes, JSON objects.

The one place the package hashes a file or writes one atomically (every cache, report and project file goes
through :func:`write_atomically`). A write goes to a unique temporary file created exclusively in the
destination folder, then is renamed over the destination: readers see the old file or the new one, never a
partial file, and a link planted at the destination (or at any fixed temporary name) is replaced, never
written through.

File modes follow the process umask as a plain ``open`` would (``0o666 & ~umask``): 0644 under the usual
umask 022, 0664 under 002, so a cache shared by a group stays readable by it (``tempfile.mkstemp`` alone
would leave every file 0600). No HELM, no network.
"""

import fcntl
import hashlib
import json
import os
import shutil
import stat
import tempfile
import threading

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


def read_json_file(path: str) -> dict[str, object] | None:
    """A JSON object from a regular file (not a link), or None when absent, unreadable or not an object."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None
