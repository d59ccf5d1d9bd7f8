"""The rubric as numbers: the progress score of a simulator state (pure Python, no pybullet).

This module is the ONE place where the labelling thresholds are defined. The generator labels every
row with :func:`progress_score`, stores the inputs in ``sim_state.jsonl`` and the tests recompute
the label from that file. The rules, applied in order (first match wins; distances are horizontal,
in metres, between the object's centre and the goal centre; heights are of the object's lowest
point above the goal's support surface):

1. score 5 ``rests_at_goal``: distance <= the goal's at-goal radius, the gripper has released the
   object, and it rests on the goal surface (|height| <= ``REST_TOLERANCE``).
2. score 4 ``held_above_goal``: still held, distance <= the goal's at-goal radius and height <=
   ``HOVER_MAX`` (carried over the goal but never let go).
3. score 4 ``released_near_goal``: released, distance <= the near radius (resting slightly outside
   the goal, or in the goal region but not settled on its surface).
4. score 3 ``good_progress``: progress = 1 - distance / start distance >= ``GOOD_PROGRESS``
   (moved most of the way, e.g. carried and dropped short, or still carried mid-way).
5. score 2 ``small_change``: held, or lifted >= ``LIFT_MIN`` above its start height, or
   progress >= ``NUDGE_PROGRESS`` (grasped, lifted or nudged a little toward the goal).
6. score 1 ``no_change``: none of the above (untouched, or moved but not toward the goal).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

Vec3 = tuple[float, float, float]

MIN_SCORE = 1
MAX_SCORE = 5


@dataclass(frozen=True)
class GoalRegion:
    """How close to a goal's centre an object must be, per kind of goal."""

    at_goal_radius: float
    """The object is AT the goal when its centre is at most this far (horizontally) from the goal centre."""

    near_radius: float
    """A released object within this distance (but not resting at the goal) is slightly outside the goal."""

    description: str
    """What the goal is, for the README."""


GOAL_REGIONS: dict[str, GoalRegion] = {
    "tray": GoalRegion(0.06, 0.18, "tray (0.24 m wide, flat floor about 0.16 m wide)"),
    "circle": GoalRegion(0.06, 0.12, "flat coloured circle, radius 0.06 m"),
    "stack": GoalRegion(0.02, 0.08, "top face of a 0.05 m cube"),
}
"""Goal kinds and their radii (metres)."""

REST_TOLERANCE = 0.015
"""A released object rests ON the goal when its lowest point is within this height of the goal surface."""

HOVER_MAX = 0.20
"""A held object counts as held above the goal up to this height over the goal surface."""

GOOD_PROGRESS = 0.5
"""Progress (fraction of the start distance covered) for "good progress" (score 3)."""

NUDGE_PROGRESS = 0.1
"""Progress for "a small change toward the goal" (score 2)."""

LIFT_MIN = 0.03
"""Lift of the object's lowest point over its start height that counts as lifted (score 2)."""

RULE_SCORES: dict[str, int] = {
    "rests_at_goal": 5,
    "held_above_goal": 4,
    "released_near_goal": 4,
    "good_progress": 3,
    "small_change": 2,
    "no_change": 1,
}
"""Every rule name and the score it gives, in the order the rules are tried."""


@dataclass(frozen=True)
class TaskState:
    """Everything the label depends on: one object, one goal, at one frame."""

    goal_kind: str
    """A key of :data:`GOAL_REGIONS`."""
    object_start: Vec3
    """Centre of the task's object at the first frame."""
    object_final: Vec3
    """Centre of the task's object at the labelled frame."""
    bottom_start: float
    """Height (z) of the object's lowest point at the first frame."""
    bottom_final: float
    """Height (z) of the object's lowest point at the labelled frame."""
    goal_centre: Vec3
    """Goal centre; its z is the height of the goal's support surface."""
    held: bool
    """True while the gripper holds the object (a grasp constraint is active)."""


@dataclass(frozen=True)
class Measures:
    """Quantities derived from a :class:`TaskState` that the rules compare with the thresholds."""

    start_distance: float
    final_distance: float
    progress: float
    height_above_goal: float
    lift: float


def horizontal_distance(a: Vec3, b: Vec3) -> float:
    """Distance in the table plane (x, y), in metres."""
    return math.hypot(a[0] - b[0], a[1] - b[1])


def measure(state: TaskState) -> Measures:
    """The distances, progress and heights the rules use."""
    start = horizontal_distance(state.object_start, state.goal_centre)
    final = horizontal_distance(state.object_final, state.goal_centre)
    progress = 1.0 - final / start if start > 0 else 1.0
    return Measures(
        start_distance=start,
        final_distance=final,
        progress=progress,
        height_above_goal=state.bottom_final - state.goal_centre[2],
        lift=state.bottom_final - state.bottom_start,
    )


def applied_rule(state: TaskState) -> str:
    """The name of the first rule (see the module docstring) that the state satisfies."""
    region = GOAL_REGIONS[state.goal_kind]
    m = measure(state)
    if m.final_distance <= region.at_goal_radius and not state.held and abs(m.height_above_goal) <= REST_TOLERANCE:
        return "rests_at_goal"
    if state.held and m.final_distance <= region.at_goal_radius and m.height_above_goal <= HOVER_MAX:
        return "held_above_goal"
    if not state.held and m.final_distance <= region.near_radius:
        return "released_near_goal"
    if m.progress >= GOOD_PROGRESS:
        return "good_progress"
    if state.held or m.lift >= LIFT_MIN or m.progress >= NUDGE_PROGRESS:
        return "small_change"
    return "no_change"


def progress_score(state: TaskState) -> tuple[int, str]:
    """The rubric score (1..5) of a state and the rule that gave it."""
    rule = applied_rule(state)
    return RULE_SCORES[rule], rule


def is_stable(state: TaskState, delta: float = 0.005) -> bool:
    """True when moving the object by ``delta`` metres along any axis does not change the score.

    The generator only keeps rows whose label is this far from every threshold, so a slightly
    different physics build cannot flip a label.
    """
    score, _ = progress_score(state)
    for axis in range(3):
        for sign in (-1.0, 1.0):
            moved = list(state.object_final)
            moved[axis] += sign * delta
            lowered = state.bottom_final + (sign * delta if axis == 2 else 0.0)
            shifted = replace(state, object_final=(moved[0], moved[1], moved[2]), bottom_final=lowered)
            if progress_score(shifted)[0] != score:
                return False
    return True


def rounded(state: TaskState, digits: int = 5) -> TaskState:
    """The state with every coordinate rounded to ``digits`` decimals (10 micrometres by default).

    The generator labels this rounded state and stores exactly its inputs, so recomputing a label
    from ``sim_state.jsonl`` gives the same result bit for bit.
    """

    def vec(v: Vec3) -> Vec3:
        return (round(v[0], digits), round(v[1], digits), round(v[2], digits))

    return replace(state, object_start=vec(state.object_start), object_final=vec(state.object_final),
                   bottom_start=round(state.bottom_start, digits), bottom_final=round(state.bottom_final, digits),
                   goal_centre=vec(state.goal_centre))


def state_to_record(state: TaskState) -> dict[str, Any]:
    """A JSON-ready dict of the (rounded) state, its measures, score and rule: part of a ``sim_state.jsonl`` entry."""
    state = rounded(state)
    m = measure(state)
    score, rule = progress_score(state)
    return {
        "goal_kind": state.goal_kind,
        "object_start": list(state.object_start),
        "object_final": list(state.object_final),
        "bottom_start": state.bottom_start,
        "bottom_final": state.bottom_final,
        "goal_centre": list(state.goal_centre),
        "held": state.held,
        "start_distance": round(m.start_distance, 5),
        "final_distance": round(m.final_distance, 5),
        "progress": round(m.progress, 5),
        "height_above_goal": round(m.height_above_goal, 5),
        "lift": round(m.lift, 5),
        "rule": rule,
        "score": score,
    }


def state_from_record(record: Mapping[str, Any]) -> TaskState:
    """The :class:`TaskState` stored in a ``sim_state.jsonl`` entry (inverse of :func:`state_to_record`)."""

    def vec(key: str) -> Vec3:
        x, y, z = (float(v) for v in record[key])
        return (x, y, z)

    return TaskState(
        goal_kind=str(record["goal_kind"]),
        object_start=vec("object_start"),
        object_final=vec("object_final"),
        bottom_start=float(record["bottom_start"]),
        bottom_final=float(record["bottom_final"]),
        goal_centre=vec("goal_centre"),
        held=bool(record["held"]),
    )


def thresholds_table() -> list[str]:
    """The thresholds as Markdown table lines, for the README and the generator's docstring."""
    lines = ["| threshold | value | meaning |", "|---|---|---|"]
    for kind, region in GOAL_REGIONS.items():
        lines.append(
            f"| `{kind}` at-goal / near radius | {region.at_goal_radius:.2f} m / {region.near_radius:.2f} m "
            f"| {region.description} |"
        )
    lines += [
        f"| `REST_TOLERANCE` | {REST_TOLERANCE:.3f} m | a released object this close to the goal surface rests on it |",
        f"| `HOVER_MAX` | {HOVER_MAX:.2f} m | highest a held object may be to count as held above the goal |",
        f"| `GOOD_PROGRESS` | {GOOD_PROGRESS:.2f} | progress (1 - distance / start distance) for score 3 |",
        f"| `NUDGE_PROGRESS` | {NUDGE_PROGRESS:.2f} | progress for score 2 |",
        f"| `LIFT_MIN` | {LIFT_MIN:.2f} m | lift of the lowest point that counts as lifted (score 2) |",
    ]
    return lines
