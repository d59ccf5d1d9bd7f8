"""An Inspect log of ``roboreward_bench`` as the rows the HELM-suite reader gives (``helm_frontend/run_rows.py``).

Reads a ``.eval`` (zip) or ``.json`` log as JSON, without inspect-ai, into one :class:`~run_rows.Run` whose rows are
the :class:`~run_rows.InstanceRow` a helm-run of the same rows gives (same instance ids, errors, gold scores, cluster
keys), so the report, publishing and the comparability rule read Inspect logs and HELM suites alike: its settings
go to the rule in ``run_spec.json``'s shape (:func:`run_spec_of`). Every problem
is a :class:`~run_rows.ReportError` whose one line names the log and what to do.
"""

import json
import math
import os
import zipfile
from typing import Any

from helm_roboreward.helm_frontend.run_rows import InstanceRow, ReportError, Run, RunData
from helm_roboreward.protocol.instance_record import InstanceRecord
from helm_roboreward.protocol.rules import SCENARIO_CLASS
from helm_roboreward.protocol.safe_files import file_digest
from helm_roboreward.results.publish.evidence import package_deployment

TASK = "helm_roboreward/roboreward_bench"
SCORER = "progress_score"
FAILED_KEY = "failed_request"
"""Task-state and score metadata: why the request failed after its retries (absent or '' when answered)."""
PROVIDER = "roboreward"
"""This package's Inspect model provider (``sample_media.PROVIDER``; not imported: that module needs inspect-ai)."""
INSPECT_DEPLOYMENT = "inspect-ai:"
"""A run through one of Inspect's own providers ran on no deployment of this package: its deployment reads
``inspect-ai:<provider>/<model>``, which the package never defines (the comparability rule, point 4)."""
TASK_GENERATION = {"temperature": "temperature", "max_tokens": "max_tokens", "num_choices": "num_outputs"}
"""Inspect's generation settings the rule compares -> HELM's adapter field of the same setting."""
FRAME_ARGS = {"fps": "frames_per_second", "last_frame": "include_last_frame", "max_frames": "max_frames",
              "max_side": "max_side"}
"""Task parameter -> the frame option it sets (``protocol.rules.FrameOptions``)."""


def _zip_json(archive: zipfile.ZipFile, name: str, path: str) -> Any:
    try:
        return json.loads(archive.read(name).decode("utf-8"))
    except (KeyError, ValueError, UnicodeDecodeError) as error:
        raise ReportError(f"Inspect log {path}: {name} is missing or unreadable ({error}); rerun inspect eval, or "
                          "pass the log it wrote whole") from None


def read_log_json(path: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The log's header (``eval``, ``status``, ...) and its samples, from a ``.eval`` or ``.json`` log."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                if "header.json" not in archive.namelist():
                    raise ReportError(f"Inspect log {path} has no header.json: the eval did not finish; finish it "
                                      f"with `inspect eval-retry {path}`")
                header = _zip_json(archive, "header.json", path)
                samples = [_zip_json(archive, name, path) for name in sorted(archive.namelist())
                           if name.startswith("samples/") and name.endswith(".json")]
                return header, samples
        with open(path, encoding="utf-8") as handle:
            log = json.load(handle)
    except OSError as error:
        raise ReportError(f"Inspect log {path}: cannot read it ({error.strerror or error})") from None
    except ValueError as error:
        raise ReportError(f"Inspect log {path}: neither an .eval archive nor JSON ({error})") from None
    if not isinstance(log, dict):
        raise ReportError(f"Inspect log {path}: not an Inspect log (a JSON object with 'eval' and 'samples')")
    return log, list(log.get("samples") or [])


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not math.isnan(float(value)) else None


def sample_row(sample: dict[str, Any], path: str) -> InstanceRow:
    """One sample as the row helm-run's per-instance stats give for the same instance."""
    score = (sample.get("scores") or {}).get(SCORER)
    if not isinstance(score, dict):
        raise ReportError(f"Inspect log {path}: sample {sample.get('id')} has no {SCORER} score (the sample failed "
                          f"in Inspect: {str(sample.get('error'))[:80]}); finish it with `inspect eval-retry {path}`")
    record = InstanceRecord.from_extra_data(sample.get("metadata"))
    terms = score.get("metadata") or {}
    failed = bool(terms.get(FAILED_KEY))
    return InstanceRow(
        instance_id=str(sample.get("id")), subset=record.subset, robot=record.robot, kind=record.kind,
        episode=record.episode, video_sha256=record.video_sha256, gold_score=_float(terms.get("gold_score")),
        predicted=_float(terms.get("predicted")), abs_error=_float(score.get("value")),
        invalid_output=bool(terms.get("invalid_output")), failed_request=failed, task=record.task,
        cluster=record.cluster or record.episode)


def run_spec_of(header: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The log's settings in ``run_spec.json``'s shape, so the one comparability rule reads them; and the deployment.

    The task parameters are the run entry's options (``scenario_spec.args``, ``routing``); the generation settings
    are the task's (``plan.config``) under what the command line gave (``eval.model_generate_config``), as Inspect
    merges them. Any other generation option given (``top_p=0.9``, ``seed=1``) reads as a run-name part HELM's
    expanders would have appended: a non-default setting. The official route is judged on the HELM model a
    ``roboreward/<deployment>`` model runs, else on the Inspect model's name (as the task's routing does).
    """
    evaluation = header.get("eval") or {}
    args = evaluation.get("task_args") or {}
    metadata = evaluation.get("metadata") or {}
    model = str(evaluation.get("model", "unknown"))
    deployment = str(metadata.get("deployment") or "")
    if model.partition("/")[0] == PROVIDER and deployment:
        entry, _ = package_deployment(deployment)
        rule_model = str((entry or {}).get("model_name") or deployment)
    else:
        rule_model, deployment = model, INSPECT_DEPLOYMENT + model
    plan = (header.get("plan") or {}).get("config") or {}
    given = {key: value for key, value in (evaluation.get("model_generate_config") or {}).items()
             if value is not None and value != plan.get(key)}
    config = {**plan, **given}
    adapter = {"model": rule_model, "model_deployment": deployment,
               **{name: config[key] for key, name in TASK_GENERATION.items() if key in config}}
    other = [f"{key}={value}" for key, value in sorted(given.items()) if key not in TASK_GENERATION]
    routing = {"model": rule_model, "video": args.get("video"), "layout": args.get("layout"),
               "failed": args.get("failed"), "name_prefix": "inspect:",
               "frame_options": {option: args[name] for name, option in FRAME_ARGS.items() if name in args}}
    scenario = {"subset": args.get("subset", "all"), "data": args.get("data", "hf"), "video": metadata.get("video")}
    if "revision" in args:
        scenario["revision"] = args["revision"]
    return {"name": "inspect:" + ",".join(other), "scenario_spec": {"class_name": SCENARIO_CLASS, "args": scenario},
            "adapter_spec": adapter, "routing": {key: value for key, value in routing.items() if value is not None},
            "inspect": {"task": evaluation.get("task"), "model": model, "task_args": args,
                        "generate_config": config, "model_args": evaluation.get("model_args") or {},
                        "eval_id": evaluation.get("eval_id"), "created": evaluation.get("created")}}, deployment


def read_inspect_log(path: str) -> Run:
    """The rows of one finished ``roboreward_bench`` log, as one run of the model it ran."""
    header, samples = read_log_json(path)
    evaluation = header.get("eval") or {}
    if evaluation.get("task") not in (TASK, TASK.split("/")[1]):
        raise ReportError(f"Inspect log {path} is of task {evaluation.get('task')!r}, not {TASK}")
    if header.get("status") != "success":
        raise ReportError(f"Inspect log {path} has status {header.get('status')!r}, not 'success': finish it with "
                          f"`inspect eval-retry {path}`")
    epochs = {sample.get("epoch", 1) for sample in samples}
    if epochs - {1}:
        raise ReportError(f"Inspect log {path} holds {len(epochs)} epochs; the benchmark scores one answer per row: "
                          "rerun without --epochs")
    if not samples:
        raise ReportError(f"Inspect log {path} holds no samples (written with --no-log-samples?): rerun with samples")
    rows = tuple(sample_row(sample, path) for sample in samples)
    metadata = evaluation.get("metadata") or {}
    revisions = sorted({InstanceRecord.from_extra_data(sample.get("metadata")).dataset_revision
                        for sample in samples} - {""})
    model = str(evaluation.get("model", "unknown"))
    finished = os.path.getmtime(path)
    run_spec, deployment = run_spec_of(header)
    instances = {row.instance_id: {"extra_data": sample.get("metadata") or {}}
                 for row, sample in zip(rows, samples, strict=True)}
    return Run(os.path.basename(path), model, finished, rows, str(metadata.get("settings", "")), deployment,
               RunData(str(metadata.get("data", "hf")), tuple(revisions), run_spec, instances,
                       tuple(row.instance_id for row in rows), finished, {os.path.basename(path): file_digest(path)}))
