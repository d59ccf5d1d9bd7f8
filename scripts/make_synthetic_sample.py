"""Generate the bundled synthetic RoboRewardBench sample (a placeholder, not robot data).

The sample copies the layout and naming of the real dataset's ``test`` split::

    <out>/test/metadata.jsonl            one JSON row per video
    <out>/test/sim_arena/<uuid>_<slot>_<left|right>.mp4
    <out>/test/sim_panda/<episode>.mp4   (and clips / relabels, see below)
    <out>/test/sim_kuka/...
    <out>/README.md

* ``sim_arena`` holds natural rollouts named like RoboArena: two camera views per episode
  that share the task, the outcome and the reward.
* ``sim_panda`` and ``sim_kuka`` look like Open X-Embodiment subsets: successful originals
  (``<episode>.mp4``, reward 5), temporal clips of those successes
  (``<episode>_attempt_<n>_score_<k>.mp4``, reward ``k``) and counterfactual relabels
  (``<episode>_relabel_<n>.mp4``: a byte-identical copy of an original paired with another task).

Every video is a top-down drawing of a gripper carrying a coloured block toward a coloured
bowl at 10 fps. The reward follows the state in the last frame: block released in the bowl = 5,
just outside the bowl or still held = 4, halfway = 3, barely moved = 2, untouched = 1.
Everything derives from ``--seed``: two runs write the same metadata and the same frames.

Usage: ``python scripts/make_synthetic_sample.py [--out DIR] [--seed N]``
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

Vec = tuple[float, float]
RGB = tuple[int, int, int]

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "helm_roboreward" / "sample"
SPLIT = "test"
METADATA_FILE = "metadata.jsonl"

FPS = 10
GOP = 30
CRF = 28
MIN_CLIP_FRAMES = 15

BLOCK_HALF = 0.045
"""Half the side of a block, in table units (the table is the unit square)."""
BOWL_RADIUS = 0.08
FIELD_MARGIN = 0.1
"""Object centres stay this far inside the table edges."""

ARENA_NAMESPACE = uuid.uuid5(
    uuid.NAMESPACE_URL, "helm-roboreward/synthetic-sample/sim_arena"
)

BLOCK_COLORS: dict[str, RGB] = {
    "red": (205, 45, 40),
    "green": (50, 165, 70),
    "yellow": (235, 205, 45),
    "purple": (135, 65, 175),
    "orange": (240, 135, 35),
}
BOWL_COLORS: dict[str, RGB] = {
    "blue": (45, 95, 205),
    "pink": (230, 125, 175),
    "white": (240, 240, 240),
    "teal": (30, 150, 150),
}
TASK_TEMPLATES: tuple[str, ...] = (
    "put the {block} block in the {bowl} bowl",
    "place the {block} block into the {bowl} bowl",
    "move the {block} block into the {bowl} bowl",
    "pick up the {block} block and drop it in the {bowl} bowl",
)

ARENA_OUTCOMES: tuple[str, ...] = (
    "success",
    "success",
    "near_released",
    "near_held",
    "half",
    "barely",
    "untouched",
)
"""Outcomes of the natural ``sim_arena`` episodes (rewards 5, 5, 4, 4, 3, 2, 1)."""

OUTCOME_LABELS: dict[str, int] = {
    "success": 5,
    "near_released": 4,
    "near_held": 4,
    "half": 3,
    "barely": 2,
    "untouched": 1,
}
"""The reward each outcome must end with (checked against the final frame's state)."""

RELEASE_PROGRESS: dict[str, float] = {
    "success": 1.0,
    "near_held": 1.0,
    "half": 0.5,
    "barely": 0.12,
}
"""Where the block is released, as a fraction of the way from its start to the bowl."""


@dataclass(frozen=True)
class View:
    """A camera: where the table corners (0,0), (1,0), (1,1), (0,1) land, as fractions of the frame."""

    name: str
    quad: tuple[Vec, Vec, Vec, Vec]
    wall: RGB


@dataclass(frozen=True)
class OriginalPlan:
    """One successful original of an Open X-like subset and the rows derived from it."""

    alt_fraction: float | None
    """If set, a second bowl is placed so that the original ends this fraction of the way to it."""
    clip_scores: tuple[int, ...]
    relabels: tuple[str, ...]
    """Counterfactual tasks: ``alt_bowl`` (carry to the second bowl) or ``distractor`` (other block)."""


@dataclass(frozen=True)
class SubsetSpec:
    id: str
    width: int
    height: int
    views: tuple[View, ...]
    plans: tuple[OriginalPlan, ...] = ()
    """Empty for a natural subset (RoboArena-like), else one entry per original."""


SUBSETS: tuple[SubsetSpec, ...] = (
    SubsetSpec(
        "sim_arena",
        224,
        224,
        (
            View(
                "left",
                ((0.35, 0.21), (0.93, 0.41), (0.69, 1.0), (0.04, 0.72)),
                (72, 78, 90),
            ),
            View(
                "right",
                ((0.07, 0.41), (0.65, 0.21), (0.96, 0.72), (0.31, 1.0)),
                (88, 80, 74),
            ),
        ),
    ),
    SubsetSpec(
        "sim_panda",
        160,
        120,
        (
            View(
                "front",
                ((0.14, 0.10), (0.86, 0.10), (0.98, 0.97), (0.02, 0.97)),
                (60, 66, 76),
            ),
        ),
        (
            OriginalPlan(0.75, (1, 3), ("alt_bowl",)),
            OriginalPlan(0.5, (2, 4), ("alt_bowl", "distractor")),
            OriginalPlan(0.25, (3,), ("alt_bowl",)),
            OriginalPlan(None, (4,), ("distractor",)),
        ),
    ),
    SubsetSpec(
        "sim_kuka",
        128,
        128,
        (
            View(
                "top",
                ((0.08, 0.04), (0.94, 0.08), (0.92, 0.96), (0.04, 0.92)),
                (96, 96, 100),
            ),
        ),
        (
            OriginalPlan(0.75, (2, 4), ("alt_bowl",)),
            OriginalPlan(0.5, (1,), ("alt_bowl",)),
            OriginalPlan(0.25, (3,), ("alt_bowl",)),
            OriginalPlan(None, (4,), ("distractor",)),
        ),
    ),
)


@dataclass(frozen=True)
class Scene:
    block: Vec
    block_color: str
    bowl: Vec
    bowl_color: str
    distractor: Vec
    distractor_color: str
    home: Vec
    rest: Vec
    table: RGB
    template: str
    alt_bowl: Vec | None = None
    alt_bowl_color: str | None = None


@dataclass(frozen=True)
class State:
    gripper: Vec
    opening: float
    block: Vec
    held: bool
    touched: bool


@dataclass(frozen=True)
class Segment:
    """Move the gripper to ``target`` over ``frames`` frames, carrying the block if ``holding``."""

    frames: int
    target: Vec
    opening: float
    holding: bool


@dataclass(frozen=True)
class Raster:
    """Table coordinates of every pixel centre of one camera, for drawing shapes as masks."""

    wx: np.ndarray
    wy: np.ndarray
    ppu: float
    """Pixels per table unit (approximate), for anti-aliased edges."""


@dataclass(frozen=True)
class Row:
    file_name: str
    task: str
    reward: int
    check: str
    kind: str

    def to_json(self) -> str:
        record = {
            "file_name": self.file_name,
            "task": self.task,
            "reward": self.reward,
            "gpt5_mini_check": self.check,
        }
        return json.dumps(record, ensure_ascii=False)


# --------------------------------------------------------------------------- geometry


def lerp(a: Vec, b: Vec, t: float) -> Vec:
    return (a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t)


def dist(a: Vec, b: Vec) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])


def smooth(t: float) -> float:
    return t * t * (3.0 - 2.0 * t)


def in_field(p: Vec, margin: float = FIELD_MARGIN) -> bool:
    return margin <= p[0] <= 1.0 - margin and margin <= p[1] <= 1.0 - margin


def segment_distance(p: Vec, a: Vec, b: Vec) -> float:
    length2 = (b[0] - a[0]) ** 2 + (b[1] - a[1]) ** 2
    t = ((p[0] - a[0]) * (b[0] - a[0]) + (p[1] - a[1]) * (b[1] - a[1])) / length2
    return dist(p, lerp(a, b, min(1.0, max(0.0, t))))


def progress_label(start: Vec, now: Vec, goal: Vec, held: bool, touched: bool) -> int:
    """The reward of a state: how far a block got from ``start`` toward the bowl at ``goal``."""
    remaining = dist(now, goal)
    if remaining <= BOWL_RADIUS - 0.3 * BLOCK_HALF:
        return 4 if held else 5
    if not touched:
        return 1
    progress = 1.0 - remaining / dist(start, goal)
    if progress >= 0.7:
        return 4
    if progress >= 0.35:
        return 3
    return 2


# --------------------------------------------------------------------------- scenes and motion


def carry_range(alt_fraction: float | None) -> tuple[float, float]:
    """Block-to-bowl distances that keep every object, the second bowl included, on the table."""
    if alt_fraction is None:
        return 0.45, 0.65
    return {0.25: (0.15, 0.18), 0.5: (0.3, 0.36), 0.75: (0.54, 0.6)}[alt_fraction]


def layout_ok(block: Vec, bowl: Vec, alt: Vec | None, distractor: Vec) -> bool:
    bowls = [bowl] if alt is None else [bowl, alt]
    if not all(in_field(p) for p in [block, distractor, *bowls]):
        return False
    if any(dist(distractor, b) < BOWL_RADIUS + BLOCK_HALF + 0.04 for b in bowls):
        return False
    far_end = bowl if alt is None else alt
    return segment_distance(distractor, block, far_end) >= 0.16


def sample_scene(rng: np.random.Generator, alt_fraction: float | None) -> Scene:
    """A random layout: the block, its bowl, a distractor block and optionally a second bowl."""
    block_color, distractor_color = (
        str(c) for c in rng.choice(list(BLOCK_COLORS), 2, replace=False)
    )
    bowl_color, alt_color = (
        str(c) for c in rng.choice(list(BOWL_COLORS), 2, replace=False)
    )
    low, high = carry_range(alt_fraction)
    for _ in range(100_000):
        block = (float(rng.uniform(0.1, 0.9)), float(rng.uniform(0.1, 0.9)))
        angle = float(rng.uniform(0.0, 2.0 * math.pi))
        length = float(rng.uniform(low, high))
        bowl = (
            block[0] + length * math.cos(angle),
            block[1] + length * math.sin(angle),
        )
        alt = None if alt_fraction is None else lerp(block, bowl, 1.0 / alt_fraction)
        distractor = (float(rng.uniform(0.1, 0.9)), float(rng.uniform(0.1, 0.9)))
        if layout_ok(block, bowl, alt, distractor):
            break
    else:
        raise RuntimeError("could not place the objects of a scene")
    jitter = rng.integers(-12, 13, size=3)
    return Scene(
        block=block,
        block_color=block_color,
        bowl=bowl,
        bowl_color=bowl_color,
        distractor=distractor,
        distractor_color=distractor_color,
        home=(float(rng.uniform(0.25, 0.75)), 0.06),
        rest=(float(rng.uniform(0.2, 0.8)), 0.1),
        table=(int(172 + jitter[0]), int(142 + jitter[1]), int(108 + jitter[2])),
        template=str(rng.choice(TASK_TEMPLATES)),
        alt_bowl=alt,
        alt_bowl_color=None if alt is None else alt_color,
    )


def release_point(scene: Scene, outcome: str, rng: np.random.Generator) -> Vec:
    if outcome == "near_released":
        gap = BOWL_RADIUS + 0.04
        return lerp(scene.bowl, scene.block, gap / dist(scene.block, scene.bowl))
    point = lerp(scene.block, scene.bowl, RELEASE_PROGRESS[outcome])
    if outcome == "success":
        point = (
            point[0] + float(rng.uniform(-0.015, 0.015)),
            point[1] + float(rng.uniform(-0.015, 0.015)),
        )
    return point


def miss_point(scene: Scene) -> Vec:
    """A spot beside the block, where a failed grasp closes on air."""
    dx, dy = scene.bowl[0] - scene.block[0], scene.bowl[1] - scene.block[1]
    norm = math.hypot(dx, dy)
    for side in (1.0, -1.0):
        point = (
            scene.block[0] - side * dy / norm * 0.17,
            scene.block[1] + side * dx / norm * 0.17,
        )
        if in_field(point, 0.05):
            return point
    return lerp(scene.block, scene.bowl, -0.4)


def plan_segments(
    scene: Scene, outcome: str, rng: np.random.Generator
) -> list[Segment]:
    """The gripper's motion for one outcome: approach, grasp, carry, release and retreat."""

    def frames(low: int, high: int) -> int:
        return int(rng.integers(low, high + 1))

    segments = [Segment(frames(3, 5), scene.home, 1.0, False)]
    if outcome == "untouched":
        miss = miss_point(scene)
        return segments + [
            Segment(frames(12, 16), miss, 1.0, False),
            Segment(frames(4, 5), miss, 0.0, False),
            Segment(frames(3, 5), miss, 0.0, False),
            Segment(frames(3, 4), miss, 1.0, False),
            Segment(frames(8, 12), scene.rest, 1.0, False),
        ]
    segments += [
        Segment(frames(12, 16), scene.block, 1.0, False),
        Segment(frames(4, 5), scene.block, 0.0, False),
    ]
    release = release_point(scene, outcome, rng)
    carry_frames = frames(8, 11) + round(18 * dist(scene.block, release))
    segments.append(Segment(carry_frames, release, 0.0, True))
    if outcome == "near_held":
        return segments + [Segment(frames(4, 6), release, 0.0, True)]
    return segments + [
        Segment(frames(3, 4), release, 1.0, False),
        Segment(frames(8, 12), scene.rest, 1.0, False),
    ]


def simulate(scene: Scene, segments: Sequence[Segment]) -> list[State]:
    """One state per frame; the block follows the gripper while it is held."""
    gripper, opening, block, touched = scene.home, 1.0, scene.block, False
    states = [State(gripper, opening, block, False, False)]
    for segment in segments:
        start, start_opening = gripper, opening
        for step in range(1, segment.frames + 1):
            t = smooth(step / segment.frames)
            gripper = lerp(start, segment.target, t)
            opening = start_opening + (segment.opening - start_opening) * t
            if segment.holding:
                block, touched = gripper, True
            states.append(State(gripper, opening, block, segment.holding, touched))
    return states


def state_label(scene: Scene, state: State) -> int:
    return progress_label(
        scene.block, state.block, scene.bowl, state.held, state.touched
    )


# --------------------------------------------------------------------------- rendering


def pixel_to_table(quad: Sequence[Vec]) -> np.ndarray:
    """The homography taking frame-fraction coordinates to table coordinates."""
    corners = ((0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0))
    system, rhs = [], []
    for (u, v), (x, y) in zip(quad, corners, strict=True):
        system.append([u, v, 1.0, 0.0, 0.0, 0.0, -x * u, -x * v])
        system.append([0.0, 0.0, 0.0, u, v, 1.0, -y * u, -y * v])
        rhs += [x, y]
    solution = np.linalg.solve(np.array(system), np.array(rhs))
    return np.append(solution, 1.0).reshape(3, 3)


def make_raster(view: View, width: int, height: int) -> Raster:
    hom = pixel_to_table(view.quad)
    u, v = np.meshgrid(
        (np.arange(width) + 0.5) / width, (np.arange(height) + 0.5) / height
    )
    den = hom[2, 0] * u + hom[2, 1] * v + hom[2, 2]
    wx = (hom[0, 0] * u + hom[0, 1] * v + hom[0, 2]) / den
    wy = (hom[1, 0] * u + hom[1, 1] * v + hom[1, 2]) / den
    xs = [q[0] * width for q in view.quad]
    ys = [q[1] * height for q in view.quad]
    area = 0.5 * abs(sum(xs[i] * ys[i - 1] - xs[i - 1] * ys[i] for i in range(4)))
    return Raster(wx.astype(np.float32), wy.astype(np.float32), math.sqrt(area))


def rect_alpha(raster: Raster, center: Vec, half_x: float, half_y: float) -> np.ndarray:
    inside = np.minimum(
        half_x - np.abs(raster.wx - center[0]), half_y - np.abs(raster.wy - center[1])
    )
    return np.clip(inside * raster.ppu + 0.5, 0.0, 1.0)


def disc_alpha(raster: Raster, center: Vec, radius: float) -> np.ndarray:
    inside = radius - np.hypot(raster.wx - center[0], raster.wy - center[1])
    return np.clip(inside * raster.ppu + 0.5, 0.0, 1.0)


def paint(image: np.ndarray, alpha: np.ndarray, color: Sequence[float]) -> None:
    image += alpha[..., None] * (np.asarray(color, dtype=np.float32) - image)


def shade(color: Sequence[float], factor: float) -> tuple[float, float, float]:
    return (color[0] * factor, color[1] * factor, color[2] * factor)


def draw_block(
    image: np.ndarray, raster: Raster, center: Vec, color: RGB, scale: float = 1.0
) -> None:
    half = BLOCK_HALF * scale
    paint(image, rect_alpha(raster, center, half, half), shade(color, 0.7))
    paint(image, rect_alpha(raster, center, half - 0.01, half - 0.01), color)


def draw_bowl(image: np.ndarray, raster: Raster, center: Vec, color: RGB) -> None:
    paint(image, disc_alpha(raster, center, BOWL_RADIUS), shade(color, 0.75))
    paint(image, disc_alpha(raster, center, BOWL_RADIUS - 0.014), color)


def render_background(scene: Scene, raster: Raster, view: View) -> np.ndarray:
    """The static part of a frame: wall, table, bowls and the distractor block."""
    image = np.empty(raster.wx.shape + (3,), dtype=np.float32)
    image[...] = view.wall
    lighting = (0.9 + 0.1 * np.clip(raster.wy, 0.0, 1.0))[..., None]
    table = np.asarray(scene.table, dtype=np.float32) * lighting
    image += rect_alpha(raster, (0.5, 0.5), 0.5, 0.5)[..., None] * (table - image)
    draw_bowl(image, raster, scene.bowl, BOWL_COLORS[scene.bowl_color])
    if scene.alt_bowl is not None and scene.alt_bowl_color is not None:
        draw_bowl(image, raster, scene.alt_bowl, BOWL_COLORS[scene.alt_bowl_color])
    draw_block(image, raster, scene.distractor, BLOCK_COLORS[scene.distractor_color])
    return image


def render_frame(
    background: np.ndarray, scene: Scene, raster: Raster, state: State
) -> np.ndarray:
    image = background.copy()
    color = BLOCK_COLORS[scene.block_color]
    if state.held:
        shadow = (state.block[0] + 0.012, state.block[1] + 0.018)
        paint(
            image,
            0.35 * rect_alpha(raster, shadow, BLOCK_HALF, BLOCK_HALF),
            (20, 20, 20),
        )
        draw_block(image, raster, state.block, color, scale=1.1)
    else:
        draw_block(image, raster, state.block, color)
    gx, gy = state.gripper
    spread = BLOCK_HALF + 0.012 + 0.03 * state.opening
    paint(image, rect_alpha(raster, (gx, gy), spread, 0.008), (110, 110, 115))
    for side in (-1.0, 1.0):
        paint(
            image,
            rect_alpha(raster, (gx + side * spread, gy), 0.011, 0.026),
            (90, 90, 96),
        )
    paint(image, rect_alpha(raster, (gx, gy), 0.024, 0.024), (55, 55, 60))
    return np.rint(np.clip(image, 0.0, 255.0)).astype(np.uint8)


def render(
    scene: Scene, states: Sequence[State], view: View, width: int, height: int
) -> list[np.ndarray]:
    raster = make_raster(view, width, height)
    background = render_background(scene, raster, view)
    return [render_frame(background, scene, raster, state) for state in states]


def encode(frames: Sequence[np.ndarray], path: Path) -> None:
    """H.264 / yuv420p / 10 fps, single-threaded and bit-exact so that reruns give the same bytes."""
    height, width = frames[0].shape[:2]
    options = {
        "crf": str(CRF),
        "preset": "medium",
        "threads": "1",
        "x264-params": f"keyint={GOP}:min-keyint={GOP}:scenecut=0",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(
        str(path), mode="w", format="mp4", options={"fflags": "+bitexact"}
    ) as container:
        stream = container.add_stream("libx264", rate=FPS, options=options)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.codec_context.thread_count = 1
        for index, rgb in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            frame.pts, frame.time_base = index, Fraction(1, FPS)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)


# --------------------------------------------------------------------------- rows


def task_text(template: str, block: str, bowl: str) -> str:
    text = template.format(block=block, bowl=bowl)
    if not 4 <= len(text) <= 207:
        raise ValueError(f"task length out of range: {text!r}")
    return text


def check_text(label: int, block: str, bowl: str, held: bool) -> str:
    """A short consistency note in the style of the dataset's ``gpt5_mini_check`` field."""
    details = {
        5: f"the {block} block rests inside the {bowl} bowl and the gripper has let go",
        4: f"the {block} block is {'still held above' if held else 'just outside'} the {bowl} bowl, "
        "so the task is nearly but not fully done",
        3: f"the {block} block was carried about halfway toward the {bowl} bowl",
        2: f"the {block} block was grasped but moved only slightly toward the {bowl} bowl",
        1: f"the {block} block never moves, so there is no progress toward the {bowl} bowl",
    }
    return f"The label looks consistent with the final frame: {details[label]}."


def arena_rows(
    spec: SubsetSpec, rng: np.random.Generator, seed: int, test_dir: Path
) -> list[Row]:
    """Natural rollouts, RoboArena style: ``<uuid>_<slot>_<view>.mp4``, one file per camera."""
    rows: list[Row] = []
    for index, outcome in enumerate(ARENA_OUTCOMES):
        scene = sample_scene(rng, None)
        states = simulate(scene, plan_segments(scene, outcome, rng))
        label = state_label(scene, states[-1])
        if label != OUTCOME_LABELS[outcome]:
            raise AssertionError(f"{outcome} episode ended with label {label}")
        episode_id = uuid.uuid5(ARENA_NAMESPACE, f"seed={seed}/episode={index}")
        episode = f"{episode_id}_{int(rng.integers(0, 4))}"
        task = task_text(scene.template, scene.block_color, scene.bowl_color)
        check = check_text(label, scene.block_color, scene.bowl_color, states[-1].held)
        for view in spec.views:
            file_name = f"{spec.id}/{episode}_{view.name}.mp4"
            encode(
                render(scene, states, view, spec.width, spec.height),
                test_dir / file_name,
            )
            rows.append(Row(file_name, task, label, check, "natural"))
    return rows


def clip_rows(
    spec: SubsetSpec,
    episode: str,
    scene: Scene,
    states: Sequence[State],
    frames: Sequence[np.ndarray],
    scores: Sequence[int],
    rng: np.random.Generator,
    test_dir: Path,
) -> list[Row]:
    """Truncations of a success whose last frame has the wanted label."""
    rows: list[Row] = []
    task = task_text(scene.template, scene.block_color, scene.bowl_color)
    labels = [state_label(scene, state) for state in states]
    for attempt, score in enumerate(scores):
        ends = [
            i + 1
            for i, label in enumerate(labels)
            if label == score and i + 1 >= MIN_CLIP_FRAMES
        ]
        if not ends:
            raise AssertionError(f"no clip of {episode} ends with label {score}")
        length = int(rng.choice(ends))
        file_name = f"{spec.id}/{episode}_attempt_{attempt}_score_{score}.mp4"
        encode(frames[:length], test_dir / file_name)
        check = check_text(
            score, scene.block_color, scene.bowl_color, states[length - 1].held
        )
        rows.append(Row(file_name, task, score, check, "clip"))
    return rows


def relabel_task(scene: Scene, kind: str, final: State) -> tuple[str, str, int, str]:
    """Task, block colour, correct label and bowl colour of a counterfactual task for a success video."""
    if kind == "distractor":
        block, bowl = scene.distractor_color, scene.bowl_color
        label = progress_label(
            scene.distractor, scene.distractor, scene.bowl, False, False
        )
    elif scene.alt_bowl is not None and scene.alt_bowl_color is not None:
        block, bowl = scene.block_color, scene.alt_bowl_color
        label = progress_label(
            scene.block, final.block, scene.alt_bowl, final.held, final.touched
        )
    else:
        raise ValueError(f"scene has no second bowl for relabel kind {kind!r}")
    return task_text(scene.template, block, bowl), block, label, bowl


def openx_episode_rows(
    spec: SubsetSpec,
    plan: OriginalPlan,
    episode: str,
    rng: np.random.Generator,
    test_dir: Path,
) -> list[Row]:
    """An original success, its clips and its counterfactual relabels."""
    scene = sample_scene(rng, plan.alt_fraction)
    states = simulate(scene, plan_segments(scene, "success", rng))
    if state_label(scene, states[-1]) != 5:
        raise AssertionError(f"original {episode} is not a success")
    frames = render(scene, states, spec.views[0], spec.width, spec.height)
    original = f"{spec.id}/{episode}.mp4"
    encode(frames, test_dir / original)
    task = task_text(scene.template, scene.block_color, scene.bowl_color)
    rows = [
        Row(
            original,
            task,
            5,
            check_text(5, scene.block_color, scene.bowl_color, False),
            "original",
        )
    ]
    rows += clip_rows(
        spec, episode, scene, states, frames, plan.clip_scores, rng, test_dir
    )
    for number, kind in enumerate(plan.relabels):
        relabel_text, block, label, bowl = relabel_task(scene, kind, states[-1])
        if label == 5:
            raise AssertionError(
                f"relabel {kind} of {episode} would still be a success"
            )
        file_name = f"{spec.id}/{episode}_relabel_{number}.mp4"
        shutil.copyfile(test_dir / original, test_dir / file_name)
        rows.append(
            Row(
                file_name,
                relabel_text,
                label,
                check_text(label, block, bowl, False),
                "counterfactual",
            )
        )
    return rows


def openx_rows(spec: SubsetSpec, rng: np.random.Generator, test_dir: Path) -> list[Row]:
    numbers = sorted(
        int(n) for n in rng.choice(1000, size=len(spec.plans), replace=False)
    )
    order = rng.permutation(len(spec.plans))
    rows: list[Row] = []
    for number, plan_index in zip(numbers, order, strict=True):
        rows += openx_episode_rows(
            spec, spec.plans[int(plan_index)], f"episode_{number:06d}", rng, test_dir
        )
    return rows


# --------------------------------------------------------------------------- output


def generate(test_dir: Path, seed: int) -> list[Row]:
    """Write every video of the sample and return its rows, sorted by file name."""
    rows: list[Row] = []
    for index, spec in enumerate(SUBSETS):
        rng = np.random.default_rng([seed, index])
        subset_rows = (
            arena_rows(spec, rng, seed, test_dir)
            if not spec.plans
            else openx_rows(spec, rng, test_dir)
        )
        missing = set(range(1, 6)) - {row.reward for row in subset_rows}
        if missing:
            raise AssertionError(f"{spec.id} lacks labels {sorted(missing)}")
        rows += subset_rows
    return sorted(rows, key=lambda row: row.file_name)


def write_metadata(rows: Sequence[Row], path: Path) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for row in rows:
            handle.write(row.to_json() + "\n")


def counts_table(rows: Sequence[Row]) -> list[str]:
    counts = Counter(
        (row.file_name.split("/")[0], row.kind, row.reward) for row in rows
    )
    groups = sorted(
        {(subset, kind) for subset, kind, _ in counts},
        key=lambda g: ([s.id for s in SUBSETS].index(g[0]), g[1]),
    )
    lines = [
        "| subset | kind | 1 | 2 | 3 | 4 | 5 | rows |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for subset, kind in groups:
        cells = [counts[(subset, kind, label)] for label in range(1, 6)]
        lines.append(
            f"| {subset} | {kind} | "
            + " | ".join(str(c) for c in cells)
            + f" | {sum(cells)} |"
        )
    totals = [sum(1 for row in rows if row.reward == label) for label in range(1, 6)]
    lines.append(
        "| **all** | | " + " | ".join(str(c) for c in totals) + f" | {len(rows)} |"
    )
    return lines


def write_readme(out: Path, rows: Sequence[Row], seed: int) -> None:
    sizes = ", ".join(f"`{s.id}` {s.width}x{s.height}" for s in SUBSETS)
    videos = sum(1 for row in rows if row.kind != "counterfactual")
    text = f"""# Synthetic RoboRewardBench sample

A tiny **synthetic placeholder** for offline runs and tests. It is **not real robot data**
(and not a simulator either): every video is a numpy drawing of a top-down gripper carrying a
coloured block toward a coloured bowl, with a distractor block and sometimes a second bowl.
It follows the layout and naming conventions of the real dataset's `test` split, so the same
loader reads both. Scores on it say nothing about a model's quality on RoboRewardBench.

This file is written by `scripts/make_synthetic_sample.py`; edit the script, not this file.

## Layout

```
test/metadata.jsonl                  one JSON object per line, sorted by file_name
test/<subset>/<name>.mp4             H.264 (libx264, yuv420p), {FPS} fps, gop {GOP}, crf {CRF}
```

Each metadata row has exactly the keys `file_name` (relative to `test/`), `task`, `reward`
(integer 1..5) and `gpt5_mini_check` (free text). Frame sizes: {sizes}.

## Subsets and naming

- `sim_arena`: natural rollouts (successes and failures), RoboArena-style names
  `<uuid>_<slot>_<left|right>.mp4`; the two views of an episode share task, outcome and reward.
- `sim_panda`, `sim_kuka`: Open X-Embodiment-like subsets with
  - originals `<episode>.mp4`: successful episodes, reward 5;
  - clips `<episode>_attempt_<n>_score_<k>.mp4`: truncations of an original, reward `k` (1..4),
    the state at the clip's last frame;
  - counterfactual relabels `<episode>_relabel_<n>.mp4`: byte-identical copies of an original,
    paired with another task (a second bowl further along the carry, or the untouched
    distractor block) whose correct reward is 1..4.

Rewards follow the final frame: block released in the bowl = 5, just outside the bowl or still
held = 4, about halfway = 3, grasped but barely moved = 2, untouched = 1.

## Counts

Rows by subset, kind and reward ({len(rows)} rows; {videos} distinct videos, the relabels being
copies):

{chr(10).join(counts_table(rows))}

## Regenerate

```
python scripts/make_synthetic_sample.py   # defaults: --seed 0 --out helm_roboreward/sample
```

The script replaces `test/` and this README in the output folder.

Seed: `{seed}`. The output is a deterministic function of the seed: metadata and decoded frames
are identical across runs (single-threaded x264 with bit-exact muxing also gives identical bytes
for the same FFmpeg/x264 build).
"""
    (out / "README.md").write_text(text, encoding="utf-8", newline="\n")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="sample folder (default: %(default)s)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="random seed (default: %(default)s)"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    test_dir = args.out / SPLIT
    if test_dir.exists():
        shutil.rmtree(test_dir)
    test_dir.mkdir(parents=True)
    rows = generate(test_dir, args.seed)
    write_metadata(rows, test_dir / METADATA_FILE)
    write_readme(args.out, rows, args.seed)
    total = sum(path.stat().st_size for path in test_dir.rglob("*") if path.is_file())
    print(
        f"wrote {len(rows)} rows, {total} bytes to {test_dir} in {time.perf_counter() - started:.1f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
