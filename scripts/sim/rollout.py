"""Running a scripted episode: physics at 240 Hz, one frame (per camera) and one state every 24 steps.

A script is a list of :class:`Move` s of the tool tip. The runner interpolates the tip target with
a smooth (minimum-jerk) profile, solves the inverse kinematics every physics step and records the
simulator state at every rendered frame, so any frame (the end of a temporal clip included) can
be labelled from the state shown in it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .labels import Vec3
from .robots import Arm
from .world import CameraSpec, World

PHYSICS_HZ = 240
FPS = 10
STEPS_PER_FRAME = PHYSICS_HZ // FPS
SETTLE_STEPS = 120
"""Steps simulated (not recorded) before the first frame, so objects rest and the arm is at home."""


@dataclass(frozen=True)
class Move:
    """Move the tool tip to ``target`` in ``seconds``, with the gripper closed or open during the move."""

    target: Vec3
    seconds: float
    closed: bool
    yaw: float = 0.0
    release: bool = False
    """Drop the held object (remove the grasp constraint) when this move starts."""
    grasp: str = ""
    """Try to grasp this object (create the constraint) when this move ends."""
    label: str = ""
    """What the move is (for debugging and the README)."""


@dataclass(frozen=True)
class FrameState:
    """The simulator state at one rendered frame."""

    centres: dict[str, Vec3]
    """Bounding-box centre of every object."""
    bottoms: dict[str, float]
    """Lowest point (z) of every object."""
    speeds: dict[str, float]
    goals: dict[str, Vec3]
    """Centre of every goal (z: its support surface)."""
    held: str | None
    tip: Vec3
    phase: str
    """Label of the move under way (``start`` for the first frame)."""
    phase_progress: float
    """Fraction of that move done."""


@dataclass
class Recording:
    """The frames of every camera and the state at every frame."""

    frames: dict[str, list[np.ndarray]] = field(default_factory=dict)
    states: list[FrameState] = field(default_factory=list)


def smooth(t: float) -> float:
    """Minimum-jerk interpolation 0..1."""
    return t * t * t * (10.0 - 15.0 * t + 6.0 * t * t)


def capture_state(world: World, arm: Arm, phase: str, phase_progress: float) -> FrameState:
    """Read the positions of every object and goal, and the grasp, from the simulator."""
    names = list(world.objects)
    return FrameState(
        centres={name: world.centre(name) for name in names},
        bottoms={name: world.bottom(name) for name in names},
        speeds={name: world.speed(name) for name in names},
        goals={name: world.goal_centre(name) for name in world.goals},
        held=arm.held,
        tip=arm.tool_tip(),
        phase=phase,
        phase_progress=phase_progress,
    )


def record_frame(world: World, arm: Arm, cameras: list[CameraSpec], recording: Recording,
                 phase: str = "start", phase_progress: float = 0.0) -> None:
    """Render every camera and store the state."""
    for camera in cameras:
        recording.frames.setdefault(camera.name, []).append(world.render(camera))
    recording.states.append(capture_state(world, arm, phase, phase_progress))


def settle(world: World, arm: Arm) -> Vec3:
    """Let objects come to rest with the arm at home; returns the tool tip position."""
    for _ in range(SETTLE_STEPS):
        world.step()
    return arm.tool_tip()


def run_moves(world: World, arm: Arm, moves: list[Move], cameras: list[CameraSpec]) -> Recording:
    """Execute the moves from the arm's current tool tip and record every tenth of a second.

    Call :func:`settle` first: the moves are planned from the settled scene.
    """
    recording = Recording()
    start = arm.tool_tip()
    record_frame(world, arm, cameras, recording)
    step = 0
    yaw = moves[0].yaw if moves else 0.0
    for move in moves:
        if move.release:
            arm.release()
        arm.set_gripper(move.closed)
        steps = max(1, round(move.seconds * PHYSICS_HZ))
        begin = np.asarray(start, dtype=float)
        end = np.asarray(move.target, dtype=float)
        begin_yaw = yaw
        for index in range(1, steps + 1):
            t = smooth(index / steps)
            tip = begin + (end - begin) * t
            arm.move_tip((float(tip[0]), float(tip[1]), float(tip[2])), begin_yaw + (move.yaw - begin_yaw) * t)
            world.step()
            step += 1
            if step % STEPS_PER_FRAME == 0:
                record_frame(world, arm, cameras, recording, move.label, index / steps)
        if move.grasp:
            arm.try_grasp(move.grasp)
        start, yaw = move.target, move.yaw
    return recording
