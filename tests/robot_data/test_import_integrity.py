"""``roboreward import-lerobot`` against hostile datasets, labels and folders (issue 27, third integrity sweep).

Each refused case is one row of docs/bad_inputs.md, section "Your own robot data and exports (issue 27)": the
command runs as a user runs it (in process), exits 2 with one message naming the file, episode or field (no
traceback), writes nothing (``--out`` as it was, no ``.partial-`` folder) and leaves the source dataset byte for
byte. The other tests check what is accepted: an episode without a task when a labels file gives it, a hub dataset
imported twice (its cache files are links into ``blobs/``), a killed import's leftover, Ctrl-C.
"""

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from helm_roboreward import cli
from helm_roboreward.robot_data.hub_source import fetch_hub_dataset
from helm_roboreward.robot_data.importing import ImportRequest, import_lerobot
from helm_roboreward.robot_data.lerobot_format import LeRobotFormatError
from tests.helpers.fakes.hf_hub import FakeHfHub, FakeRepo, make_commit_sha
from tests.helpers.harness import helm_environment, reap
from tests.helpers.lerobot_datasets import (
    CAMERA,
    EpisodeSpec,
    ImportCase,
    default_episodes,
    edit_info,
    labels_file,
    set_v3_episode_values,
    write_v2,
    write_v3,
)

EXIT_USAGE = 2
SUCCESS = ("--labels-from", "next.success")
SECTION = "## Your own robot data and exports (issue 27)"


@dataclass(frozen=True)
class Case(ImportCase):
    dataset: str = "v3"


labels = labels_file


def out_link(target: str | None) -> Callable[[Path, Path], list[str]]:
    """``--out`` is a link: to an empty folder, or (None) to nothing."""
    def plant(dataset: Path, folder: Path) -> list[str]:
        destination = folder / "elsewhere"
        if target is not None:
            destination.mkdir()
        (folder / "out").symlink_to(destination)
        return []

    return plant


def video_link_out(dataset: Path) -> None:
    """Episodes 2 and 3's shared mp4 replaced by a link to a copy outside the dataset."""
    video = dataset / "videos" / CAMERA / "chunk-000" / "file-001.mp4"
    outside = dataset.parent / "outside.mp4"
    shutil.move(video, outside)
    video.symlink_to(outside)


SPAN = f"videos/{CAMERA}/"
CASES = [
    Case("lerobot-episode-length-null", SUCCESS,
         ("meta/episodes/chunk-000/file-000.parquet, episode 2: field 'length': expected an integer, got None",
          "leave the episode out with --episodes"),
         damage=lambda d: set_v3_episode_values(d, 2, length=None)),
    Case("lerobot-episode-timestamp-nan", SUCCESS,
         ("file-000.parquet, episode 2: field 'to_timestamp': expected a finite number, got nan",),
         damage=lambda d: set_v3_episode_values(d, 2, **{SPAN + "to_timestamp": float("nan")})),
    Case("lerobot-episode-index-null", SUCCESS,
         ("file-000.parquet, row 3, field 'episode_index': expected an integer, got None",),
         damage=lambda d: set_v3_episode_values(d, 2, episode_index=None)),
    Case("lerobot-fps-tiny", SUCCESS,
         ("meta/info.json, field 'fps': expected a frame rate 0.01..1000 frames per second, got 1e-300",),
         damage=lambda d: edit_info(d, fps=1e-300)),
    Case("lerobot-chunks-size-text", SUCCESS,
         ("meta/info.json, field 'chunks_size': expected a positive integer (episodes per chunk folder, LeRobot "
          "writes 1000), got 'abc'",),
         damage=lambda d: edit_info(d, chunks_size="abc"), dataset="v2"),
    Case("lerobot-labels-superscript-digit", (), ("line 1, field 'reward': expected an integer 1..5, got '³'",),
         inputs=labels('{"episode_index": 0, "reward": "\\u00b3"}')),
    Case("lerobot-labels-double-minus", (), ("line 1, field 'episode_index': expected an integer, got '--1'",),
         inputs=labels('{"episode_index": "--1", "reward": 3}')),
    Case("lerobot-crf-negative", ("--crf", "-5", *SUCCESS),
         ("--crf -5: x264's quality runs from 0 (lossless) to 51 (worst)",)),
    Case("lerobot-crf-too-high", ("--crf", "99", *SUCCESS),
         ("--crf 99: x264's quality runs from 0 (lossless) to 51 (worst)",)),
    Case("lerobot-task-missing", SUCCESS,
         ("file-000.parquet, episode 2, field 'tasks': the episode metadata gives no task; give its task in a labels "
          "file (column 'task'), or leave the episode out with --episodes",),
         damage=lambda d: set_v3_episode_values(d, 2, tasks=None)),
    Case("lerobot-task-zero-width", SUCCESS,
         ("episode 2, field 'tasks': has no visible characters ('\\u200b\\u2060': only whitespace or zero-width "
          "characters such as U+200B or U+FEFF); write the robot's task instruction",),
         damage=lambda d: set_v3_episode_values(d, 2, tasks=["\u200b\u2060"])),
    Case("lerobot-out-link-to-folder", SUCCESS,
         ("is a link (to ", "elsewhere); the copy is renamed into place, so give the real path of the folder"),
         inputs=out_link("folder")),
    Case("lerobot-out-dangling-link", SUCCESS, ("is a link (to ", "elsewhere, which does not exist)"),
         inputs=out_link(None)),
    Case("lerobot-out-inside-source", SUCCESS,
         ("lies inside the source dataset", "the source is never written to: give a folder outside it"),
         inputs=lambda dataset, folder: ["--out", str(dataset / "copy")]),
    Case("lerobot-video-path-absolute", SUCCESS,
         ("meta/info.json, field 'video_path': the video path '/elsewhere/observation.images.front/file-000.mp4' is "
          "absolute; LeRobot's path templates name files under the dataset root",),
         damage=lambda d: edit_info(d, video_path="/elsewhere/{video_key}/file-{file_index:03d}.mp4")),
    Case("lerobot-video-link-leads-out", SUCCESS,
         ("file-001.mp4: a link to ", "outside.mp4, outside the dataset folder ",
          "replace the link with the file itself"), damage=video_link_out),
    Case("lerobot-episodes-same-span", SUCCESS,
         (f"episode 0: episodes 0 and 1 have the same span of {SPAN}chunk-000/file-000.mp4 (0..0.8 s and 0..0.8 s); "
          "an episode's frames belong to it alone", "leave one of them out with --episodes"),
         damage=lambda d: set_v3_episode_values(d, 1, length=8, **{SPAN + "from_timestamp": 0.0,
                                                                   SPAN + "to_timestamp": 0.8})),
    Case("lerobot-episodes-overlap", SUCCESS,
         (f"episodes 0 and 1 have overlapping spans of {SPAN}chunk-000/file-000.mp4 (0..0.8 s and 0.5..1.7 s)",),
         damage=lambda d: set_v3_episode_values(d, 1, length=12, **{SPAN + "from_timestamp": 0.5})),
]


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("integrity")
    return {"v3": write_v3(root / "v3", default_episodes(4), episodes_per_file=2),
            "v2": write_v2(root / "v2", default_episodes(2))}


def digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_refused(case: Case, datasets: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = shutil.copytree(datasets[case.dataset], tmp_path / "dataset")
    if case.damage is not None:
        case.damage(dataset)
    source = digests(dataset)
    extra = [*case.arguments, *(case.inputs(dataset, tmp_path) if case.inputs else [])]
    out = tmp_path / "out"
    before = sorted(os.listdir(tmp_path))
    capsys.readouterr()
    status = cli.main(["import-lerobot", str(dataset), "--out", str(out), "--quiet", *extra])
    err = capsys.readouterr().err
    assert status == EXIT_USAGE, err
    assert err.startswith("roboreward import-lerobot: ") and "Traceback" not in err
    for fragment in case.expected:
        assert fragment in err, f"{case.id}: {fragment!r} not in {err!r}"
    assert sorted(os.listdir(tmp_path)) == before  # nothing created beside --out, no .partial- folder
    assert digests(dataset) == source  # the source untouched (and nothing written inside it)
    if os.path.islink(out) and os.path.isdir(out):
        assert not os.listdir(out)


def test_every_case_has_its_row_in_the_doc() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "bad_inputs.md").read_text(encoding="utf-8")
    section = doc.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| lerobot-")]
    assert rows == [case.id for case in CASES]


def request(root: Path, out: Path, **options: object) -> ImportRequest:
    return ImportRequest(root=str(root), out=str(out), source={"kind": "local", "path": str(root)},
                         **options)  # type: ignore[arg-type]


def test_an_episode_without_a_task_imports_when_labels_give_it_or_it_is_left_out(datasets: dict[str, Path],
                                                                                  tmp_path: Path) -> None:
    dataset = shutil.copytree(datasets["v3"], tmp_path / "dataset")
    set_v3_episode_values(dataset, 2, tasks=None)
    path = tmp_path / "labels.jsonl"
    path.write_text('{"episode_index": 2, "reward": 4, "task": "wipe the table"}\n{"episode_index": 3, "reward": 1}\n',
                    encoding="utf-8")
    result = import_lerobot(request(dataset, tmp_path / "a", labels_file=str(path)), progress=False)
    assert [(row.episode_index, row.task) for row in result.rows] == [(2, "wipe the table"),
                                                                  (3, "put the red cube in the bowl")]
    result = import_lerobot(request(dataset, tmp_path / "b", labels_from="next.success", episodes="0,1,3"),
                            progress=False)
    assert [row.episode_index for row in result.rows] == [0, 1, 3]


def test_a_killed_imports_partial_folder_is_removed_by_the_next(datasets: dict[str, Path], tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    abandoned = tmp_path / f"copy.partial-{int(dead.stdout)}"
    (abandoned / "test").mkdir(parents=True)  # what a SIGKILL during encoding leaves
    live = tmp_path / f"copy.partial-{os.getppid()}"  # a running process's (another import into the same --out)
    live.mkdir()
    import_lerobot(request(datasets["v3"], tmp_path / "copy", labels_from="next.success"), progress=False)
    assert not abandoned.exists() and live.exists()


def hub_cache_environment(hub: FakeHfHub, cache: Path) -> dict[str, str]:
    return {**helm_environment(), "HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "0"}


def test_a_hub_dataset_imports_again_from_its_cache(tmp_path: Path) -> None:
    content = write_v3(tmp_path / "content", default_episodes(3), episodes_per_file=2)
    commit = make_commit_sha("twice")
    with FakeHfHub([FakeRepo("lab/twice", commits={commit: content}, refs={"main": commit})]) as hub:
        def imported(out: Path) -> ImportRequest:
            dataset = fetch_hub_dataset("lab/twice", "main", endpoint=hub.url, cache_dir=str(tmp_path / "cache"))
            made = ImportRequest(root=dataset.root, out=str(out), source=dataset.source, labels_from="next.success")
            import_lerobot(made, dataset.ensure, progress=False)
            return made

        first = imported(tmp_path / "first")
        # the cache's files are links into ../../blobs: checked where they sit, followed inside the repository
        video = Path(first.root) / "videos" / CAMERA / "chunk-000" / "file-000.mp4"
        assert video.is_symlink() and "blobs" in os.readlink(video)
        assert import_lerobot(first, progress=False).reused  # the identical rerun
        imported(tmp_path / "second")  # a new --out
    assert (tmp_path / "second" / "test" / "twice" / "episode_000002.mp4").is_file()


def test_a_hub_cache_link_out_of_its_repository_is_refused(tmp_path: Path) -> None:
    content = write_v3(tmp_path / "content", default_episodes(2), episodes_per_file=2)
    commit = make_commit_sha("planted")
    with FakeHfHub([FakeRepo("lab/planted", commits={commit: content}, refs={"main": commit})]) as hub:
        dataset = fetch_hub_dataset("lab/planted", "main", endpoint=hub.url, cache_dir=str(tmp_path / "cache"))
        planted = Path(dataset.root) / "videos" / CAMERA / "chunk-000" / "file-000.mp4"
        planted.parent.mkdir(parents=True)
        outside = tmp_path / "secret.mp4"
        shutil.copyfile(content / "videos" / CAMERA / "chunk-000" / "file-000.mp4", outside)
        planted.symlink_to(outside)  # a link no huggingface_hub would write: out of the repository's cache
        made = ImportRequest(root=dataset.root, out=str(tmp_path / "copy"), source=dataset.source,
                             labels_from="next.success")
        with pytest.raises(LeRobotFormatError, match=r"file-000.mp4: a link to .*secret.mp4, outside the dataset "
                                                     r"folder .*datasets--lab--planted"):
            import_lerobot(made, dataset.ensure, progress=False)
    assert not (tmp_path / "copy").exists()


def test_ctrl_c_says_nothing_was_written(tmp_path: Path) -> None:
    dataset = write_v3(tmp_path / "ds", [EpisodeSpec(60) for _ in range(12)], episodes_per_file=4, codec="libx264",
                       width=320, height=240)
    out = tmp_path / "copy"
    process = subprocess.Popen([sys.executable, "-m", "helm_roboreward.cli", "import-lerobot", str(dataset), "--out",
                                str(out), "--quiet", "--labels-from", "next.success"], env=helm_environment(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob("copy.partial-*")) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
    finally:
        reap([process])
    if process.returncode == 0:
        pytest.skip("the import finished before Ctrl-C reached it")
    assert process.returncode == 130, err
    assert err.strip().endswith("roboreward import-lerobot: interrupted; nothing was written (the partly built copy "
                                "was removed), rerun to import")
    assert "stay cached" not in err and not out.exists() and not list(tmp_path.glob("copy.partial-*"))


def test_each_command_says_what_ctrl_c_keeps() -> None:
    parser = cli.build_parser()
    said = {command: parser.parse_args([command, *arguments]).interrupted for command, arguments in (
        ("import-lerobot", ["src", "--out", "o"]), ("label", ["src", "--out", "o", "--model", "m"]),
        ("export-predictions", ["--suite", "s"]))}
    assert "nothing was written" in said["import-lerobot"]
    assert "requests not yet answered were abandoned" in said["label"] and "HELM's request cache" in said["label"]
    assert "written whole or not at all" in said["export-predictions"]
    assert not any("stay cached" in text for text in said.values())
