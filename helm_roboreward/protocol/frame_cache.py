"""The frame cache (docs/media.md): an entry ``<cache>/<key[:2]>/<key>/`` holds ``NNNN.jpg`` files and a manifest.

Extraction writes an entry (the manifest last: it marks the entry complete); an existing entry is used only once
verified (manifest, stamps, digests, containment), and a folder a killed writer left is tidied first. Stamps let a
later check trust a file without re-reading it.
"""

import dataclasses
import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import av
from PIL import Image

from helm_roboreward.protocol.rules import FrameOptions, select_frame_indices
from helm_roboreward.protocol.safe_files import file_digest, read_json_file, write_atomically
from helm_roboreward.protocol.video_decoding import (
    FRAME_CONTENT_TYPE,
    PreparedMedia,
    VideoError,
    VideoProbe,
    count_decodable_frames,
    decode_container,
    encode_jpeg,
    probe_container,
    probe_video,
    to_image,
    write_error,
)

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
    manifest: Manifest | None = read_json_file(os.path.join(directory, MANIFEST_FILE))
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

    manifest: Manifest | None
    problem: str | None


def cached_entry(video_path: str, cache_dir: str, directory: str, video_sha256: str, options: FrameOptions,
                 full: bool) -> EntryCheck:
    """Whether ``directory`` holds exactly this video's frames (``full``: re-read them even if stamps match)."""
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


def _files_problem(directory: str, manifest: Manifest, full: bool, video_path: str) -> str | None:
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
    problem = _contents_problem(directory, files, manifest, video_path)
    if problem is None and not unchanged:
        write_stamps(directory, names, stamp_path)
    return problem


def _contents_problem(directory: str, files: list[str], manifest: Manifest, video_path: str) -> str | None:
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
        if count_decodable_frames(video_path) != num_frames:
            return f"record {num_frames} decodable frames; the video decodes another number"
    return None


def extract_frames(video_path: str, cache_dir: str, options: FrameOptions, video_sha256: str | None = None,
                   full_check: bool = False) -> PreparedMedia:
    """One video's frames, cached (``full_check``: bytes re-read) or extracted now; else :class:`VideoError`."""
    digest = video_sha256 or file_digest(video_path)
    found, problem = cached_frames(video_path, cache_dir, options, digest, full_check)
    if found is not None:
        return found
    directory = frames_directory(cache_dir, frames_key(digest, options))
    try:
        existed = os.path.lexists(directory) or os.path.islink(os.path.dirname(directory))
        if existed:  # a killed writer's folder, or something planted at its place
            tidy_entry_folder(directory)
        os.makedirs(directory, exist_ok=True)
        with av.open(video_path) as container:  # one open for the probe and the decoding
            manifest = _extract_into(video_path, container, directory, options, digest, existed)
    except OSError as error:  # first: PyAV's errors for missing or unreadable files are OSErrors too
        raise write_error(video_path, directory, error) from None
    except av.FFmpegError as error:
        raise VideoError(f"{video_path}: cannot be read as a video ({error})") from None
    return frames_media(directory, manifest, cached=False, rebuilt_because=problem)


def cached_frames(video_path: str, cache_dir: str, options: FrameOptions, digest: str,
                  full_check: bool) -> tuple[PreparedMedia | None, str | None]:
    """The verified cached frames of one video, or None and why an existing entry is not trusted."""
    directory = frames_directory(cache_dir, frames_key(digest, options))
    if not os.path.lexists(directory):
        return None, None  # nothing cached: nothing to verify

    return cached_frame_set(video_path, cache_dir, directory, digest, options, full_check)


def _extract_into(video_path: str, container: "av.container.InputContainer", directory: str, options: FrameOptions,
                  digest: str, existed: bool) -> Manifest:
    """Decode and store the selected frames, then write the manifest (last: it marks the entry complete)."""
    probe = probe_container(video_path, container)
    indices = select_frame_indices(probe.num_frames, probe.native_fps, options)
    written = write_selected(container, directory, probe, indices, options)
    num_frames, tidy = probe.num_frames, existed
    if len(written) < len(set(indices)):  # the stream ended before a wanted frame
        (written, num_frames), tidy = reselect(video_path, container, directory, probe, written, options), True
    if not written:
        raise VideoError(f"{video_path}: no frame could be decoded")
    files = [name for _, name, _ in written]
    if tidy:
        remove_unlisted_frames(directory, files)
    with Image.open(os.path.join(directory, files[0])) as first:  # reads the header only
        stored_width, stored_height = first.size
    manifest: Manifest = {
        "extractor": EXTRACTOR_VERSION, "video_sha256": digest, "options": asdict(options), "files": files,
        "frame_indices": [index for index, _, _ in written],
        "sizes": [os.path.getsize(os.path.join(directory, name)) for name in files],
        "sha256": [sha for _, _, sha in written], "num_frames": num_frames, "probed_frames": probe.num_frames,
        "native_fps": probe.native_fps, "width": stored_width, "height": stored_height,
        "source_width": probe.width, "source_height": probe.height, "codec": probe.codec,
    }
    write_atomically(os.path.join(directory, MANIFEST_FILE), json.dumps(manifest, sort_keys=True).encode())
    write_stamps(directory, files + [MANIFEST_FILE], os.path.join(directory, STAMP_FILE))
    return manifest


def write_selected(container: "av.container.InputContainer", directory: str, probe: VideoProbe,
                   indices: Sequence[int], options: FrameOptions) -> list[tuple[int, str, str]]:
    """Decode and store the wanted frames that decode: ``(index, file name, SHA-256)`` of each."""
    written: list[tuple[int, str, str]] = []
    for sequence, (index, frame) in enumerate(decode_container(container, indices, probe, rewind=True)):
        name = f"{sequence:04d}.jpg"
        data = encode_jpeg(to_image(frame, options), options.jpeg_quality)
        write_atomically(os.path.join(directory, name), data)
        written.append((index, name, hashlib.sha256(data).hexdigest()))
    return written


def frames_media(directory: str, manifest: Manifest, cached: bool, rebuilt_because: str | None) -> PreparedMedia:
    """The frames a manifest describes (files under ``directory``), as a request carries them."""
    return PreparedMedia(str(manifest["video_sha256"]), FRAME_CONTENT_TYPE,
                         tuple(os.path.join(directory, str(name)) for name in manifest["files"]),
                         tuple(int(i) for i in manifest["frame_indices"]), sum(int(size) for size in manifest["sizes"]),
                         cached, rebuilt_because)


def reselect(video_path: str, container: "av.container.InputContainer", directory: str, probe: VideoProbe,
             written: list[tuple[int, str, str]], options: FrameOptions) -> tuple[list[tuple[int, str, str]], int]:
    """The stored frames and the decodable frame count after a pass that missed wanted frames."""
    num_frames = count_decodable_frames(video_path)
    if num_frames < probe.num_frames:
        corrected = select_frame_indices(num_frames, probe.native_fps, options)
        if corrected != [index for index, _, _ in written]:
            written = write_selected(container, directory, probe, corrected, options)
    return written, num_frames
