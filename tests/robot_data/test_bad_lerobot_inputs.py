"""Bad LeRobot inputs to ``roboreward import-lerobot``: one clear message, exit 2, nothing half-written.

Each case is one row of docs/bad_inputs.md (section "LeRobot imports"; the catalogue in
tests/integration/test_bad_inputs.py lists these ids). The command runs as a user runs it (``roboreward
import-lerobot ...``, in process); every message names the file, episode or field, no traceback is printed, the
``--out`` folder is not created (or, when it already held an import, is left as it was) and no ``.partial-``
folder remains.
"""

import shutil
from pathlib import Path

import pytest

from helm_roboreward import cli
from tests.helpers.lerobot_datasets import (
    CAMERA,
    DEPTH,
    WRIST,
    EpisodeSpec,
    ImportCase,
    default_episodes,
    edit_info,
    edit_v3_episode,
    labels_file,
    write_v3,
)

EXIT_USAGE = 2


SUCCESS = ("--labels-from", "next.success")


Case = ImportCase
labels = labels_file


def earlier_import(dataset: Path, folder: Path) -> list[str]:
    assert cli.main(["import-lerobot", str(dataset), "--out", str(folder / "out"), *SUCCESS, "--quiet"]) == 0
    return labels('{"episode_index": 0, "reward": 4}')(dataset, folder)


def garbage_video(dataset: Path) -> None:
    (dataset / "videos" / CAMERA / "chunk-000" / "file-001.mp4").write_bytes(b"\x00garbage" * 64)


CASES = [
    Case("lerobot-unknown-version", SUCCESS,
         ("meta/info.json, field 'codebase_version': 'v1.6' is not a LeRobot layout this importer reads (v2.0, "
          "v2.1, v3.0)", "Convert the dataset with LeRobot's own converter"),
         damage=lambda d: edit_info(d, codebase_version="v1.6")),
    Case("lerobot-camera-missing", ("--camera", "observation.images.top", *SUCCESS),
         ("--camera 'observation.images.top' is not a video feature of the dataset; its cameras: "
          "observation.images.front",)),
    Case("lerobot-camera-ambiguous", SUCCESS,
         ("the dataset has 2 colour cameras (observation.images.front, observation.images.wrist; depth maps, which "
          "cannot be imported: observation.images.depth); choose one with --camera KEY",), dataset="cameras"),
    Case("lerobot-camera-depth", ("--camera", DEPTH, *SUCCESS),
         ("camera 'observation.images.depth' is a depth map (video.is_depth_map)",
          "its colour cameras: observation.images.front, observation.images.wrist"), dataset="cameras"),
    Case("lerobot-timestamps-beyond-video", SUCCESS,
         ("file-001.mp4, episode 3: timestamps 1..4 s lie beyond the end of the video (it ends at 2.100 s). The "
          "metadata and the video disagree", "leave the episode out with --episodes"),
         damage=lambda d: edit_v3_episode(d, 3, **{f"videos/{CAMERA}/to_timestamp": 4.0})),
    Case("lerobot-zero-length-episode", SUCCESS,
         ("file-000.parquet, episode 2: zero-length episode (length 0, video 0..0 s); leave it out with --episodes",),
         damage=lambda d: edit_v3_episode(d, 2, length=0, **{f"videos/{CAMERA}/to_timestamp": 0.0})),
    Case("lerobot-undecodable-video", SUCCESS,
         ("file-001.mp4, episode 2: the video cannot be opened", "leave its episodes out with --episodes"),
         damage=garbage_video),
    Case("lerobot-labels-unknown-episode", (),
         ("label(s) for episode(s) not in", ": 42 (line 2). Its episodes: 0:4"),
         inputs=labels('{"episode_index": 0, "reward": 5}', '{"episode_index": 42, "reward": 1}')),
    Case("lerobot-labels-out-of-range", (), ("1 invalid label(s)", "line 1, field 'reward': 7 is outside 1..5"),
         inputs=labels('{"episode_index": 0, "reward": 7}')),
    Case("lerobot-labels-duplicate", (),
         ("line 2, field 'episode_index': episode 0 is already labelled on line 1; keep one label per episode",),
         inputs=labels('{"episode_index": 0, "reward": 5}', '{"episode_index": 0, "reward": 2}')),
    Case("lerobot-labels-missing-for-selection", ("--episodes", "0:3"), ("no label for selected episode(s) 1:3",),
         inputs=labels('{"episode_index": 0, "reward": 5}')),
    Case("lerobot-episodes-unknown", ("--episodes", "0,9", *SUCCESS),
         ("--episodes: episode 9 is not in", "(its episodes: 0:4)")),
    Case("lerobot-no-labels", (),
         ("give the labels: --labels FILE (episode_index, reward 1..5[, task]) or --labels-from next.success",)),
    Case("lerobot-not-a-dataset", SUCCESS, ("meta/info.json: not found. A LeRobot dataset root holds meta/info.json",),
         damage=lambda d: shutil.rmtree(d / "meta")),
    Case("lerobot-out-holds-other-import", (),
         ("already holds a different import (", "labels or settings). Give another --out, or delete the folder"),
         inputs=earlier_import),
]


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bad-lerobot")
    return {"plain": write_v3(root / "plain", default_episodes(4), episodes_per_file=2),
            "cameras": write_v3(root / "cameras", [EpisodeSpec(5)], cameras=(CAMERA, WRIST), depth=(DEPTH,))}


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_lerobot_input(case: Case, datasets: dict[str, Path], tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    dataset = shutil.copytree(datasets[case.dataset], tmp_path / "dataset")
    if case.damage is not None:
        case.damage(dataset)
    extra = [*case.arguments, *(case.inputs(dataset, tmp_path) if case.inputs else [])]
    out = tmp_path / "out"
    before = sorted(p.relative_to(tmp_path) for p in out.rglob("*")) if out.exists() else None
    capsys.readouterr()
    status = cli.main(["import-lerobot", str(dataset), "--out", str(out), "--quiet", *extra])
    err = capsys.readouterr().err
    assert status == EXIT_USAGE, err
    assert err.startswith("roboreward import-lerobot: ") and "Traceback" not in err
    for fragment in case.expected:
        assert fragment in err, f"{case.id}: {fragment!r} not in {err!r}"
    after = sorted(p.relative_to(tmp_path) for p in out.rglob("*")) if out.exists() else None
    assert after == before  # not created, or left as it was
    assert not list(tmp_path.glob("out.partial-*"))


def test_every_case_is_in_the_doc() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "bad_inputs.md").read_text(encoding="utf-8")
    section = doc.split("## LeRobot imports", 1)[1].split("\n## ", 1)[0]
    assert [line.split("`")[1] for line in section.splitlines() if line.startswith("| `")] == [c.id for c in CASES]
