"""``score=expected`` end to end: helm-run with the in-process transformers client and real logits, then the report.

The deployment is a ``--local-path`` one pointing TransformersQwen3VLClient at the session's digit-answering tiny
Qwen3-VL (tests/helpers/tiny_qwen3vl.py, ``build_digit_answering``: it draws one digit 1..5 and stops; its raw
logits, which the client records, are the random model's own). ``score=expected`` must route every request to the
deployment's ``-logprobs`` option deployment (the same model with ``top_logprobs`` 20), the metric must read a
distribution on every row, and ``roboreward report`` must show the calibration section, its plot and CSV. Nothing
is mocked.

The vLLM path the same way against the loopback OpenAI-compatible fake (tests/helpers/fakes/openai_chat.py),
which answers with vLLM-shaped ``logprobs.content``: the ``vllm/roboreward-8b-logprobs`` option deployment must
send ``logprobs: true`` and ``top_logprobs: 20``, and each row's expected score must be the renormalised mean of
the alternatives the fake returned.
"""

import csv
import math
import os
import subprocess
from pathlib import Path

import pytest

from helm_roboreward.helm_frontend.model_registry import LOGPROBS_TOP_N
from helm_roboreward.protocol.score_probabilities import SCORE_TOKEN_LOGPROBS, expected_score, score_distribution
from tests.helpers.fakes import CHAT, FakeModelServer, Recorded, Reply
from tests.helpers.harness import (
    TRANSFORMERS_ENVIRONMENT,
    check_completed,
    cli,
    helm_environment,
    helm_run_command,
    private_local_path,
    read_json,
    request_states,
    run_stats,
    transformers_local_path,
)
from tests.helpers.sample import sample_rows

DEPLOYMENT = "transformers/tiny-qwen3-vl-digits"
SUITE = "expected"


@pytest.fixture(scope="module")
def workdir(tiny_qwen3vl_digits: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("expected_scores")
    local = transformers_local_path(workdir / "local", DEPLOYMENT, tiny_qwen3vl_digits)
    entry = ("roboreward:subset=all,data=sample,model=teetone/roboreward-8b,"
             f"model_deployment={DEPLOYMENT},score=expected")
    env = {**os.environ, **TRANSFORMERS_ENVIRONMENT}
    process = subprocess.run(
        [cli("helm-run"), "--run-entries", entry, "--suite", SUITE, "-m", "100", "--local-path", str(local),
         "--output-path", str(workdir / "benchmark_output")],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=600)
    check_completed(process, "helm-run")
    return workdir


@pytest.fixture(scope="module")
def run_dir(workdir: Path) -> Path:
    (run,) = (workdir / "benchmark_output" / "runs" / SUITE).glob("roboreward:*")
    return run


@pytest.mark.slow
def test_score_expected_runs_the_logprobs_option_deployment_and_names_the_option(run_dir: Path) -> None:
    assert "score=expected" in run_dir.name
    spec = read_json(run_dir / "run_spec.json")
    assert spec["adapter_spec"]["model_deployment"] == f"{DEPLOYMENT}-logprobs"
    states = request_states(run_dir)
    assert len(states) == len(sample_rows())
    for state in states:
        assert state["request"]["model_deployment"] == f"{DEPLOYMENT}-logprobs"
        (completion,) = state["result"]["completions"]
        text, finish = completion["text"], completion["finish_reason"]
        assert len(text) == 1 and text in "12345", text
        (entry,) = finish[SCORE_TOKEN_LOGPROBS]
        assert entry["offset"] == 0 and entry["text"] == text
        assert LOGPROBS_TOP_N <= len(entry["top"]) <= LOGPROBS_TOP_N + 1  # top 20, plus the drawn token if below


@pytest.mark.slow
def test_every_row_gets_an_expected_score_from_its_own_distribution(run_dir: Path) -> None:
    stats = run_stats(run_dir)
    assert stats["expected_score_coverage"] == 1.0
    for name in ("expected_abs_error", "success_brier", "success_ece"):
        assert name in stats, sorted(stats)
    per_instance = read_json(run_dir / "per_instance_stats.json")
    states = {state["instance"]["id"]: state for state in request_states(run_dir)}
    errors = []
    for entry in per_instance:
        values = {s["name"]["name"]: s["mean"] for s in entry["stats"] if "perturbation" not in s["name"]}
        (completion,) = states[entry["instance_id"]]["result"]["completions"]
        distribution = score_distribution(completion["text"], completion["finish_reason"][SCORE_TOKEN_LOGPROBS])
        assert distribution is not None
        assert values["expected_score_available"] == 1.0
        assert values["expected_score"] == pytest.approx(expected_score(distribution), abs=1e-9)
        assert values["success_probability"] == pytest.approx(distribution[5], abs=1e-9)
        assert 1.0 <= values["expected_score"] <= 5.0
        errors.append(values["expected_abs_error"])
    assert stats["expected_abs_error"] == pytest.approx(sum(errors) / len(errors), abs=1e-9)
    assert 0.0 <= stats["success_brier"] <= 1.0 and 0.0 <= stats["success_ece"] <= 1.0


@pytest.mark.slow
def test_the_report_shows_calibration(workdir: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    process = subprocess.run(
        [cli("roboreward"), "report", "--suite", SUITE, "--out", str(out), "--local-path", "local",
         "--resamples", "100"],
        cwd=workdir, capture_output=True, text=True, timeout=300)
    assert process.returncode == 0, process.stderr
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "## Expected-score calibration" in text
    assert (out / "reliability.png").stat().st_size > 0
    with open(out / "calibration.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert rows, "calibration.csv has no rows"
    print(f"\nreport: {len(rows)} calibration rows; first {rows[0]}")


# --------------------------------------------------------------------------------- vLLM, loopback fake

FAKE_DISTRIBUTION = {"1": 0.05, "2": 0.10, "3": 0.20, "4": 0.25, "5": 0.30}
"""Probabilities of the score tokens the fake returns at the answer digit (plus 0.10 on a non-score token)."""


def _with_logprobs(recorded: Recorded) -> Reply:
    alternatives = [{"token": t, "logprob": math.log(p), "bytes": list(t.encode())}
                    for t, p in sorted(FAKE_DISTRIBUTION.items(), key=lambda item: -item[1])]
    alternatives.append({"token": "x", "logprob": math.log(0.10), "bytes": [120]})
    chosen = next(a for a in alternatives if a["token"] == "5")
    tokens = [{"token": t, "logprob": -0.01, "bytes": list(t.encode()), "top_logprobs": []} for t in "ANSWER: "]
    tokens.append({**chosen, "top_logprobs": alternatives})
    return Reply(text="ANSWER: 5", logprobs=tokens)


@pytest.fixture(scope="module")
def vllm_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Recorded]]:
    workdir = tmp_path_factory.mktemp("expected_vllm")
    entry = ("roboreward:subset=all,data=sample,model=teetone/roboreward-8b,model_deployment=vllm/roboreward-8b,"
             "score=expected")
    with FakeModelServer(_with_logprobs) as fake:
        process = subprocess.run(helm_run_command([entry], "vllm", private_local_path(workdir / "local", fake)),
                                 cwd=workdir, env=helm_environment(fake), capture_output=True, text=True,
                                 timeout=600)
        recorded = list(fake.requests)
    check_completed(process, "helm-run")
    (run,) = (workdir / "benchmark_output" / "runs" / "vllm").glob("roboreward:*")
    return run, recorded


def test_the_vllm_option_deployment_asks_for_top_logprobs(vllm_run: tuple[Path, list[Recorded]]) -> None:
    run, recorded = vllm_run
    assert read_json(run / "run_spec.json")["adapter_spec"]["model_deployment"] == "vllm/roboreward-8b-logprobs"
    chats = [r for r in recorded if r.api == CHAT]
    assert len(chats) == len(sample_rows())
    for request in chats:
        assert request.body["logprobs"] is True and request.body["top_logprobs"] == LOGPROBS_TOP_N


def test_the_vllm_expected_score_is_the_renormalised_mean(vllm_run: tuple[Path, list[Recorded]]) -> None:
    run, _ = vllm_run
    total = sum(FAKE_DISTRIBUTION.values())
    wanted = sum(int(t) * p for t, p in FAKE_DISTRIBUTION.items()) / total
    stats = run_stats(run)
    assert stats["expected_score_coverage"] == 1.0
    for entry in read_json(run / "per_instance_stats.json"):
        values = {s["name"]["name"]: s["mean"] for s in entry["stats"] if "perturbation" not in s["name"]}
        assert values["expected_score"] == pytest.approx(wanted, abs=1e-9)
        assert values["success_probability"] == pytest.approx(FAKE_DISTRIBUTION["5"] / total, abs=1e-9)
