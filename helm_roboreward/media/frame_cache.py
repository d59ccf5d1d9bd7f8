"""The frame cache: where a video's frames live, what an entry's manifest records, and when to trust an entry.

An entry is ``<cache>/<key[:2]>/<key>/``: ``NNNN.jpg`` files and the manifest ``frames.json``, written last.
What :func:`check_entry` verifies, and when it re-reads the bytes: docs/media.md.
"""

import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from helm_roboreward.core.files import file_digest, read_json_file
from helm_roboreward.media.store import contained_directory_problem, file_stamp, stamps_match, write_stamps
from helm_roboreward.protocol import FrameOptions, select_frame_indices

EXTRACTOR_VERSION = "1"
"""Part of every cache key; bump when decoding or encoding changes the stored bytes."""

MANIFEST_FILE = "frames.json"
"""Written last into an entry: its presence marks the entry complete."""

STAMP_FILE = "verified.json"
"""Written into an entry after its files matched their digests: ``name -> [ino, size, mtime, ctime]``."""

Manifest = dict[str, Any]
"""An entry's ``frames.json`` (as :func:`helm_roboreward.media.decoding.extract_frames` writes it)."""

VideoFacts = Callable[[], tuple[int, float]]
"""Returns ``(frames the demuxer counts, native frame rate)`` of the video (a probe)."""

_FRAME_NAME = re.compile(r"\d{4,}\.jpg")


def frames_key(video_sha256: str, options: FrameOptions) -> str:
    """The content-addressed key of a video's frames: video bytes, every setting, the extractor version."""
    payload = {"video_sha256": video_sha256, "extractor": EXTRACTOR_VERSION, **options.cache_key_fields()}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()[:32]


def frames_directory(cache_dir: str, key: str) -> str:
    """Where the frames of ``key`` live (two-level fan-out keeps folders small)."""
    return os.path.join(cache_dir, key[:2], key)


def read_manifest(directory: str) -> dict[str, object] | None:
    """The manifest of a frame folder whose listed files exist with their recorded sizes, or None."""
    manifest: Manifest | None = read_json_file(os.path.join(directory, MANIFEST_FILE))
    if manifest is None:
        return None
    try:
        files, sizes = list(manifest["files"]), list(manifest["sizes"])
        if len(files) != len(sizes) or not all(_FRAME_NAME.fullmatch(str(name)) for name in files):
            return None
        for name, size in zip(files, sizes, strict=True):
            if os.path.getsize(os.path.join(directory, str(name))) != size:
                return None
    except (OSError, KeyError, TypeError):
        return None
    return manifest


@dataclass(frozen=True)
class EntryCheck:
    """What :func:`check_entry` found."""

    manifest: Manifest | None
    """The entry's manifest when the entry can be used, else None."""

    problem: str | None
    """Why an existing entry cannot be used (it will be rebuilt); None when it is fine or simply absent."""


def check_entry(
    cache_dir: str,
    directory: str,
    video_sha256: str,
    options: FrameOptions,
    full: bool,
    video_facts: VideoFacts,
    decodable_frames: Callable[[], int],
) -> EntryCheck:
    """Whether the entry at ``directory`` (inside ``cache_dir``) holds exactly this video's frames under ``options``.

    ``full``: check the digests and the video itself even when the stamps say nothing changed.
    ``video_facts`` and ``decodable_frames`` are called only when the contents are checked.
    """
    if not os.path.lexists(directory):
        return EntryCheck(None, None)
    problem = contained_directory_problem(cache_dir, directory)
    if problem is not None:
        return EntryCheck(None, f"the frame folder {directory} {problem}")
    manifest = read_json_file(os.path.join(directory, MANIFEST_FILE))
    if manifest is None:
        return EntryCheck(None, None)  # an extraction that never finished: nothing to distrust, just redo it
    problem = _manifest_problem(manifest, video_sha256, options)
    if problem is None:
        problem = _files_problem(directory, manifest, full, video_facts, decodable_frames)
    if problem is not None:
        return EntryCheck(None, f"the frames in {directory} {problem}")
    return EntryCheck(manifest, None)


def _manifest_problem(manifest: Manifest, video_sha256: str, options: FrameOptions) -> str | None:
    """What in the manifest contradicts the key's video, options or the selection rule (no file access)."""
    if manifest.get("extractor") != EXTRACTOR_VERSION or manifest.get("options") != asdict(options):
        return "were made by another extractor version or other options"
    if "sha256" not in manifest or "video_sha256" not in manifest:
        return "were made by an older version that recorded no content digests"
    if manifest["video_sha256"] != video_sha256:
        return f"belong to another video ({str(manifest['video_sha256'])[:12]}...)"
    try:
        files = list(manifest["files"])
        columns = [list(manifest[key]) for key in ("frame_indices", "sizes", "sha256")]
        num_frames, probed = int(manifest["num_frames"]), int(manifest["probed_frames"])
        native_fps = float(manifest["native_fps"])
    except (KeyError, TypeError, ValueError):
        return "have an unreadable manifest"
    if any(len(column) != len(files) for column in columns) or not all(_FRAME_NAME.fullmatch(str(n)) for n in files):
        return "have a manifest whose lists do not match"
    if not 0 < num_frames <= probed:
        return f"record {num_frames} decodable of {probed} frames"
    expected = select_frame_indices(num_frames, native_fps, options)
    if [int(i) for i in columns[0]] != expected:
        return (f"list {len(files)} frames where the selection rule gives {len(expected)} for {num_frames} frames "
                f"at {native_fps:g} fps")
    return None


def _files_problem(directory: str, manifest: Manifest, full: bool, video_facts: VideoFacts,
                   decodable_frames: Callable[[], int]) -> str | None:
    """Each listed file a regular file of its recorded size; contents checked when stamps differ or ``full``."""
    files = [str(name) for name in manifest["files"]]
    seen: dict[str, list[int]] = {}  # one lstat per file, shared with the stamp comparison
    for name, size in zip(files, manifest["sizes"], strict=True):
        stamp = file_stamp(os.path.join(directory, name))
        if stamp is None:
            return f"lack {name} as a regular file"
        if stamp[1] != size:
            return f"have {name} of {stamp[1]} bytes, not {size}"
        seen[name] = stamp
    names = files + [MANIFEST_FILE]
    stamp_path = os.path.join(directory, STAMP_FILE)
    unchanged = stamps_match(directory, names, stamp_path, seen)
    if not full and unchanged:
        return None
    problem = _contents_problem(directory, files, manifest, video_facts, decodable_frames)
    if problem is None and not unchanged:
        write_stamps(directory, names, stamp_path)
    return problem


def _contents_problem(directory: str, files: list[str], manifest: Manifest, video_facts: VideoFacts,
                      decodable_frames: Callable[[], int]) -> str | None:
    """Digests of every file, and the recorded frame count and rate against the video itself."""
    for name, expected in zip(files, manifest["sha256"], strict=True):
        if file_digest(os.path.join(directory, name)) != expected:
            return f"have {name} whose bytes do not match its recorded digest"
    probed, native_fps = video_facts()
    if (probed, native_fps) != (int(manifest["probed_frames"]), float(manifest["native_fps"])):
        return (f"record {manifest['probed_frames']} frames at {manifest['native_fps']} fps; the video has {probed} "
                f"at {native_fps:g}")
    num_frames = int(manifest["num_frames"])
    if num_frames < probed and decodable_frames() != num_frames:
        return f"record {num_frames} decodable frames; the video decodes another number"
    return None
