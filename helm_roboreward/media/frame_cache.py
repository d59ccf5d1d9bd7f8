"""The frame cache (docs/media.md): an entry ``<cache>/<key[:2]>/<key>/`` holds ``NNNN.jpg`` files and a manifest.

Stamps let a later check (:mod:`~helm_roboreward.media.verification`) trust a file without re-reading it.
"""

import dataclasses
import hashlib
import json
import os
import stat
from collections.abc import Sequence
from typing import Any

from helm_roboreward.core.files import write_atomically
from helm_roboreward.protocol import FrameOptions

EXTRACTOR_VERSION = "2"  # in every key and manifest: bumped whenever the bytes stored for a video would change
MANIFEST_FILE = "frames.json"  # written last: its presence marks an entry complete
STAMP_FILE = "verified.json"  # name -> [ino, size, mtime, ctime] of the files, taken when their digests matched
Manifest = dict[str, Any]  # an entry's frames.json, as decoding.extract_frames writes it


def frames_key(video_sha256: str, options: FrameOptions) -> str:
    """The content-addressed key of a video's frames: video bytes, every setting (field), the extractor version."""
    payload = {"video_sha256": video_sha256, "extractor": EXTRACTOR_VERSION, **dataclasses.asdict(options)}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()[:32]


def frames_directory(cache_dir: str, key: str) -> str:
    """Where the frames of ``key`` live (two-level fan-out keeps folders small)."""
    return os.path.join(cache_dir, key[:2], key)


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
