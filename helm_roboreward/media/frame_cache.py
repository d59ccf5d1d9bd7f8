"""The frame cache: where a video's frames live, what a complete entry's manifest says, and when to trust it.

An entry is ``<cache>/<key[:2]>/<key>/`` holding ``NNNN.jpg`` files and the manifest ``frames.json``,
written last. ``key`` hashes the video's bytes, every sampling setting and the extractor version.

An entry is used only when (:func:`check_entry`):

- it is a real folder at its place inside the cache (not a link to another video's folder);
- its manifest names this video (``video_sha256``), these options and this extractor, lists plain
  ``NNNN.jpg`` names, and its frame indices are exactly what the selection rule gives for the frame
  count and rate it records;
- every listed file is a regular file of the recorded size whose bytes match the recorded SHA-256, and
  the recorded frame count and rate are the video's own (a demux pass; a stream that ended early is
  counted again by decoding).

Reading every frame back costs more than a whole warm run, so the digest and probe checks run in full
only when needed: ``full=True`` (``roboreward prepare``), or when a file's stamp (inode, size, mtime,
ctime; :mod:`helm_roboreward.media.store`) differs from the one recorded after the last full check. A
file changed in any way since then, even with its size kept, never matches its stamp. An entry that
fails is rebuilt, and the caller reports why.
"""

import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass

from helm_roboreward.core.files import file_digest, read_json_file
from helm_roboreward.media.store import (
    MANIFEST_FILE,
    STAMP_FILE,
    contained_directory_problem,
    file_stamp,
    stamps_match,
    write_stamps,
)
from helm_roboreward.protocol import FrameOptions, select_frame_indices

EXTRACTOR_VERSION = "1"
"""Part of every cache key; bump when decoding or encoding changes the stored bytes."""

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
    manifest = read_json_file(os.path.join(directory, MANIFEST_FILE))
    if manifest is None:
        return None
    try:
        files, sizes = list(manifest["files"]), list(manifest["sizes"])  # type: ignore[call-overload]
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

    manifest: dict[str, object] | None
    """The entry's manifest when the entry can be used, else None."""

    problem: str | None
    """Why an existing entry cannot be used (it will be rebuilt); None when it is fine or simply absent."""


VideoFacts = Callable[[], tuple[int, float]]
"""Returns ``(frames the demuxer counts, native frame rate)`` of the video (a probe)."""


def check_entry(
    cache_dir: str,
    directory: str,
    video_sha256: str,
    options: FrameOptions,
    full: bool,
    video_facts: VideoFacts,
    decodable_frames: Callable[[], int],
) -> EntryCheck:
    """Whether the entry at ``directory`` holds exactly this video's frames under ``options``.

    Args:
        cache_dir: The frame cache root the entry must lie in.
        directory: The entry's folder (:func:`frames_directory`).
        video_sha256: The video's digest.
        options: The sampling settings.
        full: Check digests and the video itself even when the stamps say nothing changed.
        video_facts: Probes the video (called only for a full check).
        decodable_frames: Counts the frames that decode (called only when the manifest records an early end).
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
    files = [str(name) for name in manifest.get("files", [])]  # type: ignore[attr-defined]
    seen: dict[str, list[int]] = {}
    if problem is None:
        problem = _files_problem(directory, files, manifest, seen)
    names = files + [MANIFEST_FILE]
    stamp = os.path.join(directory, STAMP_FILE)
    unchanged = problem is None and stamps_match(directory, names, stamp, seen)
    if problem is None and (full or not unchanged):
        problem = _contents_problem(directory, files, manifest, video_facts, decodable_frames)
        if problem is None and not unchanged:
            write_stamps(directory, names, stamp)
    if problem is not None:
        return EntryCheck(None, f"the frames in {directory} {problem}")
    return EntryCheck(manifest, None)


def _manifest_problem(manifest: dict[str, object], video_sha256: str, options: FrameOptions) -> str | None:
    """What in the manifest contradicts the key's video, options or the selection rule (no file access)."""
    if manifest.get("extractor") != EXTRACTOR_VERSION or manifest.get("options") != asdict(options):
        return "were made by another extractor version or other options"
    if "sha256" not in manifest or "video_sha256" not in manifest:
        return "were made by an older version that recorded no content digests"
    if manifest["video_sha256"] != video_sha256:
        return f"belong to another video ({str(manifest['video_sha256'])[:12]}...)"
    try:
        files = list(manifest["files"])  # type: ignore[call-overload]
        columns = [list(manifest[key]) for key in ("frame_indices", "sizes", "sha256")]  # type: ignore[call-overload]
        num_frames = int(manifest["num_frames"])  # type: ignore[call-overload]
        probed = int(manifest["probed_frames"])  # type: ignore[call-overload]
        native_fps = float(manifest["native_fps"])  # type: ignore[arg-type]
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


def _files_problem(directory: str, files: list[str], manifest: dict[str, object],
                   seen: dict[str, list[int]]) -> str | None:
    """Every listed file a regular file of its recorded size; their stamps go into ``seen`` (one ``lstat`` each)."""
    sizes = list(manifest["sizes"])  # type: ignore[call-overload]
    for name, size in zip(files, sizes, strict=True):
        stamp = file_stamp(os.path.join(directory, name))
        if stamp is None:
            return f"lack {name} as a regular file"
        if stamp[1] != size:
            return f"have {name} of {stamp[1]} bytes, not {size}"
        seen[name] = stamp
    return None


def _contents_problem(
    directory: str,
    files: list[str],
    manifest: dict[str, object],
    video_facts: VideoFacts,
    decodable_frames: Callable[[], int],
) -> str | None:
    """Digests of every file, and the recorded frame count and rate against the video itself."""
    for name, expected in zip(files, list(manifest["sha256"]), strict=True):  # type: ignore[call-overload]
        if file_digest(os.path.join(directory, name)) != expected:
            return f"have {name} whose bytes do not match its recorded digest"
    probed, native_fps = video_facts()
    if (probed, native_fps) != (int(manifest["probed_frames"]), float(manifest["native_fps"])):  # type: ignore[call-overload, arg-type]
        return (f"record {manifest['probed_frames']} frames at {manifest['native_fps']} fps; the video has {probed} "
                f"at {native_fps:g}")
    num_frames = int(manifest["num_frames"])  # type: ignore[call-overload]
    if num_frames < probed and decodable_frames() != num_frames:
        return f"record {num_frames} decodable frames; the video decodes another number"
    return None
