"""Generate the simulated RoboRewardBench sample: scripted pybullet rollouts labelled from simulator state.

Needs the ``sim`` extra (``pip install -e .[sim]``, i.e. pybullet). Writes, in the layout of the
real dataset's ``test`` split::

    <out>/test/metadata.jsonl                  file_name, task, reward, gpt5_mini_check; sorted
    <out>/test/sim_arena/<session uuid>_<letter A-G>_<left|right>.mp4
    <out>/test/sim_panda/sim_panda_originalsplit_<split>_index_<n>[_<copy> | _attempt_<m>_score_<k>].mp4
    <out>/test/sim_kuka/...
    <out>/sim_state.jsonl                      the simulator state behind every label
    <out>/README.md

* ``sim_arena``: natural rollouts of a Franka Panda (successes and failures: stop short, release
  outside the goal, drop in transit, partial push, missed grasp, wrong target), two camera views
  per rollout and several rollouts per session (one scene and task) like RoboArena.
* ``sim_panda`` (Panda, front camera) and ``sim_kuka`` (KUKA iiwa with a suction cup, side
  camera): Open X-Embodiment-like originals (reward 5), temporal clips of them (reward 1..4 read
  from the state at the clip's last frame) and counterfactual relabels (a byte-identical copy with
  another task: another object, another goal, or a relation that does not hold), stored under copy
  suffixes like the real split's (docs/protocol.md, section 1).

Labels come from the simulator state at the video's last frame (``scripts/sim/labels.py``, the one
place the thresholds are defined). Rules, first match wins: 5 the object rests at the goal and is
released; 4 held over the goal, or released slightly outside it; 3 progress (1 - distance / start
distance) >= GOOD_PROGRESS; 2 held, lifted or nudged toward the goal; 1 otherwise. Thresholds:

| threshold | value | meaning |
|---|---|---|
| `tray` at-goal / near radius | 0.06 m / 0.18 m | tray (0.24 m wide, flat floor about 0.16 m wide) |
| `circle` at-goal / near radius | 0.06 m / 0.12 m | flat coloured circle, radius 0.06 m |
| `stack` at-goal / near radius | 0.02 m / 0.08 m | top face of a 0.05 m cube |
| `REST_TOLERANCE` | 0.015 m | a released object this close to the goal surface rests on it |
| `HOVER_MAX` | 0.20 m | highest a held object may be to count as held above the goal |
| `GOOD_PROGRESS` | 0.50 | progress (1 - distance / start distance) for score 3 |
| `NUDGE_PROGRESS` | 0.10 | progress for score 2 |
| `LIFT_MIN` | 0.03 m | lift of the lowest point that counts as lifted (score 2) |

Everything derives from ``--seed``: reruns write the same metadata, states and decoded frames.

Usage: ``python scripts/make_sim_sample.py [--out DIR] [--seed N] [--jobs N] [--episodes N]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sim.readme import render_readme  # noqa: E402
from sim.records import METADATA_FILE, SPLIT, STATE_FILE, metadata_text, state_text  # noqa: E402
from sim.sample import generate  # noqa: E402

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "helm_roboreward" / "sample"
MAX_BYTES = 5_000_000


def folder_size(folder: Path) -> int:
    """Total size of the files under a folder, in bytes."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def write_sample(out: Path, seed: int, processes: int, episodes: int | None = None) -> tuple[int, int]:
    """Generate the sample into ``out``; returns the number of rows and the total size in bytes.

    With ``episodes``, only that many episodes per subset, and no README (a partial sample, for checks).
    """
    test_dir = out / SPLIT
    if test_dir.exists():
        shutil.rmtree(test_dir)
    test_dir.mkdir(parents=True)
    rows = generate(test_dir, seed, processes, episodes)
    (test_dir / METADATA_FILE).write_text(metadata_text(rows), encoding="utf-8", newline="\n")
    (out / STATE_FILE).write_text(state_text(rows), encoding="utf-8", newline="\n")
    data_bytes = folder_size(test_dir) + (out / STATE_FILE).stat().st_size
    if episodes is not None:
        return len(rows), data_bytes
    (out / "README.md").write_text(render_readme(rows, seed, data_bytes), encoding="utf-8", newline="\n")
    return len(rows), data_bytes + (out / "README.md").stat().st_size


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="sample folder (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="parallel simulation processes; the output does not depend on it (default: %(default)s)")
    parser.add_argument("--episodes", type=int, default=None,
                        help="only the first N episodes of each subset: a partial sample without README, whose rows "
                             "and videos equal the whole sample's (a determinism spot check)")
    args = parser.parse_args(argv)
    if args.episodes is not None and args.episodes < 1:
        parser.error("--episodes must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    count, total = write_sample(args.out, args.seed, args.jobs, args.episodes)
    elapsed = time.perf_counter() - started
    print(f"wrote {count} rows to {args.out}: {total / 1e6:.2f} MB ({total} bytes) in {elapsed:.1f} s")
    if total > MAX_BYTES:
        print(f"error: the sample is larger than {MAX_BYTES / 1e6:.0f} MB", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
