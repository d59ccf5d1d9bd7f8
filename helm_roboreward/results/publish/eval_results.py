"""The Hub's evaluation results: a model repo's ``.eval_results/roboreward_bench.yaml``, the dataset's ``eval.yaml``.

The format is the Hub's "Evaluation Results" documentation (huggingface/hub-docs ``docs/hub/eval-results.md``;
docs/publishing.md quotes the fields): a model repo holds a YAML list of entries, each with ``dataset.id`` and
``dataset.task_id`` (required), ``dataset.revision`` (optional), ``value`` (required), ``date`` (ISO-8601),
``source`` (``url`` required when present, ``name``, ``user``), ``notes`` and ``verifyToken`` (optional); a dataset
that declares itself a benchmark holds ``eval.yaml`` (``name``, ``description``, ``evaluation_framework`` and
``tasks[]`` with ``id``, optional ``config`` and ``split``). :func:`check_eval_results` and :func:`check_eval_yaml`
hold a file to exactly those fields.

``evaluation_framework`` must be a key of ``EVALUATION_FRAMEWORKS`` in huggingface.js ``packages/tasks/src/eval.ts``
(:data:`HUB_EVALUATION_FRAMEWORKS`, read at commit fe42e680; ``helm`` is not one, ``inspect-ai`` is). With
``inspect-ai`` the docs (hub-docs ``docs/hub/eval-results.md`` at 242f4a1e) also require per task ``field_spec``,
``solvers`` and ``scorers``, which inspect-ai's ``hf/`` task loader reads (``inspect_ai/_eval/task/hf.py``,
``HFTask``): :func:`missing_inspect_ai_fields` names them where absent, :data:`VIDEO_BENCHMARK_GAPS` says why this
benchmark cannot fill them (docs/publishing.md).
"""

import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

import yaml

from helm_roboreward.protocol.rules import DATASET_ID, OFFICIAL_SUBSETS, PAPER_URL, TEST_SPLIT
from helm_roboreward.results.publish.evidence import ModelFacts

EVAL_RESULTS_FILE = ".eval_results/roboreward_bench.yaml"
"""Where the file goes in a model repo (one file per benchmark)."""
EVAL_YAML_FILE = "eval.yaml"
MACRO_TASK = "macro_mae"
"""The task of the headline number: the unweighted mean of the 23 subset MAEs."""
EVALUATION_FRAMEWORK = "inspect-ai"
"""The framework the Hub lists that runs this benchmark (``inspect_frontend``: the task
helm_roboreward/roboreward_bench); HELM is not on the Hub's list."""
EVAL_TS = "huggingface.js packages/tasks/src/eval.ts at fe42e68017ffc76d09922ea8f9b38a6964345710"
HUB_EVALUATION_FRAMEWORKS = (
    "exgentic", "inspect-ai", "math-arena", "mteb", "olmocr-bench", "harbor", "ifstruct", "pier", "redline-bench",
    "archipelago", "benchflow", "apex-evals", "screenspot-pro", "swe-bench", "swe-bench-pro", "nemo-evaluator",
    "yc-bench", "open-asr-leaderboard", "mdpbench", "real5-omnidocbench", "parsebench", "video-mme-v2", "claw-eval",
    "researchclawbench", "pbench", "wildclawbench", "wbench", "nanofold", "mmmu", "extractbench")
"""The keys of ``EVALUATION_FRAMEWORKS`` in :data:`EVAL_TS` (the file last changed in c975bd49, 2026-08-17): the only
values ``evaluation_framework`` may take."""
INSPECT_AI_TASK_FIELDS = ("field_spec", "solvers", "scorers")
"""What hub-docs ``docs/hub/eval-results.md`` (242f4a1e) requires per task with ``evaluation_framework: inspect-ai``."""
INSPECT_AI_OPTIONAL_FIELDS = ("shuffle_choices", "epochs", "epoch_reducer")
"""The other fields of inspect-ai's ``HFTask`` (``inspect_ai/_eval/task/hf.py``; it forbids any field not named)."""
INSPECT_AI_FIELD_SPEC = ("input", "target", "choices", "id", "metadata", "sandbox", "files", "setup", "input_image")
"""``HFFieldSpec``: inspect-ai's ``FieldSpec`` plus ``input_image`` (one image column, a data URI)."""
INSPECT_AI_SOLVERS = ("prompt_template", "system_message", "user_message", "chain_of_thought", "use_tools", "generate",
                      "self_critique", "multiple_choice")
INSPECT_AI_SCORERS = ("includes", "match", "pattern", "answer", "exact", "f1", "model_graded_qa", "model_graded_fact",
                      "choice", "math")
"""``HFSolver.name`` and ``HFScorer.name`` (inspect-ai 0.3.172; ``math`` from its main branch at 499e6152)."""
VIDEO_BENCHMARK_GAPS = (
    "field_spec takes text columns and one image (input_image, a data URI), no video: each row here is an mp4, sent "
    "as the mp4 or as 1 fps JPEG frames",
    f"scorers are a fixed list ({', '.join(INSPECT_AI_SCORERS)}): none parses the 1..5 score by the benchmark's rule "
    "and scores its absolute error",
    "a task selects a config and split, not rows: the 23 subsets are folders of one test split, so no task can "
    "hold one subset, and none averages tasks (the macro MAE)",
    "a task names no registered Inspect task, so the Hub's inspect-ai runs cannot run helm_roboreward/roboreward_bench",
    "no metric direction: the MAE is lower-is-better (hub-docs pull request #2221 proposed lower_is_better; it is "
    "not in the specification)")
"""What the Hub's eval.yaml specification for inspect-ai lacks for this video benchmark (docs/publishing.md)."""
DEFAULT_SOURCE_NAME = "helm-roboreward traces"

_COMMIT = re.compile(r"[0-9a-f]{40}\Z")
_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+\Z")
_ENTRY_KEYS = {"dataset", "value", "verifyToken", "date", "source", "notes"}
_DATASET_KEYS = {"id", "task_id", "revision"}
_SOURCE_KEYS = {"url", "name", "user"}
_EVAL_KEYS = {"name", "description", "evaluation_framework", "tasks"}
_TASK_KEYS = {"id", "config", "split"}
_NAMED_LISTS = (("solvers", INSPECT_AI_SOLVERS), ("scorers", INSPECT_AI_SCORERS))


def failed_requests_line(count: int) -> str:
    """How many requests of a row failed, and what each cost (the official rule: ``failed=max_error``)."""
    return (f"{count} failed request{'' if count == 1 else 's'} (each charged the maximum error, failed=max_error, "
            "as the official rule says)")


def _notes(model: ModelFacts, suite: str) -> str:
    non_default_settings = model.evidence.non_default_settings
    settings = (f"non-default settings: {', '.join(non_default_settings)}" if non_default_settings
                else "official default settings")
    failed = f"{failed_requests_line(model.failed_requests)}; " if model.verdict.comparable else ""
    logged = [run.spec["inspect"] for run in model.runs if "inspect" in run.spec]
    where = (f"inspect-ai task {logged[0]['task']}, model {logged[0]['model']}, "
             f"log{'s' if len(model.runs) > 1 else ''} {', '.join(run.name for run in model.runs)}" if logged
             else f"helm-roboreward, suite {suite}, deployment {model.deployment}")
    return f"{where}; {failed}{settings}; {model.verdict.line}"


def eval_results_entries(model: ModelFacts, suite: str, source_url: str,
                         source_name: str = DEFAULT_SOURCE_NAME) -> list[dict[str, Any]]:
    """The entries of one model's file: the macro MAE first, then each official subset it ran.

    Args:
        model: The row's facts and verdict.
        suite: The suite name (named in ``notes``).
        source_url: Where the traces are (the user says; e.g. a dataset repo holding the suite's run folders).
        source_name: The source's display name.
    """
    revisions = {read.revision for read in model.evidence.data}
    dataset: dict[str, str] = {"id": DATASET_ID}
    revision = next(iter(revisions)) if len(revisions) == 1 else ""
    notes = _notes(model, suite)
    common: dict[str, Any] = {**({"date": model.date} if model.date else {}),
                              "source": {"url": source_url, "name": source_name}, "notes": notes}
    values = [(MACRO_TASK, model.macro_mae)] + [(subset.id, model.subset_mae[subset.id])
                                                for subset in OFFICIAL_SUBSETS if subset.id in model.subset_mae]
    entries = []
    for task, value in values:
        if value is None:
            continue
        entry_dataset = {**dataset, "task_id": task, **({"revision": revision} if _COMMIT.match(revision) else {})}
        # Fresh mappings per entry: shared ones would be dumped as YAML anchors and aliases.
        entries.append({"dataset": entry_dataset, "value": round(float(value), 4), **common,
                        "source": dict(common["source"])})
    return entries


def _problems_of_entry(index: int, entry: Any) -> list[str]:
    where = f"entry {index + 1}"
    if not isinstance(entry, Mapping):
        return [f"{where}: not a mapping"]
    problems = [f"{where}: unknown field {key!r}" for key in sorted(set(entry) - _ENTRY_KEYS)]
    dataset = entry.get("dataset")
    if not isinstance(dataset, Mapping):
        problems.append(f"{where}: dataset is required and must be a mapping")
    else:
        problems += [f"{where}: unknown field dataset.{key}" for key in sorted(set(dataset) - _DATASET_KEYS)]
        if not isinstance(dataset.get("id"), str) or not _REPO_ID.match(dataset["id"]):
            problems.append(f"{where}: dataset.id must be a Hub dataset id (<org>/<name>)")
        if not isinstance(dataset.get("task_id"), str) or not dataset["task_id"]:
            problems.append(f"{where}: dataset.task_id is required (a task id of the dataset's eval.yaml)")
        if "revision" in dataset and not isinstance(dataset["revision"], str):
            problems.append(f"{where}: dataset.revision must be a string")
    value = entry.get("value")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        problems.append(f"{where}: value is required and must be a number")
    if "date" in entry and not _is_iso_date(entry["date"]):
        problems.append(f"{where}: date must be an ISO-8601 date or datetime string")
    source = entry.get("source")
    if source is not None:
        if not isinstance(source, Mapping) or not isinstance(source.get("url"), str) or not source["url"]:
            problems.append(f"{where}: source needs a url")
        else:
            problems += [f"{where}: unknown field source.{key}" for key in sorted(set(source) - _SOURCE_KEYS)]
    for key in ("notes", "verifyToken"):
        if key in entry and not isinstance(entry[key], str):
            problems.append(f"{where}: {key} must be a string")
    return problems


def _is_iso_date(value: Any) -> bool:
    if not isinstance(value, str):  # an unquoted YAML date loads as a date object: quote it as the docs do
        return False
    try:
        (datetime if "T" in value else date).fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def check_eval_results(text: str) -> list[str]:
    """Every way a ``.eval_results/*.yaml`` text differs from the documented format (empty: valid)."""
    try:
        entries = yaml.safe_load(text)
    except yaml.YAMLError as error:
        return [f"not YAML: {error}"]
    if not isinstance(entries, list) or not entries:
        return ["the file must be a non-empty YAML list of results"]
    return [problem for index, entry in enumerate(entries) for problem in _problems_of_entry(index, entry)]


def eval_results_yaml(entries: Sequence[Mapping[str, Any]]) -> str:
    """The file's text (field order as the docs show it; dates stay quoted strings)."""
    return yaml.safe_dump(list(entries), sort_keys=False, allow_unicode=True, width=100)


def eval_yaml() -> dict[str, Any]:
    """The ``eval.yaml`` proposed to the dataset's maintainers: one task per leaderboard column and the macro MAE."""
    description = (
        "RoboRewardBench: a vision-language model scores a real-robot rollout video's end-of-episode progress 1..5 "
        f"under a fixed rubric; the metric is the mean absolute error against the human-verified gold score (lower is "
        f"better). Task {MACRO_TASK} is the unweighted mean of the 23 subset MAEs; the other tasks are the subsets. "
        f"Paper: {PAPER_URL}.")
    tasks = [{"id": MACRO_TASK, "config": "default", "split": TEST_SPLIT}]
    tasks += [{"id": subset.id, "config": "default", "split": TEST_SPLIT} for subset in OFFICIAL_SUBSETS]
    return {"name": "RoboRewardBench", "description": description, "evaluation_framework": EVALUATION_FRAMEWORK,
            "tasks": tasks}


def _inspect_ai_problems(task: Mapping[str, Any]) -> list[str]:
    """How the inspect-ai fields a task has differ from inspect-ai's ``HFTask`` (absent ones are not judged here)."""
    where = f"task {task.get('id')}"
    problems = []
    if "field_spec" in task:
        spec = task["field_spec"]
        if not isinstance(spec, Mapping) or not isinstance(spec.get("input"), str):
            problems.append(f"{where}: field_spec must be a mapping with an input column")
        else:
            problems += [f"{where}: unknown field field_spec.{key}" for key in sorted(set(spec) -
                                                                                      set(INSPECT_AI_FIELD_SPEC))]
    for field, names in _NAMED_LISTS:
        if field not in task:
            continue
        items = task[field]
        if not isinstance(items, list) or not items or not all(isinstance(item, Mapping) for item in items):
            problems.append(f"{where}: {field} must be a non-empty list of {{name, args}}")
            continue
        problems += [f"{where}: {field[:-1]} {item.get('name')!r} is not one inspect-ai's hf/ tasks take (one of "
                     f"{', '.join(names)})" for item in items if item.get("name") not in names]
    return problems


def check_eval_yaml(text: str) -> list[str]:
    """Every way an ``eval.yaml`` text breaks the Hub's specification or framework list (empty: valid).

    The fields every benchmark's file has (hub-docs ``docs/hub/eval-results.md``), ``evaluation_framework`` among
    :data:`HUB_EVALUATION_FRAMEWORKS` (:data:`EVAL_TS`), and, where a task of an ``inspect-ai`` file has inspect-ai's
    fields, their form as inspect-ai reads them. The inspect-ai fields a task lacks: :func:`missing_inspect_ai_fields`.
    """
    try:
        content = yaml.safe_load(text)
    except yaml.YAMLError as error:
        return [f"not YAML: {error}"]
    if not isinstance(content, Mapping):
        return ["eval.yaml must be a mapping"]
    problems = [f"missing field {key}" for key in sorted(_EVAL_KEYS - set(content))]
    problems += [f"unknown field {key!r}" for key in sorted(set(content) - _EVAL_KEYS)]
    framework = content.get("evaluation_framework")
    if "evaluation_framework" in content and framework not in HUB_EVALUATION_FRAMEWORKS:
        problems.append(f"evaluation_framework {framework!r} is not on the Hub's list ({EVAL_TS}): give one of "
                        f"{', '.join(HUB_EVALUATION_FRAMEWORKS[:3])}, ...")
    tasks = content.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        return problems + ["tasks must be a non-empty list"]
    ids = [task.get("id") for task in tasks if isinstance(task, Mapping)]
    if len(ids) != len(tasks) or not all(isinstance(task_id, str) and task_id for task_id in ids):
        problems.append("every task needs an id")
    if len(set(ids)) != len(ids):
        problems.append("task ids must be unique")
    allowed = _TASK_KEYS | (set(INSPECT_AI_TASK_FIELDS + INSPECT_AI_OPTIONAL_FIELDS) if framework == "inspect-ai"
                            else set())
    for task in (task for task in tasks if isinstance(task, Mapping)):
        problems += [f"task {task.get('id')}: unknown field {key!r}" for key in sorted(set(task) - allowed)]
        problems += [f"task {task.get('id')}: {key} must be a string" for key in ("config", "split")
                     if key in task and not isinstance(task[key], str)]
        if framework == "inspect-ai":
            problems += _inspect_ai_problems(task)
    return problems


def missing_inspect_ai_fields(text: str) -> list[str]:
    """Per task of an ``inspect-ai`` ``eval.yaml``, the fields the Hub's docs require that it lacks."""
    content = yaml.safe_load(text)
    if not isinstance(content, Mapping) or content.get("evaluation_framework") != "inspect-ai":
        return []
    return [f"task {task.get('id')}: no {', '.join(missing)}" for task in content.get("tasks") or []
            if isinstance(task, Mapping) and (missing := [key for key in INSPECT_AI_TASK_FIELDS if key not in task])]


def eval_yaml_text() -> str:
    """The proposed ``eval.yaml``, with a header saying what the Hub's specification lacks for this benchmark."""
    gaps = "".join(f"#  - {gap}\n" for gap in VIDEO_BENCHMARK_GAPS)
    header = (f"# Proposed eval.yaml for the {DATASET_ID} dataset repository (written by helm-roboreward for its\n"
              f"# maintainers). evaluation_framework inspect-ai is on the Hub's list ({EVAL_TS}); the results come\n"
              "# from the Inspect task helm_roboreward/roboreward_bench (pip install 'helm-roboreward[inspect]').\n"
              "# The Hub's docs also ask inspect-ai benchmarks for field_spec, solvers and scorers per task, which\n"
              "# inspect-ai's hf/ loader turns into a task of its own; they are left out, as no values of them run\n"
              "# this benchmark. What the specification lacks for a video benchmark:\n" + gaps)
    return header + yaml.safe_dump(eval_yaml(), sort_keys=False, allow_unicode=True, width=100)
