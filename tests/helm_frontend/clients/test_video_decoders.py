"""TransformersQwen3VLClient's two video decoders give the model the same inputs.

torchcodec (inside transformers' processor: the official route, the default wherever it loads) and PyAV (the client
decodes; the checkpoint's processor still picks the frames from the metadata) must give identical
``pixel_values_videos``, ``video_grid_thw`` and prompt tokens, and fail on the same files. Compared on sample videos
and on built clips covering what differs between the two decoders' code: a 401-frame 512x288 clip (a RoboArena
video's size), B-frames, display rotations of +-90 degrees, a width that is not a multiple of 32 (torchcodec then
converts colours with a filter graph, not swscale), a variable frame rate, 29.97 fps, a 3-frame clip (below the
processor's 4-frame minimum), MPEG-4 Part 2, yuv444p, and an mp4 whose last announced frame does not decode.

Where torchcodec cannot load in this process (no FFmpeg shared libraries), the comparison runs in a subprocess in
which torchcodec loads the FFmpeg that PyAV's wheel bundles (links under the names torchcodec asks for, on
``LD_LIBRARY_PATH``): skipped only where neither loads. The PyAV route's own properties are checked everywhere.
"""

import json
import os
import re
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from helm.common.cache import BlackHoleCacheConfig
from transformers import AutoProcessor

from helm_roboreward.helm_frontend.clients.pyav_decoder import pyav_video, scan_like_torchcodec
from helm_roboreward.helm_frontend.clients.transformers_client import (
    PYAV,
    TORCHCODEC,
    TransformersQwen3VLClient,
    torchcodec_usable,
)
from tests.helpers.harness import REPO, SAMPLE
from tests.helpers.sample import rows_of
from tests.helpers.videos import frame_numbers, make_one_frame_too_many, make_video

ARENA_FRAMES, ARENA_FPS, ARENA_WIDTH, ARENA_HEIGHT = 401, 15, 512, 288
ARENA_KEPT = 53
"""int(401 / 15 * 2): transformers' Qwen3-VL rule (2 fps, 4..768 frames)."""


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("decoder-clips")
    return {
        "arena": make_video(folder / "arena.mp4", ARENA_FRAMES, fps=ARENA_FPS, width=ARENA_WIDTH,
                            height=ARENA_HEIGHT, gop=250),
        "b-frames": make_video(folder / "bframes.mp4", 50, width=128, height=96, bframes=3),
        "rotated-90": make_video(folder / "rot90.mp4", 30, width=128, height=64, rotation=90),
        "rotated-270": make_video(folder / "rot270.mp4", 30, width=128, height=64, rotation=-90),
        "width-100": make_video(folder / "odd.mp4", 30, width=100, height=60),
        "variable-rate": make_video(folder / "vfr.mp4", 30, timestamps_ms=[i * 100 + (i % 3) * 20 for i in range(30)]),
        "ntsc": make_video(folder / "ntsc.mp4", 60, fps=29.97),
        "three-frames": make_video(folder / "short.mp4", 3),
        "mpeg4": make_video(folder / "mpeg4.mp4", 40, codec="mpeg4"),
        "yuv444": make_video(folder / "yuv444.mp4", 20, pix_fmt="yuv444p"),
        "last-frame-missing": make_one_frame_too_many(folder / "one_too_many.mp4", 40),
    }


def sample_videos() -> dict[str, Path]:
    return {f"sample {subset}": SAMPLE / rows_of(subset)[0]["file_name"] for subset in ("sim_panda", "sim_kuka")}


def video_processor(checkpoint: Path) -> Any:
    return AutoProcessor.from_pretrained(checkpoint).video_processor


# ------------------------------------------------------------------------------------ both decoders


def compare_metadata(videos: list[str]) -> dict[str, list[Any]]:
    """The videos whose frame count, fps or duration differ between torchcodec and :func:`scan_like_torchcodec`."""
    from torchcodec.decoders import VideoDecoder

    differing: dict[str, list[Any]] = {}
    for video in videos:
        official = VideoDecoder(video, seek_mode="exact").metadata  # what transformers' path route reads
        probe, duration = scan_like_torchcodec(video)
        pairs = [(official.num_frames, probe.num_frames), (official.average_fps, probe.native_fps),
                 (official.duration_seconds, duration)]
        if any(first != second for first, second in pairs):  # exact: prompt timestamps are rounded from these
            differing[video] = pairs
    return differing


def compare_decoders(checkpoint: str, videos: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Per video: whether each input of the two routes is identical, or what each route failed with."""
    clients = {name: TransformersQwen3VLClient(cache_config=BlackHoleCacheConfig(), checkpoint=checkpoint,
                                               video_decoder=name) for name in (TORCHCODEC, PYAV)}
    report: dict[str, dict[str, Any]] = {}
    for label, video in videos.items():
        content = [{"type": "text", "text": "rate it"}, {"type": "video", "video": video}]
        messages = [{"role": "user", "content": content}]
        inputs: dict[str, Any] = {}
        for name, client in clients.items():
            try:
                inputs[name] = client.processor_inputs(messages)[0]
            except (RuntimeError, ValueError) as error:
                inputs[name] = f"{type(error).__name__}: {error}"
        if any(isinstance(value, str) for value in inputs.values()):
            report[label] = {"failed": {name: value if isinstance(value, str) else None
                                        for name, value in inputs.items()}}
            continue
        first, second = inputs[TORCHCODEC], inputs[PYAV]
        report[label] = {key: bool((first[key] == second[key]).all()) and first[key].shape == second[key].shape
                         for key in ("pixel_values_videos", "video_grid_thw", "input_ids")}
        report[label]["grid"] = first["video_grid_thw"].tolist()
    return report


def pyav_ffmpeg_environment(folder: Path) -> dict[str, str] | None:
    """An environment in which torchcodec loads the FFmpeg libraries bundled in PyAV's wheel (None: there are none).

    The wheel stores them as ``libavutil-<hash>.so.60`` and so on; torchcodec asks for ``libavutil.so.60``.
    """
    bundled = Path(av.__file__).resolve().parent.parent / "av.libs"
    if not bundled.is_dir():
        return None
    folder.mkdir(parents=True, exist_ok=True)
    for library in bundled.iterdir():
        match = re.fullmatch(r"(lib(?:av|sw)\w+)-[0-9a-f]+\.so\.(\d+)(\.[\d.]+)?", library.name)
        if match and not (folder / f"{match[1]}.so.{match[2]}").exists():
            (folder / f"{match[1]}.so.{match[2]}").symlink_to(library)
    paths = [str(folder), str(bundled), os.environ.get("LD_LIBRARY_PATH", "")]
    return {**os.environ, "LD_LIBRARY_PATH": os.pathsep.join(filter(None, paths)), "PYTHONWARNINGS": "ignore",
            "TOKENIZERS_PARALLELISM": "false"}


COMPARE_SCRIPT = """
import json, sys
from helm_roboreward.helm_frontend.clients.transformers_client import torchcodec_usable
if not torchcodec_usable():
    print(json.dumps(None))
    sys.exit(0)
from tests.helm_frontend.clients.test_video_decoders import compare_decoders, compare_metadata
print(json.dumps([compare_metadata(json.loads(sys.argv[3])), compare_decoders(sys.argv[1], json.loads(sys.argv[2]))]))
"""


@pytest.mark.slow
def test_both_decoders_give_the_model_the_same_inputs(tiny_qwen3vl: Path, clips: dict[str, Path],
                                                       tmp_path: Path) -> None:
    videos = {label: str(path) for label, path in {**sample_videos(), **clips}.items()}
    every_sample_video = sorted(str(path) for path in SAMPLE.glob("*/*.mp4"))
    if torchcodec_usable():
        where = "this process"
        metadata, report = compare_metadata(every_sample_video), compare_decoders(str(tiny_qwen3vl), videos)
    else:
        environment = pyav_ffmpeg_environment(tmp_path / "ffmpeg-from-pyav")
        if environment is None:
            pytest.skip("torchcodec cannot load FFmpeg here and PyAV's wheel bundles none: apt-get install ffmpeg")
        done = subprocess.run([sys.executable, "-c", COMPARE_SCRIPT, str(tiny_qwen3vl), json.dumps(videos),
                               json.dumps(every_sample_video)],
                              cwd=REPO, env=environment, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        outcome = json.loads(done.stdout.strip().splitlines()[-1])
        if outcome is None:
            pytest.skip("torchcodec cannot load FFmpeg here, not even PyAV's bundled one: apt-get install ffmpeg")
        metadata, report = outcome
        where = "a subprocess, torchcodec on PyAV's bundled FFmpeg"
    assert len(every_sample_video) > 50 and metadata == {}
    print(f"\ntorchcodec vs PyAV in {where} (frame count, fps and duration identical for all "
          f"{len(every_sample_video)} sample videos):")
    for label, outcome in report.items():
        print(f"  {label}: {outcome}")
    failing = report.pop("last-frame-missing")["failed"]
    assert all(failing.values()), failing  # torchcodec fails on it, and so does the PyAV route
    assert "frame 40 of the 41 frames" in failing[PYAV]
    if where == "this process":
        # torchcodec on the system's FFmpeg (Debian 12: 5.1), PyAV on its own (8.1): on a variable-frame-rate file
        # the two FFmpeg versions time the frames differently, so the processor may keep other frames (measured on
        # CI: other pixels and prompt timestamps, the same grid). RoboReward's videos are constant-rate (10 fps);
        # docs/bad_inputs.md says so. Constant-rate clips must match exactly.
        variable = report.pop("variable-rate")
        assert variable["video_grid_thw"] is True, variable
    same = {"pixel_values_videos": True, "video_grid_thw": True, "input_ids": True}
    assert {label: {key: outcome.get(key) for key in same} for label, outcome in report.items()} == \
        {label: same for label in report}
    assert report["arena"]["grid"] == [[(ARENA_KEPT + 1) // 2, 2, 4]]


# ---------------------------------------------------------------------------------- the PyAV route


def test_pyav_keeps_the_frames_the_processor_picks_from_torchcodec_style_metadata(tiny_qwen3vl: Path,
                                                                                 clips: dict[str, Path]) -> None:
    processor = video_processor(tiny_qwen3vl)
    frames, metadata = pyav_video(str(clips["ntsc"]), processor)
    assert metadata.total_num_frames == 60 and metadata.fps == pytest.approx(30000 / 1001)
    assert metadata.duration == pytest.approx(60 * 1001 / 30000) and metadata.video_backend == PYAV
    assert metadata.frames_indices == [int(i) for i in processor.sample_frames(metadata, fps=2)]
    assert metadata.frames_indices[0] == 0 and metadata.frames_indices[-1] == 59  # the last frame is kept
    assert frame_numbers(list(frames)) == metadata.frames_indices  # each array is the frame its index names
    short, short_metadata = pyav_video(str(clips["three-frames"]), processor)
    assert short_metadata.frames_indices == [0, 1, 2] and frame_numbers(list(short)) == [0, 1, 2]  # all it has
    upright, _ = pyav_video(str(clips["rotated-90"]), processor)
    assert upright.shape[1:] == (128, 64, 3)  # turned as the display matrix asks (torchcodec does too)


def test_a_401_frame_512x288_clip_holds_only_the_kept_frames(tiny_qwen3vl: Path, clips: dict[str, Path]) -> None:
    processor = video_processor(tiny_qwen3vl)
    tracemalloc.start()
    started = time.perf_counter()
    frames, metadata = pyav_video(str(clips["arena"]), processor)
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    all_frames = ARENA_FRAMES * ARENA_HEIGHT * ARENA_WIDTH * 3
    print(f"\n{ARENA_FRAMES} frames {ARENA_WIDTH}x{ARENA_HEIGHT} at {ARENA_FPS} fps: kept {len(frames)} "
          f"({frames.nbytes / 1e6:.1f} MB as uint8; all frames would be {all_frames / 1e6:.1f} MB), "
          f"peak traced {peak / 1e6:.1f} MB, {seconds:.2f} s")
    assert metadata.total_num_frames == ARENA_FRAMES and metadata.fps == pytest.approx(ARENA_FPS)
    assert frames.shape == (ARENA_KEPT, ARENA_HEIGHT, ARENA_WIDTH, 3) and frames.dtype == np.uint8
    assert peak < 2.5 * frames.nbytes < all_frames / 2


def test_a_last_announced_frame_that_does_not_decode_fails_the_request(tiny_qwen3vl: Path,
                                                                       clips: dict[str, Path]) -> None:
    """Its packets announce 41 frames, 40 decode: the processor keeps frame 40, as from torchcodec's count, and
    torchcodec fails on it; so does the PyAV route, naming the file and the frame (a non-fatal failed request)."""
    path = str(clips["last-frame-missing"])
    with pytest.raises(ValueError, match=re.escape(f"{path}: frame 40 of the 41 frames")):
        pyav_video(path, video_processor(tiny_qwen3vl))
