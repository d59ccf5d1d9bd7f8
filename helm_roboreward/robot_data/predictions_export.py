"""A suite's predictions as a Hugging Face ``datasets`` dataset: parquet, ``save_to_disk`` or the hub.

One row per instance of every RoboReward run of the suite (:mod:`~helm_roboreward.robot_data.helm_outputs`):
columns :data:`FEATURES` — model, deployment, run name and settings, subset, row key (the row's ``file_name``),
instance id, task, gold, raw answer, parsed score, whether the request failed and its error, the prompt version
and the media locations. No media bytes unless asked (``include_media``: the bytes of every frame or video sent,
read from under the output folder).
"""

import json
import os
from collections.abc import Iterator
from typing import Any

from helm_roboreward.data.rows import DataError
from helm_roboreward.media.viewer import viewer_relative_path
from helm_roboreward.protocol import PROMPT_VERSION
from helm_roboreward.robot_data.helm_outputs import RunInfo, predictions_of, roboreward_runs

PARQUET = "parquet"
DISK = "disk"
FORMATS = (PARQUET, DISK)
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
    }
    if include_media:
        columns[MEDIA_COLUMN] = datasets.Sequence(datasets.Value("binary"))
    return datasets.Features(columns)


def _media_bytes(output_path: str, locations: tuple[str, ...]) -> list[bytes]:
    data = []
    for location in locations:
        try:
            path = os.path.join(output_path, *viewer_relative_path(location).split("/"))
        except ValueError:
            path = location
        if not os.path.isfile(path):
            raise DataError(f"{location}: the media file is not under {output_path}; export from the folder helm-run "
                            "ran in, or leave out --include-media")
        with open(path, "rb") as handle:
            data.append(handle.read())
    return data


def prediction_records(output_path: str, suite: str, include_media: bool = False) -> Iterator[dict[str, Any]]:
    """One record per instance of every RoboReward run of the suite.

    Raises:
        DataError: The suite does not exist or holds no RoboReward run.
    """
    runs = roboreward_runs(output_path, suite)
    if not runs:
        raise DataError(f"--suite {suite}: no finished RoboReward run under {os.path.join(output_path, 'runs', suite)}")
    for run in runs:
        yield from _run_records(run, output_path, include_media)


def _run_records(run: RunInfo, output_path: str, include_media: bool) -> Iterator[dict[str, Any]]:
    settings = json.dumps(run.scenario_args, sort_keys=True)
    for prediction in predictions_of(run):
        record: dict[str, Any] = {
            "model": prediction.model, "deployment": prediction.deployment, "run": prediction.run,
            "run_settings": settings, "subset": prediction.subset, "row_key": prediction.source_file,
            "instance_id": prediction.instance_id, "task": prediction.task, "gold": prediction.gold,
            "raw_output": prediction.raw_output, "score": prediction.score,
            "request_failed": prediction.request_failed, "error": prediction.error,
            "prompt_version": PROMPT_VERSION, "content_type": prediction.content_type,
            "media": list(prediction.media),
        }
        if include_media:
            record[MEDIA_COLUMN] = _media_bytes(output_path, prediction.media)
        yield record


def predictions_dataset(output_path: str, suite: str, include_media: bool = False) -> Any:
    """The suite's predictions as a ``datasets.Dataset``."""
    import datasets

    records = list(prediction_records(output_path, suite, include_media))
    return datasets.Dataset.from_list(records, features=features(include_media))


def export_predictions(output_path: str, suite: str, out: str | None = None, output_format: str = PARQUET,
                       push_to_hub: str | None = None, private: bool = False, include_media: bool = False,
                       token: str | None = None) -> tuple[int, list[str]]:
    """Write the predictions (``out`` as parquet or a ``save_to_disk`` folder) and/or push them to the hub.

    Returns:
        The number of rows and where they went.

    Raises:
        DataError: No runs, an unknown format, or nothing to do.
    """
    if output_format not in FORMATS:
        raise DataError(f"--format {output_format!r}: use {' or '.join(FORMATS)}")
    if out is None and push_to_hub is None:
        raise DataError("give --out PATH (a parquet file; a folder with --format disk) and/or --push-to-hub ORG/NAME")
    dataset = predictions_dataset(output_path, suite, include_media)
    where = []
    if out is not None:
        if output_format == PARQUET:
            os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
            dataset.to_parquet(out)
        else:
            dataset.save_to_disk(out)
        where.append(out)
    if push_to_hub is not None:
        dataset.push_to_hub(push_to_hub, private=private, token=token)
        where.append(f"hub dataset {push_to_hub}")
    return len(dataset), where
