"""When an existing cache entry (frames or a video copy) is trusted, and why not when it is not.

Loaded only where something is cached already. What each check guards against, and why a stamp can stand in
for re-reading the bytes: docs/media.md.
"""

import os
import re
import stat
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from helm_roboreward.core.cache_files import read_json_file
from helm_roboreward.core.files import file_digest
from helm_roboreward.media import frame_cache as cache
from helm_roboreward.media.decoding import PreparedMedia, frames_media
from helm_roboreward.media.frame_cache import file_stamp, write_stamps
from helm_roboreward.media.probing import probe_video
from helm_roboreward.protocol import FrameOptions, select_frame_indices

FRAME_NAME = re.compile(r"\d{4,}\.jpg")


def contained_directory_problem(root: str, directory: str) -> str | None:
    """Why ``directory`` is not a real folder of the cache under ``root`` (a link on the way?), or None.

    ``root`` itself is the user's choice and may be a link; the cache's own levels may not.
    """
    relative = os.path.relpath(directory, root)
    if relative == os.curdir or relative.startswith(os.pardir):
        return f"is not inside the cache {root}"
    path = directory
    for _ in relative.split(os.sep):
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return "is missing"
        except OSError as error:
            return f"cannot be read ({error.strerror or error})"
        if stat.S_ISLNK(info.st_mode):
            return f"lies in a link ({path} -> {os.path.realpath(path)}), not in a folder of the cache"
        if not stat.S_ISDIR(info.st_mode):
            return f"lies in {path}, which is not a folder"
        path = os.path.dirname(path)
    return None


def stamps_match(directory: str, names: Sequence[str], stamp_path: str,
                 known: dict[str, list[int]] | None = None) -> bool:
    """True when every named file is unchanged since the stamp at ``stamp_path`` was written.

    ``known``: stamps the caller already took (``name -> file_stamp``), to spare a second ``lstat``.
    """
    stamps = read_json_file(stamp_path)
    if stamps is None or set(stamps) != set(names):
        return False
    known = known or {}
    return all((known.get(name) or file_stamp(os.path.join(directory, name))) == stamps[name] for name in names)


def read_manifest(directory: str) -> dict[str, object] | None:
    """The manifest of a frame folder whose listed files exist with their recorded sizes, or None."""
    manifest: cache.Manifest | None = read_json_file(os.path.join(directory, cache.MANIFEST_FILE))
    if manifest is None:
        return None
    try:
        files, sizes = list(manifest["files"]), list(manifest["sizes"])
        if len(files) != len(sizes) or not all(FRAME_NAME.fullmatch(str(name)) for name in files):
            return None
        if any(os.path.getsize(os.path.join(directory, str(n))) != size for n, size in zip(files, sizes, strict=True)):
            return None
    except (OSError, KeyError, TypeError):
        return None
    return manifest


@dataclass(frozen=True)
class EntryCheck:
    """The manifest of a usable entry, else why an existing one is not trusted (both None: no complete entry)."""

    manifest: cache.Manifest | None
    problem: str | None


def cached_entry(video_path: str, cache_dir: str, directory: str, video_sha256: str, options: FrameOptions,
                 full: bool) -> EntryCheck:
    """Whether ``directory`` holds exactly this video's frames (``full``: re-read them even if stamps match)."""
    if not os.path.lexists(directory):
        return EntryCheck(None, None)
    problem = contained_directory_problem(cache_dir, directory)
    if problem is not None:
        return EntryCheck(None, f"the frame folder {directory} {problem}")
    manifest = read_json_file(os.path.join(directory, cache.MANIFEST_FILE))
    if manifest is None:
        return EntryCheck(None, None)  # an extraction that never finished: nothing to distrust, just redo it
    problem = _manifest_problem(manifest, video_sha256, options)
    if problem is None:
        problem = _files_problem(directory, manifest, full, video_path)
    if problem is not None:
        return EntryCheck(None, f"the frames in {directory} {problem}")
    return EntryCheck(manifest, None)


def cached_frame_set(video_path: str, cache_dir: str, directory: str, video_sha256: str, options: FrameOptions,
                     full: bool) -> tuple[PreparedMedia | None, str | None]:
    """The frames of a trusted entry, or None and why an existing entry is not trusted."""
    checked = cached_entry(video_path, cache_dir, directory, video_sha256, options, full)
    if checked.manifest is None:
        return None, checked.problem
    return frames_media(directory, checked.manifest, cached=True, rebuilt_because=None), None


def _manifest_problem(manifest: cache.Manifest, video_sha256: str, options: FrameOptions) -> str | None:
    """What in the manifest contradicts the key's video, options or the selection rule (no file access)."""
    if manifest.get("extractor") != cache.EXTRACTOR_VERSION or manifest.get("options") != asdict(options):
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
    lists_differ = any(len(column) != len(files) for column in columns)
    if lists_differ or not all(FRAME_NAME.fullmatch(str(n)) for n in files):
        return "have a manifest whose lists do not match"
    if not 0 < num_frames <= probed:
        return f"record {num_frames} decodable of {probed} frames"
    expected = select_frame_indices(num_frames, native_fps, options)
    if [int(i) for i in columns[0]] != expected:
        return (f"list {len(files)} frames where the selection rule gives {len(expected)} for {num_frames} frames "
                f"at {native_fps:g} fps")
    return None


def _files_problem(directory: str, manifest: cache.Manifest, full: bool, video_path: str) -> str | None:
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
    names = files + [cache.MANIFEST_FILE]
    stamp_path = os.path.join(directory, cache.STAMP_FILE)
    unchanged = stamps_match(directory, names, stamp_path, seen)
    if not full and unchanged:
        return None
    problem = _contents_problem(directory, files, manifest, video_path)
    if problem is None and not unchanged:
        write_stamps(directory, names, stamp_path)
    return problem


def _contents_problem(directory: str, files: list[str], manifest: cache.Manifest, video_path: str) -> str | None:
    """Digests of every file, and the recorded frame count and rate against the video itself."""
    for name, expected in zip(files, manifest["sha256"], strict=True):
        if file_digest(os.path.join(directory, name)) != expected:
            return f"have {name} whose bytes do not match its recorded digest"
    probe = probe_video(video_path)
    probed, native_fps = probe.num_frames, probe.native_fps
    if (probed, native_fps) != (int(manifest["probed_frames"]), float(manifest["native_fps"])):
        return (f"record {manifest['probed_frames']} frames at {manifest['native_fps']} fps; the video has {probed} "
                f"at {native_fps:g}")
    num_frames = int(manifest["num_frames"])
    if num_frames < probed:  # the stream ended early: count again what decodes
        from helm_roboreward.media.short_streams import count_decodable_frames

        if count_decodable_frames(video_path) != num_frames:
            return f"record {num_frames} decodable frames; the video decodes another number"
    return None
