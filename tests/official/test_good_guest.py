"""Installing the plugin changes nothing HELM builds for other benchmarks (issue: "a good guest in HELM").

Two fresh interpreters load HELM as ``helm-run`` does (built-in configuration, then, in one of them, the ``helm``
entry points): every run spec of other benchmarks' entries, tag expansions included, must be identical, and so
must HELM's run expanders, its models' metadata, their default deployments and its deployments' client settings.
The plugin may only add its own models and deployments.
"""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.harness import check_completed, helm_environment, helm_run_command, request_states
from tests.helpers.sample import REPO

OTHER_BENCHMARKS = (
    "mmmu:subject=Accounting,question_type=multiple-choice,model=vlm",
    "msr_vtt:model=vlm",
    "mmlu:subject=anatomy,model=text",
    "mmlu:subject=anatomy,model=all",
    "mmmu:subject=Accounting,question_type=multiple-choice,model=google/gemini-2.5-pro",
    "mmmu:subject=Accounting,question_type=multiple-choice,model=qwen/qwen2.5-vl-7b-instruct",
    "mmmu:subject=Accounting,question_type=multiple-choice,model_deployment=huggingface/qwen2.5-vl-7b-instruct,"
    "model=qwen/qwen2.5-vl-7b-instruct",
    "gsm:model=openai/gpt-5-mini-2025-08-07",
)
"""Four tag expansions (``model=vlm`` twice, ``model=text``, ``model=all``), named models (one whose deployments
this package adds option deployments to, one it adds a vLLM deployment to) and a named deployment."""
OUR_MODEL_ELSEWHERE = "mmmu:subject=Accounting,question_type=multiple-choice,model=teetone/roboreward-8b"


def snapshot(mode: str, entries: tuple[str, ...]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "tests.helpers.helm_snapshot", mode, *entries], cwd=REPO,
                          env=helm_environment(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout))


@pytest.fixture(scope="module")
def snapshots() -> tuple[dict[str, Any], dict[str, Any]]:
    return snapshot("stock", OTHER_BENCHMARKS), snapshot("plugin", OTHER_BENCHMARKS + (OUR_MODEL_ELSEWHERE,))


def test_other_benchmarks_run_specs_are_identical(snapshots: tuple[dict[str, Any], dict[str, Any]]) -> None:
    stock, plugin = snapshots
    counts = {entry: (len(stock["runs"][entry]), len(plugin["runs"][entry])) for entry in OTHER_BENCHMARKS}
    assert counts[OTHER_BENCHMARKS[0]][0] > 100 and counts[OTHER_BENCHMARKS[3]][0] > 400, counts
    differing = [entry for entry in OTHER_BENCHMARKS if stock["runs"][entry] != plugin["runs"][entry]]
    assert not differing, {entry: counts[entry] for entry in differing}


def test_helm_registries_are_as_helm_ships_them(snapshots: tuple[dict[str, Any], dict[str, Any]]) -> None:
    stock, plugin = snapshots
    assert plugin["expanders"] == stock["expanders"]  # none replaced, none added
    assert plugin["models"] == stock["models"]
    assert plugin["default_deployments"] == stock["default_deployments"]
    assert plugin["deployments"] == stock["deployments"]


def test_our_models_run_elsewhere_by_name(snapshots: tuple[dict[str, Any], dict[str, Any]]) -> None:
    runs = snapshots[1]["runs"][OUR_MODEL_ELSEWHERE]
    assert len(runs) == 1 and runs[0]["name"].startswith("mmmu:")
    # HELM's own rule picks the deployment (the last one registered): the vLLM one, never an option deployment.
    assert runs[0]["adapter_spec"]["model_deployment"] == "vllm/roboreward-8b"


def test_our_models_run_on_a_text_benchmark(tmp_path: Path) -> None:
    """HELM's tokenizer lookup does not stop them: a text benchmark (generated offline) runs end to end."""
    entry = "synthetic_reasoning:mode=pattern_match,model=baseline/constant-3"
    done = subprocess.run([*helm_run_command([entry], "guest", tmp_path / "prod_env"), "-m", "3"], cwd=tmp_path,
                          env=helm_environment(), capture_output=True, text=True, timeout=600)
    check_completed(done, entry)
    (run,) = (tmp_path / "benchmark_output" / "runs" / "guest").glob("synthetic_reasoning*")
    states = request_states(run)
    assert len(states) == 3 and all(state["result"]["completions"][0]["text"] == "ANSWER: 3" for state in states)


def test_every_package_deployment_looks_no_tokenizer_up() -> None:
    """Deployments without a tokenizer name HELM's no-tokenizer window service (its default one needs a tokenizer)."""
    from helm_roboreward.helm_frontend.model_registry import _package_deployments
    from helm_roboreward.model_tools.add_model import NO_TOKENIZER_WINDOW_SERVICE

    missing = [d.name for d in _package_deployments() if d.tokenizer_name is None and (
        d.window_service_spec is None or d.window_service_spec.class_name != NO_TOKENIZER_WINDOW_SERVICE)]
    assert not missing
