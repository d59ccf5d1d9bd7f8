"""Integrity of the media cache: what a model receives is exactly what the rules give for its video.

- Frame entries are used only after their manifest agrees with the selection rule for that video and those
  options, every file matches its recorded digest, and the entry is a real folder of the cache: a shortened
  manifest, a frame corrupted in place (same size) and a folder replaced by a link to another video's frames
  are rebuilt, and the report says why.
- Native mp4s are new files (never links to the dataset), validated like frames mode, and free of
  container/stream tags that could carry a file name or a gold score; clean files are copied byte for byte.
- Workers stop when their parent dies (SIGKILL) and are stopped, with the queued videos cancelled, on
  SIGTERM.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import av
import pytest

from helm_roboreward.protocol.frame_cache import MANIFEST_FILE, extract_frames, frames_directory, frames_key
from helm_roboreward.protocol.media_preparation import FRAMES_FOLDER, failures_by_row, prepare_media, rebuilt_summary
from helm_roboreward.protocol.native_videos import (
    native_mp4_path,
    remux_without_metadata,
    store_video,
    unsafe_metadata,
)
from helm_roboreward.protocol.rows import load_rollouts
from helm_roboreward.protocol.rules import FrameOptions, select_frame_indices
from helm_roboreward.protocol.safe_files import file_digest
from helm_roboreward.protocol.video_decoding import PreparedMedia, probe_video
from tests.helpers.harness import PROD_ENV, SAMPLE, TIMEOUT, cli, reap
from tests.helpers.sample import distinct_videos
from tests.helpers.videos import decode_all, make_tagged_copy, make_text_file

OFFICIAL = FrameOptions()
LAST = FrameOptions(include_last_frame=True)


def sample_video(index: int = 0) -> Path:
    """The index-th distinct video of ``sim_panda`` (relabels are byte-identical duplicates: skipped)."""
    return SAMPLE / list(distinct_videos("sim_panda").values())[index]


def entry_of(video: Path, cache: Path, options: FrameOptions = OFFICIAL) -> Path:
    return Path(frames_directory(str(cache), frames_key(file_digest(str(video)), options)))


def entry(media: PreparedMedia) -> str:
    """The cache entry folder holding the frames."""
    return os.path.dirname(media.paths[0])


def local_copy(root: Path, rows: list[dict[str, Any]], files: dict[str, Path]) -> Path:
    """A data folder in the dataset layout: ``rows`` in metadata.jsonl, ``files`` placed at their names."""
    for name, source in files.items():
        target = root / "test" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    (root / "test" / "metadata.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return root


def rollouts_of(data: Path) -> Any:
    return load_rollouts(str(data), None, f"data={data}")


# --------------------------------------------------------------------------------------------- frame entries


def test_a_manifest_listing_fewer_frames_is_rebuilt(tmp_path: Path) -> None:
    video = sample_video()
    first = extract_frames(str(video), str(tmp_path), OFFICIAL)
    assert len(first.paths) >= 4
    manifest_path = Path(entry(first)) / MANIFEST_FILE
    manifest = json.loads(manifest_path.read_text())
    for key in ("files", "frame_indices", "sizes", "sha256"):
        manifest[key] = manifest[key][:2]
    manifest_path.write_text(json.dumps(manifest))
    again = extract_frames(str(video), str(tmp_path), OFFICIAL)
    assert not again.cached and "selection rule" in str(again.rebuilt_because)
    assert again.frame_indices == first.frame_indices


def test_a_forged_frame_count_is_caught_against_the_video(tmp_path: Path) -> None:
    """Shorten the lists AND the recorded frame count consistently: the video itself disagrees."""
    video = sample_video()
    first = extract_frames(str(video), str(tmp_path), OFFICIAL)
    manifest_path = Path(entry(first)) / MANIFEST_FILE
    manifest = json.loads(manifest_path.read_text())
    fake_count = 11
    keep = len(select_frame_indices(fake_count, manifest["native_fps"], OFFICIAL))
    for key in ("files", "frame_indices", "sizes", "sha256"):
        manifest[key] = manifest[key][:keep]
    manifest["num_frames"] = manifest["probed_frames"] = fake_count
    manifest_path.write_text(json.dumps(manifest))
    again = extract_frames(str(video), str(tmp_path), OFFICIAL)
    assert not again.cached and "the video has" in str(again.rebuilt_because)
    assert again.frame_indices == first.frame_indices


def test_a_frame_corrupted_in_place_is_rebuilt(tmp_path: Path) -> None:
    video = sample_video()
    first = extract_frames(str(video), str(tmp_path), OFFICIAL)
    victim = Path(first.paths[1])
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))  # the same size, other bytes
    again = extract_frames(str(video), str(tmp_path), OFFICIAL)
    assert not again.cached and "digest" in str(again.rebuilt_because) and victim.name in str(again.rebuilt_because)
    assert file_digest(str(victim)) == json.loads((Path(entry(first)) / MANIFEST_FILE).read_text())["sha256"][1]


def test_a_corruption_that_keeps_size_and_times_is_found_by_a_full_check(tmp_path: Path) -> None:
    """Even with the modification time put back, the change time moved: the stamp no longer matches."""
    video = sample_video()
    first = extract_frames(str(video), str(tmp_path), OFFICIAL)
    victim = Path(first.paths[0])
    info = victim.stat()
    data = bytearray(victim.read_bytes())
    data[-10] ^= 0x01
    victim.write_bytes(bytes(data))
    os.utime(victim, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert not extract_frames(str(video), str(tmp_path), OFFICIAL).cached


def test_a_folder_linked_to_another_videos_frames_is_rebuilt(tmp_path: Path) -> None:
    video, other = sample_video(0), sample_video(1)
    mine = extract_frames(str(video), str(tmp_path), OFFICIAL)
    theirs = extract_frames(str(other), str(tmp_path), OFFICIAL)
    theirs_before = {p.name: p.read_bytes() for p in Path(entry(theirs)).iterdir()}
    shutil.rmtree(entry(mine))
    os.symlink(entry(theirs), entry(mine))
    again = extract_frames(str(video), str(tmp_path), OFFICIAL)
    assert not again.cached and "lies in a link" in str(again.rebuilt_because)
    assert not os.path.islink(entry(again)) and again.frame_indices == mine.frame_indices
    assert {p.name: p.read_bytes() for p in Path(entry(theirs)).iterdir()} == theirs_before


def test_a_copied_manifest_of_another_video_is_rebuilt(tmp_path: Path) -> None:
    video, other = sample_video(0), sample_video(1)
    mine = extract_frames(str(video), str(tmp_path), OFFICIAL)
    theirs = extract_frames(str(other), str(tmp_path), OFFICIAL)
    shutil.rmtree(entry(mine))
    shutil.copytree(entry(theirs), entry(mine))
    again = extract_frames(str(video), str(tmp_path), OFFICIAL)
    assert not again.cached and "another video" in str(again.rebuilt_because)


def test_an_entry_of_the_previous_format_is_rebuilt(tmp_path: Path) -> None:
    video = sample_video()
    first = extract_frames(str(video), str(tmp_path), OFFICIAL)
    manifest_path = Path(entry(first)) / MANIFEST_FILE
    manifest = json.loads(manifest_path.read_text())
    for key in ("sha256", "video_sha256", "probed_frames"):
        del manifest[key]
    manifest_path.write_text(json.dumps(manifest))
    again = extract_frames(str(video), str(tmp_path), OFFICIAL)
    assert not again.cached and "older version" in str(again.rebuilt_because)


def test_an_intact_entry_stays_a_hit_with_fast_and_full_checks(tmp_path: Path) -> None:
    video = sample_video()
    extract_frames(str(video), str(tmp_path), OFFICIAL)
    assert extract_frames(str(video), str(tmp_path), OFFICIAL).cached
    assert extract_frames(str(video), str(tmp_path), OFFICIAL, full_check=True).cached


def test_prepare_reports_the_rebuilt_entries(tmp_path: Path) -> None:
    data = local_copy(tmp_path / "data",
                      [{"file_name": "sim_panda/a.mp4", "task": "pick", "reward": 5},
                       {"file_name": "sim_panda/b.mp4", "task": "pick", "reward": 5}],
                      {"sim_panda/a.mp4": sample_video(0), "sim_panda/b.mp4": sample_video(1)})
    rollouts = rollouts_of(data)
    media = tmp_path / "media"
    prepare_media(rollouts, str(media), False, OFFICIAL, progress=False)
    entry = entry_of(data / "test" / "sim_panda" / "a.mp4", media / FRAMES_FOLDER)
    frame = sorted(entry.glob("*.jpg"))[0]
    frame.write_bytes(bytes(len(frame.read_bytes())))  # zeros, same size
    report = prepare_media(rollouts, str(media), False, OFFICIAL, progress=False)
    assert report.cache_hits == 1 and len(report.rebuilt) == 1
    (line, detail) = rebuilt_summary(report)
    assert "1 cache entry was not trusted and rebuilt" in line and frame.name in detail
    assert file_digest(str(frame)) == json.loads((entry / MANIFEST_FILE).read_text())["sha256"][0]


# --------------------------------------------------------------------------------------------- native mp4s


def test_a_native_mp4_never_shares_the_datasets_file(tmp_path: Path) -> None:
    source = tmp_path / "data.mp4"
    shutil.copyfile(sample_video(), source)
    before = source.read_bytes()
    mp4 = store_video(str(source), file_digest(str(source)), str(tmp_path / "media"))
    target = Path(mp4.path)
    assert os.stat(target).st_ino != os.stat(source).st_ino and os.stat(source).st_nlink == 1
    assert target.read_bytes() == before
    with open(target, "r+b") as handle:  # what truncated the user's file through a hard link
        handle.truncate(100)
    assert source.read_bytes() == before
    again = store_video(str(source), file_digest(str(source)), str(tmp_path / "media"))
    assert not again.cached and "record" in str(again.rebuilt_because)
    assert Path(again.path).read_bytes() == before


def test_a_hard_linked_native_mp4_of_an_older_version_is_replaced(tmp_path: Path) -> None:
    source = tmp_path / "data.mp4"
    shutil.copyfile(sample_video(), source)
    digest = file_digest(str(source))
    target = Path(native_mp4_path(str(tmp_path / "media"), digest))
    target.parent.mkdir(parents=True)
    os.link(source, target)  # what version 1 left
    mp4 = store_video(str(source), digest, str(tmp_path / "media"))
    assert not mp4.cached and "hard link" in str(mp4.rebuilt_because)
    assert os.stat(mp4.path).st_ino != os.stat(source).st_ino and os.stat(source).st_nlink == 1


def test_native_mode_rejects_what_frames_mode_rejects(tmp_path: Path) -> None:
    data = local_copy(tmp_path / "data",
                      [{"file_name": "sim_panda/good.mp4", "task": "pick", "reward": 5},
                       {"file_name": "sim_panda/notes.mp4", "task": "pick", "reward": 2}],
                      {"sim_panda/good.mp4": sample_video(0),
                       "sim_panda/notes.mp4": make_text_file(tmp_path / "notes.mp4")})
    rollouts = rollouts_of(data)
    messages = {}
    for native in (False, True):
        report = prepare_media(rollouts, str(tmp_path / f"media-{native}"), native, OFFICIAL, progress=False)
        assert len(report.media) == 1 and len(report.failures) == 1
        (line,) = failures_by_row(rollouts, report)
        messages[native] = line
    assert "cannot be read as a video" in messages[True] and "Re-download the subset 'sim_panda'" in messages[True]
    assert messages[True].split("(")[0] == messages[False].split("(")[0]


def test_gold_scores_in_container_tags_never_reach_a_model(tmp_path: Path) -> None:
    name = "episode_000042_attempt_1_score_3"
    leaky = make_tagged_copy(sample_video(), tmp_path / f"{name}.mp4", title=name, comment="score_3",
                        description=f"sim_panda/{name}.mp4")
    found = unsafe_metadata(str(leaky))
    assert {"container tag 'title'", "container tag 'comment'", "container tag 'description'"} <= set(found)
    mp4 = store_video(str(leaky), file_digest(str(leaky)), str(tmp_path / "media"))
    assert mp4.stripped and unsafe_metadata(mp4.path) == []
    with av.open(mp4.path) as container:
        values = list(container.metadata.values()) + [v for s in container.streams for v in s.metadata.values()]
    assert not any("score" in str(value) or name in str(value) for value in values)
    assert name.encode() not in Path(mp4.path).read_bytes() and b"score_3" not in Path(mp4.path).read_bytes()
    # Stream copy, never a re-encode: every frame decodes to the same pixels.
    assert all((a == b).all() for a, b in zip(decode_all(mp4.path), decode_all(leaky), strict=True))


def test_an_unknown_box_is_removed(tmp_path: Path) -> None:
    leaky = tmp_path / "boxed.mp4"
    shutil.copyfile(sample_video(), leaky)
    secret = b"episode_000042_attempt_1_score_3"
    with open(leaky, "ab") as handle:
        handle.write(len(secret).to_bytes(4, "big") + b"uuid" + secret[: len(secret) - 8])
    assert "box uuid" in unsafe_metadata(str(leaky))
    mp4 = store_video(str(leaky), file_digest(str(leaky)), str(tmp_path / "media"))
    assert unsafe_metadata(mp4.path) == [] and secret[:16] not in Path(mp4.path).read_bytes()


def test_clean_files_reach_models_byte_for_byte(tmp_path: Path) -> None:
    videos = sorted(SAMPLE.rglob("*.mp4"))
    assert videos
    for index, video in enumerate(videos):
        assert unsafe_metadata(str(video)) == [], video
        if index % 9 == 0:
            mp4 = store_video(str(video), file_digest(str(video)), str(tmp_path / "media"))
            assert mp4.stripped == () and Path(mp4.path).read_bytes() == video.read_bytes()


def test_a_remuxed_file_is_clean_and_stays_clean(tmp_path: Path) -> None:
    leaky = make_tagged_copy(sample_video(), tmp_path / "t.mp4", title="x")
    remux_without_metadata(str(leaky), str(tmp_path / "once.mp4"))
    remux_without_metadata(str(tmp_path / "once.mp4"), str(tmp_path / "twice.mp4"))
    assert unsafe_metadata(str(tmp_path / "once.mp4")) == [] == unsafe_metadata(str(tmp_path / "twice.mp4"))
    assert probe_video(str(tmp_path / "once.mp4")).num_frames == probe_video(str(leaky)).num_frames


# --------------------------------------------------------------------------------------------- workers


def many_videos(root: Path, count: int) -> Path:
    """A local copy with ``count`` distinct videos (the sample's, remuxed with a numbered title: other bytes)."""
    sources = sorted((SAMPLE / "sim_panda").glob("*.mp4"))
    rows, files = [], {}
    staging = root.parent / f"{root.name}-staging"
    staging.mkdir(parents=True)
    for index in range(count):
        name = f"sim_panda/v{index:03d}.mp4"
        files[name] = make_tagged_copy(sources[index % len(sources)], staging / f"v{index:03d}.mp4",
                                       title=f"copy {index}")
        rows.append({"file_name": name, "task": "pick up the cube", "reward": 1 + index % 5})
    return local_copy(root, rows, files)


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def complete_entries(media: Path) -> int:
    return sum(1 for _ in media.rglob(MANIFEST_FILE))


def prepare_command(data: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "helm_roboreward.cli", "prepare", "--data", str(data), "--output-path", str(out),
            "--jobs", "2", "--fps", "1000", "--quiet"]  # every frame: enough work per video


def helm_run_command_for(data: Path, out: Path) -> list[str]:
    entry = f"roboreward:subset=all,data={data},fps=1000,model=baseline/constant-3"  # 2 workers: ROBOREWARD_JOBS
    return [cli("helm-run"), "--run-entries", entry, "--suite", "killed", "-m", "1000", "--local-path",
            str(PROD_ENV), "--output-path", str(out)]


def start_prepare(command: list[str], out: Path) -> tuple["subprocess.Popen[str]", list[int]]:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=out.parent,
                               env={**os.environ, "HF_HUB_OFFLINE": "1", "ROBOREWARD_JOBS": "2"})
    media = out / "scenarios" / "roboreward"
    deadline = time.monotonic() + TIMEOUT
    try:
        while complete_entries(media) < 3:
            assert process.poll() is None, process.communicate()[0][-3000:]
            assert time.monotonic() < deadline, "prepare made no progress"
            time.sleep(0.02)
        workers = children(process.pid)
        assert len(workers) >= 2, workers  # the two workers (and the resource tracker)
    except BaseException:
        reap([process])
        raise
    return process, workers


def assert_workers_stop_and_nothing_more_is_written(workers: list[int], media: Path) -> None:
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in workers):
        assert time.monotonic() < deadline, f"workers still running: {[pid for pid in workers if alive(pid)]}"
        time.sleep(0.05)
    settled = complete_entries(media)
    time.sleep(1.5)
    assert complete_entries(media) == settled, "frames were still being extracted after the workers stopped"


@pytest.mark.slow
@pytest.mark.parametrize("command, how", [("prepare", "SIGKILL"), ("prepare", "SIGTERM"), ("helm-run", "SIGTERM")])
def test_workers_do_not_outlive_a_killed_parent(tmp_path: Path, command: str, how: str) -> None:
    data = many_videos(tmp_path / "data", 120)
    out = tmp_path / "out"
    make = prepare_command if command == "prepare" else helm_run_command_for
    process, workers = start_prepare(make(data, out), out)
    os.kill(process.pid, getattr(signal, how))  # the parent only, not its process group
    process.communicate(timeout=30)
    assert process.returncode == -getattr(signal, how), process.returncode
    media = out / "scenarios" / "roboreward"
    assert_workers_stop_and_nothing_more_is_written(workers, media)
    assert complete_entries(media) < 120, "the kill came too late to leave queued videos"
    rerun = subprocess.run(prepare_command(data, out), capture_output=True, text=True, timeout=TIMEOUT)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert complete_entries(media) == 120


# --------------------------------------------------------------------------------------------- storage


def test_cache_files_follow_the_umask(tmp_path: Path) -> None:
    """A shared cache is readable by its group: modes are what ``open`` gives under the umask (not 0600)."""
    for umask, expected in ((0o000, 0o666), (0o022, 0o644), (0o002, 0o664)):
        out = tmp_path / f"out-{umask:03o}"
        code = ("import os, sys; os.umask(int(sys.argv[1], 8)); from helm_roboreward import cli; "
                "sys.exit(cli.main(sys.argv[2:]))")
        for video in ("frames", "native"):
            done = subprocess.run([sys.executable, "-c", code, f"{umask:o}", "prepare", "--data", "sample", "--subset",
                                   "sim_kuka", "--video", video, "--output-path", str(out), "--quiet"],
                                  capture_output=True, text=True, timeout=TIMEOUT)
            assert done.returncode == 0, done.stdout + done.stderr
        files = [p for p in (out / "scenarios" / "roboreward").rglob("*") if p.is_file()]
        assert any(p.suffix == ".jpg" for p in files) and any(p.suffix == ".mp4" for p in files)
        modes = {oct(p.stat().st_mode & 0o777) for p in files}
        assert modes == {oct(expected)}, (umask, modes)


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Any:
    """A 400 KB tmpfs: a disk that fills up after a few videos' frames (needs root, as CI has)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(mount)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.strip()}); CI runs this as root")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


def test_a_full_disk_says_so_and_keeps_what_was_prepared(tiny_disk: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "helm_roboreward.cli", "prepare", "--data", "sample",
                           "--output-path", str(tiny_disk / "out"), "--jobs", "1", "--quiet"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 1, done.stdout + done.stderr
    failed = [line for line in done.stderr.splitlines() if "metadata line" in line]
    assert failed, done.stderr
    for line in failed:
        assert "the disk is full" in line and "No space left on device" in line, line
        assert "Free space on the disk holding the media folder" in line and "Re-download" not in line, line
    media = tiny_disk / "out" / "scenarios" / "roboreward"
    kept = complete_entries(media)
    assert kept > 0, "the videos prepared before the disk filled up must stay"
    assert not list(media.rglob("*.part")), "no temporary file may stay behind"


def test_prepare_prints_which_entries_it_rebuilt(tmp_path: Path) -> None:
    out = tmp_path / "out"
    command = [sys.executable, "-m", "helm_roboreward.cli", "prepare", "--data", "sample", "--subset", "sim_kuka",
               "--output-path", str(out), "--quiet"]
    assert subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT).returncode == 0
    frame = sorted((out / "scenarios" / "roboreward" / "frames").rglob("0000.jpg"))[0]
    frame.write_bytes(bytes(frame.stat().st_size))
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert "1 cache entry was not trusted and rebuilt:" in done.stdout and "0000.jpg" in done.stdout, done.stdout
    assert "workers started: 0" in subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT).stdout
