"""H.264 encoding and decoding with PyAV, set up so that reruns give identical files.

libx264 runs single-threaded with a fixed GOP, no scene-cut detection and no macroblock-tree rate
control, and both the codec and the mp4 muxer get the ``bitexact`` flag (no version strings or
timestamps in the file). The macroblock tree is off because it was found to read uninitialised
memory: with it, identical frames gave different files depending on what the process had done before
(and on glibc's ``MALLOC_PERTURB_``). With the same FFmpeg/x264 build the bytes are identical;
across builds the decoded frames may differ slightly.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

FPS = 10
GOP = 20
CRF = 30
PRESET = "medium"


def encode(frames: Sequence[np.ndarray], path: Path) -> None:
    """Write RGB frames (height x width x 3, uint8) as an H.264 / yuv420p mp4 at :data:`FPS`."""
    height, width = frames[0].shape[:2]
    options = {
        "crf": str(CRF),
        "preset": PRESET,
        "threads": "1",
        "flags": "+bitexact",
        "x264-params": f"keyint={GOP}:min-keyint={GOP}:scenecut=0:mbtree=0",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), mode="w", format="mp4", options={"fflags": "+bitexact"}) as container:
        stream = container.add_stream("libx264", rate=FPS, options=options)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.codec_context.thread_count = 1
        for index, rgb in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
            frame.pts, frame.time_base = index, Fraction(1, FPS)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)


def decode(path: Path) -> list[np.ndarray]:
    """Every frame of a video as RGB arrays."""
    with av.open(str(path)) as container:
        return [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]
