"""Labelling a LeRobot dataset's episodes with any reward model, through the reward API in this process.

1. The model is built first (:class:`~helm_roboreward.reward.RewardModel`: routing, ``--entry-options``, the
   deployment's client and its credentials), so an unknown model, a bad option or a missing key stops the command
   before any work.
2. The episodes are imported, unlabelled, into a working copy (``<work>/copy``; prefix mode: ``K`` prefix clips
   per episode). The benchmark layout needs a gold score (the ``reward`` field) per row, so every row carries a
   placeholder; nothing a model receives carries it (the prompt holds only the task, media have content-addressed
   names), and no statistic against gold scores is computed: only each row's answer and parsed score are read.
3. Every row is scored by the model, ``-n`` at a time (:mod:`~helm_roboreward.robot_data.scoring`): the request a
   ``roboreward:data=<copy>,...`` run entry sends for that row, through HELM's client factory, request cache
   (``<local-path>/cache``) and retries. It runs with the working folder as the current directory and its media
   under ``benchmark_output/scenarios/roboreward`` there, exactly where ``helm-run -o benchmark_output`` run in that
   folder puts them: the media locations a request carries, and so the cache keys of clients that key by location,
   are the same, and a rerun reuses what either wrote.
4. The outputs (:mod:`~helm_roboreward.robot_data.label_outputs`) are written to ``<out>``: per ``--format``, LeRobot
   0.4's RA-BC progress file (prefix mode), LeRobot's frame-signal file (schema v1, either mode), or both.

The source dataset is never written to: ``--out`` (and the working folder) must lie outside it. ``--out`` holds
one model's labels: a folder holding another model's is refused before any work, and an earlier run's files of
the same model that this run does not write (``--mode prefix`` before, ``episode`` now) are removed.
"""

import contextlib
import dataclasses
import datetime
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from helm_roboreward.protocol import __version__
from helm_roboreward.protocol.rows import DataError
from helm_roboreward.protocol.rules import PROMPT_VERSION, TEST_SPLIT
from helm_roboreward.protocol.safe_files import is_inside
from helm_roboreward.reward.api import Reward, RewardModel, option_dict
from helm_roboreward.reward.inputs import RewardModelError
from helm_roboreward.robot_data import frame_signals as signals
from helm_roboreward.robot_data import label_outputs as outputs
from helm_roboreward.robot_data.importing import CopyRow, ImportRequest, ImportResult, import_lerobot
from helm_roboreward.robot_data.lerobot_episodes import check_frame_indices, read_episodes
from helm_roboreward.robot_data.lerobot_format import choose_camera, link_root, read_info
from helm_roboreward.robot_data.progress import EpisodeProgress, interpolate_progress, score_progress
from helm_roboreward.robot_data.scoring import score_rows

EPISODE_MODE = "episode"
PREFIX_MODE = "prefix"
MODES = (EPISODE_MODE, PREFIX_MODE)
RABC_FORMAT = "rabc"
FRAME_SIGNALS_FORMAT = "frame-signals"
BOTH_FORMATS = "both"
FORMATS = (RABC_FORMAT, FRAME_SIGNALS_FORMAT, BOTH_FORMATS)
"""``--format``: which per-frame file(s): LeRobot 0.4's RA-BC progress parquet (prefix mode only; episode mode
writes none, as before), LeRobot's frame-signal file (schema v1; both modes), or both (prefix mode)."""
MEDIA_FOLDER = os.path.join("benchmark_output", "scenarios", "roboreward")
"""The media folder, relative to the working folder: where ``helm-run -o benchmark_output`` put the scenario's."""
COMMAND_SETS = ("data", "subset", "model", "model_deployment")
"""Run-entry arguments ``--entry-options`` may not give: the command's own (the copy, ``--model``, ...)."""


class LabellingError(DataError):
    """Labelling could not finish; the message says where it stopped and what is kept."""


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
    """The working folder (the copy, the media); default ``<out>/work``."""

    entry_options: str = ""
    """Run-entry options that change the official defaults, e.g. ``video=frames,max_frames=16`` (comma-separated)."""

    format: str = RABC_FORMAT
    """Which per-frame file(s) to write (:data:`FORMATS`)."""

    progress: bool = True


@dataclass
class LabelResult:
    """What labelling wrote, and how long each part took."""

    out: str
    settings: dict[str, Any]
    """The record in ``episode_rewards.parquet`` (model, deployment, the reward model's settings, ...)."""

    scores: list[outputs.EpisodeScore]
    files: list[str]
    requests: int = 0
    cached: int = 0
    """Requests answered from HELM's request cache."""

    failed: int = 0
    """Requests that failed (their rows have no score)."""

    first_error: str | None = None
    low_score_episodes: list[int] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)
    """Files of an earlier label run into ``out`` that this run does not write (removed)."""


@contextlib.contextmanager
def _in_folder(folder: str) -> Iterator[None]:
    """The current directory is ``folder`` inside the block (``contextlib.chdir`` from Python 3.11)."""
    previous = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(previous)


def entry_options(text: str) -> dict[str, str]:
    """``--entry-options`` as the reward model's options (``k=v`` pairs; the API refuses unknown keys).

    Raises:
        LabellingError: An option is not ``key=value``, or names what the command sets itself.
    """
    try:
        options = option_dict(text)
    except RewardModelError as error:
        raise LabellingError(f"--entry-options {text!r}: {error}") from None
    for key in options:
        if key in COMMAND_SETS:
            raise LabellingError(f"--entry-options {text!r}: {key!r} must not be set (the command sets data, "
                                 "subset, model and model_deployment: use --model and --model-deployment)")
    return options


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
    if isinstance(request.threads, bool) or not isinstance(request.threads, int) or request.threads < 1:
        raise LabellingError(f"-n/--threads {request.threads!r}: give a whole number >= 1 (requests at a time)")
    if request.format not in FORMATS:
        raise LabellingError(f"--format {request.format!r}: use {', '.join(FORMATS)}")
    if request.format == BOTH_FORMATS and request.mode != PREFIX_MODE:
        raise LabellingError("--format both: the RA-BC progress file needs --mode prefix (per-frame progress); in "
                             "episode mode use --format frame-signals (one row per episode, at its last frame)")
    if request.mode == PREFIX_MODE or request.format != RABC_FORMAT:
        # The per-frame files are keyed by the dataset-wide frame index: every episode's range must be its own.
        info = read_info(request.dataset.root)
        check_frame_indices(read_episodes(info, choose_camera(info, request.dataset.camera)))


def _make_folders(folder: str) -> list[str]:
    """Make ``folder`` and its missing parents; returns the ones made, innermost first."""
    made = []
    path = folder
    while not os.path.isdir(path) and os.path.dirname(path) != path:
        made.append(path)
        path = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    return made


def _remove_if_empty(folders: list[str]) -> None:
    for folder in folders:
        with contextlib.suppress(OSError):  # only while empty: nothing written in them is removed
            os.rmdir(folder)


def _reward_model(request: LabelRequest, work: str) -> RewardModel:
    """The model, built in the working folder (its media locations are recorded relative to it).

    Raises:
        LabellingError: The model, deployment or an option is refused, or its client cannot be built (a missing
            credential).
    """
    options = entry_options(request.entry_options)
    try:
        # HELM prints where it looks for credentials; stdout stays the command's summary
        with _in_folder(work), contextlib.redirect_stdout(sys.stderr):
            return RewardModel(request.model, request.deployment, local_path=request.local_path, options=options,
                               media_dir=MEDIA_FOLDER)
    except RewardModelError as error:
        raise LabellingError(f"{error} (before any work: nothing was imported or sent)") from None


def _model_and_copy(request: LabelRequest, work: str, ensure_files: Callable[[list[str]], None] | None,
                    seconds: dict[str, float]) -> tuple[RewardModel, ImportResult]:
    """The model (first: it fails fast), then the unlabelled working copy; a failure leaves no folder it made."""
    made = _make_folders(work)
    try:
        started = time.monotonic()
        model = _reward_model(request, work)
        seconds["model"] = time.monotonic() - started
        started = time.monotonic()
        anchors = request.anchors if request.mode == PREFIX_MODE else 0
        unlabelled = dataclasses.replace(request.dataset, out=os.path.join(work, "copy"), placeholder_labels=True,
                                         labels_file=None, labels_from=None, anchors=anchors)
        copy = import_lerobot(unlabelled, ensure_files, progress=request.progress)
        seconds["import"] = time.monotonic() - started
    except BaseException:
        _remove_if_empty(made)
        raise
    return model, copy


def label_episodes(request: LabelRequest, ensure_files: Callable[[list[str]], None] | None = None) -> LabelResult:
    """Score every selected episode with ``request.model`` through the reward API and write the outputs.

    Raises:
        LeRobotFormatError, ImportRequestError, LabellingError: Bad data, options or model (before anything is sent), or
            every request failed (nothing written to ``out``).
    """
    out = os.path.abspath(request.out)
    work = os.path.abspath(request.work or os.path.join(out, "work"))
    local_path = os.path.abspath(request.local_path)  # before the working folder becomes the current one
    request = dataclasses.replace(request, local_path=local_path)
    _check_request(request)
    _check_outside_source(request, work)
    other = outputs.labelling_model(out, request.model, request.deployment)
    if other is not None:
        raise LabellingError(f"--out {out} holds the labels of {other}; this run is {request.model}, and its files "
                             "would sit beside that model's. Give another --out per model (or delete that folder)")
    seconds: dict[str, float] = {}
    model, copy = _model_and_copy(request, work, ensure_files, seconds)
    started = time.monotonic()
    split = os.path.join(copy.out, TEST_SPLIT)
    items = [(row.task, os.path.join(split, *row.file_name.split("/"))) for row in copy.rows]
    with _in_folder(work):  # the media locations the model was built with are relative to it
        rewards = score_rows(model, items, request.threads, f"scoring with {request.model}", request.progress)
    seconds["scoring"] = time.monotonic() - started
    by_file = {row.file_name: reward for row, reward in zip(copy.rows, rewards, strict=True)}
    failed = [(name, reward.error) for name, reward in by_file.items() if reward.failed]
    if rewards and len(failed) == len(rewards):
        raise LabellingError(f"every request failed ({len(failed)}); the first: {failed[0][0]}: {failed[0][1]}. "
                             f"Nothing was written to {out}; the working copy {copy.out} is kept. Check the model "
                             "server and --local-path's credentials.conf, then rerun")
    started = time.monotonic()
    result = _write_outputs(request, out, copy, model, by_file)
    seconds["outputs"] = time.monotonic() - started
    result.seconds = seconds
    result.failed = len(failed)
    result.first_error = f"{failed[0][0]}: {failed[0][1]}" if failed else None
    return result


def _episode_curves(rewards: dict[str, Reward],
                    copy: ImportResult) -> list[tuple[EpisodeProgress, list[int], list[float]]]:
    by_episode: dict[int, list[CopyRow]] = {}
    for row in copy.rows:
        by_episode.setdefault(row.episode_index, []).append(row)
    first_index = {episode.index: episode.first_frame_index for episode in copy.episodes}
    curves = []
    for index, clips in by_episode.items():
        frames = [row.end_frame - 1 for row in clips]
        values = [score_progress(rewards[row.file_name].score) for row in clips]
        per_frame = interpolate_progress(frames, values, clips[0].length)
        curves.append((EpisodeProgress(index, first_index[index], tuple(per_frame)), [r.end_frame for r in clips],
                       values))
    return curves


def _write_outputs(request: LabelRequest, out: str, copy: ImportResult, model: RewardModel,
                   rewards: dict[str, Reward]) -> LabelResult:
    os.makedirs(out, exist_ok=True)
    split = os.path.join(copy.out, TEST_SPLIT)
    scores = [outputs.EpisodeScore(row.episode_index, row.task, rewards[row.file_name],
                                   os.path.join(split, *row.file_name.split("/")))
              for row in copy.rows if row.end_frame == row.length]
    camera = str(copy.provenance.get("camera", {}).get("key", ""))
    settings = _settings(request, copy, model, list(rewards.values()))
    files = [outputs.output_path(out, outputs.EPISODE_REWARDS_FILE)]
    outputs.write_episode_rewards(files[0], scores, camera, settings)
    curves = _episode_curves(rewards, copy) if request.mode == PREFIX_MODE else []
    if request.mode == PREFIX_MODE and request.format != FRAME_SIGNALS_FORMAT:
        files.append(outputs.output_path(out, outputs.PROGRESS_FILE))
        outputs.write_progress(files[-1], [curve[0] for curve in curves], request.model)
    if request.format != RABC_FORMAT:
        files.append(outputs.output_path(out, signals.FRAME_SIGNALS_FILE))
        _write_frame_signals(files[-1], request, copy, model, rewards, curves)
    if request.mode == PREFIX_MODE:
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
    return LabelResult(out, settings, scores, files, requests=len(rewards),
                       cached=sum(reward.cached for reward in rewards.values()), low_score_episodes=low,
                       removed=removed)


Curve = tuple[EpisodeProgress, list[int], list[float]]
"""An episode's per-frame progress, its anchors' end frames and their progress."""


def _write_frame_signals(path: str, request: LabelRequest, copy: ImportResult, model: RewardModel,
                         rewards: dict[str, Reward], curves: list[Curve]) -> None:
    """LeRobot's frame-signal file: every frame per episode (prefix mode), or each episode's last frame.

    Raises:
        LabellingError: The rows break LeRobot's contract (the file is not written; every answer is in the cache).
    """
    first = {episode.index: episode.first_frame_index for episode in copy.episodes}
    episodes = []
    if request.mode == PREFIX_MODE:
        ends: dict[int, dict[int, float | None]] = {}
        for row in copy.rows:
            ends.setdefault(row.episode_index, {})[row.end_frame] = rewards[row.file_name].score
        episodes = [signals.prefix_signals(curve.episode_index, curve.first_frame_index, curve.values,
                                           ends[curve.episode_index]) for curve, _, _ in curves]
    else:
        for row in (row for row in copy.rows if row.end_frame == row.length):
            reward = rewards[row.file_name]
            episodes.append(signals.episode_signals(row.episode_index, first[row.episode_index], row.length,
                                                    reward.score, reward.progress))
    provenance = {
        "producer": {"name": "helm-roboreward", "version": __version__},
        "dataset": copy.provenance.get("source"), "camera": copy.provenance.get("camera", {}).get("key"),
        "model": {"id": request.model, "deployment": model.deployment, "settings": model.settings},
        "adapter": {"id": f"{signals.ADAPTER_ID}.{request.mode}", "version": 1,
                    "options": {"mode": request.mode, "anchors": request.anchors, "subset": copy.subset,
                                "entry_options": request.entry_options, "prompt_version": PROMPT_VERSION}},
    }
    try:
        signals.write_frame_signals(path, episodes, provenance)
    except ValueError as error:
        raise LabellingError(f"{path}: not written, LeRobot's frame-signal contract is broken: {error}. The scores "
                             "are in episode_rewards.parquet; use --format rabc (or fix the dataset's meta/) and "
                             "rerun (a served model's answers then come from the request cache)") from None


def _settings(request: LabelRequest, copy: ImportResult, model: RewardModel, rewards: list[Reward]) -> dict[str, Any]:
    return {
        "model": request.model, "deployment": model.deployment, "reward_model": model.settings,
        "threads": request.threads, "local_path": request.local_path, "mode": request.mode, "format": request.format,
        "anchors": request.anchors, "prompt_version": PROMPT_VERSION, "source": copy.provenance.get("source"),
        "camera": copy.provenance.get("camera"), "subset": copy.subset, "working_copy": copy.out,
        "media_dir": model.media_dir, "requests": len(rewards),
        "answers_from_cache": sum(reward.cached for reward in rewards),
        "failed_requests": sum(reward.failed for reward in rewards),
        "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "score_rule": "official RoboRewardBench parse (protocol.py); null when unparseable or the request failed",
    }
