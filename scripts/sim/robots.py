"""The two scripted arms: a Franka Panda with its parallel gripper and a KUKA iiwa with a suction cup.

Both follow a tool-tip target with inverse kinematics (``p.calculateInverseKinematics``) and joint
position control. Grasping is a fixed constraint (``p.createConstraint(..., p.JOINT_FIXED, ...)``)
created when the gripper closes (or the suction switches on) with its tool tip within
``CAPTURE_DISTANCE`` of the object's grasp point, and removed on release. Pybullet friction grasps
slip unpredictably; the constraint makes grasp and release exact events, so each outcome variant
(missed grasp, drop, release outside the goal) is scripted rather than left to chance, while
the object itself still moves freely under physics once released or pushed.

- Panda: the two finger joints close visibly around the object; the tool tip is
  ``panda_grasptarget`` (between the fingertips), grasp point = the object's centre.
- KUKA iiwa (``kuka_iiwa/model.urdf`` has no gripper): a dark suction cup (a small cylinder)
  is fixed to the flange by a constraint; the tool tip is the cup's face, grasp point = the top
  of the object.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pybullet as p

from .labels import Vec3
from .world import TABLE_TOP, World

CAPTURE_DISTANCE = 0.03
"""The grasp constraint is made only when the tool tip is this close to the object's grasp point."""

CUP_LENGTH = 0.05
CUP_RADIUS = 0.02
FLANGE_OFFSET = 0.05
"""Distance from the iiwa's last link frame to its flange face, along the link's z axis."""

FINGER_OPEN = 0.04
IK_ITERATIONS = 60


@dataclass(frozen=True)
class ArmSpec:
    """What differs between the two robots."""

    name: str
    urdf: str
    ee_link: int
    arm_joints: tuple[int, ...]
    home: tuple[float, ...]
    forces: tuple[float, ...]
    suction: bool
    base: Vec3
    """Where the robot stands (on the table's near edge)."""
    rest: Vec3
    """Where the tool tip retreats at the end of an episode, clear of the goals."""


PANDA = ArmSpec(
    name="panda",
    urdf="franka_panda/panda.urdf",
    ee_link=11,
    arm_joints=(0, 1, 2, 3, 4, 5, 6),
    home=(0.0, -0.35, 0.0, -2.3, 0.0, 1.95, 0.785),
    forces=(87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0),
    suction=False,
    base=(0.0, 0.0, TABLE_TOP),
    rest=(0.30, 0.0, TABLE_TOP + 0.34),
)
KUKA = ArmSpec(
    name="kuka",
    urdf="kuka_iiwa/model.urdf",
    ee_link=6,
    arm_joints=(0, 1, 2, 3, 4, 5, 6),
    home=(0.0, 0.35, 0.0, -1.55, 0.0, 1.25, 0.0),
    forces=(300.0, 300.0, 300.0, 300.0, 200.0, 100.0, 100.0),
    suction=True,
    base=(-0.16, 0.0, TABLE_TOP),
    rest=(0.36, 0.0, TABLE_TOP + 0.36),
)
ARMS = {spec.name: spec for spec in (PANDA, KUKA)}

PANDA_FINGERS = (9, 10)
KUKA_COLOR = (0.93, 0.45, 0.10, 1.0)


class Arm:
    """A robot standing on the table's near edge, driven by tool-tip targets."""

    def __init__(self, world: World, spec: ArmSpec) -> None:
        self.world = world
        self.spec = spec
        cid = world.client
        self.body = p.loadURDF(spec.urdf, spec.base, useFixedBase=True, physicsClientId=cid)
        for joint, angle in zip(spec.arm_joints, spec.home, strict=True):
            p.resetJointState(self.body, joint, angle, physicsClientId=cid)
        self.held: str | None = None
        self._constraint: int | None = None
        self.closed = False
        self.cup: int | None = None
        if spec.suction:
            self._add_cup()
        else:
            for finger in PANDA_FINGERS:
                p.resetJointState(self.body, finger, FINGER_OPEN, physicsClientId=cid)
        # Null-space IK (pull toward the home pose) needs limits for every movable joint, fingers included.
        movable = [j for j in range(p.getNumJoints(self.body, physicsClientId=cid))
                   if p.getJointInfo(self.body, j, physicsClientId=cid)[2] != p.JOINT_FIXED]
        limits = [p.getJointInfo(self.body, j, physicsClientId=cid)[8:10] for j in movable]
        self._lower = [low for low, _ in limits]
        self._upper = [high for _, high in limits]
        self._ranges = [high - low for low, high in limits]
        self._rest = list(spec.home) + [FINGER_OPEN] * (len(movable) - len(spec.home))
        self.command_joints(list(spec.home))
        self.set_gripper(False)

    def _add_cup(self) -> None:
        cid = self.world.client
        for link in range(-1, 6):
            p.changeVisualShape(self.body, link, rgbaColor=KUKA_COLOR, physicsClientId=cid)
        visual = p.createVisualShape(p.GEOM_CYLINDER, radius=CUP_RADIUS, length=CUP_LENGTH,
                                     rgbaColor=(0.12, 0.12, 0.14, 1.0), physicsClientId=cid)
        collision = p.createCollisionShape(p.GEOM_CYLINDER, radius=CUP_RADIUS, height=CUP_LENGTH, physicsClientId=cid)
        flange = p.getLinkState(self.body, self.spec.ee_link, computeForwardKinematics=True, physicsClientId=cid)
        offset = (0.0, 0.0, FLANGE_OFFSET + CUP_LENGTH / 2)
        position, orientation = p.multiplyTransforms(flange[4], flange[5], offset, (0, 0, 0, 1))
        self.cup = p.createMultiBody(0.05, collision, visual, position, orientation, physicsClientId=cid)
        p.createConstraint(self.body, self.spec.ee_link, self.cup, -1, p.JOINT_FIXED, (0, 0, 0), offset, (0, 0, 0),
                           physicsClientId=cid)
        p.setCollisionFilterPair(self.body, self.cup, self.spec.ee_link, -1, 0, physicsClientId=cid)

    def tool_tip(self) -> Vec3:
        """World position of the tool tip (fingertip centre, or the suction cup's face)."""
        state = p.getLinkState(self.body, self.spec.ee_link, computeForwardKinematics=True,
                               physicsClientId=self.world.client)
        offset = (0.0, 0.0, FLANGE_OFFSET + CUP_LENGTH) if self.spec.suction else (0.0, 0.0, 0.0)
        position, _ = p.multiplyTransforms(state[4], state[5], offset, (0, 0, 0, 1))
        return (float(position[0]), float(position[1]), float(position[2]))

    def _down(self, yaw: float) -> tuple[float, float, float, float]:
        roll, pitch, base_yaw = (math.pi, 0.0, 0.0) if not self.spec.suction else (0.0, math.pi, 0.0)
        return p.getQuaternionFromEuler((roll, pitch, base_yaw + yaw))

    def move_tip(self, target: Vec3, yaw: float) -> None:
        """Command the joints so that the tool tip goes to ``target``, pointing down, rotated by ``yaw``."""
        orientation = self._down(yaw)
        link_target = target
        if self.spec.suction:
            lift = FLANGE_OFFSET + CUP_LENGTH
            link_target = (target[0], target[1], target[2] + lift)
        solution = p.calculateInverseKinematics(
            self.body, self.spec.ee_link, link_target, orientation, lowerLimits=self._lower,
            upperLimits=self._upper, jointRanges=self._ranges, restPoses=self._rest,
            maxNumIterations=IK_ITERATIONS, residualThreshold=1e-5, physicsClientId=self.world.client,
        )
        self.command_joints(list(solution[: len(self.spec.arm_joints)]))

    def command_joints(self, angles: list[float]) -> None:
        """Position control of the arm joints."""
        p.setJointMotorControlArray(
            self.body, list(self.spec.arm_joints), p.POSITION_CONTROL, targetPositions=angles,
            forces=list(self.spec.forces), positionGains=[0.08] * len(angles), physicsClientId=self.world.client,
        )

    def set_gripper(self, closed: bool) -> None:
        """Close or open the fingers (Panda) or switch the suction on or off (KUKA: nothing moves)."""
        self.closed = closed
        if self.spec.suction:
            return
        width = 0.0 if closed else FINGER_OPEN
        for finger in PANDA_FINGERS:
            p.setJointMotorControl2(self.body, finger, p.POSITION_CONTROL, targetPosition=width, force=20.0,
                                    maxVelocity=0.15, physicsClientId=self.world.client)

    def grasp_point(self, name: str) -> Vec3:
        """Where the tool tip must be to pick an object: its centre (fingers) or its top surface (suction)."""
        x, y, z = self.world.centre(name)
        return (x, y, self.world.surface_at_centre(name)) if self.spec.suction else (x, y, z)

    def try_grasp(self, name: str) -> bool:
        """Attach the object with a fixed constraint if the tool tip is close enough to its grasp point."""
        tip = self.tool_tip()
        target = self.grasp_point(name)
        if math.dist(tip, target) > CAPTURE_DISTANCE:
            return False
        cid = self.world.client
        body = self.world.bodies[name]
        parent, parent_link = (self.cup, -1) if self.cup is not None else (self.body, self.spec.ee_link)
        assert parent is not None
        if parent_link == -1:
            frame_position, frame_orientation = p.getBasePositionAndOrientation(parent, physicsClientId=cid)
        else:
            state = p.getLinkState(parent, parent_link, physicsClientId=cid)
            frame_position, frame_orientation = state[4], state[5]
        object_position, object_orientation = p.getBasePositionAndOrientation(body, physicsClientId=cid)
        inverse = p.invertTransform(frame_position, frame_orientation)
        local_position, local_orientation = p.multiplyTransforms(inverse[0], inverse[1], object_position,
                                                                 object_orientation)
        self._constraint = p.createConstraint(
            parent, parent_link, body, -1, p.JOINT_FIXED, (0, 0, 0), local_position, (0, 0, 0),
            parentFrameOrientation=local_orientation, physicsClientId=cid,
        )
        p.changeConstraint(self._constraint, maxForce=200.0, physicsClientId=cid)
        self.held = name
        return True

    def release(self) -> None:
        """Remove the grasp constraint (if any); the object falls or rests under physics."""
        if self._constraint is not None:
            p.removeConstraint(self._constraint, physicsClientId=self.world.client)
        self._constraint = None
        self.held = None
