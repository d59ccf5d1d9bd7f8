"""``helm_roboreward.protocol.video_decoding`` on videos built inside the tests with PyAV."""

import contextlib
import functools
import json
import os
import random
import shutil
import signal
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from PIL import Image

import helm_roboreward.protocol.frame_cache as extraction
from helm_roboreward.protocol import frame_cache as short_streams
from helm_roboreward.protocol import frame_cache as verification
from helm_roboreward.protocol.frame_cache import (
    MANIFEST_FILE,
    STAMP_FILE,
    extract_frames,
    frames_directory,
    frames_key,
    remove_unlisted_frames,
)
from helm_roboreward.protocol.rules import FrameOptions, select_frame_indices
from helm_roboreward.protocol.safe_files import file_digest
from helm_roboreward.protocol.video_decoding import PreparedMedia, VideoError, decode_frames, encode_jpeg, probe_video
from tests.helpers import videos

OFFICIAL = FrameOptions()


@pytest.fixture(scope="module")
def video_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("videos")


@pytest.fixture(scope="module")
def clip73(video_dir: Path) -> Path:
    """73 frames at 10 fps, GOP 30, libx264 with B-frames (the PROTOCOL example clip)."""
    return videos.make_video(video_dir / "clip73.mp4", 73, fps=10, gop=30)


def stored_numbers(frame_set: PreparedMedia) -> list[int]:
    """The source frame number drawn in each stored JPEG."""
    return [videos.frame_number_of(np.asarray(Image.open(path))) for path in frame_set.paths]


def entry(media: PreparedMedia) -> str:
    """The cache entry folder holding the frames."""
    return os.path.dirname(media.paths[0])


def key_of(media: PreparedMedia) -> str:
    """The cache key of the frames (the entry folder's name)."""
    return os.path.basename(entry(media))


def manifest_of(media: PreparedMedia) -> dict[str, Any]:
    """The entry's manifest."""
    manifest: dict[str, Any] = json.loads((Path(entry(media)) / MANIFEST_FILE).read_text(encoding="utf-8"))
    return manifest


def leftovers(root: Path) -> list[str]:
    """Temporary files anywhere under ``root``."""
    return [str(p) for p in root.rglob("*") if p.name.endswith(".part") or p.name.startswith(".tmp")]


# --------------------------------------------------------------------------- the helper itself


def test_helper_round_trip(clip73: Path) -> None:
    frames = videos.decode_all(clip73)
    assert videos.frame_numbers(frames) == list(range(73))
    assert videos.header_frame_count(clip73) == 73
    assert videos.count_video_packets(clip73) == 73
    assert videos.frame_number_of(videos.draw_frame(12345)) == 12345


# --------------------------------------------------------------------------- probe_video


def test_probe_basic(clip73: Path) -> None:
    probe = probe_video(str(clip73))
    assert probe.num_frames == 73
    assert probe.native_fps == 10.0
    assert (probe.width, probe.height) == (64, 48)
    assert probe.codec == "h264"
    assert probe.keyframes == (0, 30, 60)
    assert len(probe.timestamps) == 73
    assert list(probe.timestamps) == sorted(set(probe.timestamps)), "presentation order, distinct"


@pytest.mark.parametrize(
    ("fps", "expected"),
    [(5, 5.0), (10, 10.0), (15, 15.0), (30, 30.0), (29.97, 30000 / 1001)],
)
def test_probe_fps(video_dir: Path, fps: float, expected: float) -> None:
    path = videos.make_video(video_dir / f"fps-{fps}.mp4", 12, fps=fps)
    probe = probe_video(str(path))
    assert probe.native_fps == pytest.approx(expected, rel=1e-6)
    assert probe.num_frames == 12


@pytest.mark.parametrize(("num_frames", "gop", "keyframes"), [(20, 5, (0, 5, 10, 15)), (300, 250, (0, 250)),
                                                              (7, 30, (0,)), (1, 30, (0,))])
def test_probe_keyframes(video_dir: Path, num_frames: int, gop: int, keyframes: tuple) -> None:
    path = videos.make_video(video_dir / f"gop-{num_frames}-{gop}.mp4", num_frames, gop=gop)
    probe = probe_video(str(path))
    assert probe.num_frames == num_frames
    assert probe.keyframes == keyframes


def test_probe_other_codec(video_dir: Path) -> None:
    path = videos.make_video(video_dir / "mpeg4.mp4", 25, codec="mpeg4", gop=10)
    probe = probe_video(str(path))
    assert probe.codec == "mpeg4"
    assert probe.num_frames == 25
    assert probe.keyframes[0] == 0
    assert list(probe.keyframes) == sorted(set(probe.keyframes))  # the encoder adds scene-cut keyframes
    assert all(0 <= k < 25 for k in probe.keyframes)
    reference = videos.decode_all(path)
    decoded = _decoded(path, [0, 5, 13, 24])
    assert all(np.array_equal(decoded[i], reference[i]) for i in decoded) and len(decoded) == 4


# --------------------------------------------------------------------------- official frames end to end


@pytest.mark.parametrize("fps", [5, 10, 15, 30, 29.97])
@pytest.mark.parametrize("seconds", [0.1, 1.0, 2.5, 4.0])
def test_extract_official_indices(video_dir: Path, tmp_path: Path, fps: float, seconds: float) -> None:
    num_frames = max(1, int(round(seconds * fps)))
    path = videos.make_video(video_dir / f"official-{fps}-{num_frames}.mp4", num_frames, fps=fps, gop=12)
    frame_set = extract_frames(str(path), str(tmp_path / "cache"), OFFICIAL)
    stride = max(int(float(probe_video(str(path)).native_fps) // 1), 1)
    expected = list(range(0, num_frames, stride))
    assert list(frame_set.frame_indices) == expected
    assert list(frame_set.frame_indices) == select_frame_indices(num_frames, manifest_of(frame_set)["native_fps"])
    assert stored_numbers(frame_set) == expected
    assert manifest_of(frame_set)["num_frames"] == num_frames
    assert frame_set.cached is False
    assert (manifest_of(frame_set)["width"], manifest_of(frame_set)["height"]) == (64, 48)


def test_extract_protocol_example(clip73: Path, tmp_path: Path) -> None:
    frame_set = extract_frames(str(clip73), str(tmp_path), OFFICIAL)
    assert frame_set.frame_indices == (0, 10, 20, 30, 40, 50, 60, 70)
    assert stored_numbers(frame_set) == [0, 10, 20, 30, 40, 50, 60, 70]
    for path in frame_set.paths:
        with Image.open(path) as image:
            assert image.format == "JPEG"
            assert image.size == (64, 48)  # native resolution


def test_extract_options_end_to_end(clip73: Path, tmp_path: Path) -> None:
    last = extract_frames(str(clip73), str(tmp_path), FrameOptions(include_last_frame=True))
    assert stored_numbers(last) == [0, 10, 20, 30, 40, 50, 60, 70, 72]
    two_fps = extract_frames(str(clip73), str(tmp_path), FrameOptions(frames_per_second=2.0))
    assert stored_numbers(two_fps) == list(range(0, 73, 5))
    capped = extract_frames(str(clip73), str(tmp_path), FrameOptions(max_frames=3, include_last_frame=True))
    assert list(capped.frame_indices) == stored_numbers(capped)
    assert capped.frame_indices[0] == 0 and capped.frame_indices[-1] == 72 and len(capped.frame_indices) == 3


def test_stored_jpegs_are_the_sequentially_decoded_frames(clip73: Path, tmp_path: Path) -> None:
    """Byte-identical to JPEG-encoding the frames of a plain sequential decode."""
    frame_set = extract_frames(str(clip73), str(tmp_path), OFFICIAL)
    reference = videos.decode_all(clip73)
    for index, path in zip(frame_set.frame_indices, frame_set.paths, strict=True):
        expected = encode_jpeg(Image.fromarray(reference[index]), OFFICIAL.jpeg_quality)
        assert Path(path).read_bytes() == expected


# --------------------------------------------------------------------------- decode_frames vs sequential


@functools.lru_cache(maxsize=8)
def _reference(path: Path) -> Sequence[np.ndarray]:
    """A sequential decode, computed once per video (the arrays are never modified)."""
    return tuple(videos.decode_all(path))


def _decoded(path: Path, indices: Sequence[int]) -> dict[int, np.ndarray]:
    probe = probe_video(str(path))
    result: dict[int, np.ndarray] = {}
    for index, frame in decode_frames(str(path), indices, probe):
        assert index not in result, "each index once"
        result[index] = frame.to_ndarray(format="rgb24")
    return result


@pytest.fixture(scope="module", params=[(5, None), (250, None), (250, 0), (30, 3)], ids=lambda p: f"gop{p[0]}-bf{p[1]}")
def long_video(request: pytest.FixtureRequest, video_dir: Path) -> Path:
    gop, bframes = request.param
    return videos.make_video(video_dir / f"long-gop{gop}-bf{bframes}.mp4", 300, fps=30, gop=gop, bframes=bframes)


def _index_sets() -> list[list[int]]:
    rng = random.Random(1234)
    return [
        list(range(0, 300, 30)),  # official at 30 fps
        list(range(300)),  # everything
        [0],
        [299],
        [249, 250, 251],  # either side of a keyframe
        [0, 3, 4, 250, 251, 299],
        [1, 2, 3, 4, 5, 6, 7, 8, 9],
        [4, 5, 9, 10, 14, 15],
        [280, 17, 3, 3, 200],  # unsorted, with a duplicate
        sorted(rng.sample(range(300), 25)),
        sorted(rng.sample(range(300), 7)),
    ]


@pytest.mark.parametrize("indices", _index_sets(), ids=lambda s: f"{len(s)}idx")
def test_decode_frames_pixel_identical_to_sequential(long_video: Path, indices: list[int]) -> None:
    reference = _reference(long_video)
    assert len(reference) == 300
    decoded = _decoded(long_video, indices)
    assert sorted(decoded) == sorted(set(indices))
    for index, array in decoded.items():
        assert np.array_equal(array, reference[index]), f"frame {index} differs from sequential decoding"
        assert videos.frame_number_of(array) == index


def test_decode_frames_yields_in_order(long_video: Path) -> None:
    probe = probe_video(str(long_video))
    order = [index for index, _ in decode_frames(str(long_video), [299, 0, 150, 7], probe)]
    assert order == [0, 7, 150, 299]


def test_decode_frames_ignores_indices_past_the_end(long_video: Path) -> None:
    decoded = _decoded(long_video, [298, 299, 300, 5000])
    assert sorted(decoded) == [298, 299]


# --------------------------------------------------------------------------- variable frame rate, misplaced seeks

VFR_TIMESTAMPS_MS = {
    "10-then-30fps": [i * 100 for i in range(30)] + [3000 + i * 33 for i in range(60)],
    "jittered-15fps": [i * 1000 // 15 + (7 if i % 3 == 1 else 0) for i in range(90)],
    "dropped-frames": [i * 100 for i in range(80) if i % 7 != 3],
}


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fail instead of hanging (decoding loops are Python code, so the alarm interrupts them)."""
    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"still decoding after {seconds} s: the extraction loop does not end")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("bframes", [0, 2, 3])
@pytest.mark.parametrize("pattern", sorted(VFR_TIMESTAMPS_MS))
def test_variable_frame_rate_with_b_frames(video_dir: Path, tmp_path: Path, pattern: str, bframes: int) -> None:
    """Seeks in such files can land on an earlier keyframe (this once looped forever): frames stay exact."""
    stamps = VFR_TIMESTAMPS_MS[pattern]
    path = videos.make_video(video_dir / f"vfr-{pattern}-bf{bframes}.mp4", len(stamps), fps=30, gop=30,
                             bframes=bframes, timestamps_ms=stamps)
    reference = videos.decode_all(path)
    for options in (OFFICIAL, FrameOptions(frames_per_second=3, include_last_frame=True)):
        with deadline(60):
            frame_set = extract_frames(str(path), str(tmp_path / "cache"), options)
        probe = probe_video(str(path))
        assert list(frame_set.frame_indices) == select_frame_indices(len(reference), probe.native_fps, options)
        assert stored_numbers(frame_set) == list(frame_set.frame_indices)
        for index, file in zip(frame_set.frame_indices, frame_set.paths, strict=True):
            expected = encode_jpeg(Image.fromarray(reference[index]), options.jpeg_quality)
            assert Path(file).read_bytes() == expected, f"frame {index}"


class MisplacedSeeks:
    """An open container whose seeks land one keyframe before or after the one asked for.

    Stands in for a demuxer that misplaces seeks, deterministically; a seek to 0 (a restart) is honoured.
    """

    def __init__(self, container: "av.container.InputContainer", keyframe_stamps: Sequence[int], shift: int) -> None:
        self.container, self.keyframe_stamps, self.shift = container, list(keyframe_stamps), shift
        self.streams = container.streams
        self.seeks: list[int] = []

    def demux(self, *args: object, **kwargs: object) -> Iterator[av.Packet]:
        return self.container.demux(*args, **kwargs)

    def seek(self, offset: int, **kwargs: Any) -> None:
        self.seeks.append(offset)
        if offset in self.keyframe_stamps:
            position = self.keyframe_stamps.index(offset) + self.shift
            offset = self.keyframe_stamps[max(0, min(position, len(self.keyframe_stamps) - 1))]
        self.container.seek(offset, **kwargs)


@pytest.mark.parametrize("bframes", [0, None], ids=["no-b-frames", "b-frames"])
@pytest.mark.parametrize("shift", [-1, 1], ids=["lands-earlier", "lands-later"])
def test_a_misplaced_seek_still_yields_the_exact_frames(video_dir: Path, shift: int, bframes: int | None) -> None:
    path = videos.make_video(video_dir / f"seeks-bf{bframes}.mp4", 120, fps=10, gop=20, bframes=bframes)
    probe = probe_video(str(path))
    reference = _reference(path)
    indices = [0, probe.keyframes[2] + 1, probe.keyframes[4], probe.num_frames - 1]
    with av.open(str(path)) as container, deadline(60):
        wrapper = MisplacedSeeks(container, [probe.timestamps[k] for k in probe.keyframes], shift)
        got = {index: frame.to_ndarray(format="rgb24")
               for index, frame in extraction.decode_container(wrapper, indices, probe, rewind=False)}  # type: ignore[arg-type]
    assert sorted(got) == sorted(set(indices))
    for index, array in got.items():
        assert np.array_equal(array, reference[index]), f"frame {index} differs from sequential decoding"
    assert len(wrapper.seeks) <= 3, wrapper.seeks  # after a miss it decodes on instead of seeking again


# --------------------------------------------------------------------------- header reports one frame too many


def _one_too_many_cases() -> list:
    cases = []
    for tail in ("eos", "garbage"):
        for decodable in (30, 31):
            for include_last in (False, True):
                cases.append(pytest.param(tail, decodable, include_last, id=f"{tail}-{decodable}-last{include_last}"))
    return cases


@pytest.mark.parametrize(("tail", "decodable", "include_last"), _one_too_many_cases())
def test_header_one_frame_too_many(
    video_dir: Path, tmp_path: Path, tail: str, decodable: int, include_last: bool
) -> None:
    path = videos.make_one_frame_too_many(video_dir / f"too-many-{tail}-{decodable}.mp4", decodable, tail=tail)
    assert probe_video(str(path)).num_frames == decodable + 1  # the demux pass cannot know
    sequential = videos.decode_all(path)
    assert len(sequential) == decodable
    options = FrameOptions(include_last_frame=include_last)
    frame_set = extract_frames(str(path), str(tmp_path), options)
    # what a sequential read of the decodable frames gives under the same rule
    expected = select_frame_indices(len(sequential), 10.0, options)
    assert list(frame_set.frame_indices) == expected
    assert stored_numbers(frame_set) == expected
    if include_last:
        assert frame_set.frame_indices[-1] == decodable - 1  # the last decodable frame
        assert manifest_of(frame_set)["num_frames"] == decodable
    # the stored frames are the sequentially decoded ones, and the folder holds nothing else
    for index, file in zip(frame_set.frame_indices, frame_set.paths, strict=True):
        assert Path(file).read_bytes() == encode_jpeg(Image.fromarray(sequential[index]), options.jpeg_quality)
    assert sorted(p.name for p in Path(entry(frame_set)).glob("*.jpg")) == sorted(
        Path(f).name for f in frame_set.paths)


# --------------------------------------------------------------------------- cache


def test_cache_hit_does_no_decoding(clip73: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = extract_frames(str(clip73), str(tmp_path), OFFICIAL)
    assert first.cached is False

    def boom(*args: object, **kwargs: object) -> Iterator:
        raise AssertionError("a cache hit must not touch the video")

    monkeypatch.setattr(extraction, "decode_container", boom)
    monkeypatch.setattr(extraction, "probe_container", boom)
    monkeypatch.setattr(verification, "probe_video", boom)
    monkeypatch.setattr(short_streams, "count_decodable_frames", boom)
    monkeypatch.setattr(av, "open", boom)
    second = extract_frames(str(clip73), str(tmp_path), OFFICIAL)
    assert second.cached is True
    assert key_of(second) == key_of(first)
    assert second.paths == first.paths
    assert second.frame_indices == first.frame_indices
    assert manifest_of(second)["num_frames"] == manifest_of(first)["num_frames"]
    assert second.num_bytes == first.num_bytes
    # with a known digest the file is not even hashed
    monkeypatch.setattr(extraction, "file_digest", boom)
    third = extract_frames(str(clip73), str(tmp_path), OFFICIAL, video_sha256=_sha256(clip73))
    assert third.cached is True and key_of(third) == key_of(first)


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_damaged_cache_is_rebuilt(clip73: Path, tmp_path: Path) -> None:
    first = extract_frames(str(clip73), str(tmp_path), OFFICIAL)
    Path(first.paths[2]).write_bytes(b"truncated")
    second = extract_frames(str(clip73), str(tmp_path), OFFICIAL)
    assert second.cached is False
    assert stored_numbers(second) == list(first.frame_indices)


def test_keys(clip73: Path, video_dir: Path, tmp_path: Path) -> None:
    options = [
        OFFICIAL,
        FrameOptions(include_last_frame=True),
        FrameOptions(max_frames=4),
        FrameOptions(max_side=32),
        FrameOptions(frames_per_second=2.0),
        FrameOptions(jpeg_quality=80),
    ]
    sets = [extract_frames(str(clip73), str(tmp_path), option) for option in options]
    assert len({key_of(s) for s in sets}) == len(options)
    assert len({entry(s) for s in sets}) == len(options)
    # identical bytes at another path: same key, served from the cache
    copy = tmp_path / "elsewhere" / "renamed_attempt_0_score_3.mp4"
    copy.parent.mkdir()
    shutil.copyfile(clip73, copy)
    same = extract_frames(str(copy), str(tmp_path), OFFICIAL)
    assert key_of(same) == key_of(sets[0])
    assert same.cached is True
    # different bytes: different key
    other = videos.make_video(video_dir / "clip73-other.mp4", 73, first_number=1)
    assert key_of(extract_frames(str(other), str(tmp_path), OFFICIAL)) != key_of(sets[0])
    # the key is a pure function of the bytes' digest and the options; it reveals no file name
    digest = file_digest(str(clip73))
    assert digest == _sha256(clip73)
    assert key_of(sets[0]) == frames_key(digest, OFFICIAL)
    assert "score" not in entry(sets[0]) and "clip73" not in entry(sets[0])


def test_jpegs_and_manifest(clip73: Path, tmp_path: Path) -> None:
    frame_set = extract_frames(str(clip73), str(tmp_path), OFFICIAL)
    directory = Path(entry(frame_set))
    assert directory == Path(frames_directory(str(tmp_path), key_of(frame_set)))
    assert directory.parent.name == key_of(frame_set)[:2]
    manifest = json.loads((directory / MANIFEST_FILE).read_text(encoding="utf-8"))
    assert [str(directory / name) for name in manifest["files"]] == list(frame_set.paths)
    assert manifest["frame_indices"] == list(frame_set.frame_indices)
    assert manifest["sizes"] == [os.path.getsize(path) for path in frame_set.paths]
    assert frame_set.num_bytes == sum(manifest["sizes"])
    assert manifest["num_frames"] == 73
    assert manifest["native_fps"] == 10.0
    for path in frame_set.paths:
        assert os.path.isabs(path) and os.path.isfile(path)
        with Image.open(path) as image:
            assert image.format == "JPEG"
    assert sorted(p.name for p in directory.iterdir()) == sorted([*manifest["files"], MANIFEST_FILE, STAMP_FILE])
    assert manifest["sha256"] == [file_digest(path) for path in frame_set.paths]
    assert manifest["video_sha256"] == file_digest(str(clip73)) and manifest["probed_frames"] == 73
    assert leftovers(tmp_path) == []


def test_identical_inputs_identical_bytes(clip73: Path, tmp_path: Path) -> None:
    first = extract_frames(str(clip73), str(tmp_path / "a"), OFFICIAL)
    second = extract_frames(str(clip73), str(tmp_path / "b"), OFFICIAL)
    assert key_of(first) == key_of(second)
    for a, b in zip(first.paths, second.paths, strict=True):
        assert Path(a).read_bytes() == Path(b).read_bytes()


# --------------------------------------------------------------------------- atomicity


def test_encode_failure_midway_leaves_no_manifest(
    clip73: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_encode = extraction.encode_jpeg
    calls = {"n": 0}

    def flaky_encode(image: Image.Image, quality: int) -> bytes:
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("simulated crash while encoding")
        return real_encode(image, quality)

    monkeypatch.setattr(extraction, "encode_jpeg", flaky_encode)
    with pytest.raises(RuntimeError, match="simulated crash"):
        extract_frames(str(clip73), str(tmp_path), OFFICIAL)
    assert list(tmp_path.rglob(MANIFEST_FILE)) == []
    assert leftovers(tmp_path) == []
    monkeypatch.setattr(extraction, "encode_jpeg", real_encode)
    frame_set = extract_frames(str(clip73), str(tmp_path), OFFICIAL)
    assert frame_set.cached is False
    assert stored_numbers(frame_set) == [0, 10, 20, 30, 40, 50, 60, 70]
    assert extract_frames(str(clip73), str(tmp_path), OFFICIAL).cached is True


@pytest.mark.parametrize("fail_on", ["frame", "manifest"])
def test_write_failure_midway_leaves_no_partial_files(
    clip73: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_on: str
) -> None:
    real_replace = os.replace
    calls = {"n": 0}

    def flaky_replace(source: str, target: str) -> None:
        calls["n"] += 1
        if (fail_on == "frame" and calls["n"] == 4) or (fail_on == "manifest" and str(target).endswith(MANIFEST_FILE)):
            raise OSError(28, "No space left on device")
        real_replace(source, target)

    monkeypatch.setattr(extraction.os, "replace", flaky_replace)
    with pytest.raises(VideoError) as raised:
        extract_frames(str(clip73), str(tmp_path), OFFICIAL)
    assert str(clip73) in str(raised.value)
    assert list(tmp_path.rglob(MANIFEST_FILE)) == []
    assert leftovers(tmp_path) == []
    monkeypatch.setattr(extraction.os, "replace", real_replace)
    frame_set = extract_frames(str(clip73), str(tmp_path), OFFICIAL)
    assert frame_set.cached is False
    assert stored_numbers(frame_set) == [0, 10, 20, 30, 40, 50, 60, 70]
    assert leftovers(tmp_path) == []


def test_write_atomically_removes_temporary_on_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object) -> None:
        raise OSError(5, "I/O error")

    monkeypatch.setattr(extraction.os, "replace", fail)
    with pytest.raises(OSError):
        extraction.write_atomically(str(tmp_path / "x.jpg"), b"data")
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- broken files


BROKEN = {
    "truncated": lambda path: videos.make_truncated(path),
    "zero-byte": videos.make_zero_byte,
    "text": videos.make_text_file,
    "audio-only-aac": lambda path: videos.make_audio_only(path, codec="aac"),
    "audio-only-pcm": lambda path: videos.make_audio_only(path.with_suffix(".mov"), codec="pcm_s16le"),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_broken_files_raise_video_error_naming_the_path(tmp_path: Path, kind: str) -> None:
    path = Path(BROKEN[kind](tmp_path / f"{kind}.mp4"))
    assert path.exists()
    with pytest.raises(VideoError) as probed:
        probe_video(str(path))
    assert str(path) in str(probed.value)
    cache = tmp_path / "cache"
    with pytest.raises(VideoError) as extracted:
        extract_frames(str(path), str(cache), OFFICIAL)
    assert str(path) in str(extracted.value)
    if cache.exists():
        assert list(cache.rglob(MANIFEST_FILE)) == []
    assert leftovers(tmp_path) == []


def test_audio_only_helper_really_has_no_video(tmp_path: Path) -> None:
    path = videos.make_audio_only(tmp_path / "a.mp4")
    with av.open(str(path)) as container:
        assert len(container.streams.audio) == 1
        assert len(container.streams.video) == 0


def test_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises((VideoError, OSError)):
        extract_frames(str(tmp_path / "nope.mp4"), str(tmp_path / "cache"), OFFICIAL)


# --------------------------------------------------------------------------- resizing and rotation


@pytest.mark.parametrize(("max_side", "size"), [(32, (32, 24)), (48, (48, 36)), (64, (64, 48)), (1000, (64, 48))])
def test_max_side(clip73: Path, tmp_path: Path, max_side: int, size: tuple) -> None:
    frame_set = extract_frames(str(clip73), str(tmp_path), FrameOptions(max_side=max_side))
    for path in frame_set.paths:
        with Image.open(path) as image:
            assert image.size == size
    assert stored_numbers(frame_set) == [0, 10, 20, 30, 40, 50, 60, 70]


def test_max_side_portrait(video_dir: Path, tmp_path: Path) -> None:
    path = videos.make_video(video_dir / "portrait.mp4", 12, width=48, height=96)
    frame_set = extract_frames(str(path), str(tmp_path), FrameOptions(max_side=32))
    with Image.open(frame_set.paths[0]) as image:
        assert image.size == (16, 32)


def test_pyav_can_write_a_display_rotation() -> None:
    assert hasattr(av.video.stream.VideoStream, "set_display_rotation")


@pytest.mark.parametrize("rotation", [90, -90, 180])
def test_rotation_metadata_is_applied(video_dir: Path, tmp_path: Path, rotation: int) -> None:
    path = videos.make_video(video_dir / f"rot{rotation}.mp4", 21, rotation=rotation, first_number=7)
    with av.open(str(path)) as container:
        assert next(container.decode(video=0)).rotation % 360 == rotation % 360
    frame_set = extract_frames(str(path), str(tmp_path), OFFICIAL)
    expected_size = (48, 64) if rotation % 180 else (64, 48)
    turns = (rotation // 90) % 4  # FFmpeg's display matrix angle is counter-clockwise, like np.rot90
    for index, file in zip(frame_set.frame_indices, frame_set.paths, strict=True):
        image = np.asarray(Image.open(file))
        assert (image.shape[1], image.shape[0]) == expected_size
        upright_as_coded = np.rot90(image, -turns)  # undo the display rotation
        assert videos.frame_number_of(upright_as_coded) == 7 + index


def test_rotation_with_max_side(video_dir: Path, tmp_path: Path) -> None:
    path = videos.make_video(video_dir / "rot90-resize.mp4", 5, rotation=90)
    frame_set = extract_frames(str(path), str(tmp_path), FrameOptions(max_side=32))
    with Image.open(frame_set.paths[0]) as image:
        assert image.size == (24, 32)


@pytest.mark.parametrize("pix_fmt", ["yuv444p", "yuvj420p", "yuv420p10le"])
def test_other_pixel_formats(video_dir: Path, tmp_path: Path, pix_fmt: str) -> None:
    path = videos.make_video(video_dir / f"pix-{pix_fmt}.mp4", 25, pix_fmt=pix_fmt)
    frame_set = extract_frames(str(path), str(tmp_path), OFFICIAL)
    assert stored_numbers(frame_set) == [0, 10, 20]
    reference = videos.decode_all(path)
    for index, file in zip(frame_set.frame_indices, frame_set.paths, strict=True):
        assert Path(file).read_bytes() == encode_jpeg(Image.fromarray(reference[index]), OFFICIAL.jpeg_quality)


def test_frames_a_final_selection_does_not_list_are_removed(tmp_path: Path) -> None:
    """A first pass over a stream that ended early may have written more frames than the final selection."""
    for name in ("0000.jpg", "0001.jpg", "0002.jpg", "0003.jpg", MANIFEST_FILE, ".tmp-x.part", "notes.jpg"):
        (tmp_path / name).write_bytes(b"x")
    remove_unlisted_frames(str(tmp_path), ["0000.jpg", "0001.jpg"])
    assert sorted(p.name for p in tmp_path.iterdir()) == [".tmp-x.part", "0000.jpg", "0001.jpg", MANIFEST_FILE,
                                                          "notes.jpg"]
