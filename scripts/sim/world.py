"""The pybullet scene: table, goals (trays, circles, cubes to stack on), objects, cameras and rendering.

One :class:`World` is one headless physics server (``p.connect(p.DIRECT)``). Rendering uses the
CPU TinyRenderer (``p.ER_TINY_RENDERER``) with shadows, so nothing needs a GPU or a display.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pybullet as p
import pybullet_data

from .labels import Vec3

TABLE_TOP = 0.626
"""Height of the table surface (``table/table.urdf`` at the origin of the world is 0.626 m high)."""

TABLE_POSITION: Vec3 = (0.5, 0.0, 0.0)
"""Where the table is placed (its top spans x -0.25..1.25, y -0.5..0.5); the robots stand on its near edge."""

TRAY_SCALE = 0.4
TRAY_FLOOR = 0.006
"""Height of the tray's floor above the table at ``TRAY_SCALE`` (its collision slab top)."""
CIRCLE_RADIUS = 0.06
CUBE_HALF = 0.025

COLORS: dict[str, tuple[float, float, float, float]] = {
    "red": (0.85, 0.12, 0.10, 1.0),
    "green": (0.15, 0.70, 0.20, 1.0),
    "blue": (0.10, 0.30, 0.90, 1.0),
    "yellow": (0.95, 0.80, 0.10, 1.0),
    "orange": (0.95, 0.50, 0.08, 1.0),
    "purple": (0.55, 0.20, 0.75, 1.0),
    "white": (0.95, 0.95, 0.95, 1.0),
}

SHAPES: dict[str, tuple[str, float, str]] = {
    "cube": ("cube_small.urdf", 1.0, "cube"),
    "lego": ("lego/lego.urdf", 1.6, "lego brick"),
    "duck": ("duck_vhacd.urdf", 0.85, "rubber duck"),
}
"""Object shapes: URDF in ``pybullet_data``, global scaling, the noun used in task texts."""

STAND_UP = (math.pi / 2, 0.0)
"""Roll and pitch that stand the duck mesh upright (its URDF is modelled y-up)."""


@dataclass(frozen=True)
class ObjectSpec:
    """A movable object on the table."""

    name: str
    """Key used by the episode (e.g. ``object``, ``distractor``)."""
    shape: str
    """A key of :data:`SHAPES`."""
    color: str
    """A key of :data:`COLORS`; the duck keeps its own texture and colour."""
    xy: tuple[float, float]
    yaw: float = 0.0

    @property
    def noun(self) -> str:
        """How a task text names the object, e.g. ``red cube``."""
        return f"{self.color} {SHAPES[self.shape][2]}"


@dataclass(frozen=True)
class GoalSpec:
    """A place to put an object: a tray, a flat circle, or the top of another object (stacking)."""

    name: str
    kind: str
    """``tray``, ``circle`` or ``stack`` (see ``labels.GOAL_REGIONS``)."""
    xy: tuple[float, float] = (0.0, 0.0)
    color: str = "white"
    """Colour of a circle."""
    base: str = ""
    """For ``stack``: the name of the object to stack on."""


@dataclass(frozen=True)
class CameraSpec:
    """A fixed camera looking at the table."""

    name: str
    eye: Vec3
    target: Vec3
    width: int
    height: int
    fov: float = 48.0


LIGHT_DIRECTION = (0.6, -0.4, 1.0)


class World:
    """A table scene in its own DIRECT physics server."""

    def __init__(self) -> None:
        self.client = p.connect(p.DIRECT)
        p.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=self.client)
        p.setGravity(0, 0, -9.81, physicsClientId=self.client)
        p.setPhysicsEngineParameter(fixedTimeStep=1.0 / 240.0, deterministicOverlappingPairs=1,
                                    physicsClientId=self.client)
        plane = p.loadURDF("plane.urdf", physicsClientId=self.client)
        p.changeVisualShape(plane, -1, textureUniqueId=-1, rgbaColor=(0.50, 0.53, 0.58, 1.0),
                            physicsClientId=self.client)
        self.table = p.loadURDF("table/table.urdf", TABLE_POSITION, useFixedBase=True, physicsClientId=self.client)
        self.bodies: dict[str, int] = {}
        self.objects: dict[str, ObjectSpec] = {}
        self.goals: dict[str, GoalSpec] = {}

    def close(self) -> None:
        """Shut the physics server down."""
        p.disconnect(physicsClientId=self.client)

    def add_object(self, spec: ObjectSpec) -> int:
        """Load an object resting on the table and colour it."""
        urdf, scale, _ = SHAPES[spec.shape]
        roll, pitch = STAND_UP if spec.shape == "duck" else (0.0, 0.0)
        orientation = p.getQuaternionFromEuler((roll, pitch, spec.yaw))
        body = p.loadURDF(urdf, (spec.xy[0], spec.xy[1], TABLE_TOP + 0.06), orientation, globalScaling=scale,
                          physicsClientId=self.client)
        low, _ = p.getAABB(body, physicsClientId=self.client)
        position, _ = p.getBasePositionAndOrientation(body, physicsClientId=self.client)
        resting = (position[0], position[1], position[2] - (low[2] - TABLE_TOP) + 0.0005)
        p.resetBasePositionAndOrientation(body, resting, orientation, physicsClientId=self.client)
        if spec.shape != "duck":
            p.changeVisualShape(body, -1, rgbaColor=COLORS[spec.color], physicsClientId=self.client)
        p.changeDynamics(body, -1, lateralFriction=0.8, spinningFriction=0.001, rollingFriction=0.0005,
                         physicsClientId=self.client)
        self.bodies[spec.name] = body
        self.objects[spec.name] = spec
        return body

    def add_goal(self, spec: GoalSpec) -> None:
        """Load a tray or draw a circle; a ``stack`` goal is the top of an object added separately."""
        if spec.kind == "tray":
            body = p.loadURDF("tray/tray.urdf", (spec.xy[0], spec.xy[1], TABLE_TOP), useFixedBase=True,
                              globalScaling=TRAY_SCALE, physicsClientId=self.client)
            self.bodies[spec.name] = body
        elif spec.kind == "circle":
            visual = p.createVisualShape(p.GEOM_CYLINDER, radius=CIRCLE_RADIUS, length=0.002,
                                         rgbaColor=COLORS[spec.color], physicsClientId=self.client)
            body = p.createMultiBody(0, -1, visual, (spec.xy[0], spec.xy[1], TABLE_TOP + 0.0012),
                                     physicsClientId=self.client)
            self.bodies[spec.name] = body
        elif spec.kind != "stack":
            raise ValueError(f"unknown goal kind {spec.kind!r}")
        self.goals[spec.name] = spec

    def position(self, name: str) -> Vec3:
        """Centre (base position) of a body."""
        position, _ = p.getBasePositionAndOrientation(self.bodies[name], physicsClientId=self.client)
        return (float(position[0]), float(position[1]), float(position[2]))

    def centre(self, name: str) -> Vec3:
        """Centre of a body's bounding box (the object position used for labels and grasping)."""
        low, high = p.getAABB(self.bodies[name], physicsClientId=self.client)
        return ((low[0] + high[0]) / 2, (low[1] + high[1]) / 2, (low[2] + high[2]) / 2)

    def bottom(self, name: str) -> float:
        """Height of a body's lowest point (its bounding box's lower z)."""
        low, _ = p.getAABB(self.bodies[name], physicsClientId=self.client)
        return float(low[2])

    def top(self, name: str) -> float:
        """Height of a body's highest point."""
        _, high = p.getAABB(self.bodies[name], physicsClientId=self.client)
        return float(high[2])

    def surface_at_centre(self, name: str) -> float:
        """Height of a body's upper surface straight above its centre (a ray cast down), for suction grasps."""
        x, y, _ = self.centre(name)
        hit = p.rayTest((x, y, self.top(name) + 0.05), (x, y, self.bottom(name) - 0.01), physicsClientId=self.client)[0]
        return float(hit[3][2]) if hit[0] == self.bodies[name] else self.top(name)

    def speed(self, name: str) -> float:
        """Linear speed of a body, m/s."""
        velocity, _ = p.getBaseVelocity(self.bodies[name], physicsClientId=self.client)
        return float(np.linalg.norm(velocity))

    def goal_centre(self, name: str) -> Vec3:
        """Goal centre; z is the height of the goal's support surface (tray floor, table, top of a cube)."""
        goal = self.goals[name]
        if goal.kind == "stack":
            x, y, _ = self.centre(goal.base)
            return (x, y, self.top(goal.base))
        x, y, _ = self.position(goal.name)
        surface = TABLE_TOP + (TRAY_FLOOR if goal.kind == "tray" else 0.0)
        return (x, y, surface)

    def step(self) -> None:
        """One physics step (1/240 s)."""
        p.stepSimulation(physicsClientId=self.client)

    def render(self, camera: CameraSpec) -> np.ndarray:
        """An RGB image (height x width x 3, uint8) from the TinyRenderer, with shadows."""
        view = p.computeViewMatrix(camera.eye, camera.target, (0, 0, 1), physicsClientId=self.client)
        projection = p.computeProjectionMatrixFOV(camera.fov, camera.width / camera.height, 0.05, 5.0,
                                                  physicsClientId=self.client)
        _, _, rgba, _, _ = p.getCameraImage(
            camera.width, camera.height, view, projection, renderer=p.ER_TINY_RENDERER, shadow=1,
            lightDirection=LIGHT_DIRECTION, lightAmbientCoeff=0.55, lightDiffuseCoeff=0.5, lightSpecularCoeff=0.05,
            physicsClientId=self.client,
        )
        image = np.asarray(rgba, dtype=np.uint8).reshape(camera.height, camera.width, 4)
        return np.ascontiguousarray(image[:, :, :3])
