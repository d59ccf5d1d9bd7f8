"""What the media cache does with files beyond writing them: reflink copies, and its JSON records read back."""

import fcntl
import json
import os
import shutil
import stat

from helm_roboreward.core.files import HASH_BLOCK, replacing

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
