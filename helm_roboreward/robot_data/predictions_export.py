"""A suite's predictions as a Hugging Face ``datasets`` dataset: parquet, ``save_to_disk`` or the hub.

One row per instance of every RoboReward run of the suite (:mod:`~helm_roboreward.robot_data.helm_outputs`):
columns :data:`FEATURES` — model, deployment, run name and settings, subset, row key (the row's ``file_name``),
instance id, task, gold (its gold score), raw answer, parsed score, whether the request failed and its error, the
prompt version and the media locations, and the row's comparability verdict with ``used_run``: the run whose rows
the suite's numbers use for that model, deployment and subset (the one suite reader's choice, as ``report`` and
``publish`` make it). A row of another run (superseded by a later run with the same settings, or a run the reader
could not use) is not comparable and says why. No media bytes unless asked (``include_media``: the bytes of every
frame or video sent, read from under the output folder). Run files that disagree stop the export, as they stop
every command that reads the suite's numbers.
"""

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from helm_roboreward.helm_frontend.run_rows import (
    ReportError,
    RunFilesError,
    check_suite_name,
    load_suite,
    viewer_relative_path,
)
from helm_roboreward.protocol.rows import DataError
from helm_roboreward.protocol.rules import PROMPT_VERSION
from helm_roboreward.protocol.safe_files import UnsafePathError, relative_parts, require_inside
from helm_roboreward.results.media_export import MEDIA_TYPES
from helm_roboreward.results.publish.comparability import PUBLISHED_METADATA_SHA256
from helm_roboreward.results.publish.evidence import gather
from helm_roboreward.robot_data.export_files import FORMATS, PARQUET, check_export_target, push, write_export
from helm_roboreward.robot_data.helm_outputs import RunInfo, predictions_of, roboreward_runs

MEDIA_COLUMN = "media_bytes"


def features(include_media: bool) -> Any:
    """The dataset's ``datasets.Features``."""
    import datasets

    columns: dict[str, Any] = {
        "model": datasets.Value("string"), "deployment": datasets.Value("string"), "run": datasets.Value("string"),
        "run_settings": datasets.Value("string"), "subset": datasets.Value("string"),
        "row_key": datasets.Value("string"), "instance_id": datasets.Value("string"),
        "task": datasets.Value("string"), "gold": datasets.Value("float64"),
        "raw_output": datasets.Value("string"), "score": datasets.Value("float64"),
        "request_failed": datasets.Value("bool"), "error": datasets.Value("string"),
        "prompt_version": datasets.Value("string"), "content_type": datasets.Value("string"),
        "media": datasets.Sequence(datasets.Value("string")),
        "comparable": datasets.Value("bool"), "comparability": datasets.Value("string"),
        "used_run": datasets.Value("string"),
    }
    if include_media:
        columns[MEDIA_COLUMN] = datasets.Sequence(datasets.Value("binary"))
    return datasets.Features(columns)


_MEDIA_FIX = ("--include-media embeds only the frames and videos helm-run wrote under --output-path: export from "
              "the folder helm-run ran in, with helm-run's -o as --output-path (rerun the run if its "
              "scenario_state.json was edited), or leave out --include-media")


def _media_file(output_path: str, content_type: str, location: str) -> str:
    """The file under ``output_path`` a recorded media location names (export-media's rule).

    These bytes may be published (``--push-to-hub``), so nothing outside ``output_path`` is read.

    Raises:
        DataError: The location is outside a ``benchmark_output`` folder, has ``..`` or an empty component, leads
            out of ``output_path`` through a link, is not a media file, or does not exist.
    """
    try:
        relative = viewer_relative_path(location)
    except ValueError as problem:
        raise DataError(f"media location {problem}; {_MEDIA_FIX}") from None
    try:
        parts = relative_parts(relative, f"media location {location}: the path")
    except UnsafePathError as problem:
        raise DataError(f"{problem}; {_MEDIA_FIX}") from None
    try:
        path = require_inside(os.path.join(output_path, *parts), output_path, f"media location {location}: file",
                              _MEDIA_FIX)
    except UnsafePathError as problem:
        raise DataError(str(problem)) from None
    family = MEDIA_TYPES.get(os.path.splitext(path)[1].lower())
    if family is None or not content_type.startswith(family):
        raise DataError(f"media location {location} (recorded as {content_type}): not a media file "
                        f"({', '.join(sorted(MEDIA_TYPES))} recorded as image/ or video/); {_MEDIA_FIX}")
    if not os.path.isfile(path):
        raise DataError(f"media location {location}: the file {path} is not under {output_path}; {_MEDIA_FIX}")
    return path


def _media_bytes(output_path: str, media: Sequence[tuple[str, str]]) -> list[bytes]:
    data = []
    for content_type, location in media:
        with open(_media_file(output_path, content_type, location), "rb") as handle:
            data.append(handle.read())
    return data


@dataclass(frozen=True)
class Verdicts:
    """What the suite reader decided, per leaderboard row (``model`` or ``model@deployment``)."""

    verdicts: dict[str, tuple[bool | None, str]]
    used_runs: dict[str, dict[str, str]]
    """Row -> subset -> the run whose rows the numbers use."""

    problem: str = ""
    """Why no row was judged (the reader could not read the suite); empty when judged."""

    def of(self, model: str, deployment: str, subset: str, run: str) -> tuple[bool | None, str, str]:
        """A record's comparable flag, verdict line and the run its row's numbers use."""
        if self.problem:
            return None, f"not judged: {self.problem}", ""
        key = next((key for key in (f"{model}@{deployment or model}", model) if key in self.verdicts), "")
        used = self.used_runs.get(key, {}).get(subset, "")
        comparable, line = self.verdicts.get(key, (None, ""))
        if used != run:
            where = f"use run {used}" if used else "use no run"
            return False, f"superseded: the suite's numbers for {key or model} on {subset} {where}, not this run's " \
                "rows", used
        return comparable, line, used


def prediction_records(output_path: str, suite: str, include_media: bool = False,
                       unfinished: list[str] | None = None, published_sha256: str | None = None,
                       hf_cache: str | None = None, local_path: str = "prod_env") -> Iterator[dict[str, Any]]:
    """One record per instance of every finished RoboReward run of the suite.

    ``unfinished`` receives the folders of the suite's RoboReward runs that have no ``scenario_state.json``.
    ``published_sha256`` (None: the recorded one; tests pass their copy's), ``hf_cache`` (None: ``HF_HUB_CACHE``)
    and ``local_path`` (helm-run's ``--local-path``) are what the comparability rule reads, as in ``publish``.

    Raises:
        DataError: ``suite`` is not a plain folder name, the suite does not exist or holds no finished RoboReward
            run, a run's files are damaged or disagree with one another, or a media location is refused.
    """
    try:
        check_suite_name(suite)
    except ReportError as error:
        raise DataError(str(error)) from None
    runs = roboreward_runs(output_path, suite, unfinished)
    if not runs:
        raise DataError(f"--suite {suite}: no finished RoboReward run under {os.path.join(output_path, 'runs', suite)}")
    verdicts = _verdicts(output_path, suite, published_sha256 or PUBLISHED_METADATA_SHA256, hf_cache, local_path)
    for run in runs:
        yield from _run_records(run, output_path, include_media, verdicts)


def _verdicts(output_path: str, suite: str, published_sha256: str, hf_cache: str | None,
              local_path: str) -> Verdicts:
    """Each row's comparability verdict (docs/publishing.md) and the runs its numbers use.

    Raises:
        DataError: A run's files disagree (the message names them; no command goes on with them).
    """
    try:
        rows = load_suite(output_path, suite, {})
    except RunFilesError as error:
        raise DataError(str(error)) from None
    except ReportError as error:  # a suite the rule cannot judge: said in every row, the export goes on
        return Verdicts({}, {}, str(error))
    facts = gather(rows, output_path, published_sha256, hf_cache, local_path)
    return Verdicts({key: (verdict.comparable, verdict.line) for key, verdict in facts.verdicts().items()},
                    {model.model: dict(model.run_of_subset) for model in rows.models})


def _run_records(run: RunInfo, output_path: str, include_media: bool, verdicts: Verdicts
                 ) -> Iterator[dict[str, Any]]:
    settings = json.dumps(run.scenario_args, sort_keys=True)
    for prediction in predictions_of(run):
        comparable, comparability, used_run = verdicts.of(prediction.model, prediction.deployment,
                                                          prediction.subset, os.path.basename(run.folder))
        record: dict[str, Any] = {
            "model": prediction.model, "deployment": prediction.deployment, "run": prediction.run,
            "run_settings": settings, "subset": prediction.subset, "row_key": prediction.source_file,
            "instance_id": prediction.instance_id, "task": prediction.task, "gold": prediction.gold_score,
            "raw_output": prediction.raw_output, "score": prediction.score,
            "request_failed": prediction.request_failed, "error": prediction.error,
            "prompt_version": PROMPT_VERSION, "content_type": prediction.content_type,
            "media": list(prediction.media), "comparable": comparable, "comparability": comparability,
            "used_run": used_run,
        }
        if include_media:
            record[MEDIA_COLUMN] = _media_bytes(output_path, list(zip(prediction.media_types, prediction.media,
                                                                      strict=True)))
        yield record


def predictions_dataset(output_path: str, suite: str, include_media: bool = False,
                        unfinished: list[str] | None = None, local_path: str = "prod_env") -> Any:
    """The suite's predictions as a ``datasets.Dataset`` (the options: see :func:`prediction_records`)."""
    import datasets

    records = list(prediction_records(output_path, suite, include_media, unfinished, local_path=local_path))
    return datasets.Dataset.from_list(records, features=features(include_media))


@dataclass
class ExportResult:
    """What an export wrote, and which runs of the suite it could not include."""

    count: int
    where: list[str]
    unfinished: list[str] = field(default_factory=list)
    """Folders of the suite's RoboReward runs without ``scenario_state.json`` (failed or still running)."""


def export_predictions(output_path: str, suite: str, out: str | None = None, output_format: str = PARQUET,
                       push_to_hub: str | None = None, private: bool = False, include_media: bool = False,
                       token: str | None = None, local_path: str = "prod_env") -> ExportResult:
    """Write the predictions (``out`` as parquet or a ``save_to_disk`` folder) and/or push them to the hub.

    ``out`` is written whole or not at all (a temporary sibling renamed into place). It may be new, or an earlier
    export of the same format (replaced); nothing else is overwritten, and nothing is written under
    ``<output_path>/runs`` (helm-run's run folders).

    Raises:
        DataError: No runs, an unknown format, nothing to do, an ``out`` that is refused, or a failed push.
    """
    if output_format not in FORMATS:
        raise DataError(f"--format {output_format!r}: use {' or '.join(FORMATS)}")
    if out is None and push_to_hub is None:
        raise DataError("give --out PATH (a parquet file; a folder with --format disk) and/or --push-to-hub ORG/NAME")
    if out is not None:
        check_export_target(out, output_format, output_path)
    unfinished: list[str] = []
    dataset = predictions_dataset(output_path, suite, include_media, unfinished, local_path)
    where = []
    if out is not None:
        write_export(dataset, out, output_format)
        where.append(out)
    if push_to_hub is not None:
        push(dataset, push_to_hub, private, token, out)
        where.append(f"hub dataset {push_to_hub}")
    return ExportResult(len(dataset), where, unfinished)
