"""Reading what ``helm-run`` wrote for RoboReward runs: one prediction per instance, with its raw answer.

Per run folder ``<output>/runs/<suite>/<run>/``: ``run_spec.json`` (scenario class and arguments, model,
deployment, run name) and ``scenario_state.json`` (each request state: the instance with its ``extra_data``
record and gold reference, the request's media, the result's completions, success and error). The parsed score
is the official rule's (:func:`helm_roboreward.protocol.parse_progress_score`) on the raw completion; a failed
request has no score (HELM turns it into an empty answer, which is unparseable anyway).
"""

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from helm_roboreward.core.record import InstanceRecord
from helm_roboreward.data.rows import DataError
from helm_roboreward.media.paths import media_objects
from helm_roboreward.presentation.report.loading import gold_of
from helm_roboreward.protocol import SCENARIO_CLASS, parse_progress_score


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
    gold: float | None
    raw_output: str
    score: float | None
    """Parsed by the official rule; None when unparseable or the request failed."""

    request_failed: bool
    error: str | None
    media: tuple[str, ...]
    """Locations of the media sent (frames or the video), as recorded (relative to helm-run's folder)."""

    content_type: str


def _read_json(path: str) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def roboreward_runs(output_path: str, suite: str) -> list[RunInfo]:
    """The suite's RoboReward runs that finished (their ``scenario_state.json`` exists), by name.

    Raises:
        DataError: The suite folder does not exist.
    """
    suite_dir = os.path.join(output_path, "runs", suite)
    if not os.path.isdir(suite_dir):
        raise DataError(f"--suite {suite}: {suite_dir} not found; run helm-run --suite {suite} -o {output_path} first")
    runs: list[RunInfo] = []
    for name in sorted(os.listdir(suite_dir)):
        folder = os.path.join(suite_dir, name)
        spec_path = os.path.join(folder, "run_spec.json")
        if not (os.path.isfile(spec_path) and os.path.isfile(os.path.join(folder, "scenario_state.json"))):
            continue
        spec = _read_json(spec_path)
        scenario = spec.get("scenario_spec") or {}
        if scenario.get("class_name") != SCENARIO_CLASS:
            continue
        adapter = spec.get("adapter_spec") or {}
        runs.append(RunInfo(folder, str(spec.get("name", name)), str(adapter.get("model", "")),
                            str(adapter.get("model_deployment", "")), dict(scenario.get("args") or {})))
    return runs


def predictions_of(run: RunInfo) -> Iterator[Prediction]:
    """Every instance of a run, in the run's order."""
    state = _read_json(os.path.join(run.folder, "scenario_state.json"))
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
            subset=record.subset, source_file=record.source_file, task=record.task, gold=gold_of(instance),
            raw_output=raw, score=None if failed else parse_progress_score(raw), request_failed=failed,
            error=str(result["error"]) if result.get("error") else None,
            media=tuple(location for _, location in media), content_type=media[0][0] if media else "")

