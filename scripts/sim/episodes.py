"""What the sample contains: the subsets, their cameras, and one :class:`EpisodeSpec` per rollout.

Every scene has the task's object, its goal (a tray, a coloured circle, or a cube to stack on),
a distractor object and a second coloured circle (the target of wrong-target outcomes and
counterfactual relabels). Positions are drawn with a seeded generator under geometric
constraints, so that the relabel and wrong-target bands below hold by construction; the labels
themselves always come from the simulator state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .labels import GOAL_REGIONS, horizontal_distance
from .world import TABLE_TOP, CameraSpec

XY = tuple[float, float]

CAMERAS: dict[str, CameraSpec] = {
    "left": CameraSpec("left", (1.05, 0.62, 1.22), (0.40, 0.0, TABLE_TOP + 0.06), 224, 224, 56.0),
    "right": CameraSpec("right", (1.05, -0.62, 1.22), (0.40, 0.0, TABLE_TOP + 0.06), 224, 224, 56.0),
    "front": CameraSpec("front", (1.20, 0.0, 1.30), (0.50, 0.0, TABLE_TOP + 0.05), 224, 224, 50.0),
    "side": CameraSpec("side", (0.66, -0.66, 1.32), (0.38, 0.03, TABLE_TOP + 0.08), 160, 160, 56.0),
}


@dataclass(frozen=True)
class SubsetPlan:
    """A subset of the sample: robot, cameras, and whether it is natural (RoboArena-like)."""

    id: str
    robot: str
    cameras: tuple[str, ...]
    natural: bool


SUBSET_PLANS: tuple[SubsetPlan, ...] = (
    SubsetPlan("sim_arena", "panda", ("left", "right"), True),
    SubsetPlan("sim_panda", "panda", ("front",), False),
    SubsetPlan("sim_kuka", "kuka", ("side",), False),
)

CLIP_POINTS: dict[str, tuple[str, float]] = {
    "early": ("descend", 0.5),
    "lifted": ("lift", 1.0),
    "middle": ("carry", 0.6),
    "late": ("lower", 1.0),
    "pushing": ("push", 0.45),
}
"""Where a temporal clip ends: (move label, fraction of that move). Its fraction of the episode follows."""


@dataclass(frozen=True)
class EpisodeSpec:
    """One scripted rollout and the rows derived from it."""

    task: str
    """``pick_place`` or ``push``."""
    shape: str
    goal_kind: str
    outcome: str = "success"
    band: str = ""
    """Where the second circle goes: ``away``, ``part`` or ``most`` (see :data:`BANDS`), or anywhere."""
    clips: tuple[str, ...] = ()
    relabels: tuple[str, ...] = ()
    """``other_object`` (the distractor, same goal), ``other_goal`` (the second circle), ``on_object``
    (stack on the distractor cube)."""
    drop_fraction: float = 0.6
    push_fraction: float = 1.0
    distance: tuple[float, float] = (0.26, 0.4)
    """Range of the start-to-goal distance (metres)."""
    session: int = 0
    """Natural subsets: the RoboArena-like session (one scene, task and camera pair) this rollout belongs to.
    Rollouts of one session share everything above except the outcome and its fractions."""
    copies: tuple[str, ...] = ()
    """Open X-Embodiment-like subsets: the copy suffix of the original's file, then of each relabel's (``""``: no
    suffix, ``"2"``: ``_2``, :data:`OTHER_INDEX`: stored under another index number). Default: the original
    without a suffix, the relabels ``_1``, ``_2``, ..."""


OTHER_INDEX = "other_index"
"""A relabel stored under another index number (the real split has the same bytes under two index numbers)."""

SCENE_FIELDS = ("task", "shape", "goal_kind", "band", "distance", "relabels")
"""What the rollouts of one session share: everything that decides the scene."""


BANDS: dict[str, tuple[float, float]] = {"away": (-1.0, 0.0), "part": (0.2, 0.4), "most": (0.6, 0.85)}
"""Ranges of the progress the (planned) final position makes toward the second circle."""

EPISODES: dict[str, tuple[EpisodeSpec, ...]] = {
    "sim_arena": (
        EpisodeSpec("pick_place", "cube", "tray", session=0),
        EpisodeSpec("pick_place", "cube", "tray", "release_outside", session=0),
        EpisodeSpec("pick_place", "cube", "tray", "missed_grasp", session=0),
        EpisodeSpec("pick_place", "lego", "circle", distance=(0.38, 0.42), session=1),
        EpisodeSpec("pick_place", "lego", "circle", "stop_short", distance=(0.38, 0.42), session=1),
        EpisodeSpec("pick_place", "lego", "circle", "drop_transit", drop_fraction=0.6, distance=(0.38, 0.42),
                    session=1),
        EpisodeSpec("push", "cube", "circle", "push_partial", push_fraction=0.3, distance=(0.2, 0.28), session=2),
        EpisodeSpec("pick_place", "cube", "stack", "wrong_target", band="part", session=3),
    ),
    "sim_panda": (
        EpisodeSpec("pick_place", "cube", "tray", band="part", clips=("early", "late"),
                    relabels=("other_object", "other_goal"), copies=("", "1", "2")),
        EpisodeSpec("pick_place", "duck", "circle", band="most", clips=("lifted", "middle"), relabels=("other_goal",),
                    copies=("2", "")),
        EpisodeSpec("pick_place", "cube", "stack", clips=("middle", "late"), relabels=("on_object", "other_object"),
                    copies=("1", "", "3")),
        EpisodeSpec("push", "cube", "circle", band="away", clips=("early", "pushing"), relabels=("other_goal",),
                    distance=(0.2, 0.28), copies=("", "1")),
        EpisodeSpec("pick_place", "lego", "tray", band="part", clips=("lifted", "late"), relabels=("other_goal",),
                    copies=("1", "")),
    ),
    "sim_kuka": (
        EpisodeSpec("pick_place", "cube", "circle", band="most", clips=("early", "late"),
                    relabels=("other_object", "other_goal"), copies=("3", "1", "")),
        EpisodeSpec("pick_place", "lego", "tray", band="part", clips=("lifted", "middle"), relabels=("other_goal",),
                    copies=("", "2")),
        EpisodeSpec("pick_place", "duck", "tray", band="away", clips=("late",), relabels=("other_goal",),
                    copies=("1", OTHER_INDEX)),
        EpisodeSpec("pick_place", "lego", "circle", clips=("early", "middle"), relabels=("other_object",),
                    copies=("", "1")),
        EpisodeSpec("pick_place", "cube", "stack", clips=("lifted", "late"), relabels=("on_object",),
                    copies=("2", "")),
    ),
}
"""Every rollout of the sample. Copy suffixes vary as in the real split: originals with and without one, clips of
suffixed originals, relabels without a suffix beside a suffixed original, one relabel under another index."""

FOOTPRINT = {"tray": 0.13, "circle": 0.065, "cube": 0.04, "lego": 0.035, "duck": 0.05}
"""Radius of the table area each thing covers, for keeping them apart."""
FIELD_X = (0.32, 0.70)
FIELD_Y = (-0.30, 0.30)
"""The table area every footprint must lie in (seen by every camera, reachable by both arms)."""
GAP = 0.03
PUSH_MIN_X = 0.42
"""Pushes stay this far in front of the robot, where its tool tip follows a low straight line closely."""


@dataclass(frozen=True)
class Layout:
    """Table positions of one scene."""

    start: XY
    goal: XY
    """Goal centre (for ``stack``: the base cube)."""
    distractor: XY
    circle: XY
    """The second circle."""


def inside(point: XY, radius: float) -> bool:
    """True when a footprint lies in the field."""
    return (FIELD_X[0] + radius <= point[0] <= FIELD_X[1] - radius
            and FIELD_Y[0] + radius <= point[1] <= FIELD_Y[1] - radius)


def segment_distance(point: XY, a: XY, b: XY) -> float:
    """Distance from a point to the segment a-b."""
    ax, ay, bx, by = a[0], a[1], b[0], b[1]
    length2 = (bx - ax) ** 2 + (by - ay) ** 2
    t = min(1.0, max(0.0, ((point[0] - ax) * (bx - ax) + (point[1] - ay) * (by - ay)) / length2))
    return math.hypot(point[0] - (ax + t * (bx - ax)), point[1] - (ay + t * (by - ay)))


def band_value(spec: EpisodeSpec, layout: Layout) -> float:
    """Planned progress that the band constrains: toward the circle (relabel) or toward the goal (wrong target)."""
    s, g, c = ((layout.start[0], layout.start[1], 0.0), (layout.goal[0], layout.goal[1], 0.0),
               (layout.circle[0], layout.circle[1], 0.0))
    if spec.outcome == "wrong_target":
        return 1.0 - horizontal_distance(c, g) / horizontal_distance(s, g)
    return 1.0 - horizontal_distance(g, c) / horizontal_distance(s, c)


def layout_ok(spec: EpisodeSpec, layout: Layout, distractor_shape: str) -> bool:
    """Every constraint of a scene: in the field, apart, clear push path, band, distractor away from goal."""
    goal_print = FOOTPRINT["cube" if spec.goal_kind == "stack" else spec.goal_kind]
    things = [(layout.start, FOOTPRINT[spec.shape]), (layout.goal, goal_print),
              (layout.distractor, FOOTPRINT[distractor_shape]), (layout.circle, FOOTPRINT["circle"])]
    if not all(inside(point, radius) for point, radius in things):
        return False
    for i, (a, ra) in enumerate(things):
        for b, rb in things[i + 1:]:
            if math.dist(a, b) < ra + rb + GAP:
                return False
    near = GOAL_REGIONS[spec.goal_kind].near_radius
    if math.dist(layout.distractor, layout.goal) < near + 0.05 or math.dist(layout.circle, layout.goal) < 0.16:
        return False
    if spec.task == "push":
        # The pusher comes down 0.1 m behind the object and sweeps to the goal: keep that corridor clear.
        dx, dy = layout.goal[0] - layout.start[0], layout.goal[1] - layout.start[1]
        norm = math.hypot(dx, dy)
        behind = (layout.start[0] - dx / norm * 0.1, layout.start[1] - dy / norm * 0.1)
        if min(behind[0], layout.start[0], layout.goal[0]) < PUSH_MIN_X or not inside(behind, 0.0):
            return False
        for point, radius in things[2:]:
            if segment_distance(point, behind, layout.goal) < radius + 0.07:
                return False
    if spec.band:
        low, high = BANDS[spec.band]
        return low <= band_value(spec, layout) <= high
    return True


def sample_point(radius: float, rng: np.random.Generator) -> XY:
    """A uniformly random point whose footprint of ``radius`` lies in the field."""
    return (float(rng.uniform(FIELD_X[0] + radius, FIELD_X[1] - radius)),
            float(rng.uniform(FIELD_Y[0] + radius, FIELD_Y[1] - radius)))


def sample_layout(spec: EpisodeSpec, distractor_shape: str, rng: np.random.Generator) -> Layout:
    """Draw positions until every constraint holds (deterministic for a given generator state)."""
    goal_print = FOOTPRINT["cube" if spec.goal_kind == "stack" else spec.goal_kind]
    for _ in range(50000):
        start = sample_point(FOOTPRINT[spec.shape], rng)
        goal = sample_point(goal_print, rng)
        if not spec.distance[0] <= math.dist(start, goal) <= spec.distance[1]:
            continue
        layout = Layout(start, goal, sample_point(FOOTPRINT[distractor_shape], rng),
                        sample_point(FOOTPRINT["circle"], rng))
        if layout_ok(spec, layout, distractor_shape):
            return layout
    raise RuntimeError(f"no layout satisfies the constraints of {spec}")
