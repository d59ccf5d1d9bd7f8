"""Labelling a LeRobot dataset's episodes with any reward model, through ``helm-run``.

1. The episodes are imported, unlabelled, into a working copy (``<work>/copy``; prefix mode: ``K`` prefix clips
   per episode). The benchmark layout needs a reward per row, so every row carries a placeholder; nothing a model
   receives carries it (the prompt holds only the task, media have content-addressed names), and no gold-based
   statistic of the run is reported: only each row's answer and parsed score are read back.
2. ``helm-run -r roboreward:data=<copy>,subset=<name>,model=<M>[,model_deployment=<D>][,<options>]`` runs in
   ``<work>`` (``--suite roboreward-label``, ``-m`` = the rows, ``-n`` threads, ``--local-path``): HELM's clients,
   cache, retries and the package's routing do the work, as for any run entry.
3. Each row's raw answer is read from the run's ``scenario_state.json`` and parsed by the official rule; the
   outputs (:mod:`~helm_roboreward.robot_data.label_outputs`) are written to ``<out>``.

The source dataset is never written to: ``--out`` (and the working folder) must lie outside it. ``--out`` holds
one model's labels: a folder holding another model's is refused before any work, and an earlier run's files of
the same model that this run does not write (``--mode prefix`` before, ``episode`` now) are removed.
"""

import dataclasses
import datetime
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from helm_roboreward.data.rows import DataError
from helm_roboreward.media.containment import is_inside
from helm_roboreward.protocol import PROMPT_VERSION, TEST_SPLIT
from helm_roboreward.robot_data import label_outputs as outputs
from helm_roboreward.robot_data.helm_outputs import Prediction, RunInfo, predictions_of, roboreward_runs
from helm_roboreward.robot_data.helm_process import console_script, run_with_progress
from helm_roboreward.robot_data.importing import CopyRow, ImportRequest, ImportResult, import_lerobot
from helm_roboreward.robot_data.lerobot_episodes import check_frame_indices, read_episodes
from helm_roboreward.robot_data.lerobot_format import choose_camera, link_root, read_info
from helm_roboreward.robot_data.progress import EpisodeProgress, interpolate_progress, score_progress

SUITE = "roboreward-label"
EPISODE_MODE = "episode"
PREFIX_MODE = "prefix"
MODES = (EPISODE_MODE, PREFIX_MODE)
HELM_LOG = "helm-run.log"
OUTPUT_FOLDER = "benchmark_output"
"""helm-run's ``-o``, relative to the working folder it runs in (media paths are recorded relative to it)."""


class LabellingError(DataError):
    """Labelling could not finish; the message says where it stopped and where the log is."""


@dataclass(frozen=True)
class LabelRequest:
    """What to label with which model, and where the outputs go."""

    dataset: ImportRequest
    """The episodes (``root``, ``source``, ``camera``, ``subset``, ``episodes``); its ``out`` is ignored."""

    out: str
    model: str
    deployment: str | None = None
    mode: str = EPISODE_MODE
    anchors: int = 0
    low_score: float | None = None
    threads: int = 4
    local_path: str = "prod_env"
    work: str | None = None
    """The working folder (copy, helm-run output, log); default ``<out>/work``."""

    entry_options: str = ""
    """More run-entry arguments, e.g. ``video=frames,max_frames=16`` (commas separate them)."""

    progress: bool = True


@dataclass
class LabelResult:
    """What labelling wrote, and how long each part took."""

    out: str
    run: RunInfo
    run_entry: str
    scores: list[outputs.EpisodeScore]
    files: list[str]
    low_score_episodes: list[int] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)
    """Files of an earlier label run into ``out`` that this run does not write (removed)."""


def run_entry(copy: str, subset: str, model: str, deployment: str | None, options: str) -> str:
    """The run entry that scores the working copy (HELM's public syntax; values cannot hold commas).

    Raises:
        LabellingError: The copy's path or the model holds a comma, or ``options`` names data/subset/model.
    """
    for what, value in (("the working copy's path", copy), ("--model", model), ("--model-deployment", deployment)):
        if value and ("," in value or "=" in value):
            raise LabellingError(f"{what} {value!r} cannot hold ',' or '=' (HELM's run-entry syntax); choose "
                                 "another --work folder, or another name")
    extra = [option.strip() for option in options.split(",") if option.strip()]
    for option in extra:
        key = option.split("=", 1)[0]
        if "=" not in option or key in ("data", "subset", "model", "model_deployment"):
            raise LabellingError(f"--entry-options {options!r}: {option!r} must be key=value and not set data, "
                                 "subset, model or model_deployment (the command sets them)")
    parts = [f"data={copy}", f"subset={subset}", *extra, f"model={model}"]
    if deployment:
        parts.append(f"model_deployment={deployment}")
    return "roboreward:" + ",".join(parts)


def _check_outside_source(request: LabelRequest, work: str) -> None:
    for root in {os.path.realpath(request.dataset.root), link_root(request.dataset.root)}:
        for what, path in (("--out", request.out), ("--work", work)):
            if is_inside(os.path.realpath(path), root):
                raise LabellingError(f"{what} {path} lies inside the dataset {root}; the source dataset is never "
                                     "modified: give a folder outside it")
    for what, path in (("--out", request.out), ("--work", work)):
        if os.path.islink(path) and not os.path.isdir(path):
            raise LabellingError(f"{what} {path} is a link to {os.readlink(path)}, which is not a folder; give a "
                                 "folder (or remove the link)")


def _check_request(request: LabelRequest) -> None:
    if request.mode not in MODES:
        raise LabellingError(f"--mode {request.mode!r}: use {' or '.join(MODES)}")
    if request.mode == PREFIX_MODE and request.anchors < 2:
        raise LabellingError("--mode prefix needs --anchors K with K >= 2 (the last anchor is the whole episode)")
    if request.low_score is not None and not math.isfinite(request.low_score):
        raise LabellingError(f"--low-score {request.low_score}: give a finite number (scores run 1..5)")
    if request.mode == PREFIX_MODE:
        # The progress file is keyed by the dataset-wide frame index: every episode's range must be its own.
        info = read_info(request.dataset.root)
        check_frame_indices(read_episodes(info, choose_camera(info, request.dataset.camera)))


def label_episodes(request: LabelRequest, ensure_files: Callable[[list[str]], None] | None = None) -> LabelResult:
    """Score every selected episode with ``request.model`` through helm-run and write the outputs.

    Raises:
        LeRobotFormatError, LabelError: Bad data or options (before anything runs).
        LabellingError: helm-run failed, or its outputs lack rows.
    """
    out = os.path.abspath(request.out)
    work = os.path.abspath(request.work or os.path.join(out, "work"))
    _check_request(request)
    _check_outside_source(request, work)
    other = outputs.labelling_model(out, request.model, request.deployment)
    if other is not None:
        raise LabellingError(f"--out {out} holds the labels of {other}; this run is {request.model}, and its files "
                             "would sit beside that model's. Give another --out per model (or delete that folder)")
    seconds: dict[str, float] = {}
    started = time.monotonic()
    anchors = request.anchors if request.mode == PREFIX_MODE else 0
    unlabelled = dataclasses.replace(request.dataset, out=os.path.join(work, "copy"), placeholder_labels=True,
                                     labels_file=None, labels_from=None, anchors=anchors)
    copy = import_lerobot(unlabelled, ensure_files, progress=request.progress)
    seconds["import"] = time.monotonic() - started
    entry = run_entry(copy.out, copy.subset, request.model, request.deployment, request.entry_options)
    started = time.monotonic()
    run = _run_helm(request, work, entry, copy)
    seconds["helm_run"] = time.monotonic() - started
    started = time.monotonic()
    predictions = _predictions_by_file(run, copy)
    result = _write_outputs(request, out, copy, run, entry, predictions)
    seconds["outputs"] = time.monotonic() - started
    result.seconds = seconds
    return result


def _run_helm(request: LabelRequest, work: str, entry: str, copy: ImportResult) -> RunInfo:
    command = [console_script("helm-run"), "-r", entry, "--suite", SUITE, "-m", str(len(copy.rows)),
               "-n", str(request.threads), "--local-path", os.path.abspath(request.local_path), "-o", OUTPUT_FOLDER]
    log = os.path.join(work, HELM_LOG)
    status = run_with_progress(command, work, dict(os.environ), log, len(copy.rows),
                               f"scoring with {request.model}", request.progress)
    failed = f"helm-run exited with status {status} for {entry}"
    if status != 0:  # its own error, before anything is read from its output folder
        raise LabellingError(f"{failed}; see its log {log} (last lines):\n{_tail(log)}")
    try:
        found = roboreward_runs(os.path.join(work, OUTPUT_FOLDER), SUITE)
    except DataError:
        found = []
    runs = [run for run in found if run.scenario_args.get("data") == copy.out and run.model == request.model
            and (not request.deployment or run.deployment == request.deployment)]
    if not runs:
        raise LabellingError(f"{failed} and wrote no run; see its log {log} (last lines):\n{_tail(log)}")
    return max(runs, key=lambda run: os.path.getmtime(os.path.join(run.folder, "scenario_state.json")))


def _tail(path: str, lines: int = 12) -> str:
    with open(path, encoding="utf-8", errors="replace") as handle:
        kept = [line for line in handle.read().splitlines() if line.strip()]
    return "\n".join(f"  {line}" for line in kept[-lines:])


def _predictions_by_file(run: RunInfo, copy: ImportResult) -> dict[str, Prediction]:
    found = {prediction.source_file: prediction for prediction in predictions_of(run)}
    missing = [row.file_name for row in copy.rows if row.file_name not in found]
    if missing:
        raise LabellingError(f"{run.folder}: {len(missing)} row(s) of the working copy have no prediction (first: "
                             f"{missing[0]}); rerun, the cache keeps what was answered")
    return found


def _episode_curves(predictions: dict[str, Prediction],
                    copy: ImportResult) -> list[tuple[EpisodeProgress, list[int], list[float]]]:
    by_episode: dict[int, list[CopyRow]] = {}
    for row in copy.rows:
        by_episode.setdefault(row.episode_index, []).append(row)
    first_index = {episode.index: episode.first_frame_index for episode in copy.episodes}
    curves = []
    for index, clips in by_episode.items():
        frames = [row.end_frame - 1 for row in clips]
        values = [score_progress(predictions[row.file_name].score) for row in clips]
        per_frame = interpolate_progress(frames, values, clips[0].length)
        curves.append((EpisodeProgress(index, first_index[index], tuple(per_frame)), [r.end_frame for r in clips],
                       values))
    return curves


def _write_outputs(request: LabelRequest, out: str, copy: ImportResult, run: RunInfo, entry: str,
                   predictions: dict[str, Prediction]) -> LabelResult:
    os.makedirs(out, exist_ok=True)
    split = os.path.join(copy.out, TEST_SPLIT)
    scores = [outputs.EpisodeScore(row.episode_index, row.task, predictions[row.file_name],
                                   os.path.join(split, *row.file_name.split("/")))
              for row in copy.rows if row.end_frame == row.length]
    camera = str(copy.provenance.get("camera", {}).get("key", ""))
    settings = _settings(request, copy, run, entry)
    files = [outputs.output_path(out, outputs.EPISODE_REWARDS_FILE)]
    outputs.write_episode_rewards(files[0], scores, camera, settings)
    if request.mode == PREFIX_MODE:
        curves = _episode_curves(predictions, copy)
        files.append(outputs.output_path(out, outputs.PROGRESS_FILE))
        outputs.write_progress(files[-1], [curve[0] for curve in curves], request.model)
        plot = outputs.output_path(out, outputs.PROGRESS_PLOT)
        if outputs.plot_progress(plot, curves, request.model):
            files.append(plot)
        else:
            print("roboreward label: progress.png skipped (pip install matplotlib)", file=sys.stderr)
    files.append(outputs.output_path(out, outputs.CONTACT_SHEET))
    outputs.write_contact_sheet(files[-1], scores)
    low: list[int] = []
    if request.low_score is not None:
        files.append(outputs.output_path(out, outputs.LOW_SCORE_FILE))
        low = outputs.write_low_scores(files[-1], request.low_score, scores, request.model)
    removed = outputs.remove_other_outputs(out, files)
    return LabelResult(out, run, entry, scores, files, low, removed=removed)


def _settings(request: LabelRequest, copy: ImportResult, run: RunInfo, entry: str) -> dict[str, Any]:
    return {
        "model": request.model, "deployment": run.deployment, "run_name": run.name, "run_entry": entry,
        "suite": SUITE, "run_folder": run.folder, "threads": request.threads,
        "local_path": os.path.abspath(request.local_path), "mode": request.mode, "anchors": request.anchors,
        "prompt_version": PROMPT_VERSION, "source": copy.provenance.get("source"),
        "camera": copy.provenance.get("camera"), "subset": copy.subset, "working_copy": copy.out,
        "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "score_rule": "official RoboRewardBench parse (protocol.py); null when unparseable or the request failed",
    }
