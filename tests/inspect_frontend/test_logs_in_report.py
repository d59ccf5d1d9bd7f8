"""Inspect logs through ``roboreward report`` and ``publish`` (issue 38, item 3): the same rows, rule and numbers.

One ``inspect eval`` of the constant baseline on the bundled sample (``roboreward/baseline/constant-3``) beside the
shared HELM suite ``demo`` (the same baseline through helm-run): the report gives both rows the macro MAE 1.289 and
the same verdict (not comparable: the sample); ``publish --inspect-log`` alone writes the row's eval results and the
eval.yaml, held to the Hub's rules. The settings an Inspect log records go through the rule HELM runs go through.
"""

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from helm_roboreward.helm_frontend.run_rows import ReportError, load_suite
from helm_roboreward.inspect_frontend.log_rows import read_inspect_log, run_spec_of
from helm_roboreward.results.publish.eval_results import (
    EVAL_RESULTS_FILE,
    check_eval_results,
    check_eval_yaml,
    missing_inspect_ai_fields,
)
from helm_roboreward.results.publish.evidence import deployment_problems, non_default_settings
from helm_roboreward.results.publish.manifest import MANIFEST_FILE
from tests.helpers.harness import TIMEOUT, check_completed, cli, helm_environment
from tests.helpers.suite import SUITE, SuiteCopy

SAMPLE_REASONS = ("not comparable with the published leaderboard: its runs read the bundled sample (data=sample), "
                  "not the public split (data=hf); none of the 23 official subsets ran; it includes subsets outside "
                  "the benchmark (sim_arena, sim_kuka, sim_panda)")
SOURCE = "https://huggingface.co/datasets/lab/inspect-logs"
INSPECT_MODEL = "roboreward/baseline/constant-3"


def inspect_header(model: str = INSPECT_MODEL, given: dict[str, Any] | None = None, max_tokens: int = 5000,
                   **task_args: Any) -> dict:
    """A log header as ``inspect eval`` writes it (the fields the reader uses; defaults: the official settings)."""
    args = {"subset": "all", "data": "hf", "revision": "main", "video": "auto", "fps": 1.0, "last_frame": False,
            "max_frames": 0, "max_side": 0, "layout": "official", "failed": "max_error", **task_args}
    deployment = model.split("/", 1)[1] if model.startswith("roboreward/") else ""
    return {"status": "success", "plan": {"config": {"max_tokens": max_tokens, "temperature": 0.0}},
            "eval": {"task": "helm_roboreward/roboreward_bench", "model": model, "task_args": args,
                     "model_generate_config": given or {},
                     "metadata": {"video": "frames", "deployment": deployment}}}


@pytest.mark.parametrize(("header", "settings"), [
    (inspect_header(), []),
    (inspect_header(given={"temperature": 0.7, "top_p": 0.9}), ["temperature=0.7 (official: 0.0)", "top_p=0.9"]),
    (inspect_header(fps=2.0, failed="skip"), ["frames_per_second=2.0 (official: 1.0)", "failed=skip (official: "
                                                                                        "max_error)"]),
])
def test_an_inspect_logs_settings_go_through_the_one_rule(header: dict, settings: list[str]) -> None:
    run_spec, _ = run_spec_of(header)
    assert non_default_settings(run_spec) == settings


def test_inspects_own_provider_is_no_deployment_of_the_package() -> None:
    run_spec, deployment = run_spec_of(inspect_header("openai/gpt-5-mini-2025-08-07", max_tokens=65000))
    assert deployment == "inspect-ai:openai/gpt-5-mini-2025-08-07"
    assert non_default_settings(run_spec) == []  # 65,000 max_tokens for OpenAI models, as the task sets
    (problem,) = deployment_problems("openai/gpt-5-mini-2025-08-07", deployment, None, None)
    assert problem.startswith(f"deployment {deployment} of the published model openai/gpt-5-mini-2025-08-07 is "
                              "not one the package defines")
    assert run_spec_of(inspect_header())[1] == "baseline/constant-3"  # roboreward/<deployment>: the package's


def test_neither_a_suite_nor_a_log_says_what_to_give(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="give a suite"):
        load_suite(str(tmp_path), None, {})
    done = subprocess.run([cli("roboreward"), "report", "--out", str(tmp_path / "r")], capture_output=True,
                          text=True, timeout=TIMEOUT, env=helm_environment())
    assert done.returncode == 2
    assert done.stderr.strip() == ("roboreward report: give --suite (a helm-run suite) or --inspect-log PATH (an "
                                   "Inspect log), or both")


@pytest.fixture(scope="module")
def constant_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished log of the constant baseline on the sample (from outside the checkout: docs/inspect.md)."""
    pytest.importorskip("inspect_ai")
    workdir = tmp_path_factory.mktemp("inspect-log")
    done = subprocess.run([cli("inspect"), "eval", "helm_roboreward/roboreward_bench", "--model", INSPECT_MODEL,
                           "-T", "data=sample", "-T", f"media_dir={workdir / 'media'}", "--log-dir",
                           str(workdir / "logs"), "--display", "none", "--no-log-images"], cwd=workdir,
                          env=helm_environment(), capture_output=True, text=True, timeout=TIMEOUT)
    check_completed(done, "inspect eval")
    (log,) = (workdir / "logs").glob("*.eval")
    return log


@pytest.mark.slow  # one inspect eval (about 20 s) and a report beside the shared suite
def test_a_log_beside_the_suite_gives_the_same_macro_mae_and_verdict(
        constant_log: Path, copy_suite: Callable[..., SuiteCopy], tmp_path: Path) -> None:
    copy = copy_suite()
    done = subprocess.run([cli("roboreward"), "report", "--suite", SUITE, "--output-path", str(copy.output),
                           "--inspect-log", str(constant_log), "--out", str(tmp_path / "report"), "--resamples",
                           "200"], cwd=copy.workdir, env=helm_environment(), capture_output=True, text=True,
                          timeout=TIMEOUT)
    check_completed(done, "roboreward report --inspect-log")
    assert f"suite {SUITE} and 1 Inspect log(s): 3 model(s)" in done.stdout
    macro = {line.split(": macro MAE ")[0].strip(): line.split(": macro MAE ")[1].split()[0]
             for line in done.stdout.splitlines() if ": macro MAE " in line}
    assert macro[INSPECT_MODEL] == "1.289" and macro["Constant 3 (baseline)"] == "1.289"
    report = (tmp_path / "report" / "report.md").read_text()
    assert f"- {INSPECT_MODEL}: {SAMPLE_REASONS}" in report
    assert f"- Constant 3 (baseline): {SAMPLE_REASONS}" in report


@pytest.mark.slow  # the same inspect eval (module fixture), then publish alone
def test_publish_of_a_log_writes_eval_results_and_an_inspect_ai_eval_yaml(constant_log: Path, tmp_path: Path) -> None:
    command = [cli("roboreward"), "publish", "--inspect-log", str(constant_log), "--out", str(tmp_path / "out"),
               "--source-url", SOURCE, "--local-path", str(tmp_path / "none")]
    refused = subprocess.run(command, cwd=tmp_path, env=helm_environment(), capture_output=True, text=True,
                             timeout=TIMEOUT)
    assert refused.returncode == 2 and SAMPLE_REASONS in refused.stdout, refused.stderr
    done = subprocess.run(command + ["--allow-not-comparable"], cwd=tmp_path, env=helm_environment(),
                          capture_output=True, text=True, timeout=TIMEOUT)
    check_completed(done, "roboreward publish --inspect-log")
    eval_yaml = (tmp_path / "out" / "eval.yaml").read_text()
    assert check_eval_yaml(eval_yaml) == [] and yaml.safe_load(eval_yaml)["evaluation_framework"] == "inspect-ai"
    assert len(missing_inspect_ai_fields(eval_yaml)) == 24 and "what the Hub's specification lacks" in done.stdout
    results = (tmp_path / "out" / "roboreward__baseline__constant-3" / EVAL_RESULTS_FILE).read_text()
    assert check_eval_results(results) == []
    (entry,) = yaml.safe_load(results)
    assert entry["value"] == 1.2894 and entry["dataset"] == {"id": "teetone/RoboReward", "task_id": "macro_mae"}
    assert entry["notes"] == (f"inspect-ai task helm_roboreward/roboreward_bench, model {INSPECT_MODEL}, log "
                              f"{constant_log.name}; official default settings; {SAMPLE_REASONS}")
    manifest = json.loads((tmp_path / "out" / MANIFEST_FILE).read_text())
    (run,) = manifest["models"][0]["runs"]
    assert list(run["files_sha256"]) == [constant_log.name] and run["inspect"]["model"] == INSPECT_MODEL
    assert read_inspect_log(str(constant_log)).source.revisions[0].startswith("sample-")
