"""A local checkpoint folder for the transformers client: checked, and fingerprinted for the cache key.

Imported only for a local checkpoint (docs/clients.md, "Cache key" of TransformersQwen3VLClient).
"""

import os
from typing import Any

from helm_roboreward.clients.transformers_client import TransformersClientError
from helm_roboreward.core.files import file_digest

DIGESTED_FILE_BYTES = 64 * 1024 * 1024
"""Files up to this size enter by SHA-256, larger ones (weight shards: minutes to hash) by size and mtime."""


def checked_fingerprint(folder: str, where: str) -> dict[str, Any]:
    """:func:`checkpoint_fingerprint`; TransformersClientError when ``folder`` (``where``) holds no config.json."""
    if not os.path.isfile(os.path.join(folder, "config.json")):
        raise TransformersClientError(
            f"TransformersQwen3VLClient: the folder of {where} "
            f"{'has no config.json' if os.path.isdir(folder) else 'does not exist'}. Point `checkpoint` at a folder "
            "written by save_pretrained, or give a hub id such as teetone/RoboReward-8B.")
    return checkpoint_fingerprint(folder)


def checkpoint_fingerprint(folder: str) -> dict[str, Any]:
    """Every file under ``folder`` (dot names skipped) by relative path: its SHA-256 or ``[size, mtime_ns]``."""
    files: dict[str, Any] = {}
    for root, folders, names in os.walk(folder):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in sorted(name for name in names if not name.startswith(".")):
            path = os.path.join(root, name)
            try:
                status = os.stat(path)
                files[os.path.relpath(path, folder)] = file_digest(path) if status.st_size <= DIGESTED_FILE_BYTES \
                    else [status.st_size, status.st_mtime_ns]
            except OSError as error:  # a broken link: recorded, the load will say what is wrong
                files[os.path.relpath(path, folder)] = f"unreadable: {error.strerror}"
    return files
