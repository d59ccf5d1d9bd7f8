"""The proposed ``eval.yaml`` declares inspect-ai, the Hub's framework, and says what its specification lacks.

The rules: huggingface.js ``packages/tasks/src/eval.ts`` at fe42e680 (the frameworks the Hub lists: ``inspect-ai``,
not ``helm``), hub-docs ``docs/hub/eval-results.md`` at 242f4a1e (the fields; inspect-ai tasks also take
``field_spec``, ``solvers``, ``scorers``) and inspect-ai's ``hf/`` task loader (``_eval/task/hf.py``, ``HFTask``).
"""

import yaml

from helm_roboreward.protocol.rules import OFFICIAL_SUBSET_IDS
from helm_roboreward.results.publish.eval_results import (
    EVAL_TS,
    HUB_EVALUATION_FRAMEWORKS,
    MACRO_TASK,
    VIDEO_BENCHMARK_GAPS,
    check_eval_yaml,
    eval_yaml_text,
    missing_inspect_ai_fields,
)

HLE_EXAMPLE = """\
name: Humanity's Last Exam
description: the docs' inspect-ai example
evaluation_framework: "inspect-ai"
tasks:
  - id: hle
    config: default
    split: test
    field_spec: {input: question, input_image: image, target: answer}
    solvers: [{name: system_message, args: {template: "Answer: ..."}}, {name: generate}]
    scorers: [{name: model_graded_fact, args: {model: openai/o3-mini}}]
"""


def test_the_proposal_declares_inspect_ai_and_passes_the_hubs_rules() -> None:
    text = eval_yaml_text()
    assert check_eval_yaml(text) == []
    content = yaml.safe_load(text)
    assert content["evaluation_framework"] == "inspect-ai" and "inspect-ai" in HUB_EVALUATION_FRAMEWORKS
    assert [task["id"] for task in content["tasks"]] == [MACRO_TASK] + OFFICIAL_SUBSET_IDS
    assert all(set(task) == {"id", "config", "split"} for task in content["tasks"])  # only what the Hub accepts


def test_the_proposal_says_what_the_specification_lacks_for_a_video_benchmark() -> None:
    text = eval_yaml_text()
    assert EVAL_TS in text and "fe42e68017ffc76d09922ea8f9b38a6964345710" in text
    for gap in VIDEO_BENCHMARK_GAPS:
        assert f"#  - {gap}" in text
    missing = missing_inspect_ai_fields(text)
    assert len(missing) == 1 + len(OFFICIAL_SUBSET_IDS)
    assert missing[0] == f"task {MACRO_TASK}: no field_spec, solvers, scorers"


def test_a_framework_off_the_hubs_list_is_refused() -> None:
    text = eval_yaml_text().replace("evaluation_framework: inspect-ai", "evaluation_framework: helm")
    (problem,) = check_eval_yaml(text)
    assert problem.startswith(f"evaluation_framework 'helm' is not on the Hub's list ({EVAL_TS})")


def test_inspect_ai_task_fields_are_held_to_inspect_ais_loader() -> None:
    assert check_eval_yaml(HLE_EXAMPLE) == [] and missing_inspect_ai_fields(HLE_EXAMPLE) == []
    wrong = (HLE_EXAMPLE.replace("model_graded_fact", "absolute_error").replace("input_image", "input_video")
             + "    filter: {subset: bridge}\n")
    assert check_eval_yaml(wrong) == [
        "task hle: unknown field 'filter'",
        "task hle: unknown field field_spec.input_video",
        "task hle: scorer 'absolute_error' is not one inspect-ai's hf/ tasks take (one of includes, match, pattern, "
        "answer, exact, f1, model_graded_qa, model_graded_fact, choice, math)"]
    # The inspect-ai fields belong to inspect-ai files only.
    other = HLE_EXAMPLE.replace('"inspect-ai"', "mteb")
    assert "task hle: unknown field 'field_spec'" in check_eval_yaml(other)
