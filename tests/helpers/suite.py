"""The shared sample suite: one working folder where the real ``helm-run`` and ``helm-summarize`` ran, once per session.

Built by :func:`build_sample_suite` (the ``sample_suite`` fixture of ``tests/conftest.py``) in a temporary
working directory with ``-o benchmark_output`` (relative), as a user runs them; four helm-runs at once (each
with its own ``--local-path`` and so its own request cache; the media cache is safe to share), then the
summaries at once:

- suite ``demo``: ``helm-run --conf-paths run_specs/roboreward_sample.conf`` (the two offline baselines on
  the three sample subsets), summarized with the package's schema, ``RoboRewardSummarizer`` and
  ``--schema-validation error`` (the end-to-end, report, browser, missing-media and path-safety tests);
- suite ``demo_native``: the ``sim_kuka`` sample subset sent as native mp4 (``video=native``) and one run of a
  real subset id (``berkeley_fanuc_manipulation``) read from a local copy made of sample videos, so the full
  "RoboReward" leaderboard has a column (its own suite: HELM averages runs of the same model and subset in
  one leaderboard cell, so the native run must not join ``demo``); summarized (the browser tests);
- suite ``demo_long``: one run of the subset with the longest id, summarized with its exit status kept (HELM
  crashed on it with "File name too long" until the summarizer shortened table names: the browser test);
- suite ``leaks``: the whole sample (``subset=all``) as a local copy whose every video carries its file name
  and stem (the label) in its container tags, with a frames model and a native-video model against the
  loopback fake model server (``scripted`` answers) and both baselines; not summarized (the leak tests).

Tests never change this folder: a test that modifies a suite works on :meth:`SampleSuite.copy` (the
``copy_suite`` fixture); the fixture checks at the end of the session that nothing here changed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers.fakes import FakeModelServer, Recorded, Reply, media_parts
from tests.helpers.harness import (
    SAMPLE_CONF,
    TIMEOUT,
    cli,
    finish_logged,
    helm_environment,
    helm_run_command,
    helm_summarize_command,
    private_local_path,
    reap,
    sha256,
    start_logged,
)
from tests.helpers.sample import SAMPLE, sample_rows
from tests.helpers.videos import make_tagged_copy

SUITE = "demo"
NATIVE_SUITE = "demo_native"
LONG_SUITE = "demo_long"
LEAK_SUITE = "leaks"

SUBSETS = {"sim_arena": "Sim Arena (sample)", "sim_panda": "Sim Panda (sample)", "sim_kuka": "Sim KUKA (sample)"}
"""The sample subsets and their display names (the leaderboard's column titles)."""
MODELS = {"constant-3": "Constant 3 (baseline)", "uniform-random": "Uniform random (baseline)"}
"""The baselines of suite ``demo`` and their display names."""
MEDIA_PREFIX = "benchmark_output/scenarios/roboreward/"

NATIVE_ENTRY = "roboreward:subset=sim_kuka,data=sample,video=native,model=baseline/constant-3"
NATIVE_RUN = "roboreward:subset=sim_kuka,data=sample,video=native,model=baseline_constant-3"
LOCAL_COPY = "r"
"""A local copy of the data layout, relative to the working directory (kept short on purpose: the long id test)."""
FANUC = "berkeley_fanuc_manipulation"
LONGEST = "utokyo_pr2_tabletop_manipulation_converted_externally_to_rlds"


def run_name(subset: str, model: str) -> str:
    """The name of a suite ``demo`` run (``model``: a key of :data:`MODELS`)."""
    return f"roboreward:subset={subset},data=sample,video=frames,model=baseline_{model}"


# --------------------------------------------------------------------------------------------- the leak runs


@dataclass(frozen=True)
class LeakModel:
    """One model of the ``leaks`` suite."""

    key: str
    entry_model: str
    run_model: str
    served: str
    """The model name the fake receives ('' for the offline baselines, which send nothing)."""
    mode: str


LEAK_MODELS = [
    LeakModel("frames", "meta/llama-4-scout-17b-16e-instruct", "meta_llama-4-scout-17b-16e-instruct",
              "meta-llama/Llama-4-Scout-17B-16E-Instruct", "frames"),
    LeakModel("native", "teetone/roboreward-8b,model_deployment=vllm/roboreward-8b",
              "teetone_roboreward-8b,model_deployment=vllm_roboreward-8b", "teetone/RoboReward-8B", "native"),
    LeakModel("constant", "baseline/constant-3", "baseline_constant-3", "", "frames"),
    LeakModel("random", "baseline/uniform-random", "baseline_uniform-random", "", "frames"),
]


def leak_run_name(model: LeakModel, data: Path) -> str:
    from helm_roboreward.helm_frontend.routing import run_name_data  # HELM: only when a test reads the leak runs

    return f"roboreward:subset=all,data={run_name_data(str(data))},video={model.mode},model={model.run_model}"


def tagged_sample(root: Path) -> Path:
    """The sample with every video's container tags holding its file name and stem (``..._score_<k>``).

    Real files could carry such tags; the native mp4s must not pass them on (and the frames carry none).
    """
    for row in sample_rows():
        name = str(row["file_name"])
        target = root / "test" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        make_tagged_copy(SAMPLE / name, target, title=name.rsplit("/", 1)[-1].rsplit(".", 1)[0], comment=name)
    shutil.copyfile(SAMPLE / "metadata.jsonl", root / "test" / "metadata.jsonl")
    return root


def scripted_leak_answer(recorded: Recorded) -> Reply:
    """The fake's answer in the leak runs: a score from a digest of what the request carried."""
    parts = media_parts(recorded)
    digest = sha256(b"".join(p.data or b"" for p in parts[1:]) + (parts[0].text or "").encode())
    return Reply(text=f"ANSWER: {int(digest, 16) % 5 + 1}")


# --------------------------------------------------------------------------------------------- the local copy


def local_copy_rows() -> list[dict[str, Any]]:
    """The sample rows each subset of the local copy is made of: the first three of ``sim_kuka``."""
    return [row for row in sample_rows() if row["file_name"].startswith("sim_kuka/")][:3]


def make_local_copy(folder: Path, subsets: Sequence[str]) -> None:
    """A local copy of the data layout (``data=<folder>``) whose subsets are real ids, made of sample videos."""
    kuka = local_copy_rows()
    lines = []
    for subset in subsets:
        (folder / "test" / subset).mkdir(parents=True)
        for row in kuka:
            name = row["file_name"].split("/", 1)[1]
            shutil.copyfile(SAMPLE / row["file_name"], folder / "test" / subset / name)
            lines.append(json.dumps({**row, "file_name": f"{subset}/{name}"}))
    (folder / "test" / "metadata.jsonl").write_text("\n".join(lines) + "\n")


# --------------------------------------------------------------------------------------------- the suite


def file_states(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` (links not followed): relative path -> (size, mtime_ns)."""
    states = {}
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            info = path.stat()
            states[str(path.relative_to(folder))] = (info.st_size, info.st_mtime_ns)
    return states


@dataclass
class SuiteCopy:
    """A private copy of the shared suite (to modify): ``workdir/benchmark_output/runs/<suite>``."""

    workdir: Path
    suite: str

    @property
    def output(self) -> Path:
        return self.workdir / "benchmark_output"

    @property
    def runs(self) -> Path:
        """``benchmark_output/runs/<suite>``."""
        return self.output / "runs" / self.suite


@dataclass
class SampleSuite:
    """The shared working folder: ``workdir/benchmark_output`` with the suites above, and what the fake received."""

    workdir: Path
    leak_data: Path
    """The tagged copy of the sample the ``leaks`` suite ran on."""
    leak_requests: list[Recorded]
    """Every request the loopback fake received (all from the ``leaks`` suite), in arrival order."""
    long_summarize_code: int
    long_summarize_output: str
    run_files: dict[str, frozenset[str]]
    """Per suite, the files helm-run wrote under ``runs/<suite>`` (relative), before any summarize."""
    timings: dict[str, float] = field(default_factory=dict)
    snapshot: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def output(self) -> Path:
        return self.workdir / "benchmark_output"

    def runs(self, suite: str = SUITE) -> Path:
        """``benchmark_output/runs/<suite>``."""
        return self.output / "runs" / suite

    def run_dir(self, subset: str, model: str) -> Path:
        """A run of suite ``demo`` (``model``: a key of :data:`MODELS`)."""
        return self.runs() / run_name(subset, model)

    def copy(self, target: Path, *, suite: str = SUITE, summarized: bool = True, media: str = "link",
             keep: Callable[[str], bool] | None = None) -> SuiteCopy:
        """A private copy of one suite under ``target/benchmark_output``.

        Args:
            target: The copy's working folder (created).
            suite: Which suite.
            summarized: False: only what helm-run wrote (no ``groups/``, ``schema.json``, predictions pages ...),
                as before any ``helm-summarize``.
            media: ``link``: ``scenarios/`` is a link to the shared media (read them, never change them);
                ``copy``: a real copy; ``none``: no media at all (a copy of ``runs/`` alone).
            keep: Which run folders to copy (by name; only with ``summarized=False``); None: all.
        """
        assert keep is None or not summarized, "leaving runs out of a summarized suite makes its summary wrong"
        source, copy = self.runs(suite), SuiteCopy(target, suite)
        wanted = self.run_files[suite]
        for path in sorted(source.rglob("*")):
            relative = str(path.relative_to(source))
            if path.is_dir() or (not summarized and relative not in wanted):
                continue
            if keep is not None and not keep(relative.split(os.sep, 1)[0]):
                continue
            destination = copy.runs / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, destination)
        copy.runs.mkdir(parents=True, exist_ok=True)
        if media == "link":
            (copy.output / "scenarios").symlink_to(self.output / "scenarios")
        elif media == "copy":
            shutil.copytree(self.output / "scenarios", copy.output / "scenarios", symlinks=True)
        else:
            assert media == "none", media
        return copy

    def assert_unchanged(self) -> None:
        """Nothing under ``benchmark_output`` changed since the suite was built."""
        now = file_states(self.output)
        changed = sorted(path for path in set(now) | set(self.snapshot) if now.get(path) != self.snapshot.get(path))
        assert not changed, f"a test changed the shared sample suite (copy it first): {changed[:10]}"


def _helm_run_conf(local: Path) -> list[str]:
    """``helm-run --conf-paths run_specs/roboreward_sample.conf`` (the README's demo command)."""
    return [cli("helm-run"), "--conf-paths", str(SAMPLE_CONF), "--suite", SUITE, "-m", "100", "--local-path",
            str(local), "-o", "benchmark_output"]


def _check(name: str, code: int, output: str) -> None:
    assert code == 0, f"{name} exited with {code}\n--- output (tail)\n{output[-6000:]}"


def build_sample_suite(root: Path) -> SampleSuite:
    """Build the shared suite under ``root`` (see the module docstring)."""
    started = time.monotonic()
    workdir = root / "work"
    logs = root / "logs"
    workdir.mkdir()
    logs.mkdir()
    leak_data = tagged_sample(root / "leak-data")
    make_local_copy(workdir / LOCAL_COPY, [FANUC, LONGEST])
    timings = {"data": time.monotonic() - started}
    with FakeModelServer(scripted_leak_answer) as fake:
        plain = helm_environment()
        runs: dict[str, tuple[list[str], dict[str, str]]] = {
            SUITE: (_helm_run_conf(private_local_path(workdir / "local")), plain),
            NATIVE_SUITE: (helm_run_command(
                [NATIVE_ENTRY, f"roboreward:subset={FANUC},data={LOCAL_COPY},video=frames,model=baseline/constant-3"],
                NATIVE_SUITE, private_local_path(workdir / "local-native")), plain),
            LONG_SUITE: (helm_run_command(
                [f"roboreward:subset={LONGEST},data={LOCAL_COPY},video=frames,model=baseline/constant-3"],
                LONG_SUITE, private_local_path(workdir / "local-long")), plain),
            LEAK_SUITE: (helm_run_command(
                [f"roboreward:subset=all,data={leak_data},model={m.entry_model}" for m in LEAK_MODELS], LEAK_SUITE,
                private_local_path(workdir / "local-leaks", fake)), helm_environment(fake)),
        }
        processes: dict[str, subprocess.Popen[str]] = {}
        try:
            for suite, (command, env) in runs.items():
                processes[suite] = start_logged(command, workdir, env, logs / f"helm-run-{suite}.log")
            for suite, process in processes.items():
                _check(f"helm-run --suite {suite}", *finish_logged(process, logs / f"helm-run-{suite}.log", TIMEOUT))
        finally:  # one failed or timed out: the others are ended and waited for too
            reap(processes.values())
        leak_requests = fake.requests
    timings["helm-run x4"] = time.monotonic() - started - sum(timings.values())
    run_files = {suite: frozenset(str(p.relative_to(workdir / "benchmark_output" / "runs" / suite))
                                  for p in (workdir / "benchmark_output" / "runs" / suite).rglob("*") if p.is_file())
                 for suite in runs}
    summaries: dict[str, subprocess.Popen[str]] = {}
    try:
        for suite in (SUITE, NATIVE_SUITE, LONG_SUITE):
            summaries[suite] = start_logged(helm_summarize_command(suite), workdir, helm_environment(),
                                            logs / f"helm-summarize-{suite}.log")
        results = {suite: finish_logged(process, logs / f"helm-summarize-{suite}.log", TIMEOUT)
                   for suite, process in summaries.items()}
    finally:
        reap(summaries.values())
    for suite in (SUITE, NATIVE_SUITE):
        _check(f"helm-summarize --suite {suite}", *results[suite])
    timings["helm-summarize x3"] = time.monotonic() - started - sum(timings.values())
    built = SampleSuite(workdir=workdir, leak_data=leak_data, leak_requests=leak_requests,
                        long_summarize_code=results[LONG_SUITE][0],
                        long_summarize_output=results[LONG_SUITE][1][-4000:], run_files=run_files, timings=timings)
    built.snapshot = file_states(built.output)
    return built
