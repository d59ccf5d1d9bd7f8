"""Writing files safely: the one file digest, atomic writes, file modes (why and how: docs/data.md)."""

import contextlib
import hashlib
import os
import tempfile
import threading
from collections.abc import Iterator
from typing import BinaryIO

HASH_BLOCK = 1 << 20
_UMASK_LOCK = threading.Lock()


def file_digest(path: str) -> str:
    """The SHA-256 of a file's bytes (hex), read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(HASH_BLOCK), b""):
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
def replacing(path: str) -> Iterator[BinaryIO]:
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
    with replacing(path) as out:
        out.write(data)
