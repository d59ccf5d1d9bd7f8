"""Verification stamps: what lets a later check trust a cache file without re-reading its bytes (docs/media.md)."""

import json
import os
import stat
from collections.abc import Sequence

from helm_roboreward.core.files import write_atomically


def file_stamp(path: str) -> list[int] | None:
    """``[inode, size, mtime_ns, ctime_ns]`` of a regular file (not a link), or None."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return [info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns] if stat.S_ISREG(info.st_mode) else None


def write_stamps(directory: str, names: Sequence[str], stamp_path: str) -> None:
    """Record the stamps of the named files, right after writing them or checking their digests."""
    stamps = {name: file_stamp(os.path.join(directory, name)) for name in names}
    if all(value is not None for value in stamps.values()):  # a file vanished: no stamp, its bytes get re-read
        write_atomically(stamp_path, json.dumps(stamps, sort_keys=True).encode("utf-8"))
