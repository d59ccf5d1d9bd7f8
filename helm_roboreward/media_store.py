"""The content-addressed file store under the media folder: digests, atomic writes, manifests, cleanup.

Shared by frame extraction and video copies. Nothing here takes a lock: files are written to a
temporary name in the target folder and renamed, so readers on any machine see a complete file or
none, and identical inputs produce identical names and bytes.
"""

import hashlib
import json
import os
import tempfile
import time
from typing import Dict, Optional

MANIFEST_FILE = "frames.json"
"""Written last into a frame folder: its presence (with matching file sizes) marks the folder complete."""

_HASH_BLOCK = 1 << 20


def file_digest(path: str) -> str:
    """The SHA-256 of a file's bytes (hex), read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_HASH_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def write_atomically(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    Readers see either no file or the complete file; concurrent writers of identical content
    simply replace each other. The temporary file is removed if anything fails.
    """
    directory = os.path.dirname(path)
    handle, temporary = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=directory)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


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


def read_manifest(directory: str) -> Optional[Dict[str, object]]:
    """The manifest of a complete frame set, or None when absent, unreadable or incomplete."""
    try:
        with open(os.path.join(directory, MANIFEST_FILE), encoding="utf-8") as handle:
            manifest = json.load(handle)
        files = manifest["files"]
        sizes = manifest["sizes"]
        for name, size in zip(files, sizes, strict=True):
            if os.path.getsize(os.path.join(directory, name)) != size:
                return None
        return dict(manifest)
    except (OSError, ValueError, KeyError, TypeError):
        return None
