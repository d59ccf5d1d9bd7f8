"""Failed requests end to end: helm-run, stats.json and `roboreward report`, official (charged 4) and failed=skip.

tests/integration/test_model_families.py already checks, on one subset, that two 503s are retried and a permanent 400 is
counted in stats.json. This file adds what it does not cover: per request, some rows fail for good
(HTTP 400) and others once (HTTP 503, then answered: a transient error the ``openai`` package retries); the
run completes; the permanent failures are ``failed_request`` in stats.json and in ``roboreward report``'s
failure-mode table and are charged 4.0 each in ``abs_error`` (official, ``failed=max_error``), or left out
with ``failed=skip`` in the run entry; the report's macro MAE is the run's.

Two helm-runs (one per policy, each with its own fake and request cache) run at once over the whole sample.
Which rows fail is derived from the sample's tasks at test time.

Then replies the client cannot use, a server that never answers, and two servers under one served name: one
helm-run of two deployments of RoboReward 8B on two fakes (the second a "fine-tune served elsewhere" under the
same served model name, sharing HELM's ``vllm.sqlite``); the first fake answers some rows with a malformed 200
(truncated JSON, ``text/plain``, ``{}``, a number as content, no choices) or not at all (the deployment's
``timeout_seconds`` is short). Every such row is one failed request, the good rows keep their scores, the run
completes; a rerun once that server is fixed sends exactly those rows again. Then the one-message Gemini client
with Gemini-shaped malformed replies (client level).
"""

import collections
import copy
import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from helm.common.cache import SqliteCacheConfig
from helm.common.request import Request

from helm_roboreward.helm_frontend.clients.gemini_client import OneMessageGoogleGenAIClient
from tests.helpers.fakes import GEMINI, FakeModelServer, Recorded, Reply, media_parts
from tests.helpers.fakes.server import RawReply, malformed
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
    reap,
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
    finally:  # a failed check on one run: the other helm-runs are ended and waited for too
        reap(process for process, _ in processes.values())
        for _, log in processes.values():
            log.close()
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


# --------------------------------------------------------------------------------------------- unusable replies


BASE = "vllm/roboreward-8b"
ELSEWHERE = "vllm/roboreward-8b-elsewhere"
"""A second deployment of the same model and served name on another server (its own fake)."""
ELSEWHERE_ANSWER = "ANSWER: 1"
SHORT_TIMEOUT = 3.0
NO_ANSWER = "no-answer"
BAD_KINDS = ("truncated-json", "text-plain", "empty-object", "number-content", "empty-choices", NO_ANSWER)
REASONS = {"truncated-json": "not JSON (Content-Type application/json",
           "text-plain": "not JSON (Content-Type text/plain", "empty-object": "no choices",
           "number-content": "message content is a number (3), not text", "empty-choices": "no choices",
           NO_ANSWER: "timed out"}


def bad_plan() -> dict[str, str]:
    """task -> how the broken server answers its rows (the last tasks of the sample; one kind each)."""
    tasks = sorted({row["task"] for row in sample_rows()})
    assert len(tasks) >= len(BAD_KINDS) + 3
    return dict(zip(tasks[-len(BAD_KINDS):], BAD_KINDS, strict=True))


def row_key(recorded: Recorded) -> tuple[str, str]:
    parts = media_parts(recorded)
    return parts[0].text or "", sha256(b"".join(p.data or b"" for p in parts[1:]))


class Broken:
    """Malformed or no answers for the planned tasks until :attr:`fixed`; the row's score otherwise."""

    def __init__(self) -> None:
        self.plan = bad_plan()
        self.fixed = False
        self.attempts: dict[tuple[str, str], int] = collections.Counter()
        self.lock = threading.Lock()

    def __call__(self, recorded: Recorded) -> Reply:
        key = row_key(recorded)
        with self.lock:
            self.attempts[key] += 1
        kind = None if self.fixed else self.plan.get(task_of(key[0]))
        if kind is None:
            return Reply(text=f"ANSWER: {score_for(key[0])}")
        if kind == NO_ANSWER:
            return Reply(delay=3 * SHORT_TIMEOUT)
        return malformed(kind)


def two_server_local_path(folder: Path, base: FakeModelServer, elsewhere: FakeModelServer) -> Path:
    """prod_env's YAML, RoboReward 8B's vLLM deployment with a short timeout and one retry, and its like elsewhere."""
    private_local_path(folder, base)
    config = yaml.safe_load((PROD_ENV / "model_deployments.yaml").read_text(encoding="utf-8"))
    (deployment,) = [d for d in config["model_deployments"] if d["name"] == BASE]
    deployment["client_spec"]["args"].update(timeout_seconds=SHORT_TIMEOUT, max_retries=1)
    elsewhere_deployment = copy.deepcopy(deployment)
    elsewhere_deployment["name"] = ELSEWHERE
    elsewhere_deployment["client_spec"]["args"]["base_url"] = elsewhere.base_url
    config["model_deployments"].append(elsewhere_deployment)
    (folder / "model_deployments.yaml").unlink()
    (folder / "model_deployments.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return folder


def entry(deployment: str) -> str:
    return f"roboreward:subset=all,data=sample,model=teetone/roboreward-8b,model_deployment={deployment}"


@dataclass
class SuiteRun:
    states: dict[str, list[dict[str, Any]]]
    """deployment -> request states."""
    per_instance: dict[str, dict[str, dict[str, float]]]
    """deployment -> instance id -> stat -> value."""
    stats: dict[str, dict[str, float]]


def run_suite(workdir: Path, local: Path, suite: str, deployments: list[str], fake: FakeModelServer) -> SuiteRun:
    command = helm_run_command([entry(d) for d in deployments], suite, local)
    process = subprocess.run(command, cwd=workdir, env=helm_environment(fake), capture_output=True, text=True,
                             timeout=TIMEOUT)
    check_completed(process, f"helm-run ({suite})")
    run = SuiteRun({}, {}, {})
    for deployment in deployments:
        (run_dir,) = [p for p in (workdir / "benchmark_output" / "runs" / suite).iterdir()
                      if p.name.endswith("model_deployment=" + deployment.replace("/", "_"))]
        run.states[deployment] = request_states(run_dir)
        run.per_instance[deployment] = {
            e["instance_id"]: {s["name"]["name"]: s["mean"] for s in e["stats"] if "perturbation" not in s["name"]}
            for e in read_json(run_dir / "per_instance_stats.json")}
        run.stats[deployment] = run_stats(run_dir)
    return run


@dataclass
class TwoServers:
    broken: Broken
    first: SuiteRun
    fixed: SuiteRun
    base_requests: tuple[list[Recorded], list[Recorded]]
    """What the broken server received in the first run, then in the rerun."""
    elsewhere_requests: tuple[list[Recorded], list[Recorded]]


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory: pytest.TempPathFactory) -> TwoServers:
    workdir = tmp_path_factory.mktemp("unusable")
    broken = Broken()
    with FakeModelServer(broken) as base, FakeModelServer(lambda recorded: Reply(text=ELSEWHERE_ANSWER)) as other:
        local = two_server_local_path(workdir / "local", base, other)
        first = run_suite(workdir, local, "unusable", [BASE, ELSEWHERE], base)
        first_requests = (base.requests, other.requests)
        base.clear()
        other.clear()
        broken.fixed = True
        fixed = run_suite(workdir, local, "fixed", [BASE], base)
        return TwoServers(broken, first, fixed, base_requests=(first_requests[0], base.requests),
                          elsewhere_requests=(first_requests[1], other.requests))


def state_key(state: dict[str, Any], workdir: Path) -> tuple[str, str]:
    media = state["request"]["multimodal_prompt"]["media_objects"][1:]
    return prompt_of(state), sha256(b"".join((workdir / m["location"]).read_bytes() for m in media))


def kind_of_state(state: dict[str, Any], plan: dict[str, str]) -> str | None:
    return plan.get(task_of(prompt_of(state)))


def test_unusable_replies_and_time_outs_fail_their_rows_only(two_servers: TwoServers) -> None:
    plan = two_servers.broken.plan
    states = two_servers.first.states[BASE]
    per_instance = two_servers.first.per_instance[BASE]
    seen = set()
    for state in states:
        stats = per_instance[state["instance"]["id"]]
        kind = kind_of_state(state, plan)
        if kind is None:
            assert state["result"]["success"] is True
            assert state["result"]["completions"][0]["text"] == f"ANSWER: {score_for(prompt_of(state))}"
            assert stats["failed_request"] == 0
            assert stats["abs_error"] == abs(score_for(prompt_of(state)) - gold_of(state))
            continue
        seen.add(kind)
        assert state["result"]["success"] is False, kind
        assert REASONS[kind] in state["result"]["error"], (kind, state["result"]["error"])
        assert stats["failed_request"] == 1 and stats["abs_error"] == 4, kind  # the official charge, failed=max_error
    assert seen == set(BAD_KINDS)
    bad = [s for s in states if kind_of_state(s, plan)]
    assert two_servers.first.stats[BASE]["failed_request"] == pytest.approx(len(bad) / len(states), abs=1e-12)
    assert two_servers.first.stats[BASE]["num_instances"] == len(states) == len(sample_rows())


def test_a_malformed_reply_is_not_retried_and_no_answer_is_retried_once(two_servers: TwoServers) -> None:
    plan = two_servers.broken.plan
    per_row = collections.Counter(row_key(r) for r in two_servers.base_requests[0])
    for (prompt, _), count in per_row.items():
        assert count == (2 if plan.get(task_of(prompt)) == NO_ANSWER else 1), (task_of(prompt), count)


def test_two_servers_with_one_served_name_each_receive_their_own_requests(two_servers: TwoServers) -> None:
    rows = len(sample_rows())
    base, elsewhere = two_servers.base_requests[0], two_servers.elsewhere_requests[0]
    assert len(elsewhere) == rows, "the deployment elsewhere was not answered from the base model's cache"
    assert len(set(map(row_key, base))) == len(set(map(row_key, elsewhere))) == rows
    assert {r.model for r in base} == {r.model for r in elsewhere} == {"teetone/RoboReward-8B"}
    for state in two_servers.first.states[ELSEWHERE]:
        assert state["result"]["success"] is True and state["result"]["cached"] is False
        assert state["result"]["completions"][0]["text"] == ELSEWHERE_ANSWER


def test_a_rerun_after_the_fix_sends_exactly_the_failed_rows_again(two_servers: TwoServers) -> None:
    plan = two_servers.broken.plan
    states = two_servers.fixed.states[BASE]
    resent = collections.Counter(row_key(r) for r in two_servers.base_requests[1])
    bad_prompts = {prompt_of(s) for s in two_servers.first.states[BASE] if kind_of_state(s, plan)}
    assert {prompt for prompt, _ in resent} == bad_prompts and set(resent.values()) == {1}
    assert two_servers.elsewhere_requests[1] == []
    for state in states:
        assert state["result"]["success"] is True
        assert state["result"]["cached"] is (kind_of_state(state, plan) is None)
        assert state["result"]["completions"][0]["text"] == f"ANSWER: {score_for(prompt_of(state))}"
    assert two_servers.fixed.stats[BASE]["failed_request"] == 0


# --------------------------------------------------------------------------------------------- Gemini, one message


GEMINI_MALFORMED = {
    "truncated-json": (b'{"candidates": [{"content": {"role": "model", "parts": [{"text": "ANSW', "JSONDecodeError"),
    "text-plain": (b"upstream worker crashed", "JSONDecodeError"),
    "empty-object": (b"{}", "no candidates"),
    "number-text": (json.dumps({"candidates": [{"content": {"role": "model", "parts": [{"text": 3}]},
                                                "finishReason": "STOP"}]}).encode(), "ValidationError"),
    "no-content": (json.dumps({"candidates": [{"finishReason": "STOP"}]}).encode(), "AssertionError"),
}


@pytest.mark.parametrize("kind", sorted(GEMINI_MALFORMED))
def test_the_one_message_gemini_client_fails_one_row_and_caches_nothing(kind: str, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    body, reason = GEMINI_MALFORMED[kind]
    request = Request(model="google/gemini-2.5-flash", model_deployment="google/gemini-2.5-flash-one-message",
                      prompt="rate the video", max_tokens=10)
    gemini_answer = json.dumps({"candidates": [{"content": {"role": "model", "parts": [{"text": "ANSWER: 4"}]},
                                                "finishReason": "STOP"}]}).encode()
    with FakeModelServer(lambda recorded: RawReply(body=body, content_type="text/plain" if kind == "text-plain"
                                                   else "application/json")) as fake:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.root_url)
        cache = SqliteCacheConfig(str(tmp_path / "google.sqlite"))
        failed = OneMessageGoogleGenAIClient(cache, api_key="fake").make_request(request)
        fake.behaviour = lambda recorded: RawReply(body=gemini_answer)
        fixed = OneMessageGoogleGenAIClient(cache, api_key="fake").make_request(request)
        again = OneMessageGoogleGenAIClient(cache, api_key="fake").make_request(request)
        sent = len(fake.requests_to(GEMINI))
    assert failed.success is False and failed.error_flags is not None
    assert (failed.error_flags.is_retriable, failed.error_flags.is_fatal) == (False, False)
    assert reason in str(failed.error) and "not cached" in str(failed.error)
    assert (fixed.success, fixed.cached, fixed.completions[0].text) == (True, False, "ANSWER: 4")
    assert again.cached is True and sent == 2
    rows = sqlite3.connect(tmp_path / "google-one-message.sqlite").execute("SELECT count(*) FROM unnamed").fetchone()
    assert rows == (1,)
