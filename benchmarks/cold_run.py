"""A cold helm-run of the three sample subsets: this checkout against another, wall and CPU seconds, medians.

Each run starts in a new empty folder (no frame cache, no request cache, no benchmark_output), runs README's
helm-run for the bundled sample's three subsets with the constant baseline, and is timed as a whole process
(wall clock, and the CPU seconds of helm-run and every process it started). The two checkouts run in turn, A B A
B ..., so a drift in the machine's speed hits both; the ratios are taken pair by pair. After each run the
benchmark also lists the processes the run left behind (there should be none).

    python benchmarks/cold_run.py --baseline DIR [--runs 5]   # DIR: another checkout, e.g. a git worktree of main~N
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SUBSETS = ("sim_arena", "sim_panda", "sim_kuka")
MODEL = "baseline/constant-3"


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def left_behind(folder: Path) -> list[str]:
    """Processes still running whose command line or working folder names the run's folder."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if str(folder) in command or cwd.startswith(str(folder)):
            found.append(f"{entry.name}: {command[:120]}")
    return found


def one_run(checkout: Path) -> tuple[float, float, list[str]]:
    """Wall seconds, CPU seconds and the processes left behind of one cold run of ``checkout``."""
    with tempfile.TemporaryDirectory(prefix="roboreward-cold-") as name:
        folder = Path(name)
        entries = [f"roboreward:subset={subset},data=sample,model={MODEL}" for subset in SUBSETS]
        environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                       "PYTHONPATH": str(checkout)}
        before_cpu, started = children_cpu(), time.perf_counter()
        done = subprocess.run([str(BIN / "helm-run"), "--run-entries", *entries, "--suite", "cold", "-m", "1000"],
                              cwd=folder, env=environment, capture_output=True, text=True)
        wall, cpu = time.perf_counter() - started, children_cpu() - before_cpu
        time.sleep(0.5)  # a process that outlives helm-run by more than this is left behind
        stray = left_behind(folder)
        if done.returncode != 0:
            sys.exit(f"helm-run failed in {checkout} (exit {done.returncode}):\n{done.stderr[-3000:]}")
        return wall, cpu, stray


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, required=True, help="the other checkout (B)")
    parser.add_argument("--runs", type=int, default=5, help="counted runs of each (after one warm-up pair)")
    options = parser.parse_args()
    checkouts = {"A (this checkout)": REPO, "B (baseline)": options.baseline.resolve()}
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in checkouts}
    strays: list[str] = []
    for round_index in range(options.runs + 1):
        for name, checkout in checkouts.items():
            wall, cpu, stray = one_run(checkout)
            strays += [f"{name}: {line}" for line in stray]
            if round_index:  # the first pair warms the OS file cache
                results[name].append((wall, cpu))
    print(f"cold helm-run, {len(SUBSETS)} sample subsets, {MODEL}, {options.runs} runs each (medians, min..max)")
    for name, runs in results.items():
        walls, cpus = [wall for wall, _ in runs], [cpu for _, cpu in runs]
        print(f"  {name:<20} wall {statistics.median(walls):6.2f} s ({min(walls):.2f}..{max(walls):.2f})   "
              f"cpu {statistics.median(cpus):6.2f} s ({min(cpus):.2f}..{max(cpus):.2f})   {checkouts[name]}")
    a, b = results["A (this checkout)"], results["B (baseline)"]
    wall_ratios = [x[0] / y[0] for x, y in zip(a, b, strict=True)]
    cpu_ratios = [x[1] / y[1] for x, y in zip(a, b, strict=True)]
    print(f"  A/B pair by pair: wall {statistics.median(wall_ratios):.2f}x ({min(wall_ratios):.2f}..."
          f"{max(wall_ratios):.2f}), cpu {statistics.median(cpu_ratios):.2f}x")
    print("processes left behind after a run: " + ("none" if not strays else "\n  " + "\n  ".join(strays)))


if __name__ == "__main__":
    main()
