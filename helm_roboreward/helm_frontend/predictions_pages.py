"""HELM's predictions-page files of a RoboReward run, written from one read of its files.

helm-summarize writes, per run, ``instances.json``, ``display_predictions.json`` and ``display_requests.json``
(HELM's ``write_run_display_json``). At the leaderboard's full size (575 runs) that function spent most of
helm-summarize rendering the schema's metric names as mako templates again for every run (each render compiles
the template) and structuring ``per_instance_stats.json`` into dataclasses; the summarizer then decoded that file
a second time for the reward-model statistics. :class:`PredictionsPages` writes the same three files, byte for
byte, for a generation run without perturbations (every RoboReward run): metric names rendered once per group,
the per-instance stats decoded once and handed back for the reward-model statistics. Other runs are not its
business (:func:`fits` says which it takes; :func:`run_pages` leaves the rest to HELM's function).

:func:`run_pages` does a summarize's whole page phase: each run's page, the reward-model statistics from its rows
and, where media files are gone, the page skipped. On Linux with ``--num-threads`` above 1 the RoboReward runs'
pages are written by worker processes (forked, at most one per CPU): the work is CPU-bound Python, which threads
cannot share, and each process writes its runs' files only.
"""

import json
import multiprocessing
import os
import re
import sys
import urllib.parse
from collections import OrderedDict, defaultdict
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from helm.benchmark.adaptation.adapter_spec import (
    ADAPT_GENERATION,
    ADAPT_GENERATION_MULTIMODAL,
)
from helm.benchmark.adaptation.scenario_state import ScenarioState
from helm.benchmark.presentation.run_display import DisplayPrediction, DisplayRequest, write_run_display_json
from helm.benchmark.presentation.schema import Schema
from helm.benchmark.presentation.summarize import Run
from helm.benchmark.run_spec import RunSpec
from helm.common.codec import from_json, to_json
from helm.common.general import write
from helm.common.hierarchical_logger import hlog
from helm.common.images_utils import encode_base64
from helm.common.multimodal_request_utils import gather_generated_image_locations

from helm_roboreward.helm_frontend.run_rows import (
    UnusableRunError,
    instance_rows,
    media_objects,
    model_mismatch,
    scored,
)
from helm_roboreward.protocol.reward_statistics import reward_model_stats
from helm_roboreward.protocol.rules import PARSED

PAGE_FILES = ("instances.json", "display_predictions.json", "display_requests.json")
"""The files HELM's ``write_run_display_json`` writes into a run folder, in its order."""

PLAIN_METHODS = (ADAPT_GENERATION, ADAPT_GENERATION_MULTIMODAL)
"""Adapter methods whose predictions HELM shows as they are (no chosen reference, no truncated prefix)."""
MAX_LISTED_RUNS = 3
CHUNK_RUNS = 4
"""Runs a worker process takes at a time."""


def fits(run_spec: RunSpec) -> bool:
    """Whether :class:`PredictionsPages` writes this run's pages (a RoboReward run with a plain method)."""
    return (run_spec.scenario_spec.class_name.endswith(".RoboRewardScenario")
            and run_spec.adapter_spec.method in PLAIN_METHODS)


class PerturbedRunError(Exception):
    """A run with perturbed instances: HELM's own function handles them."""


class PredictionsPages:
    """Writes the predictions pages of the runs :func:`fits` takes; one object per summarize (one schema)."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self._names_of_group: dict[str, set[str]] = {}

    def metric_names(self, groups: list[str]) -> set[str]:
        """The stat names the page shows: the schema's metrics of the run's groups, as HELM selects them."""
        names: set[str] = set()
        for group in groups:
            if group not in self._names_of_group:
                self._names_of_group[group] = self._group_metric_names(group)
            names |= self._names_of_group[group]
        return names

    def _group_metric_names(self, group_name: str) -> set[str]:
        metric_groups = {metric_group.name: metric_group for metric_group in self.schema.metric_groups}
        run_group = {run_group.name: run_group for run_group in self.schema.run_groups}.get(group_name)
        names: set[str] = set()
        if run_group is None:
            return names
        for metric_group_name in run_group.metric_groups:
            metric_group = metric_groups.get(metric_group_name)
            for matcher in metric_group.metrics if metric_group else []:
                if matcher.perturbation_name and matcher.perturbation_name != "__all__":
                    continue
                names.add(matcher.substitute(run_group.environment).name)
        return names

    def write(self, run_path: str, run_spec: RunSpec, skip_completed: bool) -> list[dict[str, Any]] | None:
        """Write the run's three page files as HELM would; returns its per-instance stats as decoded JSON.

        Returns None where HELM writes nothing (the files exist and ``skip_completed``; no scenario state or no
        per-instance stats). Raises :class:`PerturbedRunError` before writing for a run with perturbed
        instances, and whatever reading the scenario state raises (a media file that is gone).
        """
        paths = [os.path.join(run_path, name) for name in PAGE_FILES]
        state_path = os.path.join(run_path, "scenario_state.json")
        stats_path = os.path.join(run_path, "per_instance_stats.json")
        if skip_completed and all(os.path.exists(path) for path in paths):
            hlog(f"Skipping writing display JSON for run {run_spec.name} because all output display JSON files "
                 "already exist.")
            return None
        if not os.path.exists(state_path) or not os.path.exists(stats_path):
            missing = "scenario state" if not os.path.exists(state_path) else "per instance stats"
            hlog(f"Skipping writing display JSON for run {run_spec.name} because the {missing} JSON file does "
                 "not exist")
            return None
        with open(stats_path) as handle:
            per_instance = json.load(handle)
        stats_by_trial = self._stats_by_trial(per_instance, self.metric_names(run_spec.groups))
        with open(state_path) as handle:
            state = from_json(handle.read(), ScenarioState)
        instances, predictions, requests = _pages(state, stats_by_trial, run_spec.adapter_spec.output_mapping_pattern)
        write(paths[0], to_json(list(instances.values())))
        write(paths[1], to_json(predictions))
        write(paths[2], to_json(requests))
        return list(per_instance)

    @staticmethod
    def _stats_by_trial(per_instance: Any, names: set[str]) -> dict[tuple[str, int], dict[str, float]]:
        """``(instance id, trial) -> {stat: mean}`` of the page's stats (HELM's structured values: floats)."""
        if not isinstance(per_instance, list):
            raise ValueError("per_instance_stats.json does not hold a list")
        by_trial: dict[tuple[str, int], dict[str, float]] = defaultdict(dict)
        for entry in per_instance:
            if entry.get("perturbation") is not None:
                raise PerturbedRunError(entry["instance_id"])
            means = {stat["name"]["name"]: float(stat["mean"]) for stat in entry["stats"]
                     if stat["name"]["name"] in names and stat.get("mean") is not None}
            by_trial[(str(entry["instance_id"]), int(entry["train_trial_index"]))].update(means)
        return by_trial


def _pages(state: ScenarioState, stats_by_trial: dict[tuple[str, int], dict[str, float]],
           mapping_pattern: str | None) -> tuple[dict[str, Any], list[DisplayPrediction], list[DisplayRequest]]:
    """HELM's loop over the request states, for a plain method and unperturbed instances."""
    instances: dict[str, Any] = OrderedDict()
    predictions: list[DisplayPrediction] = []
    requests: list[DisplayRequest] = []
    for request_state in state.request_states:
        instance = request_state.instance
        assert instance.id is not None
        if instance.perturbation is not None:
            raise PerturbedRunError(instance.id)
        result = request_state.result
        if result is None:
            continue
        trial_stats = stats_by_trial[(instance.id, request_state.train_trial_index)]
        predicted_text = result.completions[0].text if result.completions else ""
        mapped_output = None
        if request_state.output_mapping is not None:
            mapped_output = request_state.output_mapping.get(_mapped(predicted_text.strip(), mapping_pattern))
        instances[instance.id] = instance
        completion = result.completions[0]
        if completion.multimodal_content and completion.multimodal_content.text:
            predicted_text = f"{completion.multimodal_content.text} {predicted_text}"
        images = [encode_base64(location) for location in gather_generated_image_locations(result)
                  if os.path.exists(location)]
        predictions.append(DisplayPrediction(
            instance_id=instance.id, perturbation=None, train_trial_index=request_state.train_trial_index,
            predicted_text=predicted_text, truncated_predicted_text=None, base64_images=images,
            mapped_output=mapped_output, reference_index=request_state.reference_index, stats=trial_stats,
            annotations=request_state.annotations,
            thinking_text=completion.thinking.text if completion.thinking else None))
        requests.append(DisplayRequest(instance_id=instance.id, perturbation=None,
                                       train_trial_index=request_state.train_trial_index,
                                       request=request_state.request))
    return instances, predictions, requests


def _mapped(output: str, pattern: str | None) -> str:
    if not pattern:
        return output
    match = re.search(pattern, output)
    if not match:
        return ""
    return match.group(1) if match.groups() else match.group(0)


def missing_media(run_path: str) -> list[str]:
    """The local media files a run's ``scenario_state.json`` points to that do not exist, sorted.

    Paths are checked as HELM's ``MediaObject`` checks them: relative to the working directory, URLs skipped.
    """
    try:
        with open(os.path.join(run_path, "scenario_state.json"), encoding="utf-8") as handle:
            state = json.load(handle)
    except (OSError, ValueError):
        return []
    locations = {location for _, location in media_objects(state)
                 if urllib.parse.urlparse(location).scheme not in ("http", "https")}
    return sorted(location for location in locations if not os.path.exists(location))


def missing_media_message(skipped: Sequence[tuple[str, list[str]]]) -> str:
    """The one log line for the runs whose predictions pages were skipped: ``(run name, missing files)`` each."""
    missing = sorted({path for _, paths in skipped for path in paths})
    runs = sorted(name for name, _ in skipped)
    listed = ", ".join(runs[:MAX_LISTED_RUNS]) + (f" and {len(runs) - MAX_LISTED_RUNS} more"
                                                   if len(runs) > MAX_LISTED_RUNS else "")
    return (f"RoboReward: media file {missing[0]} does not exist ({len(missing)} missing file(s) in all, from the "
            f"folder {os.getcwd()}); the leaderboard is written, but the predictions pages of {len(runs)} run(s) "
            f"are skipped: {listed}. Fix: run helm-summarize from the folder that holds benchmark_output (media "
            "paths are relative to it), or rerun roboreward prepare / helm-run there to rebuild the media; when "
            "copying results elsewhere, copy scenarios/ too, not only runs/.")


def _remove_stale_display_files(run_path: str) -> None:
    """Remove predictions-page files older than the run's scenario state: they show an earlier run's answers."""
    try:
        state_time = os.path.getmtime(os.path.join(run_path, "scenario_state.json"))
    except OSError:
        return
    for name in PAGE_FILES:
        path = os.path.join(run_path, name)
        try:
            if os.path.getmtime(path) < state_time:
                os.unlink(path)
        except OSError:
            pass  # absent: nothing stale


def reward_model_values(run: Run, per_instance: Any = None) -> tuple[dict[str, float] | None, str | None]:
    """A RoboReward run's reward-model statistics from the rows it wrote, unless it has them; and a warning.

    A plain run's metric computes only what the leaderboard needs; ``score=expected`` runs carry these already.
    The rows are read as the report reads them, so both show the same numbers; a failed request its run left out
    (``failed=skip``) enters no statistic. ``per_instance``: the run's ``per_instance_stats.json`` already decoded
    (by its predictions page). A run whose files cannot be read gets none, and the warning says why.
    """
    if not run.run_spec.scenario_spec.class_name.endswith(".RoboRewardScenario") or any(
            stat.name.name == "preference_pairs" for stat in run.stats):
        return None, None

    try:
        rows, _ = instance_rows(run.run_path, str(run.run_spec.scenario_spec.args.get("subset", "")), per_instance)
    except UnusableRunError as error:
        return None, (f"RoboReward: run {run.run_path}: {error}; its reward-model statistics are left out of the "
                      "leaderboard's tables (and roboreward report refuses the run). Fix: rerun helm-run for it.")
    return reward_model_stats(scored(row, PARSED) for row in rows.values() if row.gold_score is not None
                              and not row.left_out), None


def model_mismatch_warning(run: Run) -> str | None:
    """The log line for a RoboReward run whose name says another model than its run_spec.json records.

    The leaderboard files it under the recorded model; ``roboreward report`` refuses such a run.
    """
    if not run.run_spec.scenario_spec.class_name.endswith(".RoboRewardScenario"):
        return None

    adapter_spec = run.run_spec.adapter_spec
    problem = model_mismatch(run.run_spec.name, adapter_spec.model, adapter_spec.model_deployment)
    if not problem:
        return None
    return (f"RoboReward: run {run.run_path}: {problem}; the leaderboard shows its numbers under "
            f"{adapter_spec.model}. Fix: rerun helm-run for the run entry of the folder name, or move the folder "
            "out of the suite, then helm-summarize again.")


@dataclass(frozen=True)
class PageOutcome:
    """What writing one run's page found."""

    missing: list[str] = field(default_factory=list)
    """Media files that are gone (the page was skipped)."""

    values: dict[str, float] | None = None
    """The reward-model statistics to add to the run's stats."""

    warning: str | None = None


def _page_outcome(pages: PredictionsPages, run: Run, skip_completed: bool) -> PageOutcome:
    """One run's page and reward-model statistics; a failure other than a missing media file is raised."""
    per_instance = None
    missing: list[str] = []
    try:
        if fits(run.run_spec):
            try:
                per_instance = pages.write(run.run_path, run.run_spec, skip_completed)
            except PerturbedRunError:
                write_run_display_json(run.run_path, run.run_spec, pages.schema, skip_completed)
        else:
            write_run_display_json(run.run_path, run.run_spec, pages.schema, skip_completed)
    except Exception:
        missing = missing_media(run.run_path)  # HELM's media objects assert that their local files exist
        if not missing:
            raise
        _remove_stale_display_files(run.run_path)
    values, warning = reward_model_values(run, per_instance)
    return PageOutcome(missing, values, warning)


_FORKED: tuple[PredictionsPages, Sequence[Run], bool] | None = None
"""What a forked worker process works on (inherited from the summarizer's process)."""


def _forked_outcome(index: int) -> PageOutcome:
    assert _FORKED is not None
    pages, runs, skip_completed = _FORKED
    return _page_outcome(pages, runs[index], skip_completed)


def run_pages(runs: Sequence[Run], schema: Schema, skip_completed: bool, workers: int) -> Iterator[PageOutcome]:
    """Every run's :class:`PageOutcome`, in run order; RoboReward runs' pages in up to ``workers`` processes."""
    global _FORKED
    pages = PredictionsPages(schema)
    parallel = [index for index, run in enumerate(runs) if fits(run.run_spec)]
    workers = min(workers, len(parallel))
    if workers < 2 or not sys.platform.startswith("linux"):
        for run in runs:
            yield _page_outcome(pages, run, skip_completed)
        return
    for group in {group for index in parallel for group in runs[index].run_spec.groups}:
        pages.metric_names([group])  # rendered once here, inherited by every worker
    import scipy.stats  # noqa: F401 (imported once here, before the workers fork: scipy takes seconds)
    _FORKED = (pages, runs, skip_completed)
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            forked = pool.map(_forked_outcome, parallel, chunksize=CHUNK_RUNS)
            for run in runs:
                yield next(forked) if fits(run.run_spec) else _page_outcome(pages, run, skip_completed)
    finally:
        _FORKED = None
