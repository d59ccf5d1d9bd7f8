"""Files written and read safely: the one file digest and atomic writes (why and how: docs/data.md).

Also file modes, reflink copies, JSON records read back, and paths a command reads or writes kept inside the
folder it was given.
"""

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import stat
import threading
from collections.abc import Iterator, Sequence
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


_UMASK_LOCK = threading.Lock()


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


_FICLONE = 0x40049409  # Linux ioctl: share the source's blocks copy-on-write (a reflink)


def copy_atomically(source: str, target: str) -> None:
    """Copy ``source`` to ``target`` as a new file (a reflink where the file system can), atomically."""
    with replacing(target) as out, open(source, "rb") as src:
        try:
            fcntl.ioctl(out.fileno(), _FICLONE, src.fileno())
        except OSError:
            shutil.copyfileobj(src, out, HASH_BLOCK)


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
