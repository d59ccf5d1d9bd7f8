"""``roboreward export-predictions``: the shared sample suite's predictions as a ``datasets`` dataset.

Parquet, ``save_to_disk`` and a push to the loopback fake hub (``tests/helpers/fakes/hf_hub.py`` takes uploads),
with and without media bytes; every prediction carries its model, subset, row key, task, gold, raw answer,
parsed score and run settings.
"""

import json
import os
import subprocess
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest

from helm_roboreward.protocol.rows import DataError
from helm_roboreward.robot_data.predictions_export import export_predictions, prediction_records
from tests.helpers.fakes.hf_hub import FakeHfHub
from tests.helpers.harness import check_completed, cli, helm_environment, read_json
from tests.helpers.sample import SAMPLE
from tests.helpers.suite import SUITE, SampleSuite

COLUMNS = ["model", "deployment", "run", "run_settings", "subset", "row_key", "instance_id", "task", "gold",
           "raw_output", "score", "request_failed", "error", "prompt_version", "content_type", "media", "comparable",
           "comparability", "used_run"]


def instances_of_suite(sample_suite: SampleSuite) -> dict[tuple[str, str], tuple[float, str, str]]:
    """(model, row key) -> (gold, task, raw answer), read straight from each run's scenario_state.json."""
    found = {}
    for run in sample_suite.runs().glob("roboreward:*"):
        model = read_json(run / "run_spec.json")["adapter_spec"]["model"]
        for state in read_json(run / "scenario_state.json")["request_states"]:
            extra = state["instance"]["extra_data"]
            found[(model, extra["source_file"])] = (float(state["instance"]["references"][0]["output"]["text"]),
                                                    extra["task"], state["result"]["completions"][0]["text"])
    return found


def test_every_prediction_of_the_suite_is_a_row(sample_suite: SampleSuite, tmp_path: Path) -> None:
    out = tmp_path / "predictions.parquet"
    result = export_predictions(str(sample_suite.output), SUITE, str(out))
    count, where = result.count, result.where
    expected = instances_of_suite(sample_suite)
    assert count == len(expected) > 0 and where == [str(out)]
    table = datasets.Dataset.from_parquet(str(out))
    assert table.column_names == COLUMNS
    seen = set()
    for record in table:
        key = (record["model"], record["row_key"])
        assert (record["gold"], record["task"], record["raw_output"]) == expected[key]
        seen.add(key)
        assert record["subset"] == record["row_key"].split("/")[0]
        assert record["score"] == float(record["raw_output"].rsplit(" ", 1)[1]) and not record["request_failed"]
        assert json.loads(record["run_settings"])["data"] == "sample" and record["prompt_version"] == "1"
        assert record["content_type"] == "image/jpeg" and record["media"][0].startswith("benchmark_output/")
        assert record["comparable"] is False and record["comparability"].startswith(
            "not comparable with the published leaderboard: its runs read the bundled sample")  # docs/publishing.md
    assert seen == set(expected)
    assert {model for model, _ in seen} == {"baseline/constant-3", "baseline/uniform-random"}
    assert {record["score"] for record in table if record["model"] == "baseline/constant-3"} == {3.0}


def test_save_to_disk_and_media_bytes(sample_suite: SampleSuite, tmp_path: Path) -> None:
    count = export_predictions(str(sample_suite.output), SUITE, str(tmp_path / "disk"), "disk",
                               include_media=True).count
    loaded = datasets.load_from_disk(str(tmp_path / "disk"))
    assert len(loaded) == count and "media_bytes" in loaded.column_names
    first = loaded[0]
    relative = first["media"][0].split("benchmark_output/", 1)[1]
    assert first["media_bytes"][0] == (sample_suite.output / relative).read_bytes()
    assert len(first["media_bytes"]) == len(first["media"])


def test_push_to_a_hub(sample_suite: SampleSuite, tmp_path: Path) -> None:
    local = tmp_path / "local.parquet"
    export_predictions(str(sample_suite.output), SUITE, str(local))
    with FakeHfHub([], upload_root=tmp_path / "hub") as hub:
        env = {**helm_environment(), "HF_ENDPOINT": hub.url, "HF_TOKEN": "hf_faketoken1234567890",
               "HF_HUB_OFFLINE": "0"}
        process = subprocess.run([cli("roboreward"), "export-predictions", "--suite", SUITE, "--output-path",
                                  str(sample_suite.output), "--push-to-hub", "lab/roboreward-predictions",
                                  "--private"], env=env, capture_output=True, text=True, timeout=300)
        check_completed(process, "roboreward export-predictions")
        posts = [request.path for request in hub.requests if request.method == "POST"]
    assert "hub dataset lab/roboreward-predictions" in process.stdout
    assert posts[0] == "/api/repos/create" and posts[-1] == "/api/datasets/lab/roboreward-predictions/commit/main"
    (pushed,) = (tmp_path / "hub").rglob("data/*.parquet")
    assert (pushed.parent.parent / "README.md").is_file()
    assert pq.read_table(pushed).to_pylist() == pq.read_table(local).to_pylist()


def test_bad_requests(sample_suite: SampleSuite, tmp_path: Path) -> None:
    with pytest.raises(DataError, match="--suite nope: .* not found"):
        export_predictions(str(sample_suite.output), "nope", str(tmp_path / "x.parquet"))
    with pytest.raises(DataError, match="give --out PATH"):
        export_predictions(str(sample_suite.output), SUITE)
    with pytest.raises(DataError, match="--format 'csv'"):
        export_predictions(str(sample_suite.output), SUITE, str(tmp_path / "x"), "csv")
    empty = tmp_path / "empty" / "runs" / "s"
    empty.mkdir(parents=True)
    with pytest.raises(DataError, match="no finished RoboReward run"):
        list(prediction_records(str(tmp_path / "empty"), "s"))
    assert os.path.isdir(SAMPLE)
