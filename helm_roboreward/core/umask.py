"""The mode a plain ``open`` gives a new file, for files made elsewhere (``mkstemp`` makes 0600; docs/data.md)."""

import os
import threading

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
