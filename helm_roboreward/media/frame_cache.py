"""The frame cache: where a video's frames live and what an entry's manifest records (docs/media.md).

An entry is ``<cache>/<key[:2]>/<key>/``: ``NNNN.jpg`` files and the manifest ``frames.json``, written last.
Whether an existing entry is trusted: :mod:`helm_roboreward.media.verification`.
"""

import hashlib
import json
import os
from typing import Any

from helm_roboreward.protocol import FrameOptions

EXTRACTOR_VERSION = "2"  # in every key and manifest: bumped whenever the bytes stored for a video would change
MANIFEST_FILE = "frames.json"  # written last: its presence marks an entry complete
STAMP_FILE = "verified.json"  # name -> [ino, size, mtime, ctime] of the files, taken when their digests matched
Manifest = dict[str, Any]  # an entry's frames.json, as decoding.extract_frames writes it


def frames_key(video_sha256: str, options: FrameOptions) -> str:
    """The content-addressed key of a video's frames: video bytes, every setting, the extractor version."""
    payload = {"video_sha256": video_sha256, "extractor": EXTRACTOR_VERSION, **options.cache_key_fields()}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()[:32]


def frames_directory(cache_dir: str, key: str) -> str:
    """Where the frames of ``key`` live (two-level fan-out keeps folders small)."""
    return os.path.join(cache_dir, key[:2], key)
