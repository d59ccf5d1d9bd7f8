"""``roboreward prepare``: summary, cache sharing with helm-run's scenario, bad inputs, concurrency."""

import json
import os
import shutil
import subprocess
import sys

from helm_roboreward import cli
from helm_roboreward.helm_frontend.scenario import RoboRewardScenario
from helm_roboreward.protocol import frame_cache as extraction
from helm_roboreward.protocol.data_sources import sample_root
from tests.helpers.harness import TIMEOUT, reap
from tests.helpers.sample import distinct_videos, rows_of, sample_rows
from tests.helpers.unwritable import unwritable


def copy_sample(target):
    shutil.copytree(os.path.join(sample_root(), "test"), target / "test")
    return target


def rows(root):
    with open(root / "test" / "metadata.jsonl") as handle:
        return [json.loads(line) for line in handle]


def test_prepare_summary_and_warm_rerun(tmp_path, capsys):
    out = tmp_path / "benchmark_output"
    assert cli.main(["prepare", "--data", "sample", "--output-path", str(out), "--jobs", "1", "--quiet"]) == 0
    first = capsys.readouterr().out
    num_rows, num_videos = len(sample_rows()), len(distinct_videos())
    assert num_videos < num_rows  # the relabels are byte-identical duplicates
    assert f" rows: {num_rows} " in first and f"distinct videos ready: {num_videos} " in first
    assert "cache hits: 0 " in first and "failed rows: 0\n" in first
    assert cli.main(["prepare", "--data", "sample", "--output-path", str(out), "--jobs", "2", "--quiet"]) == 0
    assert f"cache hits: {num_videos} " in capsys.readouterr().out


def test_helm_run_scenario_after_prepare_decodes_nothing(tmp_path, monkeypatch):
    out = tmp_path / "benchmark_output"
    assert cli.main(["prepare", "--data", "sample", "--subset", "sim_kuka", "--output-path", str(out),
                     "--last-frame", "--quiet"]) == 0

    def no_decoding(*args, **kwargs):
        raise AssertionError("decoded a video after prepare")

    monkeypatch.setattr(extraction, "probe_container", no_decoding)
    monkeypatch.setattr(extraction, "decode_container", no_decoding)
    monkeypatch.setattr(extraction.av, "open", no_decoding)  # every decode path opens the video
    scenario = RoboRewardScenario(subset="sim_kuka", data="sample", video="frames", include_last_frame=True)
    instances = scenario.get_instances(cli.scenario_media_dir(str(out)))
    assert len(instances) == len(rows_of("sim_kuka")) > 0
    assert all(instance.extra_data["num_frames"] > 0 for instance in instances)


def test_native_prepare_writes_content_addressed_native_mp4s(tmp_path, capsys):
    out = tmp_path / "o"
    assert cli.main(["prepare", "--data", "sample", "--video", "native", "--output-path", str(out), "--quiet"]) == 0
    videos = [name for _, _, names in os.walk(out / "scenarios" / "roboreward" / "videos") for name in names
              if name.endswith(".mp4")]
    assert len(videos) == len(distinct_videos()) > 0
    assert sorted(videos) == sorted(f"{digest[:32]}.mp4" for digest in distinct_videos())
    assert all(len(name) == len("0" * 32 + ".mp4") and "score" not in name for name in videos)


def test_bad_video_is_reported_and_the_others_are_cached(tmp_path, capsys):
    data = copy_sample(tmp_path / "data")
    broken = rows(data)[0]["file_name"]
    (data / "test" / broken).write_bytes(b"this is not a video")
    missing = rows(data)[1]["file_name"]
    os.unlink(data / "test" / missing)
    out = tmp_path / "out"
    status = cli.main(["prepare", "--data", str(data), "--output-path", str(out), "--quiet"])
    captured = capsys.readouterr()
    assert status == cli.EXIT_FAILURES
    assert "FAILED rows: 2" in captured.err
    assert broken in captured.err and "line 1" in captured.err
    assert missing in captured.err
    assert "cache hits: 0" in captured.out
    # Everything else was prepared: a rerun finds it all in the cache and still reports the failures.
    assert cli.main(["prepare", "--data", str(data), "--output-path", str(out), "--quiet"]) == cli.EXIT_FAILURES
    assert "failed rows: 2" in capsys.readouterr().out
    leftovers = [name for _, _, names in os.walk(out) for name in names if name.endswith(".part")]
    assert leftovers == []


def test_unwritable_output_folder(tmp_path, capsys):
    out = tmp_path / "readonly"
    out.mkdir()
    with unwritable([out]):
        status = cli.main(["prepare", "--data", "sample", "--output-path", str(out), "--quiet"])
    assert status == cli.EXIT_USAGE
    assert "cannot write" in capsys.readouterr().err


def test_unwritable_output_path_is_a_file(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    status = cli.main(["prepare", "--data", "sample", "--output-path", str(blocker), "--quiet"])
    assert status == cli.EXIT_USAGE
    assert "roboreward prepare:" in capsys.readouterr().err


def test_bad_options_exit_without_traceback(tmp_path):
    for args, expected in [
        (["--data", "nope"], "not 'hf', 'sample' or an existing folder"),
        (["--data", "sample", "--subset", "bridge"], "Available subsets"),
        (["--data", "sample", "--fps", "0"], "fps must be a positive number"),
        (["--data", "sample", "--max-frames", "-3"], "max_frames"),
    ]:
        result = subprocess.run([sys.executable, "-m", "helm_roboreward.cli", "prepare", *args, "--output-path",
                                 str(tmp_path / "o"), "--quiet"], capture_output=True, text=True)
        assert result.returncode == cli.EXIT_USAGE, (args, result.stderr)
        assert expected in result.stderr
        assert "Traceback" not in result.stderr


def test_two_processes_preparing_at_once_agree(tmp_path):
    out = tmp_path / "shared"
    command = [sys.executable, "-m", "helm_roboreward.cli", "prepare", "--data", "sample", "--output-path",
               str(out), "--jobs", "1", "--quiet"]
    processes = []
    try:
        processes.extend([subprocess.Popen(command), subprocess.Popen(command)])
        assert [process.wait(timeout=TIMEOUT) for process in processes] == [0, 0]
    finally:  # both waited for (killed on a timeout), whichever failed
        reap(processes)
    frames_dir = out / "scenarios" / "roboreward" / "frames"
    manifests = [os.path.join(d, f) for d, _, names in os.walk(frames_dir) for f in names if f == "frames.json"]
    assert len(manifests) == len(distinct_videos()) > 0
    for manifest in manifests:
        with open(manifest) as handle:
            content = json.load(handle)
        for name, size in zip(content["files"], content["sizes"], strict=True):
            assert os.path.getsize(os.path.join(os.path.dirname(manifest), name)) == size
    leftovers = [name for _, _, names in os.walk(out) for name in names if name.endswith(".part")]
    assert leftovers == []


def test_full_disk_on_one_video_names_it_and_leaves_no_partial_files(tmp_path, capsys, monkeypatch):
    import errno

    real_write = extraction.write_atomically
    state = {"calls": 0}

    def flaky_write(path, data):
        state["calls"] += 1
        if state["calls"] == 3:  # the third frame written: a video in the middle of its frames
            real_write(path + ".half", data[: len(data) // 2])  # what a naive writer would leave behind
            os.unlink(path + ".half")
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(path, data)

    monkeypatch.setattr(extraction, "write_atomically", flaky_write)
    out = tmp_path / "out"
    status = cli.main(["prepare", "--data", "sample", "--output-path", str(out), "--jobs", "1", "--quiet"])
    captured = capsys.readouterr()
    assert status == cli.EXIT_FAILURES
    assert "No space left on device" in captured.err and "FAILED rows" in captured.err
    ready = len(distinct_videos()) - 1  # every distinct video but the one that hit the full disk
    assert f"distinct videos ready: {ready} " in captured.out
    frames_dir = out / "scenarios" / "roboreward" / "frames"
    manifests = [d for d, _, names in os.walk(frames_dir) if "frames.json" in names]
    assert len(manifests) == ready
    monkeypatch.setattr(extraction, "write_atomically", real_write)
    assert cli.main(["prepare", "--data", "sample", "--output-path", str(out), "--quiet"]) == 0
    assert f"cache hits: {ready} " in capsys.readouterr().out
