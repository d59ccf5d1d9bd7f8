"""Reading what ``helm-run`` wrote for RoboReward runs: one prediction per instance, with its raw answer.

Per run folder ``<output>/runs/<suite>/<run>/``: ``run_spec.json`` (scenario class and arguments, model,
deployment, run name) and ``scenario_state.json`` (each request state: the instance with its ``extra_data``
record and the reference holding its gold score, the request's media, the result's completions, success and
error). The parsed score is the official rule's (:func:`helm_roboreward.protocol.rules.parse_progress_score`) on
the raw completion; a failed request has no score (HELM turns it into an empty answer, which is unparseable anyway).
"""

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from helm_roboreward.helm_frontend.run_rows import media_objects, recorded_gold_score
from helm_roboreward.protocol.instance_record import InstanceRecord
from helm_roboreward.protocol.rows import DataError
from helm_roboreward.protocol.rules import SCENARIO_CLASS, parse_progress_score


@dataclass(frozen=True)
class RunInfo:
    """One RoboReward run folder and what its run spec says."""

    folder: str
    name: str
    model: str
    deployment: str
    scenario_args: dict[str, Any]


@dataclass(frozen=True)
class Prediction:
    """One instance of one run: what the model answered and what it was scored."""

    run: str
    model: str
    deployment: str
    instance_id: str
    subset: str
    source_file: str
    """The row's ``file_name`` in the data (the row key)."""

    task: str
    gold_score: float | None
    raw_output: str
    score: float | None
    """Parsed by the official rule; None when unparseable or the request failed."""

    request_failed: bool
    error: str | None
    media: tuple[str, ...]
    """Locations of the media sent (frames or the video), as recorded (relative to helm-run's folder)."""

    content_type: str
    media_types: tuple[str, ...] = ()
    """The content type recorded for each of :attr:`media`."""


def _read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DataError(f"{path}: cannot be read as JSON ({error}); the run's file is damaged (a helm-run killed "
                        "while writing it?): rerun that run, or move its folder out of the suite") from None


RUN_PREFIX = "roboreward:"
"""How RoboReward run folders are named (the run entry's name)."""


def roboreward_runs(output_path: str, suite: str, unfinished: list[str] | None = None) -> list[RunInfo]:
    """The suite's RoboReward runs that finished (their ``scenario_state.json`` exists), by name.

    ``unfinished`` receives the folders of RoboReward runs without ``run_spec.json`` or ``scenario_state.json``
    (a run helm-run failed, or one still running).

    Raises:
        DataError: The suite folder does not exist, or a finished run's JSON files are damaged.
    """
    suite_dir = os.path.join(output_path, "runs", suite)
    if not os.path.isdir(suite_dir):
        raise DataError(f"--suite {suite}: {suite_dir} not found; run helm-run --suite {suite} -o {output_path} first")
    runs: list[RunInfo] = []
    for name in sorted(os.listdir(suite_dir)):
        folder = os.path.join(suite_dir, name)
        spec_path = os.path.join(folder, "run_spec.json")
        if not (os.path.isfile(spec_path) and os.path.isfile(os.path.join(folder, "scenario_state.json"))):
            if unfinished is not None and name.startswith(RUN_PREFIX) and os.path.isdir(folder):
                unfinished.append(folder)
            continue
        spec = _read_json(spec_path)
        if not isinstance(spec, dict):
            raise DataError(f"{spec_path}: expected a JSON object (HELM's run spec)")
        scenario = spec.get("scenario_spec") or {}
        if scenario.get("class_name") != SCENARIO_CLASS:
            continue
        adapter = spec.get("adapter_spec") or {}
        runs.append(RunInfo(folder, str(spec.get("name", name)), str(adapter.get("model", "")),
                            str(adapter.get("model_deployment", "")), dict(scenario.get("args") or {})))
    return runs


def predictions_of(run: RunInfo) -> Iterator[Prediction]:
    """Every instance of a run, in the run's order."""
    path = os.path.join(run.folder, "scenario_state.json")
    state = _read_json(path)
    if not isinstance(state, dict) or not isinstance(state.get("request_states", []), list):
        raise DataError(f"{path}: expected HELM's scenario state (an object with 'request_states')")
    for request_state in state.get("request_states", []):
        instance = request_state.get("instance") or {}
        record = InstanceRecord.from_extra_data(instance.get("extra_data"))
        result = request_state.get("result") or {}
        completions = result.get("completions") or []
        raw = str(completions[0].get("text", "")) if completions else ""
        failed = not bool(result.get("success", False))
        media = list(media_objects(request_state.get("request") or {}))
        yield Prediction(
            run=run.name, model=run.model, deployment=run.deployment, instance_id=str(instance.get("id", "")),
            subset=record.subset, source_file=record.source_file, task=record.task,
            gold_score=recorded_gold_score(instance), raw_output=raw,
            score=None if failed else parse_progress_score(raw), request_failed=failed,
            error=str(result["error"]) if result.get("error") else None,
            media=tuple(location for _, location in media), content_type=media[0][0] if media else "",
            media_types=tuple(content_type for content_type, _ in media))

