"""The sample's README: what it is, how it was made, the thresholds, the counts and how to regenerate it.

Every number in it comes from the code (thresholds, cameras, counts), so it cannot drift from the data.
A copy for the default seed is kept at ``scripts/sim/SAMPLE_README.md`` (a test keeps the two equal).
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata

from .episodes import CAMERAS, CLIP_POINTS, EPISODES, SUBSET_PLANS
from .labels import thresholds_table
from .motions import MISS_OFFSET, OUTSIDE_GAP
from .records import Row, counts_table
from .robots import ARMS, CAPTURE_DISTANCE
from .video import CRF, FPS, GOP, PRESET
from .world import SHAPES, TRAY_SCALE

GRIPPERS = {"panda": "parallel gripper (two fingers)", "kuka": "suction cup (fixed to the flange)"}
ROBOT_NAMES = {"panda": "Franka Panda (`franka_panda/panda.urdf`)", "kuka": "KUKA iiwa (`kuka_iiwa/model.urdf`)"}

OUTCOMES = (
    ("success", "grasp, carry, put down on the goal, release, retreat (or push onto the goal)"),
    ("stop_short", "carried over the goal and still held there at the end"),
    ("release_outside", f"put down just outside the goal (centre {OUTSIDE_GAP['tray']} m from a tray's centre, "
     f"{OUTSIDE_GAP['circle']} m from a circle's, {OUTSIDE_GAP['stack']} m from the base cube's)"),
    ("drop_transit", "released mid-air {drop:.0%} of the way to the goal; it falls and stays short"),
    ("push_partial", "pushed only {push:.0%} of the way to the goal"),
    ("wrong_target", "put down on the second circle instead of the named goal"),
    ("missed_grasp", f"the gripper closes {MISS_OFFSET * 100:.0f} cm beside the object, then goes through the "
     "motions empty"),
)


def outcomes_table(rows: Sequence[Row]) -> list[str]:
    """Outcome variants of the natural rollouts and the labels they produced in this sample."""
    specs = EPISODES["sim_arena"]
    drop = next(spec.drop_fraction for spec in specs if spec.outcome == "drop_transit")
    push = next(spec.push_fraction for spec in specs if spec.outcome == "push_partial")
    lines = ["| outcome | what happens | labels in this sample |", "|---|---|---|"]
    for name, template in OUTCOMES:
        what = template.format(drop=drop, push=push)
        labels = sorted({row.reward for row in rows if row.kind == "natural" and row.state["outcome"] == name})
        lines.append(f"| `{name}` | {what} | {', '.join(str(label) for label in labels) or '-'} |")
    return lines


def robots_table() -> list[str]:
    """Subsets, robots, grippers and cameras."""
    lines = ["| subset | kind of rows | robot | gripper | cameras (pixels) |", "|---|---|---|---|---|"]
    for plan in SUBSET_PLANS:
        cameras = ", ".join(f"{c} ({CAMERAS[c].width}x{CAMERAS[c].height})" for c in plan.cameras)
        kind = "natural rollouts" if plan.natural else "originals, clips, counterfactual relabels"
        lines.append(f"| `{plan.id}` | {kind} | {ROBOT_NAMES[plan.robot]} | {GRIPPERS[plan.robot]} | {cameras} |")
    return lines


def cameras_table() -> list[str]:
    """Camera positions (metres; the robots stand at x <= 0 facing +x, the table top is at z = 0.626)."""
    lines = ["| camera | eye (x, y, z) | looks at | field of view |", "|---|---|---|---|"]
    for camera in CAMERAS.values():
        eye = ", ".join(f"{v:.2f}" for v in camera.eye)
        target = ", ".join(f"{v:.2f}" for v in camera.target)
        lines.append(f"| {camera.name} | ({eye}) | ({target}) | {camera.fov:.0f} deg |")
    return lines


def render_readme(rows: Sequence[Row], seed: int, total_bytes: int) -> str:
    """The README text for a generated sample."""
    subsets = [plan.id for plan in SUBSET_PLANS]
    counts = counts_table([(row.subset, row.kind, row.reward) for row in rows], subsets)
    videos = sum(1 for row in rows if row.kind != "counterfactual")
    outcomes = "\n".join(outcomes_table(rows))
    clips = "\n".join(f"  - `{name}`: {fraction:.0%} into the `{move}` move"
                      for name, (move, fraction) in CLIP_POINTS.items())
    shapes = ",\n  ".join(f"`{urdf}` (scale {scale})" for urdf, scale, _ in SHAPES.values())
    arms = ", ".join(f"{name} at x = {spec.base[0]:.2f} m" for name, spec in ARMS.items())
    return TEMPLATE.format(
        pybullet=metadata.version("pybullet"), av=metadata.version("av"), fps=FPS, gop=GOP, crf=CRF, preset=PRESET,
        robots="\n".join(robots_table()), cameras="\n".join(cameras_table()), shapes=shapes, tray=TRAY_SCALE,
        arms=arms, capture=CAPTURE_DISTANCE, outcomes=outcomes, thresholds="\n".join(thresholds_table()),
        clips=clips, counts="\n".join(counts), rows=len(rows), videos=videos, seed=seed,
        sessions=len({spec.session for spec in EPISODES["sim_arena"]}),
        megabytes=total_bytes / 1e6,
    )


TEMPLATE = """# Simulated RoboRewardBench sample

A small **simulated** sample for offline runs, demos and tests. It is **not real robot data**:
every video is a scripted rollout in the pybullet physics simulator, rendered on the CPU. It copies
the layout and the naming conventions of the real dataset's `test` split, so the same loader reads
both, but its scenes, robots and cameras are much simpler than the benchmark's. **Scores on this
sample are not comparable with RoboRewardBench results** and say little about a model's quality there.

This file is written by `scripts/make_sim_sample.py` (a copy is kept at `scripts/sim/SAMPLE_README.md`);
edit the generator, not this file.

## Layout

```
test/metadata.jsonl        one JSON object per line, sorted by file_name
test/<subset>/<name>.mp4   H.264 (libx264 preset {preset}, yuv420p, no mbtree), {fps} fps, GOP {gop}, CRF {crf}
sim_state.jsonl            the simulator state behind every label (beside this README, not under test/)
```

Each metadata row has exactly the keys of the real split: `file_name` (relative to `test/`), `task`,
`reward` (integer 1..5) and `gpt5_mini_check` (a generated note on the label). `sim_state.jsonl` holds
one line per row (same order): the row's kind, robot, camera, the labelled frame, the object and goal
positions, the held flag, the distances, the rule that gave the label, and for clips and relabels
their source video. It is for checking labels; never show it (or `gpt5_mini_check`, or file names) to
a model.

## How it was made

- Simulator: pybullet {pybullet} in `p.DIRECT` mode (no GUI), physics at 240 Hz, one frame every 24
  steps (10 fps), rendered with `p.ER_TINY_RENDERER` with shadows. Videos encoded with PyAV {av}.
- Scene (all from `pybullet_data`): `table/table.urdf`; goals are a `tray/tray.urdf` (scale {tray}),
  a flat coloured circle, or a cube to stack on; objects are
  {shapes};
  cubes and bricks coloured with `changeVisualShape`. Every scene also has a distractor object and a
  second coloured circle. Robots stand on the table's near edge ({arms}).
- Control: the tool tip follows minimum-jerk paths between scripted waypoints; every physics step
  solves `p.calculateInverseKinematics` (pointing down) and drives the joints with position control.
- Grasping is a fixed constraint (`p.createConstraint(..., p.JOINT_FIXED, ...)`) made when the gripper
  closes with its tool tip within {capture} m of the object's grasp point (the Panda's fingers also
  close visibly; the KUKA has a suction cup), removed on release. Friction grasps in pybullet slip
  at random; the constraint makes grasp, drop and release exact scripted events. Released or pushed
  objects move freely under physics, and every label is read from the simulator afterwards.

{robots}

{cameras}

Tasks: pick-and-place into a tray or onto a circle, stacking a cube on a cube, and (Panda only: the
iiwa's round cup slides off a pushed cube) pushing a cube onto a circle. Outcome variants of the
natural `sim_arena` rollouts (labels always come from the simulator state; the last column shows what
each variant produced):

{outcomes}

## Labels from simulator state

Labels follow the benchmark's rubric (judge only the final state) through fixed rules, tried in
order, on the task's object at the video's last frame. Distances are horizontal, from the object's
centre (its bounding box's centre) to the goal centre; heights are of the object's lowest point
above the goal's support surface (tray floor, table, top of the base cube); progress is
1 - distance / distance at the first frame; held means a grasp constraint is active.

| score | rule | condition |
|---|---|---|
| 5 | `rests_at_goal` | distance <= at-goal radius, released, \\|height\\| <= `REST_TOLERANCE` |
| 4 | `held_above_goal` | held, distance <= at-goal radius, height <= `HOVER_MAX` |
| 4 | `released_near_goal` | released, distance <= near radius (slightly outside, or not settled on the goal) |
| 3 | `good_progress` | progress >= `GOOD_PROGRESS` |
| 2 | `small_change` | held, or lifted >= `LIFT_MIN`, or progress >= `NUDGE_PROGRESS` |
| 1 | `no_change` | otherwise |

{thresholds}

The thresholds live in one place, `scripts/sim/labels.py`. The generator keeps only rows whose
label does not change when the object is moved by 5 mm along any axis, and a test recomputes every
label from `sim_state.jsonl`.

## Augmentation (sim_panda, sim_kuka)

As in the paper, the Open X-Embodiment-like subsets hold three kinds of rows:

- originals `<subset>_originalsplit_<split>_index_<n>[_<c>].mp4`: successful rollouts, reward 5. The
  optional duplicate suffix `_<c>` marks another stored duplicate of the same bytes, as in the real split: it
  says nothing about the gold score;
- temporal clips `<episode>_attempt_<m>_score_<k>.mp4` (`<episode>` without a duplicate suffix, attempts from 1):
  the original cut at a point of the script, labelled from the state at the clip's last frame, `k` ==
  reward, 1..4 (a cut whose state would be a 5 is not made). Some originals carry a duplicate suffix, so a clip's
  name need not equal its original's without the clip part. Cut points:
{clips}
- counterfactual relabels: byte-identical duplicates of the original under the episode's name with another
  duplicate suffix (or none, beside a suffixed original; one under another index number, as the real split also has),
  with another task: another object (the untouched distractor), another goal (the second circle), or a
  relation that does not hold (stack the object on the distractor cube); reward 1..4 from the final state.

`sim_arena` holds natural rollouts (successes and failures) named like RoboArena,
`<uuid>_<letter>_<left|right>.mp4`: the uuid is a session (one scene and task, {sessions} sessions here), each
letter (A..G) one rollout of it (another scripted policy outcome from the same start), and each rollout has two
camera views sharing the task and the reward.

## Counts

Rows by subset, kind and reward ({rows} rows; {videos} distinct videos, the relabels being duplicates;
{megabytes:.1f} MB in all):

{counts}

## Regenerate

```
pip install -e .[sim]
python scripts/make_sim_sample.py --out helm_roboreward/sample
```

The script replaces `test/`, `sim_state.jsonl` and this README in the output folder. Seed: `{seed}`
(`--seed`). The output is a deterministic function of the seed: the same metadata, states and
decoded frames on every run, and with the same pybullet and FFmpeg/x264 builds the same bytes
(single-threaded x264 with bit-exact flags and without its macroblock tree, which reads
uninitialised memory; every episode simulated and encoded in a fresh process). `--jobs` only
changes the speed (about a minute with two processes on two cores).
"""
