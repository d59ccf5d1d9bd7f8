"""The Hub's evaluation results: a model repo's ``.eval_results/roboreward_bench.yaml``, the dataset's ``eval.yaml``.

The format is the Hub's "Evaluation Results" documentation (huggingface/hub-docs ``docs/hub/eval-results.md``;
docs/publishing.md quotes the fields): a model repo holds a YAML list of entries, each with ``dataset.id`` and
``dataset.task_id`` (required), ``dataset.revision`` (optional), ``value`` (required), ``date`` (ISO-8601),
``source`` (``url`` required when present, ``name``, ``user``), ``notes`` and ``verifyToken`` (optional); a dataset
that declares itself a benchmark holds ``eval.yaml`` (``name``, ``description``, ``evaluation_framework`` and
``tasks[]`` with ``id``, optional ``config`` and ``split``). :func:`check_eval_results` and :func:`check_eval_yaml`
hold a file to exactly those fields.
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
EVALUATION_FRAMEWORK = "helm"
"""HELM is not yet on the Hub's list of frameworks (huggingface.js ``packages/tasks/src/eval.ts``); the dataset's
maintainers add it there before pushing ``eval.yaml``."""
DEFAULT_SOURCE_NAME = "helm-roboreward traces"

_COMMIT = re.compile(r"[0-9a-f]{40}\Z")
_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+\Z")
_ENTRY_KEYS = {"dataset", "value", "verifyToken", "date", "source", "notes"}
_DATASET_KEYS = {"id", "task_id", "revision"}
_SOURCE_KEYS = {"url", "name", "user"}
_EVAL_KEYS = {"name", "description", "evaluation_framework", "tasks"}
_TASK_KEYS = {"id", "config", "split"}


def failed_requests_line(count: int) -> str:
    """How many requests of a row failed, and what each cost (the official rule: ``failed=max_error``)."""
    return (f"{count} failed request{'' if count == 1 else 's'} (each charged the maximum error, failed=max_error, "
            "as the official rule says)")


def _notes(model: ModelFacts, suite: str) -> str:
    non_default_settings = model.evidence.non_default_settings
    settings = (f"non-default settings: {', '.join(non_default_settings)}" if non_default_settings
                else "official default settings")
    failed = f"{failed_requests_line(model.failed_requests)}; " if model.verdict.comparable else ""
    return f"helm-roboreward, suite {suite}, deployment {model.deployment}; {failed}{settings}; {model.verdict.line}"


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


def check_eval_yaml(text: str) -> list[str]:
    """Every way an ``eval.yaml`` text differs from the documented specification (empty: valid)."""
    try:
        content = yaml.safe_load(text)
    except yaml.YAMLError as error:
        return [f"not YAML: {error}"]
    if not isinstance(content, Mapping):
        return ["eval.yaml must be a mapping"]
    problems = [f"missing field {key}" for key in sorted(_EVAL_KEYS - set(content))]
    tasks = content.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        return problems + ["tasks must be a non-empty list"]
    ids = [task.get("id") for task in tasks if isinstance(task, Mapping)]
    if len(ids) != len(tasks) or not all(isinstance(task_id, str) and task_id for task_id in ids):
        problems.append("every task needs an id")
    if len(set(ids)) != len(ids):
        problems.append("task ids must be unique")
    problems += [f"task {task.get('id')}: unknown field {key!r}" for task in tasks if isinstance(task, Mapping)
                 for key in sorted(set(task) - _TASK_KEYS)]
    return problems


def eval_yaml_text() -> str:
    """The proposed ``eval.yaml`` with a header saying what the maintainers must do first."""
    header = (f"# Proposed eval.yaml for the {DATASET_ID} dataset repository (written by helm-roboreward for its\n"
              "# maintainers). Before pushing it, add the framework id 'helm' to the Hub's list of evaluation\n"
              "# frameworks (huggingface.js packages/tasks/src/eval.ts), as the Hub's eval-results docs ask.\n")
    return header + yaml.safe_dump(eval_yaml(), sort_keys=False, allow_unicode=True, width=100)
