"""Reading and writing files safely: the one file digest, atomic writes and copies, file modes, JSON objects.

How a write stays atomic and link-safe, and which modes files get: docs/data.md. No HELM, no network.
"""

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Iterator
from typing import BinaryIO

_HASH_BLOCK = 1 << 20
_FICLONE = 0x40049409  # Linux ioctl: share the source's blocks copy-on-write (a reflink)
_UMASK_LOCK = threading.Lock()


def file_digest(path: str) -> str:
    """The SHA-256 of a file's bytes (hex), read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_HASH_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def file_mode() -> int:
    """The mode ``open`` would give a new file under the process umask."""
    try:  # read the umask without changing it where the system allows
        with open("/proc/self/status", encoding="ascii") as handle:
            umask = next(int(line.split()[1], 8) for line in handle if line.startswith("Umask:"))
    except (OSError, ValueError, IndexError, StopIteration):
        with _UMASK_LOCK:  # set and restore: briefly visible to other threads
            umask = os.umask(0o022)
            os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def _replacing(path: str) -> Iterator[BinaryIO]:
    """A new temporary file next to ``path``, renamed over it when the block succeeds and removed otherwise."""
    handle, temporary = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(handle, "wb") as out:
            os.fchmod(out.fileno(), file_mode())
            yield out
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_atomically(path: str, data: bytes) -> None:
    """Write ``data`` to ``path``: readers see no file or the complete file, and a link at ``path`` is replaced."""
    with _replacing(path) as out:
        out.write(data)


def copy_atomically(source: str, target: str) -> None:
    """Copy ``source`` to ``target`` as a new file (a reflink where the file system can), atomically."""
    with _replacing(target) as out, open(source, "rb") as src:
        try:
            fcntl.ioctl(out.fileno(), _FICLONE, src.fileno())
        except OSError:
            shutil.copyfileobj(src, out, _HASH_BLOCK)


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
