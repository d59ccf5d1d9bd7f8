"""What a suite's runs recorded, per model and deployment: the facts the comparability rule and the manifest need.

Read from each run folder the report uses (:func:`helm_roboreward.helm_frontend.run_rows.load_suite` picks
them): ``run_spec.json`` (scenario arguments, adapter, routing, metric arguments) and the instances' records
(``video_sha256``, ``dataset_revision``, ``source_file``, ``rows_in_run``). The hash of ``test/metadata.jsonl``
is not in the runs; it is taken from the data copy they read: the Hugging Face cache's file for the recorded
commit (``data=hf``), the bundled sample, or the local copy (whose recorded revision must still match it).

Nor are the deployments: each row's deployment is read from ``--local-path``'s ``model_deployments.yaml`` (what
helm-run used), else the package's (this package's ``config/``, then HELM's built-in file), and compared with the
package's definition of that name (:func:`deployment_problems`).

An Inspect log (``inspect_frontend/log_rows.py``) arrives as a run whose ``run_spec`` holds its task parameters and
generation settings in ``run_spec.json``'s shape (and an ``inspect`` record of what Inspect logged) and whose
instances are its samples' records, so the same facts and the same rule apply; its ``roboreward/<deployment>``
ran the package's definition of the deployment, whatever ``--local-path`` defines.
"""

import dataclasses
import fnmatch
import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import yaml

from helm_roboreward.config import MODEL_DEPLOYMENTS_FILE, config_dir
from helm_roboreward.helm_frontend.run_rows import ModelRows, Run, RunData, SuiteRows, Superseded, load_suite
from helm_roboreward.protocol.data_sources import (
    HUB,
    LOCAL_REVISION_PREFIX,
    SAMPLE,
    SAMPLE_REVISION_PREFIX,
    sample_root,
)
from helm_roboreward.protocol.instance_record import InstanceRecord
from helm_roboreward.protocol.published import LEADERBOARD_MODELS
from helm_roboreward.protocol.rules import (
    AUTO,
    DATASET_ID,
    DATASET_REVISION,
    DECODINGS,
    DEFAULT_MAX_TOKENS,
    FRAMES,
    MAX_ERROR,
    METADATA_FILE,
    NATIVE,
    NATIVE_VIDEO_MODEL_PATTERNS,
    OFFICIAL,
    PARSED,
    REASONING_MODEL_PATTERNS,
    REASONING_TOKEN_ALLOWANCE,
    TEST_SPLIT,
    FrameOptions,
    subset_order,
)
from helm_roboreward.protocol.safe_files import file_digest
from helm_roboreward.results.publish.comparability import (
    PUBLISHED_METADATA_SHA256,
    Comparability,
    DataRead,
    ModelEvidence,
    SubsetCoverage,
    judge,
)
from helm_roboreward.results.report.model_names import helm_builtin_file

_ROUTING_DEFAULTS = {"failed": MAX_ERROR, "score": PARSED, "layout": OFFICIAL, "decoding": DECODINGS[0]}
_ENTRY_KEYS = ("model=", "model_deployment=")


@dataclass(frozen=True)
class RunFacts:
    """One run a model's row uses."""

    name: str
    subset: str
    data: str
    requested_revision: str
    revisions: tuple[str, ...]
    """The revisions its instances record."""

    spec: dict[str, Any]
    """``scenario_spec.args``, the adapter's generation fields, ``routing`` and the metric arguments."""

    non_default_settings: tuple[str, ...]
    rows_in_run: int | None
    evaluated: int
    videos: dict[str, str]
    """``file_name`` (else the instance id) -> SHA-256 of the video, as the instances record it."""

    finished: str
    """When its ``stats.json`` was written (UTC, ISO-8601)."""

    files_sha256: dict[str, str] = field(default_factory=dict)
    """SHA-256 of its ``stats.json``, ``per_instance_stats.json``, ``scenario_state.json`` and ``run_spec.json``."""


@dataclass(frozen=True)
class DeploymentFacts:
    """The deployment a row ran on, as the model deployments files define it."""

    name: str
    model_name: str | None
    defined_in: str | None
    """The file its definition was read from (None: no file here defines it)."""

    client_class: str | None
    client_args: dict[str, Any]
    differences: tuple[str, ...] = ()
    """How it differs from the package's definition of the name (``key value (package: value)``)."""

    def to_json(self) -> dict[str, Any]:
        """The deployment as the manifest records it."""
        return {"name": self.name, "model_name": self.model_name, "defined_in": self.defined_in,
                "client_class": self.client_class, "client_args": self.client_args,
                "differences": list(self.differences)}


@dataclass
class ModelFacts:
    """One leaderboard row of the suite (a model on one deployment) and its verdict."""

    key: str
    model: str
    deployment: str
    display_name: str
    runs: list[RunFacts]
    subset_mae: dict[str, float]
    """Subset -> MAE over the rows with an error, in the official order."""

    evidence: ModelEvidence
    verdict: Comparability
    failed_requests: int = 0
    """Rows whose request failed (the official rule charges each the maximum error)."""

    @property
    def macro_mae(self) -> float | None:
        """The unweighted mean of its subset MAEs (the official macro mean)."""
        return sum(self.subset_mae.values()) / len(self.subset_mae) if self.subset_mae else None

    @property
    def date(self) -> str:
        """The date (UTC) of its latest run."""
        return max(run.finished for run in self.runs)[:10] if self.runs else ""


@dataclass
class SuiteFacts:
    """Every row of a suite with its verdict, and the data revisions the suite read."""

    suite: str
    output_path: str
    models: list[ModelFacts]
    reads: dict[tuple[str, str], DataRead] = field(default_factory=dict)
    published_sha256: str = PUBLISHED_METADATA_SHA256
    superseded: list[Superseded] = field(default_factory=list)
    """Runs no number uses: a later run of the same row and settings covers their subsets."""

    deployments: list[DeploymentFacts] = field(default_factory=list)

    def verdicts(self) -> dict[str, Comparability]:
        """Model key -> its comparability, for the report, the leaderboard note and the exports."""
        return {model.key: model.verdict for model in self.models}


def _matches(model: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(model.lower(), pattern) for pattern in patterns)


def non_default_settings(run_spec: Mapping[str, Any]) -> list[str]:
    """Every setting of a run that is not the official default (empty: an official run).

    Covers the media routing, the frame rule, failed requests, scoring, message layout, decoding, the generation
    settings and any run-name part HELM's expanders added; the data and its revision are judged apart.
    """
    adapter = run_spec.get("adapter_spec") or {}
    routing = run_spec.get("routing") or {}
    args = (run_spec.get("scenario_spec") or {}).get("args") or {}
    model = str(adapter.get("model") or routing.get("model") or "")
    settings = []
    mode, official_mode = str(args.get("video", FRAMES)), NATIVE if _matches(model, NATIVE_VIDEO_MODEL_PATTERNS) \
        else FRAMES
    # A model tagged as taking video (not in the patterns) gets the mp4 through video=auto: that is the routing.
    if mode != official_mode and not (routing.get("video") == AUTO and mode == NATIVE):
        settings.append(f"video={mode} (official: {official_mode})")
    if mode == FRAMES:
        options = routing.get("frame_options") or {}
        defaults = dataclasses.asdict(FrameOptions())
        settings += [f"{name}={options[name]} (official: {value})" for name, value in defaults.items()
                     if name in options and options[name] != value]
    settings += [f"{name}={routing[name]} (official: {value})" for name, value in _ROUTING_DEFAULTS.items()
                 if routing.get(name, value) != value]
    tokens = DEFAULT_MAX_TOKENS + (REASONING_TOKEN_ALLOWANCE if _matches(model, REASONING_MODEL_PATTERNS) else 0)
    for name, official in (("temperature", 0.0), ("num_outputs", 1), ("max_tokens", tokens)):
        if name in adapter and adapter[name] != official:
            settings.append(f"{name}={adapter[name]} (official: {official})")
    prefix, name = str(routing.get("name_prefix") or ""), str(run_spec.get("name") or "")
    if prefix and name.startswith(prefix):  # what HELM's expanders appended (model= names the row, not a setting)
        settings += [part for part in name[len(prefix):].split(",") if part and not part.startswith(_ENTRY_KEYS)]
    return settings


def _spec_record(run_spec: Mapping[str, Any]) -> dict[str, Any]:
    adapter = run_spec.get("adapter_spec") or {}
    kept = ("model", "model_deployment", "temperature", "max_tokens", "num_outputs", "max_eval_instances",
            "stop_sequences")
    return {"scenario_args": (run_spec.get("scenario_spec") or {}).get("args") or {},
            "adapter": {key: adapter[key] for key in kept if key in adapter},
            "routing": {key: value for key, value in (run_spec.get("routing") or {}).items()
                        if key not in ("entry", "name_prefix")},
            "metrics": [spec.get("args") or {} for spec in run_spec.get("metric_specs") or []],
            **({"inspect": run_spec["inspect"]} if run_spec.get("inspect") else {})}


def run_facts(name: str, source: RunData) -> RunFacts:
    """The facts of one run, from what the report's loader read of it (its ``run_spec.json`` and instances)."""
    run_spec = source.run_spec
    args = (run_spec.get("scenario_spec") or {}).get("args") or {}
    records = {instance_id: InstanceRecord.from_extra_data(source.instances.get(instance_id, {}).get("extra_data"))
               for instance_id in source.row_ids}
    videos = {record.source_file or instance_id: record.video_sha256
              for instance_id, record in records.items() if record.video_sha256}
    counts = [record.rows_in_run for record in records.values() if record.rows_in_run is not None]
    finished = datetime.fromtimestamp(source.finished, timezone.utc)
    return RunFacts(
        name=name, subset=str(args.get("subset", "all")), data=str(args.get("data", HUB)),
        requested_revision=str(args.get("revision", DATASET_REVISION)),
        revisions=tuple(sorted({record.dataset_revision for record in records.values()} - {""})),
        spec=_spec_record(run_spec), non_default_settings=tuple(non_default_settings(run_spec)),
        rows_in_run=max(counts) if counts else None, evaluated=len(source.row_ids), videos=videos,
        finished=finished.isoformat(timespec="seconds"), files_sha256=dict(source.files_sha256))


_DEPLOYMENT_FILES: dict[str, dict[str, dict[str, Any]]] = {}
"""Parsed model deployments files by path (HELM's built-in one is 5,000 lines)."""


def deployments_in(path: str) -> dict[str, dict[str, Any]]:
    """``name -> entry`` of a ``model_deployments.yaml`` (an absent or unreadable file defines none)."""
    if path not in _DEPLOYMENT_FILES:
        try:
            with open(path, encoding="utf-8") as handle:
                content = yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # a safe loader
        except (OSError, yaml.YAMLError):
            content = None
        entries = content.get("model_deployments") if isinstance(content, dict) else None
        _DEPLOYMENT_FILES[path] = {str(entry["name"]): entry for entry in entries or []
                                   if isinstance(entry, dict) and entry.get("name")}
    return _DEPLOYMENT_FILES[path]


def package_deployment(name: str) -> tuple[dict[str, Any] | None, str | None]:
    """The package's definition of a deployment and its file: this package's, else HELM's built-in one."""
    for path in (os.path.join(config_dir(), MODEL_DEPLOYMENTS_FILE), helm_builtin_file(MODEL_DEPLOYMENTS_FILE)):
        if path and name in deployments_in(path):
            return deployments_in(path)[name], path
    return None, None


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flat(item, f"{prefix}{key}."))
        return flat
    return {prefix[:-1]: value}


def deployment_differences(entry: Mapping[str, Any], package: Mapping[str, Any]) -> list[str]:
    """Every field where a deployment's definition differs from the package's (``key value (package: value)``)."""
    mine, theirs = _flat({k: v for k, v in entry.items() if k != "name"}), _flat(
        {k: v for k, v in package.items() if k != "name"})
    return [f"{key} {mine.get(key, 'unset')} (package: {theirs.get(key, 'unset')})"
            for key in sorted(set(mine) | set(theirs)) if mine.get(key) != theirs.get(key)]


def deployment_problems(model: str, name: str, entry: Mapping[str, Any] | None, defined_in: str | None) -> list[str]:
    """Why the deployment a row ran on keeps it from the published leaderboard (empty: it does not).

    Args:
        model: The row's model.
        name: Its deployment's name.
        entry: The definition helm-run used (``--local-path``'s, else the package's; None: none found).
        defined_in: The file that definition is in.
    """
    package, _ = package_deployment(name)
    if package is not None:
        differences = deployment_differences(entry, package) if entry is not None else []
        return [f"deployment {name} differs from the package's definition in {defined_in}: "
                f"{', '.join(differences)}"] if differences else []
    if model in LEADERBOARD_MODELS:
        where = f"{defined_in} defines it" if defined_in else "no model_deployments.yaml here defines it"
        return [f"deployment {name} of the published model {model} is not one the package defines ({where}): run "
                "the package's deployment of that model"]
    return []


def deployment_facts(name: str, local_path: str | None) -> DeploymentFacts:
    """A deployment as helm-run with ``--local-path local_path`` defines it, and how it differs from the package's."""
    local_file = os.path.join(local_path, MODEL_DEPLOYMENTS_FILE) if local_path else ""
    entry, defined_in = (deployments_in(local_file).get(name), local_file) if local_file else (None, None)
    if entry is None:
        entry, defined_in = package_deployment(name)
    package, _ = package_deployment(name)
    client = (entry or {}).get("client_spec")
    client = client if isinstance(client, Mapping) else {}
    args = client.get("args")
    differences = deployment_differences(entry, package) if entry is not None and package is not None else []
    return DeploymentFacts(name, None if entry is None else str(entry.get("model_name") or name), defined_in,
                           None if entry is None else str(client.get("class_name") or ""),
                           dict(args) if isinstance(args, Mapping) else {}, tuple(differences))


def _cached_hub_metadata(revision: str, cache_dir: str | None) -> str | None:
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(DATASET_ID, f"{TEST_SPLIT}/{METADATA_FILE}", cache_dir=cache_dir,
                                   revision=revision, repo_type="dataset")
    return found if isinstance(found, str) else None


def _subset_rows(path: str) -> dict[str, int] | None:
    """Rows per subset (the first component of ``file_name``); None when a line cannot be read."""
    counts: Counter[str] = Counter()
    try:
        with open(path, encoding="utf-8-sig") as handle:
            for line in handle:
                if line.strip():
                    counts[str(json.loads(line)["file_name"]).split("/", 1)[0]] += 1
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return dict(counts)


def data_read(data: str, revision: str, cache_dir: str | None = None) -> DataRead:
    """The metadata hash and rows per subset of one revision a run read, from the copy it was read from.

    Args:
        data: The scenario's ``data`` argument (a local copy's folder as the run entry gave it).
        revision: The revision the instances record.
        cache_dir: The Hugging Face cache ``data=hf`` runs used (None: huggingface_hub's default, ``HF_HUB_CACHE``).
    """
    if data == HUB:
        path = _cached_hub_metadata(revision, cache_dir)
        if path is None:
            return DataRead(data, revision, None, f"no {TEST_SPLIT}/{METADATA_FILE} for that commit in the Hugging "
                            f"Face cache; fetch it with `hf download {DATASET_ID} {TEST_SPLIT}/{METADATA_FILE} "
                            f"--repo-type dataset --revision {revision}`")
    else:
        root = sample_root() if data == SAMPLE else os.path.abspath(os.path.expanduser(data))
        path = os.path.join(root, TEST_SPLIT, METADATA_FILE)
        if not os.path.isfile(path):
            return DataRead(data, revision, None, f"{path} not found (the runs' data copy is not here)")
    digest = file_digest(path)
    prefix = SAMPLE_REVISION_PREFIX if data == SAMPLE else LOCAL_REVISION_PREFIX
    if data != HUB and revision.startswith(prefix) and not digest.startswith(revision[len(prefix):]):
        return DataRead(data, revision, None, f"{path} changed since the runs read it (its SHA-256 {digest[:16]} "
                        f"does not match the recorded revision {revision})")
    return DataRead(data, revision, digest, "", _subset_rows(path))


def _subset_mae(model: ModelRows) -> dict[str, float]:
    errors: dict[str, list[float]] = {}
    for row in model.rows:
        if row.abs_error is not None:
            errors.setdefault(row.subset, []).append(row.abs_error)
    return {subset: sum(errors[subset]) / len(errors[subset]) for subset in subset_order(errors)}


def _model_facts(model: ModelRows, runs: dict[str, RunFacts], reads: dict[tuple[str, str], DataRead],
                 published_sha256: str, local_path: str | None) -> tuple[ModelFacts, DeploymentFacts]:
    used = [runs[name] for name in sorted(set(model.run_of_subset.values()))]
    model_reads = [reads[key] for key in dict.fromkeys((run.data, revision) for run in used
                                                       for revision in run.revisions)]
    coverage = []
    evaluated = Counter(row.subset for row in model.rows)
    for subset in subset_order(evaluated):
        run = runs[model.run_of_subset[subset]]
        known = [reads[(run.data, revision)].subset_rows for revision in run.revisions]
        expected = known[0].get(subset, 0) if len(known) == 1 and known[0] is not None else (
            run.rows_in_run if run.subset == subset else None)
        coverage.append(SubsetCoverage(subset, evaluated[subset], expected))
    settings = tuple(dict.fromkeys(setting for run in used for setting in run.non_default_settings))
    first = used[0].spec["adapter"] if used else {}
    name, deployment = str(first.get("model", model.model)), str(first.get("model_deployment") or
                                                                   first.get("model") or "")
    # An Inspect log's roboreward/<deployment> ran the package's definition (the provider reads no --local-path).
    facts = deployment_facts(deployment, None if used and "inspect" in used[0].spec else local_path)
    problems = deployment_problems(name, deployment, None if facts.defined_in is None else deployments_in(
        facts.defined_in).get(deployment), facts.defined_in)
    evidence = ModelEvidence(model.model, tuple(model_reads), tuple(coverage), settings, tuple(problems))
    failed = sum(row.failed_request for row in model.rows)
    return ModelFacts(model.model, name, deployment, model.display_name, used, _subset_mae(model), evidence,
                      judge(evidence, published_sha256), failed), facts


def gather(suite: SuiteRows, output_path: str, published_sha256: str = PUBLISHED_METADATA_SHA256,
           cache_dir: str | None = None, local_path: str | None = None) -> SuiteFacts:
    """Every row's facts and verdict, from a suite the report's loader read.

    Args:
        suite: :func:`load_suite`'s result.
        output_path: helm-run's ``-o`` folder.
        published_sha256: The SHA-256 the public ``test/metadata.jsonl`` must have (tests pass their copy's).
        cache_dir: The Hugging Face cache of the ``data=hf`` runs (None: ``HF_HUB_CACHE``).
        local_path: helm-run's ``--local-path``, whose ``model_deployments.yaml`` defines what the deployments ran
            (None: only the package's definitions).
    """
    names = sorted({name for model in suite.models for name in model.run_of_subset.values()})
    runs = {name: run_facts(name, suite.sources[name]) for name in names}
    keys = dict.fromkeys((run.data, revision) for run in runs.values() for revision in run.revisions)
    reads = {key: data_read(key[0], key[1], cache_dir) for key in keys}
    pairs = [_model_facts(model, runs, reads, published_sha256, local_path) for model in suite.models]
    deployments = {facts.name: facts for _, facts in pairs}
    return SuiteFacts(suite.suite, output_path, [model for model, _ in pairs], reads, published_sha256,
                      list(suite.superseded), [deployments[name] for name in sorted(deployments)])


def suite_facts(output_path: str, suite: str | None, display_names: Mapping[str, str] | None = None,
                published_sha256: str = PUBLISHED_METADATA_SHA256, cache_dir: str | None = None,
                local_path: str | None = None, extra_runs: Sequence[Run] = ()) -> SuiteFacts:
    """:func:`gather` on a suite read from disk, with ``extra_runs`` (Inspect logs) beside it (suite None: only them).

    Raises the loader's ``ReportError`` on a missing or empty suite, and its ``RunFilesError`` where a run's files
    disagree.
    """
    return gather(load_suite(output_path, suite, dict(display_names or {}), extra_runs), output_path,
                  published_sha256, cache_dir, local_path)
