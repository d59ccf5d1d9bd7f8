"""helm-summarize and roboreward report at the leaderboard's real size: 25 models x 23 subsets = 575 runs.

Builds the synthetic 2,831-row copy of ``warm_leaderboard.py`` (the published row counts per subset, tiny videos),
runs the 23 subset entries once with the offline constant baseline, then clones those 23 runs for 25 model names
(registered in a ``--local-path`` of their own), which is what summarize reads: 575 runs of 2,831 rows each model.
Then it times, in fresh processes, with CPU seconds (user + system) and peak memory (``/usr/bin/time``; on a
shared machine the CPU seconds move less than the wall clock), the seconds to the first output line and those from
HELM's "Done." to the process's exit:

- README's ``helm-summarize`` command with this package's summarizer and HELM's default ``--num-threads`` (8);
  before the fix it crashed in every try on Python 3.11.7 (mako compiling templates in 8 threads at once);
- the same with ``--num-threads 1`` (the old workaround), for the ratio;
- ``roboreward report`` on the summarized suite.

    python benchmarks/summarize_full_size.py [--work-dir DIR] [--models 25] [--reuse]

With ``--work-dir DIR`` the suite is kept; ``--reuse`` times it again without rebuilding (helm-run and the cloning
take minutes). The suite's run files are those helm-run wrote; helm-summarize rewrites its predictions pages and
tables each time, the same every time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from warm_leaderboard import build_copy

from helm_roboreward.protocol.rules import OFFICIAL_SUBSETS

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SOURCE_MODEL = "baseline/constant-3"


def environment() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def local_path(folder: Path, models: int) -> Path:
    """The package's model files plus ``bench/model-NN`` (constant baseline deployments) for display names."""
    folder.mkdir(parents=True, exist_ok=True)
    metadata = (REPO / "prod_env" / "model_metadata.yaml").read_text(encoding="utf-8")
    deployments = (REPO / "prod_env" / "model_deployments.yaml").read_text(encoding="utf-8")
    for index in range(models):
        name = f"bench/model-{index:02d}"
        metadata += (f"\n  - name: {name}\n    display_name: Bench model {index:02d}\n    description: clone\n"
                     "    creator_organization_name: bench\n    access: open\n    release_date: null\n"
                     "    tags: [VISION_LANGUAGE_MODEL_TAG, UNSUPPORTED_MODEL_TAG]\n")
        deployments += (f"\n  - name: {name}\n    model_name: {name}\n    client_spec:\n      class_name: "
                        "\"helm_roboreward.helm_frontend.clients.baselines.ConstantScoreClient\"\n")
    (folder / "model_metadata.yaml").write_text(metadata, encoding="utf-8")
    (folder / "model_deployments.yaml").write_text(deployments, encoding="utf-8")
    return folder


def run_once(data: Path, work: Path, local: Path, suite: str) -> None:
    entries = [f"roboreward:subset={subset.id},data={data},model={SOURCE_MODEL}" for subset in OFFICIAL_SUBSETS]
    done = subprocess.run([str(BIN / "helm-run"), "--run-entries", *entries, "--suite", suite, "-m", "1000",
                           "--local-path", str(local), "--output-path", "benchmark_output"],
                          cwd=work, capture_output=True, text=True, env=environment())
    if done.returncode != 0:
        raise SystemExit(f"helm-run failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")


def clone_runs(suite_dir: Path, models: int) -> int:
    """Copy the 23 source runs once per bench model, renaming the model in every file; returns the run count."""
    sources = [path for path in suite_dir.iterdir() if path.is_dir() and "model=baseline_constant-3" in path.name]
    for index in range(models):
        name = f"bench/model-{index:02d}"
        for source in sources:
            target = suite_dir / source.name.replace("baseline_constant-3", name.replace("/", "_"))
            target.mkdir()
            for file in source.iterdir():
                text = file.read_text(encoding="utf-8")
                text = text.replace(SOURCE_MODEL, name).replace("baseline_constant-3", name.replace("/", "_"))
                (target / file.name).write_text(text, encoding="utf-8")
    for source in sources:
        shutil.rmtree(source)
    return len(sources) * models


@dataclass
class Timing:
    """One command's figures: wall seconds, and the seconds to its first output line and from HELM's "Done." to its
    exit (None without such a line), CPU seconds (user + system, children included), peak resident MB, exit status."""

    seconds: float
    first_line: float | None
    done_to_exit: float | None
    cpu: float
    peak_mb: float
    status: int


def timed(command: list[str], cwd: Path) -> Timing:
    """Run ``command`` in a fresh process, reading its output (stdout and stderr) line by line as it comes."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as usage:
        started = time.perf_counter()
        process = subprocess.Popen(["/usr/bin/time", "-o", usage.name, "-f", "%M %U %S", *command], cwd=cwd,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=environment())
        assert process.stdout is not None
        first = done = None
        tail: deque[bytes] = deque(maxlen=30)
        for line in process.stdout:
            now = time.perf_counter() - started
            first = now if first is None else first
            if done is None and line.rstrip().endswith(b" Done."):
                done = now
            tail.append(line)
        status = process.wait()
        seconds = time.perf_counter() - started
        fields = (usage.read().strip().splitlines() or ["0 0 0"])[-1].split()
    if status != 0:
        print(b"".join(tail).decode(errors="replace")[-3000:])
    return Timing(seconds, first, None if done is None else seconds - done, float(fields[1]) + float(fields[2]),
                  int(fields[0]) / 1024, status)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work-dir", default=None, help="where the copy and the outputs go (default: a temp dir)")
    parser.add_argument("--models", type=int, default=25)
    parser.add_argument("--reuse", action="store_true", help="time the suite already in --work-dir, build nothing")
    args = parser.parse_args()
    if args.reuse and not args.work_dir:
        parser.error("--reuse needs the --work-dir of an earlier run")
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="roboreward-summarize-"))
    data = work / "copy"
    if not (data / "test" / "metadata.jsonl").exists():
        build_copy(data)
    local = local_path(work / "local", args.models)
    suite = "full"
    suite_dir = work / "benchmark_output" / "runs" / suite
    if args.reuse and not suite_dir.exists():
        parser.error(f"--reuse: no suite in {suite_dir}; run once without --reuse to build it")
    if suite_dir.exists():
        print(f"suite: reusing the runs in {suite_dir}")
    else:
        started = time.perf_counter()
        run_once(data, work, local, suite)
        runs = clone_runs(suite_dir, args.models)
        print(f"suite: {runs} runs ({args.models} models x 23 subsets, 2,831 rows per model), built in "
              f"{time.perf_counter() - started:.0f} s")
    summarize = [str(BIN / "helm-summarize"), "--suite", suite, "--schema-path", str(REPO / "static" /
                 "schema_roboreward.yaml"), "--local-path", str(local), "--output-path", "benchmark_output",
                 "--summarizer-class-name", "helm_roboreward.helm_frontend.summarizer.RoboRewardSummarizer"]
    rows: list[tuple[str, Timing]] = []
    for label, extra in (("helm-summarize (default --num-threads 8)", []),
                         ("helm-summarize --num-threads 1", ["--num-threads", "1"])):
        rows.append((label, timed(summarize + extra, work)))
    report = [str(BIN / "roboreward"), "report", "--suite", suite, "--output-path", "benchmark_output",
              "--local-path", str(local), "--out", str(work / "report")]
    rows.append(("roboreward report", timed(report, work)))
    print(f"{'command':45} {'seconds':>8} {'1st line':>8} {'Done->exit':>10} {'CPU s':>8} {'peak MB':>8} {'exit':>5}")
    for label, timing in rows:
        first = "-" if timing.first_line is None else f"{timing.first_line:.1f}"
        after = "-" if timing.done_to_exit is None else f"{timing.done_to_exit:.2f}"
        print(f"{label:45} {timing.seconds:8.1f} {first:>8} {after:>10} {timing.cpu:8.1f} {timing.peak_mb:8.0f} "
              f"{timing.status:5d}")
    print(f"summarize (default threads) + report: {rows[0][1].seconds + rows[2][1].seconds:.1f} s wall, "
          f"{rows[0][1].cpu + rows[2][1].cpu:.1f} s CPU; load average at the end: {os.getloadavg()[0]:.2f}")
    print(f"default threads / one thread: {rows[0][1].seconds / rows[1][1].seconds:.2f}x "
          f"(python {sys.version.split()[0]})")
    return 0 if all(timing.status == 0 for _, timing in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
