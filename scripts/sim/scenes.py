"""Building one episode's scene in a :class:`~sim.world.World`: colours, objects, goals and their names."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .episodes import EpisodeSpec, Layout, sample_layout
from .world import GoalSpec, ObjectSpec, World

PALETTE = ("red", "green", "blue", "orange", "purple", "yellow")
"""Colours of cubes, lego bricks and circles (the duck keeps its own yellow)."""


@dataclass(frozen=True)
class Scene:
    """What was placed, with the nouns task texts use."""

    obj: ObjectSpec
    distractor: ObjectSpec
    goal: GoalSpec
    goal_noun: str
    circle: GoalSpec
    """The second circle (wrong-target outcomes, ``other_goal`` relabels)."""
    base: ObjectSpec | None
    """The cube to stack on, for ``stack`` goals."""
    template: int
    """Index of the task-text template (shared by the episode's relabels)."""
    layout: Layout


def object_noun(spec: ObjectSpec) -> str:
    """``red cube``, ``green lego brick``, or ``rubber duck`` (there is one duck, in its own colour)."""
    return "rubber duck" if spec.shape == "duck" else spec.noun


def distractor_shape(spec: EpisodeSpec, rng: np.random.Generator) -> str:
    """A cube when a relabel stacks on the distractor, else any shape but a second duck."""
    if "on_object" in spec.relabels:
        return "cube"
    shapes = [shape for shape in ("cube", "lego", "duck") if not (shape == "duck" == spec.shape)]
    return str(shapes[int(rng.integers(len(shapes)))])


def build_scene(world: World, spec: EpisodeSpec, rng: np.random.Generator) -> Scene:
    """Draw colours and a layout, then load everything into the world."""
    colors = [str(c) for c in rng.permutation(PALETTE)]
    other_shape = distractor_shape(spec, rng)
    layout = sample_layout(spec, other_shape, rng)
    yaws = rng.uniform(-0.5, 0.5, size=3)
    obj = ObjectSpec("object", spec.shape, colors[0], layout.start, float(yaws[0]))
    distractor = ObjectSpec("distractor", other_shape, colors[1], layout.distractor, float(yaws[1]))
    world.add_object(obj)
    world.add_object(distractor)
    base = None
    if spec.goal_kind == "stack":
        base = ObjectSpec("base", "cube", colors[2], layout.goal, 0.0)
        world.add_object(base)
        goal = GoalSpec("goal", "stack", base="base")
        goal_noun = object_noun(base)
    else:
        goal = GoalSpec("goal", spec.goal_kind, layout.goal, color=colors[3])
        goal_noun = "tray" if spec.goal_kind == "tray" else f"{colors[3]} circle"
    world.add_goal(goal)
    circle = GoalSpec("circle", "circle", layout.circle, color=colors[4])
    world.add_goal(circle)
    if "on_object" in spec.relabels:
        world.add_goal(GoalSpec("on_distractor", "stack", base="distractor"))
    return Scene(obj, distractor, goal, goal_noun, circle, base, int(rng.integers(3)), layout)
