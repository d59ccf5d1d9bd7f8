"""A seeded synthetic corpus shaped like the RoboRewardBench test split, for the frame-extraction benchmark.

Every video is 10 fps h264 (libx264, yuv420p, x264's default preset, so with B-frames) written by
PyAV. Two kinds:

- ``oxe``: Open X-Embodiment-like clips, 4-10 s, 224x224, 640x480 or 640x368;
- ``arena``: RoboArena-like rollouts (~35% of the videos), 20-40 s, 640x480 or 640x368.

GOP sizes cycle from short (10) to x264's default (250). The pixels are a textured, slowly panning
scene (several octaves of smooth noise), a moving "arm" and textured objects, plus light sensor
noise, so that h264 bit rates and JPEG sizes are in a realistic range (flat colour would make both
meaningless). A separate pair of 640x480 GOP-250 videos, one 10x longer than the other, serves the
peak-memory measurement.

The corpus is cached in a folder with a ``corpus.json`` manifest and reused when the planned specs
match it and every file still has its recorded size.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import av
import cv2
import numpy as np

GENERATOR_VERSION = 2
"""Bump when the pixels or the encoder settings change: a cached corpus is then regenerated."""

MANIFEST_NAME = "corpus.json"
FPS = 10
OXE_SIZES: tuple[tuple[int, int], ...] = ((224, 224), (640, 480), (640, 368))
ARENA_SIZES: tuple[tuple[int, int], ...] = ((640, 480), (640, 368))
GOP_SIZES: tuple[int, ...] = (10, 30, 60, 125, 250)
ARENA_SHARE = 0.35
OXE, ARENA, MEMORY = "oxe", "arena", "memory"


@dataclass(frozen=True)
class VideoSpec:
    """One synthetic video: everything that determines its bytes."""

    name: str
    kind: str
    width: int
    height: int
    num_frames: int
    gop: int
    seed: int

    @property
    def file_name(self) -> str:
        return f"{self.name}.mp4"

    @property
    def seconds(self) -> float:
        return self.num_frames / FPS


def plan_corpus(num_videos: int, seed: int = 20260101) -> list[VideoSpec]:
    """The benchmark videos: ~35% arena-like, the rest OXE-like, all parameters drawn from ``seed``."""
    rng = random.Random(seed)
    num_arena = round(num_videos * ARENA_SHARE)
    specs: list[VideoSpec] = []
    for i in range(num_videos - num_arena):
        width, height = OXE_SIZES[i % len(OXE_SIZES)]
        frames = round(rng.uniform(4.0, 10.0) * FPS)
        specs.append(VideoSpec(f"oxe_{i:03d}", OXE, width, height, frames, GOP_SIZES[i % len(GOP_SIZES)],
                               rng.randrange(1 << 30)))
    for i in range(num_arena):
        width, height = ARENA_SIZES[i % len(ARENA_SIZES)]
        frames = round(rng.uniform(20.0, 40.0) * FPS)
        # Offset the GOP cycle so that both arena sizes meet every GOP size.
        gop = GOP_SIZES[(i + i // len(ARENA_SIZES)) % len(GOP_SIZES)]
        specs.append(VideoSpec(f"arena_{i:03d}", ARENA, width, height, frames, gop, rng.randrange(1 << 30)))
    return specs


def plan_memory_pair(seed: int = 7) -> tuple[VideoSpec, VideoSpec]:
    """A short and a 10x longer video with the same size and GOP, for the peak-memory check."""
    short = VideoSpec("memory_short", MEMORY, 640, 480, 6 * FPS, 250, seed)
    long = VideoSpec("memory_long", MEMORY, 640, 480, 60 * FPS, 250, seed)
    return short, long


class _Scene:
    """Deterministic frame source: panning textured background, a moving arm and objects, sensor noise."""

    def __init__(self, width: int, height: int, seed: int) -> None:
        self.width, self.height = width, height
        self.rng = np.random.default_rng(seed)
        self.margin = max(width, height) // 8
        self.background = self._texture(height + 2 * self.margin, width + 2 * self.margin)
        self.objects = [self._object() for _ in range(3)]
        self.phase = self.rng.uniform(0, 2 * np.pi, size=4)

    def _texture(self, height: int, width: int) -> np.ndarray:
        """Several octaves of smooth colour noise (a cluttered table / wall look)."""
        total = np.zeros((height, width, 3), dtype=np.float32)
        for cell, weight in ((64, 0.55), (16, 0.3), (4, 0.15)):
            small = self.rng.uniform(0, 255, size=(height // cell + 2, width // cell + 2, 3)).astype(np.float32)
            total += weight * cv2.resize(small, (width, height), interpolation=cv2.INTER_CUBIC)
        total = 0.45 * total + 0.55 * total.mean(axis=2, keepdims=True)  # real scenes are far from saturated
        tint = self.rng.uniform(0.7, 1.0, size=3).astype(np.float32)
        return np.clip(total * tint, 0, 255).astype(np.uint8)

    def _object(self) -> tuple[np.ndarray, np.ndarray, float]:
        size = max(12, min(self.width, self.height) // 6)
        patch = self._texture(size, size)
        mask = np.zeros((size, size), dtype=np.uint8)
        cv2.ellipse(mask, (size // 2, size // 2), (size // 2 - 1, size // 3), 0, 0, 360, 1, -1)
        return patch, mask.astype(bool), float(self.rng.uniform(0.02, 0.08))

    def frame(self, index: int) -> np.ndarray:
        w, h, m = self.width, self.height, self.margin
        dx = int(m + m * 0.8 * np.sin(index / 40 + self.phase[0]))
        dy = int(m + m * 0.8 * np.cos(index / 55 + self.phase[1]))
        image = self.background[dy : dy + h, dx : dx + w].copy()
        for number, (patch, mask, speed) in enumerate(self.objects):
            size = patch.shape[0]
            x = int((w - size) * (0.5 + 0.45 * np.sin(index * speed + number * 2.1)))
            y = int((h - size) * (0.5 + 0.45 * np.cos(index * speed * 0.7 + number)))
            image[y : y + size, x : x + size][mask] = patch[mask]
        base = (w // 2, h - 1)
        elbow = (int(w * (0.5 + 0.3 * np.sin(index / 17 + self.phase[2]))), int(h * 0.45))
        hand = (int(w * (0.5 + 0.35 * np.sin(index / 11 + self.phase[3]))), int(h * (0.35 + 0.2 * np.cos(index / 13))))
        thickness = max(3, w // 24)
        cv2.line(image, base, elbow, (70, 70, 80), thickness)
        cv2.line(image, elbow, hand, (200, 200, 210), max(2, thickness * 2 // 3))
        cv2.circle(image, hand, thickness, (40, 40, 40), -1)
        noise = self.rng.integers(0, 4, size=(h, w, 1), dtype=np.uint8)
        return cv2.add(image, np.broadcast_to(noise, image.shape).copy())


def generate_video(spec: VideoSpec, path: str) -> None:
    """Encode ``spec`` to ``path`` (through a temporary name, so an interrupted run leaves no partial file)."""
    scene = _Scene(spec.width, spec.height, spec.seed)
    temporary = f"{path}.part"
    with av.open(temporary, "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = spec.width, spec.height, "yuv420p"
        stream.codec_context.gop_size = spec.gop
        stream.codec_context.options = {"threads": "1"}  # byte-identical output on every machine
        for index in range(spec.num_frames):
            frame = av.VideoFrame.from_ndarray(scene.frame(index), format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    os.replace(temporary, path)


def _manifest_matches(directory: str, specs: Sequence[VideoSpec]) -> bool:
    try:
        with open(os.path.join(directory, MANIFEST_NAME), encoding="utf-8") as handle:
            manifest = json.load(handle)
        if manifest["version"] != GENERATOR_VERSION or manifest["specs"] != [asdict(s) for s in specs]:
            return False
        return all(os.path.getsize(os.path.join(directory, s.file_name)) == size
                   for s, size in zip(specs, manifest["sizes"], strict=True))
    except (OSError, ValueError, KeyError, TypeError):
        return False


def ensure_corpus(directory: str, specs: Sequence[VideoSpec]) -> tuple[list[str], bool]:
    """The paths of ``specs`` in ``directory``, generating the corpus unless a matching one is cached.

    Returns the paths (in ``specs`` order) and whether the cached corpus was reused.
    """
    os.makedirs(directory, exist_ok=True)
    paths = [os.path.join(directory, spec.file_name) for spec in specs]
    if _manifest_matches(directory, specs):
        return paths, True
    for spec, path in zip(specs, paths, strict=True):
        generate_video(spec, path)
    manifest = {"version": GENERATOR_VERSION, "specs": [asdict(s) for s in specs],
                "sizes": [os.path.getsize(p) for p in paths]}
    with open(os.path.join(directory, MANIFEST_NAME), "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=1)
    return paths, False
