"""helm-summarize and roboreward report at the leaderboard's real size: 25 models x 23 subsets = 575 runs.

Builds the synthetic 2,831-row copy of ``warm_leaderboard.py`` (the published row counts per subset, tiny videos),
runs the 23 subset entries once with the offline constant baseline, then clones those 23 runs for 25 model names
(registered in a ``--local-path`` of their own), which is what summarize reads: 575 runs of 2,831 rows each model.
Then it times, in fresh processes, with CPU seconds (user + system) and peak memory (``/usr/bin/time``; on a
shared machine the CPU seconds move less than the wall clock):

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


def timed(command: list[str], cwd: Path) -> tuple[float, float, float, int]:
    """``(seconds, CPU seconds, peak resident MB, exit status)`` of one command in a fresh process."""
    started = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", *command], cwd=cwd, capture_output=True, text=True,
                          env=environment())
    seconds = time.perf_counter() - started
    last = done.stderr.strip().splitlines()[-1].split() if done.stderr.strip() else ["0", "0", "0"]
    if done.returncode != 0:
        print(done.stdout[-1500:], done.stderr[-1500:])
    return seconds, float(last[1]) + float(last[2]), int(last[0]) / 1024, done.returncode


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
    rows = []
    for label, extra in (("helm-summarize (default --num-threads 8)", []),
                         ("helm-summarize --num-threads 1", ["--num-threads", "1"])):
        rows.append((label, *timed(summarize + extra, work)))
    report = [str(BIN / "roboreward"), "report", "--suite", suite, "--output-path", "benchmark_output",
              "--local-path", str(local), "--out", str(work / "report")]
    rows.append(("roboreward report", *timed(report, work)))
    print(f"{'command':45} {'seconds':>8} {'CPU s':>8} {'peak MB':>8} {'exit':>5}")
    for label, seconds, cpu, peak, status in rows:
        print(f"{label:45} {seconds:8.1f} {cpu:8.1f} {peak:8.0f} {status:5d}")
    print(f"summarize (default threads) + report: {rows[0][1] + rows[2][1]:.1f} s wall, "
          f"{rows[0][2] + rows[2][2]:.1f} s CPU; load average at the end: {os.getloadavg()[0]:.2f}")
    print(f"default threads / one thread: {rows[0][1] / rows[1][1]:.2f}x (python {sys.version.split()[0]})")
    return 0 if all(status == 0 for *_, status in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
