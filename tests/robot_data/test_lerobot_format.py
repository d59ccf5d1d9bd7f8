"""Reading LeRobot v3.0 and v2.1 datasets by their documented layouts: cameras, episodes, spans, success flags."""

from pathlib import Path

import pytest

from helm_roboreward.robot_data.lerobot_episodes import read_episodes, read_success_flags
from helm_roboreward.robot_data.lerobot_format import (
    LeRobotFormatError,
    choose_camera,
    metadata_fingerprint,
    read_info,
)
from tests.helpers.lerobot_datasets import (
    CAMERA,
    DEPTH,
    WRIST,
    EpisodeSpec,
    default_episodes,
    edit_info,
    write_v2,
    write_v3,
)


@pytest.fixture(scope="module")
def v3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_v3(tmp_path_factory.mktemp("v3") / "ds", default_episodes(5), cameras=(CAMERA, WRIST), depth=(DEPTH,))


@pytest.fixture(scope="module")
def v2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_v2(tmp_path_factory.mktemp("v2") / "ds", default_episodes(4))


def test_v3_episodes_share_files_and_are_cut_by_timestamps(v3: Path) -> None:
    info = read_info(str(v3))
    assert info.is_v3 and info.video_keys == [CAMERA, WRIST, DEPTH]
    episodes = read_episodes(info, choose_camera(info, CAMERA))
    assert [e.index for e in episodes] == [0, 1, 2, 3, 4]
    assert [e.length for e in episodes] == [8, 9, 10, 11, 12]
    assert {e.video_file for e in episodes[:3]} == {f"videos/{CAMERA}/chunk-000/file-000.mp4"}
    assert episodes[3].video_file == f"videos/{CAMERA}/chunk-000/file-001.mp4"
    assert [(e.from_timestamp, e.to_timestamp) for e in episodes[:3]] == [(0.0, 0.8), (0.8, 1.7), (1.7, 2.7)]
    assert [e.first_frame_index for e in episodes] == [0, 8, 17, 27, 38]
    assert episodes[1].tasks == ("open the drawer",)
    assert read_success_flags(info, episodes) == {0: False, 1: True, 2: False, 3: True, 4: False}


def test_v2_episodes_have_one_file_each_and_global_indices(v2: Path) -> None:
    info = read_info(str(v2))
    assert not info.is_v3 and info.codebase_version == "v2.1"
    episodes = read_episodes(info, choose_camera(info, None))
    assert [e.video_file for e in episodes] == [f"videos/chunk-000/{CAMERA}/episode_{i:06d}.mp4" for i in range(4)]
    assert [(e.from_timestamp, e.to_timestamp) for e in episodes] == [(0.0, 0.8), (0.0, 0.9), (0.0, 1.0), (0.0, 1.1)]
    assert [e.first_frame_index for e in episodes] == [0, 8, 17, 27]
    assert read_success_flags(info, episodes) == {0: False, 1: True, 2: False, 3: True}


def test_camera_choice(v3: Path, v2: Path) -> None:
    info = read_info(str(v3))
    with pytest.raises(LeRobotFormatError, match=r"2 colour cameras \(observation.images.front, observation.images"
                                                 r".wrist; depth maps, which cannot be imported: .*depth\); choose"):
        choose_camera(info, None)
    with pytest.raises(LeRobotFormatError, match="'observation.images.top' is not a video feature.*its cameras: "):
        choose_camera(info, "observation.images.top")
    with pytest.raises(LeRobotFormatError, match="is a depth map"):
        choose_camera(info, DEPTH)
    assert choose_camera(read_info(str(v2)), None).key == CAMERA


def test_a_single_colour_camera_next_to_a_depth_map_is_the_default(tmp_path: Path) -> None:
    root = write_v3(tmp_path / "ds", [EpisodeSpec(6)], depth=(DEPTH,))
    assert choose_camera(read_info(str(root)), None).key == CAMERA


@pytest.mark.parametrize("version", ["v1.6", "v2.2", "3.0", None])
def test_unknown_codebase_versions_are_refused(tmp_path: Path, version: object) -> None:
    root = write_v2(tmp_path / "ds", [EpisodeSpec(4)])
    edit_info(root, codebase_version=version)
    with pytest.raises(LeRobotFormatError, match="field 'codebase_version'.*not a LeRobot layout"):
        read_info(str(root))


def test_the_fingerprint_follows_the_metadata(tmp_path: Path) -> None:
    root = write_v2(tmp_path / "ds", [EpisodeSpec(4)])
    before = metadata_fingerprint(read_info(str(root)))
    assert metadata_fingerprint(read_info(str(root))) == before
    (root / "meta" / "tasks.jsonl").write_text('{"task_index": 0, "task": "other"}\n', encoding="utf-8")
    assert metadata_fingerprint(read_info(str(root))) != before


def test_a_missing_feature_for_success_labels_names_the_fix(tmp_path: Path) -> None:
    root = write_v2(tmp_path / "ds", [EpisodeSpec(4)])
    info = read_info(str(root))
    features = dict(info.features)
    features.pop("next.success")
    edit_info(root, features=features)
    info = read_info(str(root))
    with pytest.raises(LeRobotFormatError, match="no 'next.success' feature; give the labels with --labels"):
        read_success_flags(info, read_episodes(info, choose_camera(info, None)))
