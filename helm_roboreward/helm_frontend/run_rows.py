"""Reading a suite's RoboReward runs: one row per instance with its error, gold score and cluster keys.

Reads, per run folder under ``<output-path>/runs/<suite>/``: ``run_spec.json`` (scenario class,
model), ``per_instance_stats.json`` (errors, scores, flags), ``stats.json`` (cross-check of the
per-subset MAEs) and the instances' ``extra_data`` from ``instances.json`` (written by
helm-summarize) or else ``scenario_state.json`` (written by helm-run).
"""

import hashlib
import json
import os
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from helm_roboreward.protocol.data_sources import HUB
from helm_roboreward.protocol.instance_record import InstanceRecord
from helm_roboreward.protocol.published import IMPORT_RECORD
from helm_roboreward.protocol.reward_statistics import ScoredRow
from helm_roboreward.protocol.rows import cluster_of
from helm_roboreward.protocol.rules import EXPECTED, SCENARIO_CLASS, subset_info
from helm_roboreward.protocol.safe_files import file_digest, is_inside
from helm_roboreward.protocol.stat_catalogue import subset_mae

UNKNOWN_SUBSET = "unknown"
MAE_TOLERANCE = 1e-9
MAX_LISTED = 5


@dataclass(frozen=True)
class InstanceRow:
    """One instance of one model's run."""

    instance_id: str
    subset: str
    robot: str
    kind: str
    episode: str
    """Source-episode key (clips and camera views of one rollout share it)."""

    video_sha256: str
    """Content hash of the video (counterfactual relabels of one video share it)."""

    gold_score: float | None
    predicted: float | None
    """Parsed score; None when unparseable or when the request failed."""

    abs_error: float | None
    """None when the request failed and the run left it out (``failed=skip``; officially it costs 4.0)."""

    invalid_output: bool
    failed_request: bool
    task: str = ""
    """The row's task text (same-task preference pairs); from the instance record, else the prompt."""

    expected: float | None = None
    """The expected score of a ``score=expected`` run (None: not recorded for this row)."""

    success_probability: float | None = None
    """P(5) of a ``score=expected`` run."""

    cluster: str = ""
    """Bootstrap cluster key by name: a RoboArena session, else the episode (:func:`cluster_of_record`; '' reads as
    the episode)."""

    @property
    def left_out(self) -> bool:
        """A failed request its run left out of every statistic (``failed=skip``: it has no error)."""
        return self.failed_request and self.abs_error is None


@dataclass(frozen=True)
class RunData:
    """Where a run's rows came from."""

    data: str
    """The scenario's ``data`` argument: ``hf`` (the hub's public split; the default), ``sample`` or a folder."""

    revisions: tuple[str, ...] = ()
    """The dataset revisions its instances record: hub commits, or ``sample-<digest>`` / ``local-<digest>``."""

    # What the loader read, kept for the comparability rule (presentation/publish/evidence.py): not read twice.
    run_spec: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    instances: dict[str, dict[str, Any]] = field(default_factory=dict, compare=False, repr=False)
    row_ids: tuple[str, ...] = field(default=(), compare=False, repr=False)
    finished: float = field(default=0.0, compare=False, repr=False)
    """``stats.json``'s modification time."""

    files_sha256: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    """File name -> SHA-256 of the run files the numbers rest on (:data:`HASHED_FILES`, those present)."""


@dataclass(frozen=True)
class Run:
    """The rows of one usable run."""

    name: str
    model: str
    finished: float
    """Modification time of its ``stats.json``: which of two overlapping runs is the latest."""

    rows: tuple[InstanceRow, ...]
    settings: str = ""
    """The run entry's options other than subset, model and deployment (from the run name), e.g.
    ``data=sample,video=frames``."""

    deployment: str = ""
    """The model deployment it ran on (``adapter_spec.model_deployment``)."""

    source: RunData = RunData(HUB)

    @property
    def subsets(self) -> list[str]:
        """The subsets its rows belong to."""
        return sorted({row.subset for row in self.rows})


@dataclass
class ModelRows:
    """Every row of one leaderboard row (a model on one deployment) across the suite, one run per subset."""

    model: str
    """The model name; ``<model>@<deployment>`` when the suite runs the model on several deployments (HELM's
    leaderboard has a row per model and deployment; so has the report)."""

    display_name: str
    rows: list[InstanceRow]
    run_of_subset: dict[str, str]


@dataclass(frozen=True)
class Superseded:
    """A run whose rows no number uses: a later run of the same row and settings covers its subsets."""

    run: str
    by: str
    """The run used instead (the latest)."""

    row: str
    """The leaderboard row (:attr:`ModelRows.model`)."""

    subsets: tuple[str, ...]


@dataclass
class SuiteRows:
    """What the report is computed from."""

    suite: str
    models: list[ModelRows]
    warnings: list[str] = field(default_factory=list)
    """Runs skipped or inconsistent: shown at the top of the report."""

    notes: list[str] = field(default_factory=list)
    """Overlapping runs and which one was used."""

    run_names: set[str] = field(default_factory=set)
    """Every run folder of the suite (with a ``run_spec.json``), usable or not."""

    sources: dict[str, RunData] = field(default_factory=dict)
    """Run name -> where its rows came from, for every usable run."""

    skipped: dict[str, str] = field(default_factory=dict)
    """Run folder name -> why the report could not read it (the file and what is wrong), for every RoboReward run
    left out (:func:`~helm_roboreward.results.report.coverage.check_leaderboard_coverage` stops when the
    leaderboard counts one)."""

    superseded: list[Superseded] = field(default_factory=list)
    """Every run a later run of the same row and settings replaces, and for which subsets."""


class _UnusableRunError(Exception):
    """A run that cannot be read; the message says why."""


class _DisagreeingFilesError(Exception):
    """A run whose files disagree with one another; the message names the file (:class:`RunFilesError`)."""


HASHED_FILES = ("per_instance_stats.json", "run_spec.json", "scenario_state.json", "stats.json")
"""The run files whose SHA-256 the manifest records."""

SUITE_NAME_FIX = ("give the suite's folder name under <output-path>/runs/ (helm-run's --suite: a plain name, no "
                  "'/', '\\' or '..'), and helm-run's -o as --output-path")


def _listing(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_LISTED])
    return shown + (f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else "")


def _read_bytes(path: str) -> bytes:
    if not is_inside(path, os.path.dirname(path)):  # a link in a run folder is never followed out of it
        raise _UnusableRunError(f"{os.path.basename(path)} is a link to {os.path.realpath(path)}, outside its run "
                                "folder; replace it with the file helm-run wrote")
    if not os.path.isfile(path):
        raise _UnusableRunError(f"no {os.path.basename(path)} (unfinished run?)")
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise _UnusableRunError(f"{os.path.basename(path)} is unreadable ({error})") from error


def _parse(path: str, raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except ValueError as error:
        raise _UnusableRunError(f"{os.path.basename(path)} is unreadable ({error})") from error


def _read_json(path: str) -> Any:
    return _parse(path, _read_bytes(path))


_PARSED_INSTANCES: dict[str, dict[str, dict[str, Any]]] = {}
"""instances.json by the SHA-256 of its bytes: every model's run of one scenario writes the same file, so a suite
of 25 models parses each subset's instances once."""
_MAX_PARSED_INSTANCES = 32


def check_suite_name(suite: str) -> str:
    """``suite`` when it is a plain folder name (what every command's ``--suite`` must be), else a ReportError.

    A path (``../x``, ``/abs``, ``a/b``) would read runs, and write the manifest, outside ``<output-path>/runs/``.
    """
    plain = (suite not in ("", ".", "..") and suite == suite.strip() and not os.path.isabs(suite)
             and not any(separator in suite for separator in ("/", "\\", os.sep))
             and not any(unicodedata.category(character).startswith("C") for character in suite))
    if not plain:
        raise ReportError(f"--suite {suite!r}: {SUITE_NAME_FIX}")
    return suite


def suite_directory(output_path: str, suite: str) -> str:
    """The suite's runs folder; a missing one is a :class:`ReportError` that lists the suites there are."""
    check_suite_name(suite)
    runs_dir = os.path.join(output_path, "runs")
    suite_dir = os.path.join(runs_dir, suite)
    if os.path.isdir(suite_dir):
        return suite_dir
    if not os.path.isdir(runs_dir):
        raise ReportError(f"no suite {suite!r}: {runs_dir} does not exist (pass helm-run's -o as --output-path)")
    suites = sorted(name for name in os.listdir(runs_dir) if os.path.isdir(os.path.join(runs_dir, name)))
    available = _listing(suites) if suites else "none"
    raise ReportError(f"no suite {suite!r} in {runs_dir}; available suites: {available}")


def _stat_means(stats: Any) -> dict[str, float]:
    """``name -> mean`` of the unperturbed stats of a stats list."""
    means: dict[str, float] = {}
    for stat in stats if isinstance(stats, list) else []:
        name = stat.get("name", {}) if isinstance(stat, dict) else {}
        if name.get("perturbation") is None and stat.get("count"):
            means[str(name.get("name"))] = float(stat["sum"]) / float(stat["count"])
    return means


def _instances_by_id(run_dir: str) -> dict[str, dict[str, Any]]:
    """The run's instances (as JSON) by id, from instances.json or else scenario_state.json (never changed)."""
    path = os.path.join(run_dir, "instances.json")
    if os.path.isfile(path):
        raw = _read_bytes(path)
        digest = hashlib.sha256(raw).hexdigest()
        if digest not in _PARSED_INSTANCES:
            if len(_PARSED_INSTANCES) >= _MAX_PARSED_INSTANCES:
                _PARSED_INSTANCES.pop(next(iter(_PARSED_INSTANCES)))
            parsed = _parse(path, raw)
            _PARSED_INSTANCES[digest] = {str(item.get("id")): item for item in parsed if isinstance(item, dict)} \
                if isinstance(parsed, list) else {}
        return _PARSED_INSTANCES[digest]
    else:
        state = _read_json(os.path.join(run_dir, "scenario_state.json"))
        states = state.get("request_states", []) if isinstance(state, dict) else []
        instances = [request_state.get("instance", {}) for request_state in states]
    return {str(item.get("id")): item for item in instances if isinstance(item, dict)}


def all_failed_subsets(rows: Iterable[InstanceRow]) -> set[str]:
    """The subsets where every row is a failed request its run left out (``failed=skip``)."""
    rows = list(rows)
    return {row.subset for row in rows} - {row.subset for row in rows if not row.left_out}


def recorded_gold_score(instance: dict[str, Any]) -> float | None:
    """The gold score of an instance as ``scenario_state.json`` records it (its reference tagged correct)."""
    for reference in instance.get("references", []):
        if "correct" in reference.get("tags", []):
            try:
                return float(reference["output"]["text"])
            except (KeyError, TypeError, ValueError):
                return None
    return None


def cluster_of_record(record: InstanceRecord, subset: str) -> str:
    """A row's bootstrap cluster key: as recorded, else from its file name, else its episode.

    Suites written before the record held the key get it from ``source_file``. Rows with byte-identical videos are
    joined later, by hash.
    """
    if record.cluster:
        return record.cluster
    if record.source_file:
        stem = os.path.splitext(os.path.basename(record.source_file))[0]
        return f"{subset}/{cluster_of(stem, subset_info(subset).natural)}"
    return record.episode


def _row(instance_id: str, means: dict[str, float], instance: dict[str, Any], default_subset: str) -> InstanceRow:
    record = InstanceRecord.from_extra_data(instance.get("extra_data"))
    abs_error = means.get("abs_error")
    gold_score = means.get("gold_score", recorded_gold_score(instance))
    return InstanceRow(
        instance_id=instance_id,
        subset=record.subset or default_subset,
        robot=record.robot,
        kind=record.kind,
        episode=record.episode,
        cluster=cluster_of_record(record, record.subset or default_subset),
        video_sha256=record.video_sha256,
        gold_score=gold_score,
        predicted=means.get("predicted_score"),
        abs_error=abs_error,
        invalid_output=means.get("invalid_output", 0.0) > 0,
        failed_request=means.get("failed_request", 1.0 if abs_error is None else 0.0) > 0,
        task=record.task or _task_from_prompt(instance),
        expected=means.get("expected_score"),
        success_probability=means.get("success_probability"),
    )


TASK_MARKER = "\n\nTask: "
"""The rubric prompt ends with a blank line, ``Task: `` and the task (docs/protocol.md, section 2)."""


def _task_from_prompt(instance: dict[str, Any]) -> str:
    """The task of an instance written before the record carried it: the prompt's text after ``Task: ``."""
    content = (instance.get("input") or {}).get("multimedia_content") or {}
    for media in content.get("media_objects") or []:
        text = media.get("text") if isinstance(media, dict) else None
        if isinstance(text, str) and TASK_MARKER in text:
            return text.rsplit(TASK_MARKER, 1)[1]
    return ""


class UnusableRunError(Exception):
    """A run whose files cannot be read; the message says why."""


class DuplicateInstanceError(UnusableRunError):
    """``per_instance_stats.json`` records one instance more than once (an edited or concatenated file)."""


def instance_rows(run_dir: str, subset: str, per_instance: Any = None
                  ) -> tuple[dict[str, InstanceRow], dict[str, dict[str, Any]]]:
    """A run's rows by instance id and its instances (as JSON) by id; ``subset`` is the run spec's argument.

    ``per_instance``: the run's ``per_instance_stats.json`` already decoded (None: read here).

    Raises:
        UnusableRunError: per_instance_stats.json is missing, unreadable or empty.
        DuplicateInstanceError: It records one instance (unperturbed, one trial) twice: which one counts is
            anyone's guess, so none does.
    """
    try:
        if per_instance is None:
            per_instance = _read_json(os.path.join(run_dir, "per_instance_stats.json"))
        if not isinstance(per_instance, list) or not per_instance:
            raise _UnusableRunError("per_instance_stats.json holds no instances")
        instances = _instances_by_id(run_dir)
    except _UnusableRunError as error:
        raise UnusableRunError(str(error)) from None
    default_subset = UNKNOWN_SUBSET if subset in ("all", "") else subset
    rows: dict[str, InstanceRow] = {}
    records: dict[tuple[str, object], int] = defaultdict(int)
    for entry in per_instance:
        if not isinstance(entry, dict) or entry.get("perturbation") is not None:
            continue
        instance_id = str(entry.get("instance_id"))
        records[(instance_id, entry.get("train_trial_index", 0))] += 1
        if instance_id not in rows:
            means = _stat_means(entry.get("stats"))
            rows[instance_id] = _row(instance_id, means, instances.get(instance_id, {}), default_subset)
    repeated = [f"instance {instance_id} is recorded {count} times" for (instance_id, _), count in records.items()
                if count > 1]
    if repeated:
        raise DuplicateInstanceError(f"per_instance_stats.json: {_listing(repeated)} (helm-run writes one record per "
                                     "instance: the file was edited or joined after the run)")
    return rows, instances


def _files_sha256(run_dir: str, read: dict[str, bytes]) -> dict[str, str]:
    """SHA-256 of the run's :data:`HASHED_FILES` (those present; ``read``: bytes already read, by name)."""
    digests = {}
    for name in HASHED_FILES:
        path = os.path.join(run_dir, name)
        if name in read:
            digests[name] = hashlib.sha256(read[name]).hexdigest()
        elif os.path.isfile(path) and is_inside(path, run_dir):
            digests[name] = file_digest(path)
    return digests


def _read_run(run_dir: str, run_spec: dict[str, Any]) -> tuple[Run, list[str]]:
    """One run's rows and its consistency warnings.

    Raises :class:`_UnusableRunError`, or :class:`_DisagreeingFilesError` when its files disagree (duplicate
    records, a subset MAE of its rows that is not the one stats.json recorded).
    """
    name = os.path.basename(run_dir)
    read = {file: _read_bytes(os.path.join(run_dir, file)) for file in ("stats.json", "per_instance_stats.json")}
    stats = _parse(os.path.join(run_dir, "stats.json"), read["stats.json"])
    per_instance = _parse(os.path.join(run_dir, "per_instance_stats.json"), read["per_instance_stats.json"])
    try:
        rows, instances = instance_rows(
            run_dir, str(run_spec.get("scenario_spec", {}).get("args", {}).get("subset", UNKNOWN_SUBSET)),
            per_instance)
    except DuplicateInstanceError as error:
        raise _DisagreeingFilesError(f"{run_dir}/{error}") from None
    except UnusableRunError as error:
        raise _UnusableRunError(str(error)) from None
    model = str(run_spec.get("adapter_spec", {}).get("model", "unknown"))
    deployment = str(run_spec.get("adapter_spec", {}).get("model_deployment") or model)
    finished = os.path.getmtime(os.path.join(run_dir, "stats.json"))
    data = str(run_spec.get("scenario_spec", {}).get("args", {}).get("data", HUB))
    revisions = sorted({InstanceRecord.from_extra_data(item.get("extra_data")).dataset_revision
                        for item in instances.values()} - {""})
    run = Run(name, model, finished, tuple(rows.values()), _settings(str(run_spec.get("name") or name)), deployment,
              RunData(data, tuple(revisions), run_spec, instances, tuple(rows), finished,
                      _files_sha256(run_dir, read)))
    disagreements = _mismatches(run, _stat_means(stats))
    if disagreements:
        raise _DisagreeingFilesError(f"{run_dir}/per_instance_stats.json: {'; '.join(disagreements)}")
    missing = len(set(rows) - set(instances))
    warnings = [f"run {name}: {missing} instance(s) have no instance data (subset taken from the run spec)"]
    return run, warnings if missing else []


def _settings(run_name: str) -> str:
    """``roboreward:subset=a,data=sample,video=frames,model=m`` -> ``data=sample,video=frames``."""
    options = run_name.split(":", 1)[-1].split(",")
    return ",".join(option for option in options
                    if not option.startswith(("subset=", "model=", "model_deployment=")))


def _mismatches(run: Run, run_means: dict[str, float]) -> list[str]:
    """Subsets whose MAE recomputed from per-instance errors differs from the run's stats.json."""
    found = []
    for subset in run.subsets:
        errors = [row.abs_error for row in run.rows if row.subset == subset and row.abs_error is not None]
        recorded = run_means.get(subset_mae(subset))
        if errors and recorded is not None and abs(sum(errors) / len(errors) - recorded) > MAE_TOLERANCE:
            found.append(f"subset {subset} MAE from its rows {sum(errors) / len(errors):.6f} differs from "
                         f"stats.json's {recorded:.6f}")
    return found


def _name_option(run_name: str, key: str) -> str | None:
    """The value of ``key=`` in a run name (``roboreward:subset=a,...,model=org_name``), or None."""
    for option in run_name.split(":", 1)[-1].split(","):
        name, _, value = option.partition("=")
        if name == key:
            return value
    return None


def model_mismatch(run_name: str, model: str, deployment: str | None) -> str | None:
    """How a run's name and its run_spec.json disagree on the model, or None when they agree.

    HELM writes ``model=<model>`` (``/`` as ``_``) into the run name from the run entry (a deployment named there
    instead also reads as agreeing); its leaderboard files the run under ``adapter_spec.model``. A run_spec.json
    copied or edited from another run would put its numbers in that model's row while its name says another
    model. ``model_deployment=`` in a name is not compared: routing may run an option deployment of it (``-greedy``).
    """
    named = _name_option(run_name, "model")
    if named is None or named in (model.replace("/", "_"), (deployment or "").replace("/", "_")):
        return None
    return f"its name says model={named} but its run_spec.json records the model {model}"


def _check_models(runs: list[tuple[str, dict[str, Any]]], suite_dir: str) -> None:
    """Stop on a run whose folder name or run_spec.json name disagrees with the model its run_spec.json records."""
    problems = []
    for run_dir, run_spec in runs:
        adapter_spec = run_spec.get("adapter_spec")
        adapter_spec = adapter_spec if isinstance(adapter_spec, dict) else {}
        model, deployment = str(adapter_spec.get("model", "")), adapter_spec.get("model_deployment")
        for name in dict.fromkeys([os.path.basename(run_dir), str(run_spec.get("name") or "")]):
            problem = model_mismatch(name, model, None if deployment is None else str(deployment))
            if problem:
                problems.append(f"run folder {run_dir}: {problem}")
                break
    if problems:
        raise ReportError(
            f"{_listing(problems)}. helm-summarize files a run under the model its run_spec.json records, so the "
            "leaderboard shows these numbers in that model's row (averaged with that model's own run of the subset, "
            "if any) while the run's name says otherwise: the run_spec.json was copied or edited from another run. "
            f"Fix: rerun helm-run for the run entry of the folder name into this suite, or move the folder out of "
            f"{suite_dir}, then helm-summarize again. Nothing was written.")


def _read_suite_runs(suite_dir: str, suite: str) -> tuple[list[Run], list[str], set[str], dict[str, str]]:
    """The usable RoboReward runs of a suite, the warnings about the others, every run folder's name.

    And, per RoboReward run left out, why (:attr:`SuiteRows.skipped`).
    """
    found, roboreward_dirs, foreign = [], [], []
    unreadable: list[str] = []
    skipped: dict[str, str] = {}
    for name in sorted(os.listdir(suite_dir)):
        run_dir = os.path.join(suite_dir, name)
        if not os.path.isfile(os.path.join(run_dir, "run_spec.json")):
            continue
        found.append(name)
        if not is_inside(run_dir, suite_dir):
            unreadable.append(f"run {name} skipped: its folder is a link to {os.path.realpath(run_dir)}, outside "
                              f"the suite folder {suite_dir}; copy the run folder itself")
            continue
        try:
            run_spec = _read_json(os.path.join(run_dir, "run_spec.json"))
        except _UnusableRunError as reason:
            unreadable.append(f"run {name} skipped: {reason}")
            skipped[name] = str(reason)
            continue
        scenario_spec = run_spec.get("scenario_spec") if isinstance(run_spec, dict) else None
        if isinstance(scenario_spec, dict) and scenario_spec.get("class_name") == SCENARIO_CLASS:
            roboreward_dirs.append((run_dir, run_spec))
        elif name.startswith("roboreward:"):
            unreadable.append(f"run {name} skipped: its run_spec.json does not name the scenario {SCENARIO_CLASS}")
        else:
            foreign.append(name)
    if not roboreward_dirs:
        runs_found = _listing(found) if found else "none"
        reasons = f" ({'; '.join(unreadable[:MAX_LISTED])})" if unreadable else ""
        raise ReportError(f"suite {suite!r} has no RoboReward runs (scenario {SCENARIO_CLASS}); runs found: "
                          f"{runs_found}{reasons}")
    _check_models(roboreward_dirs, suite_dir)
    runs: list[Run] = []
    warnings: list[str] = list(unreadable)
    disagreeing: list[str] = []
    if foreign:
        warnings.append(f"{len(foreign)} run(s) of other benchmarks ignored: {_listing(foreign)}")
    for run_dir, run_spec in roboreward_dirs:
        name = os.path.basename(run_dir)
        try:
            run, run_warnings = _read_run(run_dir, run_spec)
        except _DisagreeingFilesError as problem:
            disagreeing.append(str(problem))
            continue
        except _UnusableRunError as reason:
            skipped[name] = str(reason)
            warnings.append(f"run {name} skipped: {reason}")
            continue
        except (AttributeError, KeyError, TypeError, ValueError) as error:
            skipped[name] = f"malformed stats or instances ({type(error).__name__}: {error})"
            warnings.append(f"run {name} skipped: {skipped[name]}")
            continue
        runs.append(run)
        warnings += run_warnings
    if disagreeing:
        raise RunFilesError(
            f"run files disagree: {_listing(disagreeing)}. leaderboard, report, publish and export-predictions read "
            "the same rows, so none goes on: restore the files helm-run wrote (or rerun helm-run for these runs), "
            "then helm-summarize again. Nothing was written.")
    if not runs:
        raise ReportError(f"none of the {len(roboreward_dirs)} RoboReward runs of suite {suite!r} is usable: "
                          + "; ".join(warnings[:MAX_LISTED]))
    return runs, warnings, set(found), skipped


def _latest_per_subset(runs: list[Run], display_names: dict[str, str]
                       ) -> tuple[list[ModelRows], list[str], list[Superseded]]:
    """Per leaderboard row (model and deployment) and subset, the latest run covering it; notes on the others.

    Raises:
        ReportError: Runs of one row with different settings cover one subset: HELM's leaderboard averages them in
            one cell, and no single run's numbers would agree with it (the message names the runs).
    """
    by_row: dict[tuple[str, str], list[Run]] = defaultdict(list)
    deployments: dict[str, set[str]] = defaultdict(set)
    for run in runs:
        by_row[(run.model, run.deployment)].append(run)
        deployments[run.model].add(run.deployment)
    models, notes, conflicts = [], [], []
    replaced: list[Superseded] = []
    for (model, deployment), row_runs in sorted(by_row.items()):
        single = len(deployments[model]) == 1
        key = model if single else f"{model}@{deployment}"
        covering: dict[str, list[Run]] = defaultdict(list)
        for run in sorted(row_runs, key=lambda item: (item.finished, item.name), reverse=True):
            for subset in run.subsets:
                covering[subset].append(run)
        chosen = {subset: subset_runs[0] for subset, subset_runs in covering.items()}
        superseded: dict[tuple[str, str], list[str]] = defaultdict(list)
        for subset, subset_runs in covering.items():
            if len({run.settings for run in subset_runs}) > 1:
                conflicts.append(f"{key}, subset {subset}: runs " + ", ".join(
                    f"{run.name} ({run.settings or 'default settings'})" for run in subset_runs))
            for run in subset_runs[1:]:
                superseded[(subset_runs[0].name, run.name)].append(subset)
        for (used, ignored), subsets in superseded.items():
            replaced.append(Superseded(ignored, used, key, tuple(subsets)))
            notes.append(f"{key}: runs {used} and {ignored} both cover {_listing(subsets)} with the same settings; "
                         f"the latest ({used}) is used")
        settings = sorted({run.settings for run in chosen.values()})
        if len(settings) > 1:
            notes.append(f"{key}: its subsets come from runs with different settings ({_listing(settings)}); "
                         "its macro MAE mixes them")
        rows = [row for subset, run in chosen.items() for row in run.rows if row.subset == subset]
        display = display_names.get(model, model) + ("" if single else f" ({deployment})")
        models.append(ModelRows(key, display, rows, {subset: run.name for subset, run in chosen.items()}))
    if conflicts:
        raise ReportError(
            f"runs of one model and deployment with different settings cover the same subset: {_listing(conflicts)}. "
            "HELM's leaderboard averages them in one cell (its rows are model and deployment, not these settings), "
            "so no single run's numbers agree with it. Keep one setting per model and subset in this suite: move the "
            "other runs into another suite (runs/<other suite>/), then helm-summarize again. Nothing was written.")
    return models, notes, sorted(replaced, key=lambda item: (item.run, item.row))


def load_suite(output_path: str, suite: str | None, display_names: dict[str, str],
               extra_runs: Iterable[Run] = ()) -> SuiteRows:
    """Read every RoboReward run of a suite, and runs read elsewhere (Inspect logs) beside them.

    Args:
        output_path: helm-run's ``-o`` folder.
        suite: The suite name (None: only ``extra_runs``).
        display_names: ``model name -> display name`` (models not in it show their name).
        extra_runs: Runs read from elsewhere (``inspect_frontend/log_rows.py``: one per Inspect log); they join
            the suite's runs before the latest run per row and subset is chosen, by the same rules.

    Returns:
        The rows per model, with warnings (skipped runs) and notes (overlapping runs).

    Raises:
        ReportError: ``suite`` is not a plain folder name (:func:`check_suite_name`), the suite does not exist, has
            no RoboReward runs, none of them is usable, a run's name and its run_spec.json disagree on the model
            (:func:`model_mismatch`), or runs of one model with different settings cover one subset.
        RunFilesError: A run's files disagree (every command that reads a suite's numbers stops on it).
    """
    extra = list(extra_runs)
    if suite is None and not extra:
        raise ReportError("give a suite (--suite) or at least one Inspect log (--inspect-log)")
    runs, warnings, run_names, skipped = _read_suite_runs(suite_directory(output_path, suite), suite) \
        if suite is not None else ([], [], set(), {})
    names = [run.name for run in runs + extra]
    clashes = sorted({name for name in names if names.count(name) > 1})
    if clashes:
        raise ReportError(f"two runs are named {_listing(clashes)} (a run folder and a log, or two logs of one file "
                          "name from different folders): rename or copy one log, then pass them again")
    runs += extra
    warnings += label_notes(run.source.data for run in runs)
    models, notes, superseded = _latest_per_subset(runs, display_names)
    return SuiteRows(suite or INSPECT_LOGS_SUITE, models, warnings, notes, run_names,
                     {run.name: run.source for run in runs}, skipped, superseded)


INSPECT_LOGS_SUITE = "inspect-logs"
"""The name a report or publication of Inspect logs alone goes by (no suite)."""


class ReportError(Exception):
    """A suite, run or environment problem that stops the report; its message is one line saying what to do."""


class RunFilesError(ReportError):
    """A run's files disagree with one another; the message names each file and says what to do.

    ``per_instance_stats.json`` against ``stats.json``, or one instance recorded twice. The one suite reader raises
    it, so ``leaderboard``, ``report``, ``publish`` and ``export-predictions`` all stop on the same files.
    """


def label_notes(data_folders: Iterable[str]) -> list[str]:
    """One warning per local copy whose labels are coarse or placeholders (none for other data, or no record)."""
    notes = []
    for folder in sorted(set(data_folders)):
        if folder in ("hf", "sample"):
            continue
        try:
            with open(os.path.join(folder, IMPORT_RECORD), encoding="utf-8") as handle:
                labels = json.load(handle).get("labels") or {}
        except (OSError, ValueError, AttributeError):
            continue
        source = labels.get("source") if isinstance(labels, dict) else None
        if source == "placeholder":
            notes.append(f"data {folder}: placeholder labels (a `roboreward label` working copy): every statistic "
                         "against the gold scores here is meaningless")
        elif isinstance(labels, dict) and labels.get("coarse"):
            notes.append(f"data {folder}: coarse labels from {source} (5 when the episode's last frame succeeded, "
                         "else 1; never 2..4): its MAE and per-gold-score statistics are not comparable "
                         "with the benchmark's graded gold scores")
    return notes


def scored(row: InstanceRow, score: str) -> ScoredRow:
    """A report row as the ordering statistics see it (its parsed or its expected score).

    A failed request its run charged (``failed=max_error``, official) counts as 1; one its run left out
    (``failed=skip``, :attr:`InstanceRow.left_out`) is never passed here.
    """
    value = row.expected if score == EXPECTED else row.predicted  # None for unparseable answers: they count as 1
    return ScoredRow(row.instance_id, row.subset, row.task, row.video_sha256, row.episode, row.kind,
                     float(row.gold_score or 0.0), None if row.failed_request else value, cluster=row.cluster)


def media_objects(state: object) -> Iterator[tuple[str, str]]:
    """``(content_type, location)`` of every non-text media object in a JSON value (e.g. a scenario state)."""
    if isinstance(state, dict):
        if "content_type" in state and isinstance(state.get("location"), str):
            if not str(state["content_type"]).startswith("text/"):
                yield str(state["content_type"]), state["location"]
        for value in state.values():
            yield from media_objects(value)
    elif isinstance(state, list):
        for item in state:
            yield from media_objects(item)


MARKER = "benchmark_output/"
"""HELM's frontend shows media only under a ``benchmark_output/`` folder of the served output."""


def viewer_relative_path(location: str) -> str:
    """The path, under the served output folder, at which the frontend fetches a media file."""
    normalized = location.replace(os.sep, "/")
    index = normalized.find(MARKER)
    if index < 0:
        raise ValueError(f"{location}: not under a 'benchmark_output' folder, so HELM's viewer cannot show it")
    return normalized[index + len(MARKER):]
