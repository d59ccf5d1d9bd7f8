"""The scenario with data=hf, end to end against a loopback fake of the Hugging Face hub."""

import json
import os
import shutil

import huggingface_hub.constants
import pytest

from helm_roboreward.helm_frontend.scenario import RoboRewardScenario
from helm_roboreward.protocol.data_sources import sample_root
from helm_roboreward.protocol.rows import DataError
from helm_roboreward.protocol.rules import DATASET_ID
from tests.helpers.fakes.hf_hub import FakeHfHub, FakeRepo

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture()
def hub_env(tmp_path, monkeypatch):
    content = tmp_path / "repo"
    shutil.copytree(os.path.join(sample_root(), "test"), content / "test")
    (content / "train" / "x").mkdir(parents=True)
    (content / "train" / "metadata.jsonl").write_text("{}\n")
    (content / "train" / "x" / "big.mp4").write_bytes(b"0" * 1000)
    with FakeHfHub([FakeRepo(DATASET_ID, commits={COMMIT: str(content)}, refs={"main": COMMIT})]) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # read at import time
        yield hub


def test_hf_data_downloads_only_the_subset_and_records_the_commit(hub_env, tmp_path):
    scenario = RoboRewardScenario(subset="sim_panda", data="hf", video="frames")
    output = str(tmp_path / "benchmark_output" / "scenarios" / "roboreward")
    instances = scenario.get_instances(output)
    with open(os.path.join(sample_root(), "test", "metadata.jsonl")) as handle:
        rows = [json.loads(line) for line in handle]
    expected = [row for row in rows if row["file_name"].startswith("sim_panda/")]
    assert len(instances) == len(expected)
    assert {instance.extra_data["dataset_revision"] for instance in instances} == {COMMIT}
    downloaded = hub_env.downloaded_files()
    assert "test/metadata.jsonl" in downloaded
    assert all(path.startswith("test/sim_panda/") or path == "test/metadata.jsonl" for path in downloaded)
    provenance = [name for name in os.listdir(output) if name.startswith("roboreward-data-")]
    records = [json.load(open(os.path.join(output, name))) for name in provenance]
    assert any(record["resolved_revision"] == COMMIT and record["data"] == "hf" for record in records)


def test_hf_unknown_revision_is_a_data_error(hub_env, tmp_path):
    scenario = RoboRewardScenario(subset="sim_panda", data="hf", revision="no-such-branch", video="frames")
    with pytest.raises(DataError, match="no-such-branch"):
        scenario.get_instances(str(tmp_path / "out"))
