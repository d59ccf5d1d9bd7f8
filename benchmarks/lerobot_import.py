"""Importing and labelling a 50-episode LeRobot v3.0 dataset: wall-clock figures for both commands.

Builds a LeRobot v3.0 dataset by its documented layout (tests/helpers/lerobot_datasets.py: AV1 as LeRobot
encodes, libsvtav1 GOP 2; several episodes per shared mp4; ``next.success`` on every other episode), then times,
as a user runs them:

- ``roboreward import-lerobot <ds> --out <copy> --labels-from next.success`` (decode AV1, cut by timestamps,
  encode H.264 per episode), cold, then again (the same import: found, nothing written);
- ``roboreward label <ds> --model baseline/constant-3 --out <dir>`` (an unlabelled working copy, helm-run, the
  outputs), cold, then again (working copy reused; the baseline uses no request cache);
- optionally ``--prefix K``: the same in prefix mode (K clips per episode, the per-frame progress parquet).

    python benchmarks/lerobot_import.py [--episodes 50] [--frames 60] [--fps 30] [--size 160x120] [--prefix 4]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.helpers.lerobot_datasets import EpisodeSpec, write_v3  # noqa: E402  (the repository's layout writer)

BIN = Path(sys.executable).parent
TASKS = ("put the red cube in the bowl", "open the top drawer", "stack the green block on the blue one")


def run(command: list[str], cwd: Path) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    seconds = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(command[:3])} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return seconds, done.stdout


def private_local_path(folder: Path) -> Path:
    """A --local-path with the package's model files, so HELM's request cache stays in the benchmark's folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("model_metadata.yaml", "model_deployments.yaml"):
        (folder / name).symlink_to(REPO / "prod_env" / name)
    return folder


def breakdown(output: str) -> str:
    match = re.search(r"seconds: (.*)", output)
    return match.group(1) if match else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--frames", type=int, default=60, help="frames per episode (default 60: 2 s at 30 fps)")
    parser.add_argument("--fps", type=int, default=30)
    parser.add_argument("--size", default="160x120", help="WIDTHxHEIGHT (default 160x120)")
    parser.add_argument("--prefix", type=int, default=0, help="also label in prefix mode with K anchors")
    parser.add_argument("--work-dir", type=Path, help="default: a fresh temporary folder")
    args = parser.parse_args()
    width, height = (int(part) for part in args.size.split("x"))
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="roboreward-lerobot-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    episodes = [EpisodeSpec(args.frames + (index % 5), TASKS[index % len(TASKS)], index % 2 == 1)
                for index in range(args.episodes)]
    started = time.monotonic()
    dataset = write_v3(work / "dataset", episodes, fps=args.fps, width=width, height=height, episodes_per_file=10)
    frames = sum(spec.length for spec in episodes)
    print(f"dataset: {args.episodes} episodes, {frames} frames ({frames / args.fps:.0f} s of video), {width}x{height} "
          f"at {args.fps} fps, AV1, 10 episodes per mp4; built in {time.monotonic() - started:.1f} s -> {dataset}")
    roboreward = str(BIN / "roboreward")
    local = private_local_path(work / "local")
    cold, _ = run([roboreward, "import-lerobot", str(dataset), "--out", str(work / "copy"), "--labels-from",
                   "next.success", "--quiet"], work)
    warm, _ = run([roboreward, "import-lerobot", str(dataset), "--out", str(work / "copy"), "--labels-from",
                   "next.success", "--quiet"], work)
    size = sum(path.stat().st_size for path in (work / "copy").rglob("*.mp4"))
    print(f"import-lerobot: {cold:.1f} s cold ({args.episodes / cold:.1f} episodes/s, {frames / cold:.0f} frames/s, "
          f"copy {size / 1e6:.1f} MB), {warm:.1f} s again (same import, nothing written)")
    label = [roboreward, "label", str(dataset), "--model", "baseline/constant-3", "--local-path", str(local),
             "--quiet"]
    cold, output = run([*label, "--out", str(work / "labels")], work)
    warm, again = run([*label, "--out", str(work / "labels")], work)
    print(f"label (episode mode, baseline/constant-3): {cold:.1f} s cold ({breakdown(output)}), {warm:.1f} s again "
          f"({breakdown(again)})")
    if args.prefix:
        cold, output = run([*label, "--out", str(work / "labels_prefix"), "--mode", "prefix", "--anchors",
                            str(args.prefix)], work)
        print(f"label (prefix mode, {args.prefix} anchors = {args.episodes * args.prefix} clips): {cold:.1f} s "
              f"({breakdown(output)})")
    import pyarrow.parquet as pq

    rows = pq.read_table(work / "labels" / "episode_rewards.parquet").to_pylist()
    print("episode_rewards.parquet, first rows:")
    for row in rows[:3]:
        print("  " + json.dumps(row))
    print(f"(work folder: {work})")


if __name__ == "__main__":
    main()
