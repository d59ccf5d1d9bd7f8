"""Frames on colour-tagged video are the official ones: OpenCV 4's, compared pixel by pixel.

The authors' fork reads every frame with ``cv2.VideoCapture`` (OpenCV <= 4.11.0.86, HELM's own pin). Its FFmpeg
backend converts YUV as BT.601 whatever the colour tags say, and as full range only for the "yuvj" pixel formats;
OpenCV 4.13 and later honour the tags, so the tagged cases need an OpenCV of the official line. Videos are built
here with PyAV, on every tag a robot dataset's mp4 can carry; the comparison is exact (no tolerance): same
pixels at the official frame indices, hence byte-identical JPEGs.
"""

import dataclasses
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from PIL import Image

from helm_roboreward.protocol.frame_cache import (
    EXTRACTOR_VERSION,
    MANIFEST_FILE,
    extract_frames,
    frames_directory,
    frames_key,
)
from helm_roboreward.protocol.rules import FrameOptions, select_frame_indices
from helm_roboreward.protocol.safe_files import file_digest
from helm_roboreward.protocol.video_decoding import PreparedMedia, decode_frames, encode_jpeg, probe_video, to_image
from tests.helpers import videos

cv2 = pytest.importorskip("cv2", reason="opencv-python-headless (the `test` extra) is not installed: there is no "
                                        "official OpenCV frame to compare with")

OFFICIAL = FrameOptions()
BT709, BT601, LIMITED, FULL = 1, 6, 1, 2  # FFmpeg's codes for the tags
TAG_HONOURING_OPENCV = tuple(int(part) for part in cv2.__version__.split(".")[:2]) >= (4, 13)

CASES: dict[str, tuple[dict[str, Any], bool]] = {  # name -> (make_video arguments, whether tags change the pixels)
    "untagged": ({}, False),
    "bt601": ({"colour_tag": BT601, "colour_range": LIMITED}, False),
    "bt709": ({"colour_tag": BT709, "colour_range": LIMITED}, True),
    "full-range-yuvj420p": ({"pix_fmt": "yuvj420p"}, False),
    "full-range-tag": ({"colour_range": FULL}, False),  # libx264 marks it in the stream: decoded as yuvj420p
    "bt709-full-range": ({"colour_tag": BT709, "colour_range": FULL}, True),
    "bt709-yuv444p": ({"colour_tag": BT709, "pix_fmt": "yuv444p"}, True),
    # VP9 decodes to yuv420p tagged full range; OpenCV 4 still converts it as limited range.
    "vp9-full-range-tag": ({"codec": "libvpx-vp9", "colour_range": FULL}, True),
    "vp9-bt709": ({"codec": "libvpx-vp9", "colour_tag": BT709}, True),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    arguments, tag_matters = CASES[request.param]
    if tag_matters and TAG_HONOURING_OPENCV:
        pytest.skip(f"OpenCV {cv2.__version__} honours colour tags; the official frames came from OpenCV <= 4.12 "
                    "(install the `test` extra's opencv-python-headless<=4.11.0.86)")
    path = tmp_path_factory.mktemp("colour") / f"{request.param}.mp4"
    return request.param, videos.make_video(path, 25, fps=10, width=96, height=64, colour=True, **arguments)


def entry(media: PreparedMedia) -> str:
    """The cache entry folder holding the frames."""
    return os.path.dirname(media.paths[0])


def opencv_frames(path: Path) -> list[np.ndarray]:
    """Every frame as the official path reads it (RGB): ``cv2.VideoCapture``, frame after frame."""
    capture = cv2.VideoCapture(str(path), cv2.CAP_FFMPEG)
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(np.ascontiguousarray(frame[:, :, ::-1]))
    capture.release()
    return frames


def test_frames_equal_opencvs_pixel_by_pixel(case: tuple[str, Path]) -> None:
    name, path = case
    reference = opencv_frames(path)
    probe = probe_video(str(path))
    indices = select_frame_indices(probe.num_frames, probe.native_fps, OFFICIAL)
    assert len(reference) == probe.num_frames == 25 and indices == [0, 10, 20]
    for index, frame in decode_frames(str(path), indices, probe):
        ours = np.asarray(to_image(frame, OFFICIAL))
        difference = np.abs(ours.astype(int) - reference[index].astype(int)).max()
        assert difference == 0, f"{name}: frame {index} differs from OpenCV's by up to {difference} levels"


def test_stored_jpegs_are_opencvs_pixels_encoded(case: tuple[str, Path], tmp_path: Path) -> None:
    name, path = case
    reference = opencv_frames(path)
    frame_set = extract_frames(str(path), str(tmp_path), OFFICIAL)
    assert list(frame_set.frame_indices) == [0, 10, 20]
    for index, file in zip(frame_set.frame_indices, frame_set.paths, strict=True):
        expected = encode_jpeg(Image.fromarray(reference[index]), OFFICIAL.jpeg_quality)
        assert Path(file).read_bytes() == expected, f"{name}: stored frame {index}"


def test_frames_of_the_tag_honouring_extractor_are_never_served(tmp_path: Path) -> None:
    """Extractor 1 converted by the colour tags: its entries are under other keys, and one of its manifests found
    at a current key is distrusted and rebuilt."""
    path = videos.make_video(tmp_path / "bt709.mp4", 25, fps=10, width=96, height=64, colour=True,
                             colour_tag=BT709, colour_range=LIMITED)
    digest = file_digest(str(path))
    payload = {"video_sha256": digest, "extractor": "1", **dataclasses.asdict(OFFICIAL)}
    old_key = hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()[:32]
    assert EXTRACTOR_VERSION != "1" and frames_key(digest, OFFICIAL) != old_key
    cache = tmp_path / "frames"
    old_entry = Path(frames_directory(str(cache), old_key))
    old_entry.mkdir(parents=True)
    files: list[str] = []
    sizes: list[int] = []
    digests: list[str] = []
    with av.open(str(path)) as container:
        for number, frame in enumerate(container.decode(video=0)):
            if number in (0, 10, 20):  # the old conversion: PyAV's default, which follows the BT.709 tag
                data = encode_jpeg(frame.to_image(), OFFICIAL.jpeg_quality)
                name = f"{len(files):04d}.jpg"
                (old_entry / name).write_bytes(data)
                files.append(name)
                sizes.append(len(data))
                digests.append(hashlib.sha256(data).hexdigest())
    manifest = {"extractor": "1", "video_sha256": digest, "options": OFFICIAL.__dict__, "files": files,
                "frame_indices": [0, 10, 20], "sizes": sizes, "sha256": digests, "num_frames": 25,
                "probed_frames": 25, "native_fps": 10.0, "width": 96, "height": 64, "source_width": 96,
                "source_height": 64, "codec": "h264"}
    (old_entry / MANIFEST_FILE).write_text(json.dumps(manifest, sort_keys=True), encoding="utf-8")

    fresh = extract_frames(str(path), str(cache), OFFICIAL)
    assert fresh.cached is False and fresh.rebuilt_because is None and entry(fresh) != str(old_entry)
    stored = [Path(file).read_bytes() for file in fresh.paths]
    assert all(data != (old_entry / name).read_bytes() for data, name in zip(stored, files, strict=True))

    # The old entry copied to the current key (a cache merged by hand): refused for its extractor, rebuilt.
    shutil.rmtree(entry(fresh))
    shutil.copytree(old_entry, entry(fresh))
    rebuilt = extract_frames(str(path), str(cache), OFFICIAL)
    assert rebuilt.cached is False
    assert rebuilt.rebuilt_because is not None and "another extractor version" in rebuilt.rebuilt_because
    assert [Path(file).read_bytes() for file in rebuilt.paths] == stored
