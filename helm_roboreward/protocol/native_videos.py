"""Native mp4s, the mp4 files native-video models receive: validated, metadata-clean, content-addressed.

A native mp4 holds a clean source video's bytes unchanged, else its streams remuxed without tags (never re-encoded).
It lives at ``<media>/videos/<sha[:2]>/<sha[:32]>.mp4`` with its record ``<same>.json`` (written last) and stamp
``<same>.verified.json``. Why a native mp4 is never a link to the dataset's file, which metadata is removed and how
one is checked before use: docs/media.md.
"""

import json
import os
import re
import stat
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO

import av

from helm_roboreward.protocol.frame_cache import (
    contained_directory_problem,
    remove_stale_temporaries,
    stamps_match,
    write_stamps,
)
from helm_roboreward.protocol.safe_files import (
    copy_atomically,
    file_digest,
    file_mode,
    read_json_file,
    write_atomically,
)
from helm_roboreward.protocol.video_decoding import (
    PreparedMedia,
    VideoError,
    decode_container,
    probe_container,
    write_error,
)

VIDEOS_FOLDER = "videos"
VIDEO_CONTENT_TYPE = "video/mp4"
NATIVE_MP4_VERSION = "2"
"""Recorded with each native mp4; an entry without a record of this version is rebuilt."""

_CONTAINER_TAGS: dict[str, str] = {
    "major_brand": r"[ -~]{4}",
    "minor_version": r"\d{1,10}",
    "compatible_brands": r"(?:[ -~]{4}){0,32}",
    "encoder": r"Lavf\d+(?:\.\d+){0,3}",
    "creation_time": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z?",
}
_STREAM_TAGS: dict[str, str] = {
    "language": r"[a-z]{3}",
    "handler_name": r"VideoHandler|SoundHandler|Core Media Video|Core Media Audio|ISO Media file produced by Google "
                    r"Inc\.|L-SMASH Video Handler|GPAC ISO Video Handler|Mainconcept Video Media Handler",
    "vendor_id": r"\[0\]\[0\]\[0\]\[0\]|[A-Za-z0-9 ]{4}",
    "encoder": r"Lavc\d+(?:\.\d+){0,3}(?: [A-Za-z0-9_.-]+)?",
    "creation_time": _CONTAINER_TAGS["creation_time"],
}
"""Tags a clean mp4 carries (written by the container format and the muxer), with the values they can take;
anything else (``title``, ``comment``, a handler name holding text) could carry a file name or a gold score."""

# Boxes a clean mp4 holds at these levels; others (uuid, XMP, ...) can carry text that demuxers never show.
_TOP_LEVEL_BOXES = {b"ftyp", b"moov", b"mdat", b"free", b"skip", b"wide"}
_MOOV_BOXES = {b"mvhd", b"trak", b"udta", b"iods", b"mvex", b"free", b"skip"}
_UDTA_BOXES = {b"meta", b"free", b"skip"}


def _boxes(data: bytes, start: int, end: int) -> list[tuple[bytes, int, int]]:
    """``(type, payload start, box end)`` of the ISO-BMFF boxes in ``data[start:end]``; stops at damage."""
    found: list[tuple[bytes, int, int]] = []
    position = start
    while position + 8 <= end:
        size, kind = struct.unpack(">I4s", data[position:position + 8])
        header = 8
        if size == 1 and position + 16 <= end:
            size, header = struct.unpack(">Q", data[position + 8:position + 16])[0], 16
        elif size == 0:
            size = end - position
        if size < header or position + size > end:
            break
        found.append((kind, position + header, position + size))
        position += size
    return found


def top_level_boxes(handle: BinaryIO, size: int) -> Iterator[tuple[bytes, int, int, int]]:
    """``(kind, position, box size, header size)`` of each top-level box of an open mp4 of ``size`` bytes.

    Reads the boxes' headers only. Stops early at a box shorter than its header (a damaged file), so the last box's
    end falls short of ``size`` for a damaged or truncated file.
    """
    position = 0
    while position + 8 <= size:
        handle.seek(position)
        header = handle.read(16)
        box_size, kind = struct.unpack(">I4s", header[:8])
        header_size = 8
        if box_size == 1 and len(header) == 16:  # a 64-bit size follows the type
            box_size, header_size = struct.unpack(">Q", header[8:16])[0], 16
        elif box_size == 0:  # the box runs to the end of the file
            box_size = size - position
        if box_size < header_size:
            return
        yield kind, position, box_size, header_size
        position += box_size


def _unknown_boxes(path: str) -> list[str]:
    """Box paths (``moov/uuid``) outside what a clean mp4 holds; reads the file's headers, not ``mdat``."""
    unknown: list[str] = []
    with open(path, "rb") as handle:
        for kind, position, box_size, _ in top_level_boxes(handle, os.fstat(handle.fileno()).st_size):
            if kind not in _TOP_LEVEL_BOXES:
                unknown.append(kind.decode("latin-1"))
            elif kind == b"moov":
                handle.seek(position)
                moov = handle.read(box_size)
                for child, start, end in _boxes(moov, 8, len(moov)):
                    if child not in _MOOV_BOXES:
                        unknown.append("moov/" + child.decode("latin-1"))
                    elif child == b"udta":
                        unknown += [f"moov/udta/{item.decode('latin-1')}" for item, _, _ in _boxes(moov, start, end)
                                    if item not in _UDTA_BOXES and not item.startswith(b"\xa9")]
    return unknown


@contextmanager
def video_errors(path: str) -> Iterator[None]:
    """Turns FFmpeg's errors inside the block into a :class:`VideoError` naming ``path``."""
    try:
        yield
    except av.FFmpegError as error:
        raise VideoError(f"{path}: cannot be read as a video ({error})") from None


def unsafe_metadata(path: str) -> list[str]:
    """What in an mp4 could carry text a model must not see: non-structural tags, extra streams, unknown boxes.

    Descriptions such as ``container tag 'title'``; empty when the file is clean. Raises :class:`VideoError`
    when the file cannot be opened as a container.
    """
    found: list[str] = []
    with video_errors(path), av.open(path) as container:
        found += [f"container tag {key!r}" for key, value in container.metadata.items()
                  if not _allowed(_CONTAINER_TAGS, key, value)]
        for stream in container.streams:
            if stream.type not in ("video", "audio"):
                found.append(f"{stream.type} stream #{stream.index}")
            found += [f"stream #{stream.index} tag {key!r}" for key, value in stream.metadata.items()
                      if not _allowed(_STREAM_TAGS, key, value)]
    if _looks_like_mp4(path):
        found += [f"box {box}" for box in _unknown_boxes(path)]
    return found


def _looks_like_mp4(path: str) -> bool:
    with open(path, "rb") as handle:
        return handle.read(12)[4:8] in _TOP_LEVEL_BOXES


def _allowed(table: dict[str, str], key: str, value: str) -> bool:
    pattern = table.get(key)
    return pattern is not None and re.fullmatch(pattern, str(value)) is not None


def remux_without_metadata(source: str, target: str) -> None:
    """Write ``source``'s video and audio streams to ``target`` by stream copy, with no tags and nothing else."""
    with av.open(source) as inp, av.open(target, "w", format="mp4", options={"fflags": "+bitexact"}) as out:
        mapping = {}
        for stream in inp.streams:
            if stream.type in ("video", "audio"):
                copied = out.add_stream_from_template(stream)
                copied.metadata.clear()
                mapping[stream.index] = copied
        out.metadata.clear()
        for packet in inp.demux([inp.streams[index] for index in mapping]):
            if packet.dts is None:
                continue  # the demuxer's end-of-stream marker
            packet.stream = mapping[packet.stream.index]
            out.mux(packet)


def validate_video(path: str) -> None:
    """Demux the whole video and decode its first frame, so a file frames mode rejects fails here alike.

    Raises:
        VideoError: The file is not a video, has no video stream, has no frames, or no frame decodes.
    """
    with video_errors(path), av.open(path) as container:
        probe = probe_container(path, container)
        if next(decode_container(container, [0], probe, rewind=True), None) is None:
            raise VideoError(f"{path}: no frame could be decoded")


@dataclass(frozen=True)
class NativeMp4:
    """The native mp4 of one video, as requests carry it."""

    path: str
    num_bytes: int
    cached: bool
    stripped: tuple[str, ...] = ()
    """What :func:`unsafe_metadata` found and the remux removed (empty: the source's bytes unchanged)."""

    rebuilt_because: str | None = None


def native_mp4_path(media_dir: str, video_sha256: str) -> str:
    """Where the native mp4 of the video with this digest lives."""
    return os.path.join(media_dir, VIDEOS_FOLDER, video_sha256[:2], f"{video_sha256[:32]}.mp4")


def _record_path(target: str) -> str:
    return target[:-len(".mp4")] + ".json"


def _stamp_path(target: str) -> str:
    return target[:-len(".mp4")] + ".verified.json"


def _stamped_names(target: str) -> list[str]:
    """The files a native mp4's stamp covers: the mp4 and its record."""
    return [os.path.basename(target), os.path.basename(_record_path(target))]


def check_native_mp4(video_path: str, video_sha256: str, media_dir: str,
               full: bool) -> tuple[NativeMp4 | None, str | None]:
    """A usable existing native mp4, or None and why an existing one cannot be used (None: there is none)."""
    target = native_mp4_path(media_dir, video_sha256)
    if not os.path.lexists(target):
        return None, None
    problem = contained_directory_problem(media_dir, os.path.dirname(target))
    if problem is None:
        problem = _native_mp4_problem(video_path, video_sha256, target, full)
    if problem is not None:
        return None, f"the native mp4 {target} {problem}"
    remove_stale_temporaries(os.path.dirname(target))  # left by writers killed mid-write
    record = read_json_file(_record_path(target)) or {}
    stripped = tuple(str(item) for item in record.get("stripped", []))  # type: ignore[attr-defined]
    return NativeMp4(target, os.path.getsize(target), cached=True, stripped=stripped), None


def _native_mp4_problem(video_path: str, video_sha256: str, target: str, full: bool) -> str | None:
    info = os.lstat(target)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        return "is not a regular file (a link?)"
    source = os.stat(video_path)
    if (source.st_dev, source.st_ino) == (info.st_dev, info.st_ino):
        return "is the dataset's own file (a hard link made by an older version)"
    record = read_json_file(_record_path(target))
    if record is None or record.get("version") != NATIVE_MP4_VERSION:
        return "has no record of this version"
    if record.get("source_sha256") != video_sha256 or record.get("size") != info.st_size:
        return "does not match its record (another video, or another size)"
    folder = os.path.dirname(target)
    unchanged = stamps_match(folder, _stamped_names(target), _stamp_path(target))
    if full or not unchanged:
        if file_digest(target) != record.get("sha256"):
            return "has bytes that do not match its recorded digest"
        if not unchanged:
            write_stamps(folder, _stamped_names(target), _stamp_path(target))
    return None


def store_video(video_path: str, video_sha256: str, media_dir: str, full_check: bool = False) -> NativeMp4:
    """The native mp4 of one video under ``media_dir/videos``, from the cache or made now.

    Raises:
        VideoError: The source is not a playable video.
        MediaWriteError: The native mp4 cannot be written (the message says when the disk is full).
    """
    existing, problem = check_native_mp4(video_path, video_sha256, media_dir, full_check)
    if existing is not None:
        return existing
    validate_video(video_path)
    stripped = unsafe_metadata(video_path)
    target = native_mp4_path(media_dir, video_sha256)
    folder = os.path.dirname(target)
    try:
        if os.path.islink(folder) or (os.path.lexists(folder) and not os.path.isdir(folder)):
            os.unlink(folder)  # a planted link or file: replaced, its target never touched
        os.makedirs(folder, exist_ok=True)
        remove_stale_temporaries(folder)
        if os.path.islink(target) or (os.path.lexists(target) and not os.path.isfile(target)):
            os.unlink(target)
        if stripped:
            remux_atomically(video_path, target)
        else:
            copy_atomically(video_path, target)
        digest, size = file_digest(target), os.path.getsize(target)
        record = {"version": NATIVE_MP4_VERSION, "source_sha256": video_sha256, "sha256": digest, "size": size,
                  "stripped": stripped}
        write_atomically(_record_path(target), json.dumps(record, sort_keys=True).encode("utf-8"))
        write_stamps(folder, _stamped_names(target), _stamp_path(target))
    except OSError as error:
        raise write_error(video_path, folder, error) from None
    return NativeMp4(target, size, cached=False, stripped=tuple(stripped), rebuilt_because=problem)


def prepared_native_mp4(video_path: str, video_sha256: str, media_dir: str, full_check: bool) -> PreparedMedia:
    """:func:`store_video` as a request carries it."""
    return _prepared(store_video(video_path, video_sha256, media_dir, full_check), video_sha256)


def cached_native_mp4(video_path: str, video_sha256: str, media_dir: str,
                full_check: bool) -> tuple[PreparedMedia | None, str | None]:
    """:func:`check_native_mp4` as a request carries it."""
    mp4, problem = check_native_mp4(video_path, video_sha256, media_dir, full_check)
    return (_prepared(mp4, video_sha256) if mp4 is not None else None), problem


def _prepared(mp4: NativeMp4, video_sha256: str) -> PreparedMedia:
    return PreparedMedia(video_sha256, VIDEO_CONTENT_TYPE, (mp4.path,), (), mp4.num_bytes, mp4.cached,
                         mp4.rebuilt_because)


def remux_atomically(source: str, target: str) -> None:
    """:func:`remux_without_metadata` into a fresh temporary file, renamed over ``target``."""
    temporary = os.path.join(os.path.dirname(target), f".tmp-remux-{os.getpid()}-{os.urandom(6).hex()}.part")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # exclusive: never a planted name
        os.close(fd)
        try:
            remux_without_metadata(source, temporary)
        except av.FFmpegError as error:
            raise VideoError(f"{source}: cannot be remuxed without its metadata ({error})") from None
        os.chmod(temporary, file_mode())
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
