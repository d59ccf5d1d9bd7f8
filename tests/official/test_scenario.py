"""The HELM scenario: instance content, media placement, provenance, bad videos."""

import json
import os
import shutil

import pytest

from helm_roboreward.helm_frontend.scenario import RoboRewardScenario, instance_id, worker_count
from helm_roboreward.protocol.data_sources import sample_root
from helm_roboreward.protocol.rows import DataError
from helm_roboreward.protocol.rules import build_prompt


def sample_rows(subset):
    with open(os.path.join(sample_root(), "test", "metadata.jsonl")) as handle:
        rows = [json.loads(line) for line in handle]
    return [row for row in rows if row["file_name"].startswith(subset + "/")]


def test_frames_instances_text_first_then_frames(tmp_path):
    output = str(tmp_path / "benchmark_output" / "scenarios" / "roboreward")
    instances = RoboRewardScenario(subset="sim_panda", data="sample", video="frames").get_instances(output)
    rows = {instance_id(row["file_name"]): row for row in sample_rows("sim_panda")}
    assert len(instances) == len(rows)
    for instance in instances:
        row = rows[instance.id]
        media = instance.input.multimedia_content.media_objects
        assert media[0].content_type == "text/plain" and media[0].text == build_prompt(row["task"])
        assert len(media) == 1 + instance.extra_data["num_frames"]
        assert all(item.content_type == "image/jpeg" for item in media[1:])
        assert all(item.location.startswith(output + os.sep + "frames" + os.sep) for item in media[1:])
        assert [ref.output.text for ref in instance.references] == [str(row["reward"])]
        assert instance.references[0].is_correct and instance.split == "test"
        assert instance.extra_data["subset"] == "sim_panda"
        assert instance.extra_data["kind"] in {"clip", "counterfactual", "original"}
        assert instance.extra_data["dataset_revision"].startswith("sample-")


def test_native_instances_point_to_content_addressed_native_mp4s(tmp_path):
    output = str(tmp_path / "out")
    instances = RoboRewardScenario(subset="sim_kuka", data="sample", video="native").get_instances(output)
    for instance in instances:
        media = instance.input.multimedia_content.media_objects
        assert len(media) == 2 and media[1].content_type == "video/mp4"
        name = os.path.basename(media[1].location)
        assert name == instance.extra_data["video_sha256"][:32] + ".mp4"
        assert instance.extra_data["num_frames"] == 0
    # Counterfactual rows reuse a success's bytes: same content, same file.
    locations = [instance.input.multimedia_content.media_objects[1].location for instance in instances]
    assert len(set(locations)) < len(locations)


def test_undecodable_video_names_the_row_and_keeps_the_rest(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(os.path.join(sample_root(), "test"), data / "test")
    broken = sample_rows("sim_kuka")[0]["file_name"]
    (data / "test" / broken).write_bytes(b"\x00\x00\x00\x18ftypmp42 truncated")
    output = str(tmp_path / "out")
    scenario = RoboRewardScenario(subset="sim_kuka", data=str(data), video="frames")
    with pytest.raises(DataError) as error:
        scenario.get_instances(output)
    assert broken in str(error.value) and "metadata line" in str(error.value)
    manifests = [d for d, _, names in os.walk(output) if "frames.json" in names]
    assert len(manifests) >= 1  # the good videos were prepared and cached


def test_unresolved_auto_is_a_clear_error():
    with pytest.raises(ValueError, match="model="):
        RoboRewardScenario(subset="sim_kuka", data="sample", video="auto")


def test_worker_count_comes_from_the_environment(monkeypatch) -> None:
    monkeypatch.delenv("ROBOREWARD_JOBS", raising=False)
    assert worker_count() == (os.cpu_count() or 1)
    monkeypatch.setenv("ROBOREWARD_JOBS", "3")
    assert worker_count() == 3
    for bad in ("0", "-1", "two", "1.5"):
        monkeypatch.setenv("ROBOREWARD_JOBS", bad)
        with pytest.raises(ValueError, match="ROBOREWARD_JOBS"):
            worker_count()


def test_scenario_refuses_arguments_it_does_not_take(tmp_path) -> None:
    for name in ("jobs", "layout", "deployment"):
        with pytest.raises(TypeError, match=name):
            RoboRewardScenario(subset="sim_kuka", data="sample", video="frames", **{name: "x"})  # type: ignore[arg-type]
