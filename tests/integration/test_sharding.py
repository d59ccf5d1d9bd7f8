"""One leaderboard split across machines, without Slurm: the same leaderboard as one machine.

``run_specs/roboreward_sample.conf``'s six entries split into two shards of three (``sim_panda`` has entries in
both, so both shards prepare the same frames), each run by its own ``helm-run`` process with its own
``--local-path`` (its own request cache, as on another machine):

- (a) shared storage: both processes at once into one ``-o benchmark_output`` and one suite, then one
  helm-summarize;
- (b) separate folders: each shard into its own ``benchmark_output`` (the first one also summarized, as a
  shard owner might), merged by ``scripts/merge_shards.py`` (run folders of ``runs/<suite>/`` and
  ``scenarios/roboreward/``) into a third folder, summarized there.

Both give the ``groups/`` JSON of one machine running the whole conf (file for file, value for value: they hold no
timestamps; ``summary.json``'s ``date`` aside, the suite files agree too), and every predictions page (the
media paths recorded relative to the folder helm-run ran in resolve after the merge). The merge refuses shards
that hold the same run with different stats or the same media name with different bytes, and says which runs'
media do not resolve from where summarize will run.
"""

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.harness import (
    REPO,
    SAMPLE_CONF,
    TIMEOUT,
    check_completed,
    cli,
    finish_logged,
    helm_environment,
    helm_summarize_command,
    private_local_path,
    read_json,
    reap,
    start_logged,
)

pytestmark = pytest.mark.slow

MERGE = REPO / "scripts" / "merge_shards.py"
SUITE = "sample"
MISSING_MEDIA_WARNING = "RoboReward: media file"


def sample_entries() -> list[str]:
    return re.findall(r'description:\s*"([^"]+)"', SAMPLE_CONF.read_text(encoding="utf-8"))


def write_conf(path: Path, entries: list[str]) -> Path:
    lines = "\n".join(f'  {{description: "{entry}", priority: 1}}' for entry in entries)
    path.write_text(f"entries: [\n{lines}\n]\n", encoding="utf-8")
    return path


def helm_run(conf: Path, local: Path) -> list[str]:
    return [cli("helm-run"), "--conf-paths", str(conf), "--suite", SUITE, "-m", "100", "--local-path", str(local),
            "-o", "benchmark_output"]


@dataclass
class Shards:
    root: Path
    single: Path
    """One machine, the whole conf: its working folder (benchmark_output/ inside)."""
    shared: Path
    """(a): both shards into this folder's benchmark_output at once."""
    shard_dirs: tuple[Path, Path]
    """(b): each shard's own working folder."""
    merged: Path
    """(b): the merge's working folder."""
    merge_output: str
    summarize_logs: dict[str, str]

    @staticmethod
    def runs(workdir: Path) -> Path:
        return workdir / "benchmark_output" / "runs" / SUITE


def run_parallel(jobs: dict[str, tuple[list[str], Path]], logs: Path) -> dict[str, str]:
    """Start every command at once (its own log file), wait for all; their outputs, each checked."""
    env = helm_environment()
    processes: dict[str, subprocess.Popen[str]] = {}
    outputs = {}
    try:
        for name, (command, cwd) in jobs.items():
            processes[name] = start_logged(command, cwd, env, logs / f"{name}.log")
        for name, process in processes.items():
            code, output = finish_logged(process, logs / f"{name}.log", TIMEOUT)
            assert code == 0, f"{name} exited with {code}\n--- output (tail)\n{output[-6000:]}"
            outputs[name] = output
    finally:  # one failed: the others are ended and waited for too
        reap(processes.values())
    return outputs


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Shards:
    root = tmp_path_factory.mktemp("sharding")
    logs = root / "logs"
    logs.mkdir()
    entries = sample_entries()
    assert len(entries) == 6, entries
    confs = (write_conf(root / "shard-1.conf", entries[:3]), write_conf(root / "shard-2.conf", entries[3:]))
    single, shared, merged = root / "single", root / "shared", root / "merged"
    shard_dirs = (root / "shard-1", root / "shard-2")
    for folder in (single, shared, merged, *shard_dirs):
        folder.mkdir()

    # Every helm-run at once: one machine, (a)'s two processes on one folder, (b)'s two shards.
    run_parallel({
        "single": (helm_run(SAMPLE_CONF, private_local_path(single / "local")), single),
        "shared-1": (helm_run(confs[0], private_local_path(shared / "local-1")), shared),
        "shared-2": (helm_run(confs[1], private_local_path(shared / "local-2")), shared),
        "shard-1": (helm_run(confs[0], private_local_path(shard_dirs[0] / "local")), shard_dirs[0]),
        "shard-2": (helm_run(confs[1], private_local_path(shard_dirs[1] / "local")), shard_dirs[1]),
    }, logs)
    run_parallel({"summarize-shard-1": (helm_summarize_command(SUITE), shard_dirs[0])}, logs)
    merge = subprocess.run([sys.executable, str(MERGE), "--suite", SUITE, "--into", str(merged / "benchmark_output"),
                            *(str(d / "benchmark_output") for d in shard_dirs)],
                           capture_output=True, text=True, timeout=TIMEOUT)
    check_completed(merge, "merge_shards.py")
    summaries = run_parallel({name: (helm_summarize_command(SUITE), folder)
                              for name, folder in (("single", single), ("shared", shared), ("merged", merged))}, logs)
    return Shards(root=root, single=single, shared=shared, shard_dirs=shard_dirs, merged=merged,
                  merge_output=merge.stdout + merge.stderr, summarize_logs=summaries)


def group_files(workdir: Path) -> dict[str, Any]:
    groups = Shards.runs(workdir) / "groups"
    return {path.relative_to(groups).as_posix(): read_json(path) for path in sorted(groups.rglob("*.json"))}


def run_folders(workdir: Path) -> list[str]:
    return sorted(p.name for p in Shards.runs(workdir).iterdir() if (p / "run_spec.json").is_file())


@pytest.mark.parametrize("layout", ["shared", "merged"])
def test_same_leaderboard_as_one_machine(shards: Shards, layout: str) -> None:
    expected = group_files(shards.single)
    assert "roboreward_sample.json" in expected and len(expected) > 5, sorted(expected)
    got = group_files(getattr(shards, layout))
    assert sorted(got) == sorted(expected)
    for name in expected:
        assert got[name] == expected[name], f"{layout}: groups/{name} differs from one machine's"


@pytest.mark.parametrize("layout", ["shared", "merged"])
def test_same_runs_and_suite_files(shards: Shards, layout: str) -> None:
    workdir = getattr(shards, layout)
    assert run_folders(workdir) == run_folders(shards.single)
    assert len(run_folders(workdir)) == 6
    for name in ("runs.json", "run_specs.json", "groups.json", "costs.json"):
        assert read_json(Shards.runs(workdir) / name) == read_json(Shards.runs(shards.single) / name), name
    summary, single_summary = (read_json(Shards.runs(w) / "summary.json") for w in (workdir, shards.single))
    summary.pop("date")
    single_summary.pop("date")
    assert summary == single_summary


@pytest.mark.parametrize("layout", ["shared", "merged"])
def test_every_predictions_page_is_written(shards: Shards, layout: str) -> None:
    """The media paths survive: no page skipped for missing media, every run has its predictions."""
    assert MISSING_MEDIA_WARNING not in shards.summarize_logs[layout]
    for run in run_folders(getattr(shards, layout)):
        predictions = read_json(Shards.runs(getattr(shards, layout)) / run / "display_predictions.json")
        assert predictions, run


def test_merged_media_resolve_from_the_merged_folder(shards: Shards) -> None:
    locations = set()
    for run in run_folders(shards.merged):
        state = read_json(Shards.runs(shards.merged) / run / "scenario_state.json")
        for request_state in state["request_states"]:
            for media in request_state["request"]["multimodal_prompt"]["media_objects"]:
                if media.get("location"):
                    locations.add(media["location"])
    assert locations
    for location in locations:
        assert location.startswith("benchmark_output/scenarios/roboreward/"), location
        assert (shards.merged / location).is_file(), location
    assert "warning" not in shards.merge_output, shards.merge_output


def test_merge_copies_runs_not_shard_summaries(shards: Shards, tmp_path: Path) -> None:
    """Shard 1 was summarized: only its run folders travel (summarize the merged folder); no stamps travel."""
    assert "copied 6 run(s)" in shards.merge_output, shards.merge_output
    assert (Shards.runs(shards.shard_dirs[0]) / "groups").is_dir(), "shard 1 was summarized"
    into = tmp_path / "fresh" / "benchmark_output"
    check_completed(merge(into, *(d / "benchmark_output" for d in shards.shard_dirs)), "merge")
    assert sorted(p.name for p in (into / "runs" / SUITE).iterdir()) == run_folders(shards.single)
    media = into / "scenarios" / "roboreward"
    assert not list(media.rglob("*verified.json")), "verification stamps describe the shard's files, not copies"
    assert not list(media.rglob(".tmp-*")), "temporary files left behind"
    assert list(media.rglob("frames.json")) and list(media.glob("roboreward-data-*.json"))


def merge(into: Path, *sources: Path) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, str(MERGE), "--suite", SUITE, "--into", str(into),
                           *(str(source) for source in sources)], capture_output=True, text=True, timeout=TIMEOUT)


def test_merge_keeps_one_copy_of_identical_runs(shards: Shards, tmp_path: Path) -> None:
    shard = shards.shard_dirs[0] / "benchmark_output"
    again = tmp_path / "again" / "benchmark_output"
    shutil.copytree(shard, again)
    result = merge(tmp_path / "out" / "benchmark_output", shard, again)
    check_completed(result, "merge of a shard with its copy")
    assert "copied 3 run(s)" in result.stdout and "3 run(s) held twice" in result.stdout, result.stdout
    # Merging again into the same folder adds nothing (idempotent).
    result = merge(tmp_path / "out" / "benchmark_output", shard)
    check_completed(result, "second merge")
    assert "copied 0 run(s) and 0 media file(s)" in result.stdout, result.stdout


def test_merge_refuses_the_same_run_with_different_stats(shards: Shards, tmp_path: Path) -> None:
    shard = shards.shard_dirs[0] / "benchmark_output"
    changed = tmp_path / "changed" / "benchmark_output"
    shutil.copytree(shard, changed)
    run = run_folders(shards.shard_dirs[0])[0]
    stats_path = changed / "runs" / SUITE / run / "stats.json"
    stats = read_json(stats_path)
    stats[0]["mean"] = stats[0]["mean"] + 1
    stats_path.write_text(json.dumps(stats), encoding="utf-8")
    into = tmp_path / "out" / "benchmark_output"
    result = merge(into, shard, changed)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "refusing to merge" in result.stderr and run in result.stderr and "stats.json" in result.stderr
    assert not into.exists(), "nothing may be written when the merge is refused"


def test_merge_refuses_media_with_different_bytes(shards: Shards, tmp_path: Path) -> None:
    shard = shards.shard_dirs[1] / "benchmark_output"
    changed = tmp_path / "changed" / "benchmark_output"
    shutil.copytree(shard, changed)
    frame = sorted((changed / "scenarios" / "roboreward").rglob("*.jpg"))[0]
    frame.write_bytes(frame.read_bytes() + b"\0")
    into = tmp_path / "out" / "benchmark_output"
    result = merge(into, shards.shard_dirs[0] / "benchmark_output", changed, shard)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "refusing to merge" in result.stderr and frame.name in result.stderr, result.stderr
    assert not into.exists()


def test_merge_names_runs_whose_media_will_not_resolve(shards: Shards, tmp_path: Path) -> None:
    """A merged folder not named benchmark_output: the recorded paths (benchmark_output/...) miss it."""
    result = merge(tmp_path / "out" / "merged", *(d / "benchmark_output" for d in shards.shard_dirs))
    check_completed(result, "merge into a folder of another name")
    warned = [line for line in result.stderr.splitlines() if "warning: run " in line]
    assert len(warned) == 6, result.stderr
    assert "predictions pages will be skipped" in warned[0]


# --------------------------------------------------------------------------------------------- refusals, by hand

FRAME = "frames/ab/abcdef/0001.jpg"


def fake_shard(root: Path, runs: tuple[str, ...] = ("roboreward:subset=a,model=m",)) -> Path:
    """A shard's -o folder written by hand: completed runs (HELM's five files) and one cached frame."""
    output = root / "benchmark_output"
    media = output / "scenarios" / "roboreward"
    (media / FRAME).parent.mkdir(parents=True)
    (media / FRAME).write_bytes(b"\xff\xd8 a frame")
    (media / FRAME).with_name("frames.json").write_text("{}", encoding="utf-8")
    state = {"request_states": [{"request": {"multimodal_prompt": {"media_objects": [
        {"location": f"benchmark_output/scenarios/roboreward/{FRAME}", "content_type": "image/jpeg"}]}}}]}
    for name in runs:
        folder = output / "runs" / SUITE / name
        folder.mkdir(parents=True)
        for file in ("run_spec.json", "scenario.json", "stats.json", "per_instance_stats.json"):
            (folder / file).write_text(json.dumps({"name": name} if file == "run_spec.json" else []), encoding="utf-8")
        (folder / "scenario_state.json").write_text(json.dumps(state), encoding="utf-8")
    return output


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry under ``folder``: file bytes, link targets, folders."""
    found: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")) if folder.exists() else []:
        relative = str(path.relative_to(folder))
        found[relative] = f"-> {path.readlink()}" if path.is_symlink() else (
            "folder" if path.is_dir() else path.read_bytes())
    return found


def refused(result: "subprocess.CompletedProcess[str]", *words: str) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and result.stderr.startswith("merge_shards: refusing to merge:")
    for word in words:
        assert word in result.stderr, (word, result.stderr)


def test_a_shard_run_without_run_spec_is_refused_not_dropped(tmp_path: Path) -> None:
    shard = fake_shard(tmp_path / "s1", runs=("roboreward:subset=a,model=m", "roboreward:subset=b,model=m"))
    (shard / "runs" / SUITE / "roboreward:subset=b,model=m" / "run_spec.json").unlink()
    into = tmp_path / "merged" / "benchmark_output"
    result = merge(into, shard)
    refused(result, "roboreward:subset=b,model=m", "run_spec.json")
    assert not into.exists()


@pytest.mark.parametrize("where", ["run file", "extra file in a run", "run folder", "media folder"])
def test_links_in_a_shard_are_refused(tmp_path: Path, where: str) -> None:
    shard = fake_shard(tmp_path / "s1")
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_bytes(b"not the merge's business")
    run = shard / "runs" / SUITE / "roboreward:subset=a,model=m"
    if where == "run file":
        (run / "stats.json").unlink()
        (run / "stats.json").symlink_to(secret)
    elif where == "extra file in a run":
        (run / "notes.txt").symlink_to(secret)
    elif where == "run folder":
        moved = tmp_path / "outside" / "run"
        shutil.move(str(run), moved)
        run.symlink_to(moved, target_is_directory=True)
    else:
        (shard / "scenarios" / "roboreward" / "more").symlink_to(secret.parent, target_is_directory=True)
    into = tmp_path / "merged" / "benchmark_output"
    result = merge(into, shard)
    refused(result, "link")
    assert not into.exists()


@pytest.mark.parametrize("leftover", ["roboreward:subset=a,model=m", ".tmp-merge-x1y2"])
def test_a_leftover_in_into_is_refused_before_anything_is_written(tmp_path: Path, leftover: str) -> None:
    """An incomplete run folder (a killed helm-run, an interrupted merge) in --into: refused, nothing copied."""
    into = fake_shard(tmp_path / "merged", runs=("roboreward:subset=z,model=m",))
    stale = into / "runs" / SUITE / leftover
    stale.mkdir()
    (stale / "scenario_state.json").write_text("{}", encoding="utf-8")
    before = snapshot(into)
    other = fake_shard(tmp_path / "s1", runs=("roboreward:subset=a,model=m", "roboreward:subset=b,model=m"))
    (other / "scenarios" / "roboreward" / "frames" / "cd").mkdir()
    (other / "scenarios" / "roboreward" / "frames" / "cd" / "0001.jpg").write_bytes(b"another frame")
    result = merge(into, other)
    refused(result, leftover, str(into))
    assert snapshot(into) == before, "nothing may be written when the merge is refused"


def test_a_merge_is_written_only_after_every_check(tmp_path: Path) -> None:
    shard = fake_shard(tmp_path / "s1", runs=("roboreward:subset=a,model=m", "roboreward:subset=b,model=m"))
    into = tmp_path / "merged" / "benchmark_output"
    check_completed(merge(into, shard), "merge")
    assert snapshot(into / "runs") == snapshot(shard / "runs")
    assert (into / "scenarios" / "roboreward" / FRAME).read_bytes() == b"\xff\xd8 a frame"
    assert not [path for path in into.rglob(".tmp-*")]
