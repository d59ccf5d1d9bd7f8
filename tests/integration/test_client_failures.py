"""Failed requests end to end: helm-run, stats.json and `roboreward report`, official (charged 4) and failed=skip.

tests/integration/test_model_families.py already checks, on one subset, that two 503s are retried and a permanent 400 is
counted in stats.json. This file adds what it does not cover: per request, some rows fail for good
(HTTP 400) and others once (HTTP 503, then answered: a transient error the ``openai`` package retries); the
run completes; the permanent failures are ``failed_request`` in stats.json and in ``roboreward report``'s
failure-mode table and are charged 4.0 each in ``abs_error`` (official, ``failed=max_error``), or left out
with ``failed=skip`` in the run entry; the report's macro MAE is the run's.

Two helm-runs (one per policy, each with its own fake and request cache) run at once over the whole sample.
Which rows fail is derived from the sample's tasks at test time.
"""

import collections
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fakes import FakeModelServer, Recorded, Reply, media_parts
from tests.helpers.harness import (
    PROD_ENV,
    TIMEOUT,
    check_completed,
    gold_of,
    helm_environment,
    helm_run_command,
    private_local_path,
    prompt_of,
    read_json,
    request_states,
    run_stats,
    sha256,
)
from tests.helpers.sample import sample_rows

MODEL = "teetone/roboreward-8b,model_deployment=vllm/roboreward-8b"  # the vLLM path, against the loopback fake
DISPLAY_NAME = "RoboReward 8B"
PERMANENT = "video exceeds the maximum context length"
POLICIES = {"max_error": "", "skip": ",failed=skip"}


def run_name(policy: str) -> str:
    return ("roboreward:subset=all,data=sample,video=native" + POLICIES[policy]
            + ",model=teetone_roboreward-8b,model_deployment=vllm_roboreward-8b")


def task_of(prompt: str) -> str:
    return prompt.rsplit("\n\nTask: ", 1)[1]


def score_for(prompt: str) -> int:
    return int(sha256(prompt.encode()), 16) % 5 + 1


def plan() -> tuple[str, tuple[str, ...]]:
    """(the task whose rows fail for good, the tasks whose rows fail once), from the sample's tasks."""
    tasks = sorted({row["task"] for row in sample_rows()})
    assert len(tasks) >= 4, "the sample needs four distinct tasks"
    return tasks[0], (tasks[1], tasks[2])


class Flaky:
    """The fake's behaviour: 400 for the permanent task, 503 on the first attempt of each transient request."""

    def __init__(self) -> None:
        self.permanent, self.transient = plan()
        self.attempts: dict[tuple[str, str], int] = collections.Counter()
        self.lock = threading.Lock()

    def __call__(self, recorded: Recorded) -> Reply:
        parts = media_parts(recorded)
        prompt = parts[0].text or ""
        key = (prompt, sha256(b"".join(p.data or b"" for p in parts[1:])))
        with self.lock:
            self.attempts[key] += 1
            attempt = self.attempts[key]
        task = task_of(prompt)
        if task == self.permanent:
            return Reply(status=400, error=PERMANENT)
        if task in self.transient and attempt == 1:
            return Reply(status=503, error="overloaded, try again", headers={"retry-after-ms": "10"})
        return Reply(text=f"ANSWER: {score_for(prompt)}")


@dataclass
class PolicyRun:
    policy: str
    workdir: Path
    run_dir: Path
    flaky: Flaky
    requests: list[Recorded] = field(default_factory=list)
    states: list[dict[str, Any]] = field(default_factory=list)
    per_instance: dict[str, dict[str, float]] = field(default_factory=dict)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, PolicyRun]:
    root = tmp_path_factory.mktemp("failures")
    out: dict[str, PolicyRun] = {}
    fakes = {policy: FakeModelServer(Flaky()) for policy in POLICIES}
    processes = {}
    try:
        for policy, suffix in POLICIES.items():
            fake = fakes[policy].start()
            workdir = root / policy
            workdir.mkdir()
            command = helm_run_command([f"roboreward:subset=all,data=sample,model={MODEL}{suffix}"], policy,
                                       private_local_path(workdir / "local", fake))
            log = open(workdir / "helm-run.log", "w")  # closed once the process ended
            processes[policy] = (subprocess.Popen(command, cwd=workdir, env=helm_environment(fake), stdout=log,
                                                  stderr=subprocess.STDOUT, text=True), log)
        for policy, (process, log) in processes.items():
            try:
                process.wait(timeout=TIMEOUT)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
                log.close()
            workdir = root / policy
            output = (workdir / "helm-run.log").read_text(errors="replace")
            check_completed(subprocess.CompletedProcess(process.args, process.returncode, output, output),
                            f"helm-run (failed={policy})")
            run = PolicyRun(policy, workdir, workdir / "benchmark_output" / "runs" / policy / run_name(policy),
                            fakes[policy].behaviour, fakes[policy].requests)  # type: ignore[arg-type]
            run.states = request_states(run.run_dir)
            for entry in read_json(run.run_dir / "per_instance_stats.json"):
                run.per_instance[entry["instance_id"]] = {
                    s["name"]["name"]: s["mean"] for s in entry["stats"] if "perturbation" not in s["name"]}
            out[policy] = run
    finally:
        for fake in fakes.values():
            fake.stop()
    return out


def report(run: PolicyRun) -> tuple[str, str]:
    """``roboreward report`` on the run's suite: (stdout, report.md)."""
    out = run.workdir / "report"
    process = subprocess.run([sys.executable, "-m", "helm_roboreward.cli", "report", "--suite", run.policy,
                              "--out", str(out), "--resamples", "200", "--local-path", str(PROD_ENV)],
                             cwd=run.workdir, env={**os.environ, "MPLBACKEND": "Agg"}, capture_output=True,
                             text=True, timeout=TIMEOUT)
    check_completed(process, "roboreward report")
    return process.stdout, (out / "report.md").read_text(encoding="utf-8")


def split_rows(run: PolicyRun) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(permanently failed, transiently failed, other) request states."""
    permanent = [s for s in run.states if task_of(prompt_of(s)) == run.flaky.permanent]
    transient = [s for s in run.states if task_of(prompt_of(s)) in run.flaky.transient]
    others = [s for s in run.states if s not in permanent and s not in transient]
    assert permanent and transient and others
    return permanent, transient, others


def macro(errors: dict[str, list[float]]) -> float:
    means = [sum(values) / len(values) for values in errors.values()]
    return sum(means) / len(means)


@pytest.mark.parametrize("policy", list(POLICIES))
def test_transient_failures_are_retried_and_succeed(runs: dict[str, PolicyRun], policy: str) -> None:
    run = runs[policy]
    permanent, transient, others = split_rows(run)
    for state in transient + others:
        assert state["result"]["success"] is True
        assert state["result"]["completions"][0]["text"] == f"ANSWER: {score_for(prompt_of(state))}"
        assert run.per_instance[state["instance"]["id"]]["failed_request"] == 0
    attempts = run.flaky.attempts
    for state in transient:
        assert attempts[_key(state, run)] == 2, "a transient 503 is retried once, then answered"
    for state in permanent:
        assert attempts[_key(state, run)] == 1, "a permanent 400 is not retried"
    assert len(run.requests) == len(run.states) + len(transient)


def _key(state: dict[str, Any], run: PolicyRun) -> tuple[str, str]:
    """The fake's attempt key of an instance, from the media files the request pointed to."""
    media = state["request"]["multimodal_prompt"]["media_objects"][1:]
    data = b"".join((run.workdir / m["location"]).read_bytes() for m in media)
    return prompt_of(state), sha256(data)


@pytest.mark.parametrize("policy", list(POLICIES))
def test_permanent_failures_in_stats(runs: dict[str, PolicyRun], policy: str) -> None:
    run = runs[policy]
    permanent, _, _ = split_rows(run)
    errors: dict[str, list[float]] = collections.defaultdict(list)
    for state in run.states:
        stats = run.per_instance[state["instance"]["id"]]
        subset = state["instance"]["extra_data"]["subset"]
        if state in permanent:
            assert state["result"]["success"] is False
            assert "400" in state["result"]["error"] and PERMANENT in state["result"]["error"]
            assert stats["failed_request"] == 1
            if policy == "skip":
                assert "abs_error" not in stats, "a failed request must be left out of the MAE"
                continue
            assert (stats["abs_error"], stats["squared_error"]) == (4, 16)
            assert "invalid_output" not in stats  # charged, but not an invalid output: no answer came
            errors[subset].append(4.0)
        else:
            errors[subset].append(abs(score_for(prompt_of(state)) - gold_of(state)))
            assert stats["abs_error"] == errors[subset][-1]
    stats = run_stats(run.run_dir)
    counted = [e for values in errors.values() for e in values]
    assert stats["num_instances"] == len(run.states) == len(sample_rows())
    assert stats["failed_request"] == pytest.approx(len(permanent) / len(run.states), abs=1e-12)
    assert stats["abs_error"] == pytest.approx(sum(counted) / len(counted), abs=1e-12)
    assert stats["macro_mae"] == pytest.approx(macro(errors), abs=1e-12)
    assert len(counted) == len(run.states) - (len(permanent) if policy == "skip" else 0)


@pytest.mark.parametrize("policy", list(POLICIES))
def test_report_failure_modes_and_macro_mae(runs: dict[str, PolicyRun], policy: str) -> None:
    run = runs[policy]
    permanent, _, _ = split_rows(run)
    stdout, text = report(run)
    rows = len(run.states)
    failed_cell = f"{len(permanent)} ({len(permanent) / rows:.1%})"
    section = text.split("## Failure modes", 1)[1].split("\n## ", 1)[0]
    assert f"| {DISPLAY_NAME} | {rows} | {failed_cell} |" in section, section
    macro_mae = run_stats(run.run_dir)["macro_mae"]
    match = re.search(rf"{re.escape(DISPLAY_NAME)}: macro MAE (\d+\.\d+)", stdout)
    assert match, stdout
    assert float(match.group(1)) == pytest.approx(macro_mae, abs=5e-4)
