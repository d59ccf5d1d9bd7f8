"""Importing LeRobot datasets as a benchmark copy: layout, names, labels, provenance, reuse, nothing half-written."""

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from helm_roboreward.protocol.rows import load_rollouts
from helm_roboreward.robot_data.hub_source import fetch_hub_dataset
from helm_roboreward.robot_data.importing import (
    PLACEHOLDER_GOLD_SCORE,
    PROVENANCE_FILE,
    ImportRequest,
    default_subset,
    import_lerobot,
)
from helm_roboreward.robot_data.labels import ImportRequestError
from helm_roboreward.robot_data.lerobot_format import LeRobotFormatError
from tests.helpers.fakes.hf_hub import FakeHfHub, FakeRepo, make_commit_sha
from tests.helpers.harness import check_completed, cli, helm_environment
from tests.helpers.lerobot_datasets import CAMERA, EpisodeSpec, default_episodes, edit_v3_episode, write_v2, write_v3
from tests.helpers.videos import decode_all, frame_numbers


def local(root: Path, out: Path, **options: Any) -> ImportRequest:
    return ImportRequest(root=str(root), out=str(out), source={"kind": "local", "path": str(root),
                                                              "resolved_revision": "local-test"}, **options)


@pytest.fixture(scope="module")
def v3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_v3(tmp_path_factory.mktemp("v3") / "My-Robot_Data", default_episodes(5))


@pytest.fixture(scope="module")
def labels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("labels") / "labels.jsonl"
    path.write_text("".join(json.dumps({"episode_index": i, "reward": r}) + "\n" for i, r in
                            ((0, 2), (1, 5), (3, 4))) + json.dumps({"episode_index": 4, "reward": 1,
                                                                    "task": "stack two blocks"}) + "\n")
    return path


def test_a_v3_import_is_a_benchmark_copy(v3: Path, labels: Path, tmp_path: Path) -> None:
    result = import_lerobot(local(v3, tmp_path / "copy", labels_file=str(labels)), progress=False)
    assert result.subset == "my_robot_data" and not result.reused
    rows = [json.loads(line) for line in (tmp_path / "copy/test/metadata.jsonl").read_text().splitlines()]
    assert rows == [
        {"file_name": "my_robot_data/episode_000000.mp4", "task": "put the red cube in the bowl", "reward": 2},
        {"file_name": "my_robot_data/episode_000001.mp4", "task": "open the drawer", "reward": 5},
        {"file_name": "my_robot_data/episode_000003.mp4", "task": "put the red cube in the bowl", "reward": 4},
        {"file_name": "my_robot_data/episode_000004.mp4", "task": "stack two blocks", "reward": 1},
    ]
    rollouts = load_rollouts(str(tmp_path / "copy"), None, "data=copy")  # the benchmark's own reader accepts it
    assert [r.row.gold_score for r in rollouts] == [2, 5, 4, 1]
    assert frame_numbers(decode_all(rollouts[2].video_path)) == list(range(27, 38))  # episode 3: its own frames
    provenance = json.loads((tmp_path / "copy" / PROVENANCE_FILE).read_text())
    assert provenance["source"] == {"kind": "local", "path": str(v3), "resolved_revision": "local-test",
                                    "codebase_version": "v3.0"}
    assert provenance["camera"]["key"] == CAMERA and provenance["camera"]["codec"] == "av1"
    assert provenance["labels"]["source"] == "file" and provenance["labels"]["coarse"] is False
    assert provenance["encoding"] == {"encoder": "libx264", "codec": "h264", "pix_fmt": "yuv420p", "crf": 18,
                                      "preset": "veryfast", "fps": 10.0}
    first = provenance["rows"][1]
    assert (first["episode_index"], first["source_video"], first["from_timestamp"], first["to_timestamp"]) == (
        1, f"videos/{CAMERA}/chunk-000/file-000.mp4", 0.8, 1.7)
    assert first["first_frame_time"] == pytest.approx(0.8) and first["last_frame_time"] == pytest.approx(1.6)
    assert "created_at" in provenance


def test_names_carry_no_label(v3: Path, labels: Path, tmp_path: Path) -> None:
    import_lerobot(local(v3, tmp_path / "copy", labels_file=str(labels)), progress=False)
    for row in (tmp_path / "copy/test/metadata.jsonl").read_text().splitlines():
        record = json.loads(row)
        name = record["file_name"].rsplit("/", 1)[1]
        assert name.startswith("episode_") and "score" not in name and "reward" not in name
        assert name == f"episode_{int(name[8:14]):06d}.mp4"


def test_v2_with_success_labels_is_flagged_coarse(tmp_path: Path) -> None:
    root = write_v2(tmp_path / "ds", default_episodes(4))
    result = import_lerobot(local(root, tmp_path / "copy", labels_from="next.success", subset="bench_v2",
                                  episodes="1:4"), progress=False)
    assert [row.gold_score for row in result.rows] == [5, 1, 5]
    assert result.provenance["labels"]["coarse"] is True and "never 2..4" in result.provenance["labels"]["note"]
    assert sorted(os.listdir(tmp_path / "copy/test/bench_v2")) == [f"episode_00000{i}.mp4" for i in (1, 2, 3)]


def test_the_same_import_is_reused_and_a_different_one_refused(v3: Path, labels: Path, tmp_path: Path) -> None:
    out = tmp_path / "copy"
    import_lerobot(local(v3, out, labels_file=str(labels)), progress=False)
    stamp = (out / "test/metadata.jsonl").stat().st_mtime_ns
    assert import_lerobot(local(v3, out, labels_file=str(labels)), progress=False).reused
    assert (out / "test/metadata.jsonl").stat().st_mtime_ns == stamp
    with pytest.raises(ImportRequestError, match="already holds a different import .*My-Robot_Data, camera "
                                         "observation.images.front, subset my_robot_data, 4 rows"):
        import_lerobot(local(v3, out, labels_from="next.success"), progress=False)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(ImportRequestError, match="not empty and holds no import"):
        import_lerobot(local(v3, tmp_path / "other", labels_from="next.success"), progress=False)


def test_a_failed_import_leaves_nothing(tmp_path: Path) -> None:
    root = write_v3(tmp_path / "ds", default_episodes(4), episodes_per_file=2)
    edit_v3_episode(root, 3, **{f"videos/{CAMERA}/to_timestamp": 4.0})
    with pytest.raises(LeRobotFormatError, match=r"episode 3: timestamps 1..4 s lie beyond the end of the video "
                                                 r"\(it ends at 2.100 s\)"):
        import_lerobot(local(root, tmp_path / "copy", labels_from="next.success"), progress=False)
    assert sorted(os.listdir(tmp_path)) == ["ds"]


def test_subset_names(v3: Path, tmp_path: Path) -> None:
    assert default_subset("lerobot/Aloha-Sim_Insertion") == "aloha_sim_insertion" and default_subset("///") == "lerobot"
    with pytest.raises(ImportRequestError,
                       match="'bridge' is a RoboRewardBench subset; your data would be shown as Berkeley"):
        import_lerobot(local(v3, tmp_path / "copy", labels_from="next.success", subset="bridge"), progress=False)
    with pytest.raises(ImportRequestError, match="give the labels: --labels FILE"):
        import_lerobot(local(v3, tmp_path / "copy"), progress=False)


def test_an_unlabelled_copy_carries_a_placeholder_and_says_so(v3: Path, tmp_path: Path) -> None:
    result = import_lerobot(local(v3, tmp_path / "copy", placeholder_labels=True, anchors=3, episodes="0,1"),
                            progress=False)
    assert [(row.file_name.rsplit("/", 1)[1], row.end_frame, row.gold_score) for row in result.rows] == [
        ("episode_000000_upto_000003.mp4", 3, PLACEHOLDER_GOLD_SCORE), ("episode_000000_upto_000005.mp4", 5, 1),
        ("episode_000000.mp4", 8, 1), ("episode_000001_upto_000003.mp4", 3, 1),
        ("episode_000001_upto_000006.mp4", 6, 1), ("episode_000001.mp4", 9, 1)]
    assert "meaningless" in result.provenance["labels"]["note"]
    assert all(json.loads(line)["reward_is_placeholder"] for line in
               (tmp_path / "copy/test/metadata.jsonl").read_text().splitlines())
    assert frame_numbers(decode_all(tmp_path / "copy/test/my_robot_data/episode_000001_upto_000006.mp4")) == list(
        range(8, 14))


def test_an_unlabelled_working_copy_is_replaced_by_another_mode(v3: Path, tmp_path: Path) -> None:
    out = tmp_path / "work" / "copy"
    import_lerobot(local(v3, out, placeholder_labels=True), progress=False)
    result = import_lerobot(local(v3, out, placeholder_labels=True, anchors=2, episodes="1"), progress=False)
    assert not result.reused and [row.end_frame for row in result.rows] == [5, 9]
    assert len((out / "test/metadata.jsonl").read_text().splitlines()) == 2
    # a labelled import is never replaced
    with pytest.raises(ImportRequestError, match="already holds a different import"):
        import_lerobot(local(v3, out, labels_from="next.success"), progress=False)


def test_a_hub_dataset_downloads_only_what_the_import_reads(tmp_path: Path) -> None:
    content = write_v3(tmp_path / "content", default_episodes(6), episodes_per_file=3)
    commit = make_commit_sha("lerobot v3")
    with FakeHfHub([FakeRepo("lab/pick_place", commits={commit: content}, refs={"main": commit})]) as hub:
        dataset = fetch_hub_dataset("lab/pick_place", "main", endpoint=hub.url, cache_dir=str(tmp_path / "cache"))
        request = ImportRequest(root=dataset.root, out=str(tmp_path / "copy"), source=dataset.source,
                                labels_from="next.success", episodes="4:6")
        result = import_lerobot(request, dataset.ensure, progress=False)
        downloaded = hub.downloaded_files()
    assert result.subset == "pick_place" and [row.episode_index for row in result.rows] == [4, 5]
    assert result.provenance["source"] == {"kind": "hub", "repo_id": "lab/pick_place", "revision": "main",
                                           "resolved_revision": commit, "codebase_version": "v3.0"}
    # meta/, the one shared video holding episodes 4 and 5, and the data file for next.success; not file-000.mp4
    assert f"videos/{CAMERA}/chunk-000/file-001.mp4" in downloaded
    assert f"videos/{CAMERA}/chunk-000/file-000.mp4" not in downloaded
    assert all(path.startswith(("meta/", "videos/", "data/")) for path in downloaded)


def test_a_missing_hub_revision_says_so(tmp_path: Path) -> None:
    content = write_v2(tmp_path / "content", [EpisodeSpec(4)])
    commit = make_commit_sha("v2")
    from helm_roboreward.robot_data.hub_source import HubDatasetError

    with FakeHfHub([FakeRepo("lab/v2", commits={commit: content}, refs={"main": commit})]) as hub:
        with pytest.raises(HubDatasetError, match="revision v9.9.*does not exist"):
            fetch_hub_dataset("lab/v2", "v9.9", endpoint=hub.url, cache_dir=str(tmp_path / "cache"))
        with pytest.raises(HubDatasetError, match="no such dataset"):
            fetch_hub_dataset("lab/none", "main", endpoint=hub.url, cache_dir=str(tmp_path / "cache"))


def test_the_command_imports_from_the_hub_by_repo_id(tmp_path: Path) -> None:
    content = write_v2(tmp_path / "content", default_episodes(3))
    commit = make_commit_sha("cli")
    with FakeHfHub([FakeRepo("lab/shelf", commits={commit: content}, refs={"v1": commit})]) as hub:
        env = {**helm_environment(), "HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(tmp_path / "cache"),
               "HF_HUB_OFFLINE": "0"}
        process = subprocess.run([cli("roboreward"), "import-lerobot", "--repo-id", "lab/shelf", "--revision", "v1",
                                  "--out", str(tmp_path / "copy"), "--labels-from", "next.success", "--quiet"],
                                 env=env, capture_output=True, text=True, timeout=300)
    check_completed(process, "roboreward import-lerobot")
    assert "lab/shelf@v1 -> " in process.stdout and "subset shelf: 3 episodes" in process.stdout
    provenance = json.loads((tmp_path / "copy" / PROVENANCE_FILE).read_text())
    assert provenance["source"]["resolved_revision"] == commit and provenance["source"]["revision"] == "v1"
