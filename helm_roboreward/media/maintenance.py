"""Tidying a cache folder that already existed: planted links, and what killed writers and earlier passes left.

Nothing takes a lock (files are written atomically), so this must stay safe next to a live writer on another
machine; loaded only where a folder existed before (docs/media.md).
"""

import os
import time
from collections.abc import Sequence

STALE_TEMPORARY_SECONDS = 600.0
"""A temporary file older than this belongs to a writer that died (a live one renames it in milliseconds)."""


def tidy_entry_folder(directory: str) -> None:
    """Make ``directory`` a real folder and remove the temporaries of killed writers in it.

    A link or file at its place, or a linked parent, is replaced, never followed.
    """
    if os.path.islink(directory) or (os.path.lexists(directory) and not os.path.isdir(directory)):
        os.unlink(directory)
    if os.path.islink(os.path.dirname(directory)):
        os.unlink(os.path.dirname(directory))
    os.makedirs(directory, exist_ok=True)
    remove_stale_temporaries(directory)


def remove_stale_temporaries(directory: str) -> None:
    """Delete old temporary files (a fresh one may be another machine's write in progress)."""
    now = time.time()
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if name.startswith(".tmp-") and name.endswith(".part"):
            try:
                if now - os.path.getmtime(os.path.join(directory, name)) > STALE_TEMPORARY_SECONDS:
                    os.unlink(os.path.join(directory, name))
            except OSError:
                pass  # another process removed or renamed it first


def remove_unlisted_frames(directory: str, files: Sequence[str]) -> None:
    """Delete frame files the final selection does not list (a first pass over a stream that ended early).

    Safe next to a concurrent writer of the same key: identical inputs give identical final lists.
    """
    listed = set(files)
    for name in os.listdir(directory):
        if name.endswith(".jpg") and name[:-4].isdigit() and name not in listed:
            try:
                os.unlink(os.path.join(directory, name))
            except FileNotFoundError:
                pass  # another writer removed it first
