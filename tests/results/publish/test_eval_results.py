"""The Hub's eval-results format (huggingface/hub-docs docs/hub/eval-results.md), the proposed eval.yaml, Hub repos."""

from pathlib import Path

import pytest
import yaml

from helm_roboreward.protocol.rules import OFFICIAL_SUBSET_IDS
from helm_roboreward.results.publish.comparability import DataRead, ModelEvidence, SubsetCoverage, judge
from helm_roboreward.results.publish.eval_results import (
    MACRO_TASK,
    check_eval_results,
    check_eval_yaml,
    eval_results_entries,
    eval_results_yaml,
    eval_yaml_text,
)
from helm_roboreward.results.publish.evidence import ModelFacts
from helm_roboreward.results.publish.hub_prs import PublishError, deployment_repos, parse_hub_repos, repo_of

DOCUMENTED_EXAMPLE = """\
- dataset:
    id: cais/hle
    task_id: default
    revision: 5503434ddd753f426f4b38109466949a1217c2bb
  value: 20.90
  verifyToken: abc
  date: "2025-01-15"
  source:
    url: https://huggingface.co/spaces/SaylorTwift/smollm3-mmlu-pro
    name: Eval traces
    user: SaylorTwift
  notes: "no-tools"
"""
MINIMAL_EXAMPLE = """\
- dataset:
    id: Idavidrein/gpqa
    task_id: gpqa_diamond
  value: 0.412
"""


def test_the_documented_examples_are_valid() -> None:
    assert check_eval_results(DOCUMENTED_EXAMPLE) == []
    assert check_eval_results(MINIMAL_EXAMPLE) == []


@pytest.mark.parametrize(("text", "problem"), [
    ("- dataset: {id: a/b}\n  value: 1\n", "entry 1: dataset.task_id is required"),
    ("- dataset: {id: a/b, task_id: t}\n  value: '1'\n", "entry 1: value is required and must be a number"),
    ("- dataset: {id: a/b, task_id: t}\n  value: true\n", "entry 1: value is required and must be a number"),
    ("- dataset: {id: a/b, task_id: t}\n  value: 1\n  date: 2025-01-15\n", "entry 1: date must be an ISO-8601"),
    ("- dataset: {id: a/b, task_id: t}\n  value: 1\n  date: 'yesterday'\n", "entry 1: date must be an ISO-8601"),
    ("- dataset: {id: a/b, task_id: t}\n  value: 1\n  source: {name: x}\n", "entry 1: source needs a url"),
    ("- dataset: {id: a/b, task_id: t}\n  value: 1\n  score: 2\n", "entry 1: unknown field 'score'"),
    ("- dataset: {id: nohub, task_id: t}\n  value: 1\n", "entry 1: dataset.id must be a Hub dataset id"),
    ("dataset: {id: a/b, task_id: t}\nvalue: 1\n", "the file must be a non-empty YAML list of results"),
    ("- [unclosed\n", "not YAML"),
])
def test_differences_from_the_format_are_named(text: str, problem: str) -> None:
    problems = check_eval_results(text)
    assert problems and problems[0].startswith(problem), problems


def facts(comparable: bool, revision: str = "a" * 40) -> ModelFacts:
    subsets = OFFICIAL_SUBSET_IDS if comparable else OFFICIAL_SUBSET_IDS[:2]
    coverage = tuple(SubsetCoverage(subset, 1, 1) for subset in subsets)
    evidence = ModelEvidence("lab/m", (DataRead("hf", revision, "f" * 64, "", {}),), coverage)
    verdict = judge(evidence, published_sha256="f" * 64)
    mae = {subset: 0.5 + index / 100 for index, subset in enumerate(subsets)}
    return ModelFacts("lab/m", "lab/m", "vllm/m", "M", [], mae, evidence, verdict)


def test_a_comparable_row_gives_the_macro_mae_then_each_subset() -> None:
    text = eval_results_yaml(eval_results_entries(facts(True), "suite1", "https://huggingface.co/datasets/me/t"))
    assert check_eval_results(text) == []
    assert "&id" not in text and "*id" not in text  # no YAML anchors: each entry stands on its own
    entries = yaml.safe_load(text)
    assert [entry["dataset"]["task_id"] for entry in entries] == [MACRO_TASK] + OFFICIAL_SUBSET_IDS
    assert entries[0]["value"] == pytest.approx(0.61) and entries[0]["dataset"]["revision"] == "a" * 40
    assert entries[0]["notes"] == ("helm-roboreward, suite suite1, deployment vllm/m; 0 failed requests (each charged "
                                   "the maximum error, failed=max_error, as the official rule says); official default "
                                   "settings; "
                                   "comparable with the published leaderboard")
    assert entries[0]["source"] == {"url": "https://huggingface.co/datasets/me/t", "name": "helm-roboreward traces"}


def test_a_row_that_is_not_comparable_says_why_and_a_copy_revision_is_not_sent_as_the_hubs() -> None:
    entries = yaml.safe_load(eval_results_yaml(eval_results_entries(facts(False, "local-0123"), "s", "https://x.org")))
    assert "revision" not in entries[0]["dataset"]
    assert "not comparable with the published leaderboard: 2 of the 23 official subsets ran" in entries[0]["notes"]


def test_the_proposed_eval_yaml_follows_the_specification() -> None:
    text = eval_yaml_text()
    assert check_eval_yaml(text) == []
    content = yaml.safe_load(text)
    assert [task["id"] for task in content["tasks"]] == [MACRO_TASK] + OFFICIAL_SUBSET_IDS
    assert content["evaluation_framework"] == "inspect-ai" and "packages/tasks/src/eval.ts" in text
    assert check_eval_yaml("name: x\ntasks: [{config: default}]\n") == [
        "missing field description", "missing field evaluation_framework", "every task needs an id"]


def test_deployments_name_their_hub_repos(tmp_path: Path) -> None:
    repos = deployment_repos(str(tmp_path))
    assert repos["transformers/roboreward-8b"] == "teetone/RoboReward-8B"
    assert repos["vllm/roboreward-8b"] == "teetone/RoboReward-8B"
    assert "baseline/constant-3" not in repos
    local = tmp_path / "org" / "weights"
    local.mkdir(parents=True)
    (tmp_path / "model_deployments.yaml").write_text(
        "model_deployments:\n"
        f"  - name: transformers/mine\n    client_spec: {{args: {{checkpoint: {local}}}}}\n"
        "  - name: vllm/theirs\n    client_spec: {args: {served_model_name: lab/Weights-7B}}\n")
    repos = deployment_repos(str(tmp_path))
    assert "transformers/mine" not in repos and repos["vllm/theirs"] == "lab/Weights-7B"
    named = parse_hub_repos(["lab/m=lab/M-Weights"])
    assert repo_of("lab/m", "openai/x", named, repos) == "lab/M-Weights"
    assert repo_of("openai/gpt-5", "openai/gpt-5", named, repos) is None
    with pytest.raises(PublishError, match="--hub-repo 'lab/m': give MODEL=ORG/NAME"):
        parse_hub_repos(["lab/m"])
