"""Writing files safely: the one file digest and atomic writes (why and how: docs/data.md)."""

import contextlib
import hashlib
import os
import secrets
from collections.abc import Iterator
from typing import BinaryIO

HASH_BLOCK = 1 << 20


def file_digest(path: str) -> str:
    """The SHA-256 of a file's bytes (hex), read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(HASH_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def replacing(path: str) -> Iterator[BinaryIO]:
    """A new temporary file next to ``path``, renamed over it when the block succeeds and removed otherwise."""
    temporary = os.path.join(os.path.dirname(path) or ".", f".tmp-{secrets.token_hex(8)}.part")
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # open()'s mode, not mkstemp's 0600
    try:
        with os.fdopen(handle, "wb") as out:
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
