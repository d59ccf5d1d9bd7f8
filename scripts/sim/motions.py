"""Scripted motions for every outcome variant: lists of tool-tip moves computed from the scene.

Pick-and-place outcomes (``pick_place`` task; the goal is a tray, a circle or a cube to stack on):

- ``success``: grasp, carry, lower onto the goal, release, retreat.
- ``missed_grasp``: the gripper closes 7 cm beside the object, then goes through the motions empty.
- ``wrong_target``: the object is placed on another goal (a circle of another colour).
- ``drop_transit``: the object is released mid-carry, part of the way to the goal, and falls.
- ``stop_short``: the robot carries the object over the goal and stops there, still holding it.
- ``release_outside``: the object is placed just outside the goal (between its at-goal and near radii).

Push outcomes (``push`` task, the Panda's closed gripper used as a pusher, goal a circle; the iiwa's
round suction cup slides off the side of a pushed cube, so it only picks and places):
``success`` (push the object's centre onto the circle's centre) and ``push_partial`` (stop after
``push_fraction`` of the way).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .labels import GOAL_REGIONS, Vec3
from .robots import Arm
from .rollout import Move
from .world import TABLE_TOP, World

CARRY_CLEARANCE = 0.14
"""Height of a carried object's lowest point above the table (clears trays and other objects)."""
APPROACH_HEIGHT = 0.16
"""Height of the tool tip above the grasp point before descending."""
MISS_OFFSET = 0.07
PLACE_DROP = 0.012
"""Height above the goal surface at which an object is let go."""
PUSH_HEIGHT = 0.012
"""Tool-tip height above the table while pushing."""
PUSH_SPEED = 0.08
CARRY_SPEED = 0.22
OUTSIDE_GAP = {"tray": 0.155, "circle": 0.095, "stack": 0.065}
"""Distance from the goal centre at which ``release_outside`` puts the object down: just clear of the
goal's edge (the tray's rim, the circle, the base cube) and inside the goal's near radius."""


@dataclass(frozen=True)
class Plan:
    """The intent of one episode."""

    task: str
    """``pick_place`` or ``push``."""
    obj: str
    goal: str
    """The goal the task text names."""
    outcome: str
    place_goal: str = ""
    """For ``wrong_target``: the goal the object is actually put on."""
    drop_fraction: float = 0.6
    """For ``drop_transit``: fraction of the carry after which the object is released."""
    push_fraction: float = 1.0
    """For pushes: fraction of the start-to-goal distance pushed."""


def unit(dx: float, dy: float) -> tuple[float, float]:
    """The unit vector along (dx, dy)."""
    norm = math.hypot(dx, dy)
    return (dx / norm, dy / norm)


def with_z(xy: tuple[float, float], z: float) -> Vec3:
    """A 3-D point from a table point and a height."""
    return (xy[0], xy[1], z)


def travel_time(a: Vec3, b: Vec3, speed: float, minimum: float = 0.6) -> float:
    """Seconds to move between two points at ``speed`` (rounded to a tenth of a second)."""
    return max(minimum, round(math.dist(a, b) / speed, 1))


def place_point(world: World, plan: Plan, rng: np.random.Generator) -> tuple[float, float]:
    """Where the object is put down, as a table point, for the plan's outcome."""
    goal_name = plan.place_goal or plan.goal
    gx, gy, _ = world.goal_centre(goal_name)
    sx, sy, _ = world.centre(plan.obj)
    if plan.outcome == "release_outside":
        kind = world.goals[goal_name].kind
        gap = OUTSIDE_GAP[kind]
        if not GOAL_REGIONS[kind].at_goal_radius < gap < GOAL_REGIONS[kind].near_radius:
            raise ValueError(f"OUTSIDE_GAP[{kind!r}] = {gap} is not between the goal's radii")
        ux, uy = unit(sx - gx, sy - gy)
        if kind != "circle":
            # Trays and cubes are square and axis-aligned: leave along the axis that faces the start.
            ux, uy = (math.copysign(1.0, ux), 0.0) if abs(ux) >= abs(uy) else (0.0, math.copysign(1.0, uy))
        return (gx + ux * gap, gy + uy * gap)
    jitter = rng.uniform(-0.008, 0.008, size=2)
    return (gx + float(jitter[0]), gy + float(jitter[1]))


def pick_moves(world: World, arm: Arm, plan: Plan, yaw: float) -> tuple[list[Move], float, float]:
    """Approach, descend, close and lift. Returns the moves, the carry height and the tip-to-bottom offset."""
    gx, gy, gz = arm.grasp_point(plan.obj)
    offset = gz - world.bottom(plan.obj)
    if plan.outcome == "missed_grasp":
        # Beside the object, across the fingers (or the cup): the closing gripper touches nothing.
        gx += MISS_OFFSET * math.cos(yaw)
        gy += MISS_OFFSET * math.sin(yaw)
    carry_z = TABLE_TOP + CARRY_CLEARANCE + offset
    above = (gx, gy, gz + APPROACH_HEIGHT)
    moves = [
        Move(above, travel_time(arm.tool_tip(), above, 0.35, 1.2), False, yaw, label="approach"),
        Move((gx, gy, gz), 0.9, False, yaw, label="descend"),
        Move((gx, gy, gz), 0.5, True, yaw, grasp=plan.obj, label="close"),
        Move((gx, gy, carry_z), 0.8, True, yaw, label="lift"),
    ]
    return moves, carry_z, offset


def retreat_moves(arm: Arm, at: Vec3, yaw: float) -> list[Move]:
    """Rise and go to the arm's rest point, gripper open."""
    up = (at[0], at[1], at[2] + 0.12)
    return [Move(up, 0.6, False, yaw, label="rise"), Move(arm.spec.rest, 1.1, False, yaw, label="retreat")]


def pick_place_moves(world: World, arm: Arm, plan: Plan, rng: np.random.Generator) -> list[Move]:
    """The whole pick-and-place script for the plan's outcome."""
    yaw = float(rng.uniform(-0.3, 0.3))
    moves, carry_z, offset = pick_moves(world, arm, plan, yaw)
    lifted = moves[-1].target
    target = place_point(world, plan, rng)
    surface = world.goal_centre(plan.place_goal or plan.goal)[2]
    over = with_z(target, carry_z)
    if plan.outcome == "drop_transit":
        start = np.asarray(lifted[:2])
        drop_xy = start + (np.asarray(target) - start) * plan.drop_fraction
        drop = with_z((float(drop_xy[0]), float(drop_xy[1])), carry_z)
        moves.append(Move(drop, travel_time(lifted, drop, CARRY_SPEED), True, yaw, label="carry"))
        moves.append(Move(over, travel_time(drop, over, CARRY_SPEED), False, yaw, release=True, label="drop"))
        return moves + [Move(arm.spec.rest, 1.3, False, yaw, label="retreat")]
    moves.append(Move(over, travel_time(lifted, over, CARRY_SPEED, 1.0), True, yaw, label="carry"))
    if plan.outcome == "stop_short":
        hover = with_z(target, surface + offset + 0.07)
        return moves + [Move(hover, 0.8, True, yaw, label="lower"), Move(hover, 1.6, True, yaw, label="hold")]
    down = with_z(target, surface + offset + PLACE_DROP)
    moves += [
        Move(down, 0.8, True, yaw, label="lower"),
        Move(down, 0.5, False, yaw, release=True, label="release"),
    ]
    return moves + retreat_moves(arm, down, yaw)


def push_moves(world: World, arm: Arm, plan: Plan, rng: np.random.Generator) -> list[Move]:
    """Put the closed gripper behind the object and push it toward the goal."""
    if arm.spec.suction:
        raise ValueError("push tasks need the Panda: a round suction cup deflects the pushed object")
    sx, sy, _ = world.centre(plan.obj)
    gx, gy, _ = world.goal_centre(plan.goal)
    ux, uy = unit(gx - sx, gy - sy)
    contact = 0.052  # tip to object centre when touching: object half size, pusher half width, slack
    distance = math.hypot(gx - sx, gy - sy) * plan.push_fraction
    yaw = math.atan2(uy, ux) + math.pi / 2 + float(rng.uniform(-0.1, 0.1))
    z = TABLE_TOP + PUSH_HEIGHT
    behind = (sx - ux * (contact + 0.03), sy - uy * (contact + 0.03))
    end = (sx + ux * (distance - contact), sy + uy * (distance - contact))
    above = with_z(behind, z + APPROACH_HEIGHT)
    start = with_z(behind, z)
    finish = with_z(end, z)
    moves = [
        Move(above, travel_time(arm.tool_tip(), above, 0.35, 1.2), True, yaw, label="approach"),
        Move(start, 0.9, True, yaw, label="descend"),
        Move(finish, travel_time(start, finish, PUSH_SPEED, 1.0), True, yaw, label="push"),
        Move(with_z((finish[0] - ux * 0.03, finish[1] - uy * 0.03), z + 0.005), 0.4, True, yaw, label="back off"),
    ]
    return moves + retreat_moves(arm, moves[-1].target, yaw)


def script(world: World, arm: Arm, plan: Plan, rng: np.random.Generator) -> list[Move]:
    """The moves of one episode."""
    if plan.task == "push":
        return push_moves(world, arm, plan, rng)
    return pick_place_moves(world, arm, plan, rng)
