"""helm-run at the leaderboard's real size: 25 offline models x 23 subsets = 575 runs, this checkout against another.

Builds the synthetic 2,831-row copy of ``warm_leaderboard.py`` (the published row counts per subset, tiny videos)
and a ``--local-path`` registering ``bench/model-NN`` (constant-baseline deployments, as in
``summarize_full_size.py``), warms each checkout's frame cache with one model, then times README's ``helm-run``
over the 23 subset entries with ``--models-to-run`` naming every bench model (``-m 3000``, HELM's default ``-n``),
in a fresh process, a fresh suite and an empty request cache (HELM keeps it in ``<local-path>/cache``), wall and
CPU seconds and peak memory (``/usr/bin/time``). With ``--baseline DIR`` the two checkouts run in turn (A B A B),
and the ratios are taken pair by pair. Goal (issue 26): at most 250 s on a quiet 2-core machine.

    python benchmarks/run_full_size.py [--baseline DIR] [--models 25] [--repeat 1] [--work-dir DIR]

The entries leave ``model=`` out: HELM applies ``--models-to-run`` only to an entry whose model is not one name.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from summarize_full_size import local_path
from warm_leaderboard import build_copy

from helm_roboreward.protocol.rules import OFFICIAL_SUBSETS

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
GOAL_SECONDS = 250.0


def helm_run(checkout: Path, data: Path, work: Path, local: Path, models: list[str],
             suite: str) -> tuple[float, float, float]:
    """``(seconds, CPU seconds, peak resident MB)`` of one helm-run of ``checkout``, its request cache empty."""
    shutil.rmtree(local / "cache", ignore_errors=True)
    entries = [f"roboreward:subset={subset.id},data={data}" for subset in OFFICIAL_SUBSETS]
    command = ["/usr/bin/time", "-f", "%M %U %S", str(BIN / "helm-run"), "--run-entries", *entries,
               "--models-to-run", *models, "--suite", suite, "-m", "3000", "--local-path", str(local),
               "--output-path", str(work / "benchmark_output")]
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                   "PYTHONPATH": str(checkout)}
    started = time.perf_counter()
    done = subprocess.run(command, cwd=work, env=environment, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"helm-run failed in {checkout} (exit {done.returncode}):\n{done.stderr[-3000:]}")
    runs = len([path for path in (work / "benchmark_output" / "runs" / suite).iterdir() if ":" in path.name])
    if runs != len(models) * len(OFFICIAL_SUBSETS):
        sys.exit(f"{checkout}: {runs} runs written, {len(models) * len(OFFICIAL_SUBSETS)} expected")
    peak, user, system = done.stderr.strip().splitlines()[-1].split()
    shutil.rmtree(work / "benchmark_output" / "runs" / suite)
    return seconds, float(user) + float(system), int(peak) / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout (B), e.g. a worktree of main~N")
    parser.add_argument("--models", type=int, default=25)
    parser.add_argument("--repeat", type=int, default=1, help="timed runs of each checkout (medians are printed)")
    parser.add_argument("--work-dir", default=None, help="where the copy and the outputs go (default: a temp dir)")
    args = parser.parse_args()
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="roboreward-run-full-"))
    data = work / "copy"
    if not (data / "test" / "metadata.jsonl").exists():
        build_copy(data)
    local = local_path(work / "local", args.models)
    models = [f"bench/model-{index:02d}" for index in range(args.models)]
    checkouts = {"A (this checkout)": REPO}
    if args.baseline is not None:
        checkouts["B (baseline)"] = args.baseline.resolve()
    for name, checkout in checkouts.items():  # the frame cache warm, as a leaderboard's later models find it
        folder = work / name[0]
        folder.mkdir(exist_ok=True)
        helm_run(checkout, data, folder, local, models[:1], "warm-up")
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in checkouts}
    for index in range(args.repeat):
        for name, checkout in checkouts.items():
            results[name].append(helm_run(checkout, data, work / name[0], local, models, f"timed-{index}"))
    runs = args.models * len(OFFICIAL_SUBSETS)
    print(f"helm-run, {runs} runs ({args.models} models x {len(OFFICIAL_SUBSETS)} subsets, 2,831 rows per model), "
          f"frame cache warm, request cache empty; {args.repeat} run(s) each, medians")
    for name, timings in results.items():
        wall = statistics.median(seconds for seconds, _, _ in timings)
        cpu = statistics.median(cpu for _, cpu, _ in timings)
        peak = max(peak for _, _, peak in timings)
        print(f"  {name:<20} wall {wall:7.1f} s ({wall / runs:.3f} s a run, {wall / GOAL_SECONDS:.2f}x the goal of "
              f"{GOAL_SECONDS:.0f} s)   cpu {cpu:7.1f} s   peak {peak:5.0f} MB   {checkouts[name]}")
    if args.baseline is not None:
        pairs = zip(results["A (this checkout)"], results["B (baseline)"], strict=True)
        ratios = [a[0] / b[0] for a, b in pairs]
        print(f"  A/B wall, pair by pair: {statistics.median(ratios):.2f}x ({min(ratios):.2f}..{max(ratios):.2f})")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
