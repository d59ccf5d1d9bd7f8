"""Simulating every episode of the sample and turning it into rows: natural rollouts, originals, clips, relabels.

Each episode is an independent job (own process, own physics server, own seeded generator), so jobs
can run in parallel and the result does not depend on how many run at once.
"""

from __future__ import annotations

import multiprocessing
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .episodes import CAMERAS, CLIP_POINTS, EPISODES, OTHER_INDEX, SCENE_FIELDS, SUBSET_PLANS, EpisodeSpec, SubsetPlan
from .labels import MAX_SCORE, TaskState, is_stable, progress_score, rounded, state_to_record
from .motions import Plan, script
from .records import TEMPLATES, Row, check_text, task_text
from .robots import ARMS, Arm
from .rollout import Recording, run_moves, settle
from .scenes import Scene, build_scene, object_noun
from .video import encode
from .world import World

MIN_CLIP_FRAMES = 10
"""A temporal clip lasts at least one second."""
SETTLED_SPEED = 0.02
"""The last frame of a full rollout must show the object held or at rest (m/s)."""
CLIP_MAX_SPEED = 0.2
"""A clip may end while an object is pushed, but never while it falls (m/s)."""
ARENA_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "helm-roboreward/sim-sample/sim_arena")
ARENA_LETTERS = "ABCDEFG"
"""RoboArena's rollout letters: one per policy evaluated in a session."""
OXE_SPLITS = ("train", "test")
"""The ``originalsplit`` an Open X-Embodiment-like episode is named after (mostly ``train``, as in the data)."""
MAX_INDEX = 20000
SESSION_STREAM = 2000
"""Seeds the scene generator of a session: ``[seed, subset, SESSION_STREAM, session]``."""


@dataclass(frozen=True)
class Job:
    """One episode to simulate."""

    subset_index: int
    episode_index: int
    name: str
    """File stem: ``<session uuid>_<letter>`` (arena, a camera suffix follows) or
    ``<subset>_originalsplit_<split>_index_<n>`` (a copy suffix, or a clip suffix, may follow)."""
    seed: int
    test_dir: str
    other_name: str = ""
    """The episode's name under another index number (for a relabel stored there)."""


def session_spec(subset: str, session: int) -> EpisodeSpec:
    """The scene of a natural subset's session: its first rollout's spec (the others must share its scene fields)."""
    members = [spec for spec in EPISODES[subset] if spec.session == session]
    for spec in members[1:]:
        differing = [name for name in SCENE_FIELDS if getattr(spec, name) != getattr(members[0], name)]
        if differing:
            raise AssertionError(f"{subset} session {session}: rollouts differ in {differing}")
    return members[0]


def arena_names(seed: int, specs: tuple[EpisodeSpec, ...], rng: np.random.Generator) -> list[str]:
    """RoboArena names: ``<session uuid>_<letter>``, distinct letters within a session."""
    names = [""] * len(specs)
    for session in sorted({spec.session for spec in specs}):
        members = [index for index, spec in enumerate(specs) if spec.session == session]
        session_id = uuid.uuid5(ARENA_NAMESPACE, f"seed={seed}/session={session}")
        letters = sorted(str(letter) for letter in rng.choice(list(ARENA_LETTERS), size=len(members), replace=False))
        for index, letter in zip(members, letters, strict=True):
            names[index] = f"{session_id}_{letter}"
    return names


def make_jobs(seed: int, test_dir: Path) -> list[Job]:
    """Every episode of every subset, with its deterministic name."""
    jobs: list[Job] = []
    for subset_index, plan in enumerate(SUBSET_PLANS):
        specs = EPISODES[plan.id]
        count = len(specs)
        rng = np.random.default_rng([seed, subset_index, 1000])
        others = [""] * count
        if plan.natural:
            names = arena_names(seed, specs, rng)
        else:
            numbers = [int(n) for n in rng.choice(MAX_INDEX, size=2 * count, replace=False)]
            splits = [str(split) for split in rng.choice(OXE_SPLITS, size=count, p=[0.8, 0.2])]
            names = [f"{plan.id}_originalsplit_{splits[i]}_index_{numbers[i]}" for i in range(count)]
            others = [f"{plan.id}_originalsplit_{splits[i]}_index_{numbers[count + i]}" for i in range(count)]
        jobs += [Job(subset_index, i, names[i], seed, str(test_dir), others[i]) for i in range(count)]
    return jobs


def task_state(recording: Recording, frame: int, obj: str, goal: str, kind: str) -> TaskState:
    """The label inputs for one object and goal at one frame."""
    first, now = recording.states[0], recording.states[frame]
    return TaskState(kind, first.centres[obj], now.centres[obj], first.bottoms[obj], now.bottoms[obj],
                     now.goals[goal], now.held == obj)


@dataclass(frozen=True)
class Target:
    """The object and goal a task text names, with the nouns and the template family."""

    obj: str
    goal: str
    kind: str
    obj_noun: str
    goal_noun: str
    family: str


def main_target(spec: EpisodeSpec, scene: Scene) -> Target:
    """The episode's own task."""
    family = "push" if spec.task == "push" else spec.goal_kind
    return Target("object", "goal", spec.goal_kind, object_noun(scene.obj), scene.goal_noun, family)


def relabel_target(relabel: str, spec: EpisodeSpec, scene: Scene) -> Target:
    """The task of a counterfactual relabel: another object, another goal, or a relation that does not hold."""
    own = main_target(spec, scene)
    if relabel == "other_object":
        return Target("distractor", "goal", own.kind, object_noun(scene.distractor), own.goal_noun, own.family)
    if relabel == "other_goal":
        family = "push" if spec.task == "push" else "circle"
        return Target("object", "circle", "circle", own.obj_noun, f"{scene.circle.color} circle", family)
    if relabel == "on_object":
        return Target("object", "on_distractor", "stack", own.obj_noun, object_noun(scene.distractor), "stack")
    raise ValueError(f"unknown relabel {relabel!r}")


@dataclass(frozen=True)
class Episode:
    """A finished simulation: what the rows are built from."""

    job: Job
    plan: SubsetPlan
    spec: EpisodeSpec
    scene: Scene
    recording: Recording

    def row(self, file_name: str, kind: str, frame: int, target: Target, extra: dict[str, Any]) -> Row:
        """A row labelled from the state at ``frame`` for ``target``."""
        state = rounded(task_state(self.recording, frame, target.obj, target.goal, target.kind))
        score, rule = progress_score(state)
        if file_name and not is_stable(state):
            raise AssertionError(f"{file_name}: score {score} ({rule}) is within 5 mm of a threshold: {state}")
        template = TEMPLATES[target.family][self.scene.template]
        num_frames = len(self.recording.states)
        entry = {
            "robot": self.plan.robot, "task_type": self.spec.task, "outcome": self.spec.outcome,
            "object": target.obj_noun, "goal": target.goal_noun, "frame": frame, "num_frames": num_frames,
            "fraction": round((frame + 1) / num_frames, 3),
            "object_speed": round(self.recording.states[frame].speeds[target.obj], 4), **extra,
            **state_to_record(state),
        }
        return Row(file_name, task_text(template, target.obj_noun, target.goal_noun), score,
                   check_text(rule, target.obj_noun, target.goal_noun, target.family, state.held), kind, entry)


def simulate(job: Job) -> Episode:
    """Build the scene, run the scripted rollout and record it."""
    plan = SUBSET_PLANS[job.subset_index]
    spec = EPISODES[plan.id][job.episode_index]
    rng = np.random.default_rng([job.seed, job.subset_index, job.episode_index])
    scene_spec, scene_rng = spec, rng
    if plan.natural:  # the rollouts of one session start from one scene: drawn from the session's own generator
        scene_spec = session_spec(plan.id, spec.session)
        scene_rng = np.random.default_rng([job.seed, job.subset_index, SESSION_STREAM, spec.session])
    world = World()
    try:
        scene = build_scene(world, scene_spec, scene_rng)
        arm = Arm(world, ARMS[plan.robot])
        settle(world, arm)
        intent = Plan(spec.task, "object", "goal", spec.outcome, "circle" if spec.outcome == "wrong_target" else "",
                      spec.drop_fraction, spec.push_fraction)
        recording = run_moves(world, arm, script(world, arm, intent, rng), [CAMERAS[c] for c in plan.cameras])
    finally:
        world.close()
    return Episode(job, plan, spec, scene, recording)


def check_settled(episode: Episode, frame: int, limit: float, what: str) -> None:
    """Raise unless the task's object is held or slower than ``limit`` at ``frame``."""
    state = episode.recording.states[frame]
    if state.held != "object" and state.speeds["object"] > limit:
        raise AssertionError(f"{what}: the object still moves at {state.speeds['object']:.3f} m/s at frame {frame}")


def natural_rows(episode: Episode) -> list[Row]:
    """One row per camera, RoboArena style: ``<uuid>_<letter>_<camera>.mp4``, labelled from the last frame."""
    last = len(episode.recording.states) - 1
    check_settled(episode, last, SETTLED_SPEED, episode.job.name)
    target = main_target(episode.spec, episode.scene)
    rows = []
    for camera in episode.plan.cameras:
        file_name = f"{episode.plan.id}/{episode.job.name}_{camera}.mp4"
        encode(episode.recording.frames[camera], Path(episode.job.test_dir) / file_name)
        rows.append(episode.row(file_name, "natural", last, target, {"camera": camera}))
    return rows


def clip_frame(episode: Episode, point: str) -> int:
    """The frame where a clip ends: the first frame at the given fraction of the given move."""
    phase, fraction = CLIP_POINTS[point]
    for index, state in enumerate(episode.recording.states):
        if state.phase == phase and state.phase_progress >= fraction - 1e-9:
            return index
    raise AssertionError(f"{episode.job.name}: no frame in move {phase!r} for clip point {point!r}")


def stored_names(episode: Episode) -> list[str]:
    """The file names of the original and of each relabel (copies of one video), with their copy suffixes."""
    spec, job = episode.spec, episode.job
    copies = spec.copies or ("", *(str(number) for number in range(1, len(spec.relabels) + 1)))
    if len(copies) != 1 + len(spec.relabels) or len(set(copies)) != len(copies) or copies[0] == OTHER_INDEX:
        raise AssertionError(f"{job.name}: copies {copies} do not name the original and {len(spec.relabels)} relabels")
    stems = [job.other_name if copy == OTHER_INDEX else job.name + (f"_{copy}" if copy else "") for copy in copies]
    return [f"{episode.plan.id}/{stem}.mp4" for stem in stems]


def openx_rows(episode: Episode) -> list[Row]:
    """The original success, its temporal clips and its counterfactual relabels."""
    test_dir = Path(episode.job.test_dir)
    camera = episode.plan.cameras[0]
    frames = episode.recording.frames[camera]
    last = len(frames) - 1
    check_settled(episode, last, SETTLED_SPEED, episode.job.name)
    target = main_target(episode.spec, episode.scene)
    original, *relabel_names = stored_names(episode)
    encode(frames, test_dir / original)
    rows = [episode.row(original, "original", last, target, {"camera": camera})]
    if rows[0].reward != MAX_SCORE:
        raise AssertionError(f"{original}: the original ends with score {rows[0].reward}, not {MAX_SCORE}")
    for attempt, point in enumerate(episode.spec.clips, start=1):
        end = clip_frame(episode, point)
        check_settled(episode, end, CLIP_MAX_SPEED, f"{original} clip {point}")
        probe = episode.row("", "clip", end, target, {})
        if not 1 <= probe.reward < MAX_SCORE or end + 1 < MIN_CLIP_FRAMES:
            raise AssertionError(f"{original}: clip {point} ends at frame {end} with score {probe.reward}")
        file_name = f"{episode.plan.id}/{episode.job.name}_attempt_{attempt}_score_{probe.reward}.mp4"
        encode(frames[: end + 1], test_dir / file_name)
        rows.append(episode.row(file_name, "clip", end, target,
                                {"camera": camera, "clip_point": point, "source": original}))
    for file_name, relabel in zip(relabel_names, episode.spec.relabels, strict=True):
        row = episode.row(file_name, "counterfactual", last, relabel_target(relabel, episode.spec, episode.scene),
                          {"camera": camera, "relabel": relabel, "source": original})
        if not 1 <= row.reward < MAX_SCORE:
            raise AssertionError(f"{file_name}: relabel {relabel} scores {row.reward}")
        shutil.copyfile(test_dir / original, test_dir / file_name)
        rows.append(row)
    return rows


def run_job(job: Job) -> list[Row]:
    """Simulate one episode and write its videos; returns its rows."""
    episode = simulate(job)
    return natural_rows(episode) if episode.plan.natural else openx_rows(episode)


def generate(test_dir: Path, seed: int, processes: int, episodes: int | None = None) -> list[Row]:
    """Every row of the sample, sorted by file name (videos are written under ``test_dir``).

    ``episodes``: only the first ``episodes`` episodes of each subset (a spot check: each episode is simulated
    in a fresh process from its own seed, so its rows and videos are those of the whole sample's).
    """
    jobs = make_jobs(seed, test_dir)
    if episodes is not None:
        jobs = [job for job in jobs if job.episode_index < episodes]
    # One fresh process per episode, even with processes=1: no episode can depend on what ran before it in
    # the same process, so the output does not depend on --jobs by construction.
    with multiprocessing.get_context("spawn").Pool(max(1, processes), maxtasksperchild=1) as pool:
        results = pool.map(run_job, jobs, chunksize=1)
    rows = sorted((row for result in results for row in result), key=lambda row: row.file_name)
    if episodes is not None:
        return rows
    for plan in SUBSET_PLANS:
        missing = set(range(1, MAX_SCORE + 1)) - {row.reward for row in rows if row.subset == plan.id}
        if missing:
            raise AssertionError(f"subset {plan.id} has no rows with reward {sorted(missing)}")
    return rows
