"""A whole leaderboard for one offline model on a warm cache: default ROBOREWARD_JOBS against ROBOREWARD_JOBS=1.

Builds a synthetic local copy shaped like the test split (2,831 rows over the 23 official subsets with their
published row counts; RoboArena rows natural, the other subsets split into originals, byte-identical
counterfactual copies and clips; tiny 64x48 h264 videos so building it takes seconds), prepares it once
(``roboreward prepare``), then times ``helm-run`` over the 23 subset entries with the offline constant
baseline, warm, twice: with the default ``jobs`` (the CPU count) and with ``jobs=1``. Each run writes a fresh
suite with a fresh request cache, so only the media step differs.

Before the fix, every run started a spawn process pool even when every video was cached (52% of in-run
time); now hits are decided in the parent and workers start only for misses. Target: default jobs within
1.1x of jobs=1.

    python benchmarks/warm_leaderboard.py [--work-dir DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import av
import numpy as np

from helm_roboreward.protocol.rules import OFFICIAL_SUBSETS

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TARGET = 1.1


def write_video(path: Path, seed: int, frames: int = 20) -> None:
    rng = np.random.default_rng(seed)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=10, options={"threads": "1"})
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        base = rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)
        for index in range(frames):
            frame = av.VideoFrame.from_ndarray(np.roll(base, index, axis=1), format="rgb24")
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


def build_copy(root: Path) -> int:
    """The synthetic local copy; returns the number of distinct videos."""
    rows, distinct, seed = [], 0, 0
    test = root / "test"
    for subset in OFFICIAL_SUBSETS:
        folder = test / subset.id
        folder.mkdir(parents=True, exist_ok=True)
        for index in range(subset.num_rows):
            seed += 1
            if subset.natural:
                name, reward = f"{subset.id}_{index:04d}_0_left.mp4", 1 + index % 5
                write_video(folder / name, seed)
                distinct += 1
            elif index % 3 == 0:
                name, reward = f"episode_{index:04d}.mp4", 5
                write_video(folder / name, seed)
                distinct += 1
            elif index % 3 == 1:  # a counterfactual relabel: the previous original's bytes
                name, reward = f"episode_{index - 1:04d}_relabel_0.mp4", 1 + index % 4
                shutil.copyfile(folder / f"episode_{index - 1:04d}.mp4", folder / name)
            else:
                name, reward = f"episode_{index - 2:04d}_attempt_0_score_{1 + index % 4}.mp4", 1 + index % 4
                write_video(folder / name, seed, frames=12)
                distinct += 1
            rows.append({"file_name": f"{subset.id}/{name}", "task": f"task {index % 7}", "reward": reward})
    (test / "metadata.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return distinct


def helm_run(data: Path, out: Path, suite: str, jobs: str) -> float:
    """One helm-run over the 23 subsets; ``jobs`` is the ROBOREWARD_JOBS value ("" for the default)."""
    entries = [f"roboreward:subset={subset.id},data={data},model=baseline/constant-3" for subset in OFFICIAL_SUBSETS]
    local = out / f"local-{suite}"
    shutil.copytree(REPO / "prod_env", local, symlinks=False, ignore=shutil.ignore_patterns("cache"))
    started = time.perf_counter()
    done = subprocess.run([str(BIN / "helm-run"), "--run-entries", *entries, "--suite", suite, "-m", "1000",
                           "--local-path", str(local), "--output-path", str(out / "benchmark_output")],
                          cwd=out, capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", **({"ROBOREWARD_JOBS": jobs} if jobs else {})})
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"helm-run failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work-dir", default=None, help="where the copy and the outputs go (default: a temp dir)")
    parser.add_argument("--repeat", type=int, default=2, help="timed pairs of runs (medians are reported)")
    args = parser.parse_args()
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="roboreward-warm-"))
    data = work / "copy"
    started = time.perf_counter()
    distinct = build_copy(data) if not (data / "test" / "metadata.jsonl").exists() else -1
    print(f"synthetic copy: 2,831 rows, 23 subsets, {distinct if distinct >= 0 else 'cached'} distinct videos, "
          f"{time.perf_counter() - started:.1f} s")
    prepare = [str(BIN / "roboreward"), "prepare", "--data", str(data), "--output-path", str(work / "benchmark_output"),
               "--quiet"]
    started = time.perf_counter()
    subprocess.run(prepare, check=True, capture_output=True, cwd=work)
    print(f"roboreward prepare (cold): {time.perf_counter() - started:.1f} s")
    default, single = [], []
    for index in range(args.repeat):
        default.append(helm_run(data, work, f"default{index}", ""))
        single.append(helm_run(data, work, f"single{index}", "1"))
    d, s = statistics.median(default), statistics.median(single)
    print(f"helm-run, 23 subsets, warm cache: default jobs ({os.cpu_count()}) {d:.1f} s, jobs=1 {s:.1f} s "
          f"(medians of {args.repeat})")
    ratio = d / s
    print(f"default / jobs=1: {ratio:.2f}x   [target <= {TARGET}x: {'MET' if ratio <= TARGET else 'MISSED'}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
