"""``roboreward label`` against hostile datasets, folders, models and signals (issues 27 and 28).

Rows of docs/bad_inputs.md, section "Your own robot data and exports (issue 27)". Refusals run in process
before any model is built; the rest run the command as a user does: reruns of a hub dataset through
huggingface_hub's cache, another model's outputs in ``--out``, a bad option or model, failed requests against a
loopback server, and SIGKILL and Ctrl-C while a request waits on a loopback server that accepts and never answers.
"""

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from helm_roboreward import cli as roboreward
from tests.helpers.fakes import FakeModelServer
from tests.helpers.fakes.exchange import Recorded, Reply
from tests.helpers.fakes.hf_hub import FakeHfHub, FakeRepo, make_commit_sha
from tests.helpers.fakes.silent import SilentServer
from tests.helpers.harness import VLLM_KEY, check_completed, cli, helm_environment, private_local_path, reap
from tests.helpers.lerobot_datasets import default_episodes, set_v3_episode_values, write_v3

TIMEOUT = 600
EXIT_USAGE = 2


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_v3(tmp_path_factory.mktemp("label-integrity") / "shelf_robot", default_episodes(3),
                    episodes_per_file=3)


def label_in_process(capsys: pytest.CaptureFixture[str], *arguments: str) -> str:
    capsys.readouterr()
    status = roboreward.main(["label", *arguments, "--quiet"])
    err = capsys.readouterr().err
    assert status == EXIT_USAGE and "Traceback" not in err, err
    return err


def test_prefix_mode_refuses_episodes_that_claim_the_same_frame_indices(dataset: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    source = shutil.copytree(dataset, tmp_path / "source")
    set_v3_episode_values(source, 1, dataset_from_index=3)  # episode 0 holds 0..7
    err = label_in_process(capsys, str(source), "--out", str(tmp_path / "out"), "--model", "baseline/constant-3",
                           "--mode", "prefix", "--anchors", "2")
    assert ("file-000.parquet, episode 0: episodes 0 and 1 both claim frame indices 3..7 (field "
            "'dataset_from_index' with 'length'); LeRobot's progress file is keyed by that index") in err
    assert "use --mode episode (it writes no per-frame file)" in err
    assert not (tmp_path / "out").exists()  # refused before the model, the working copy and any request


def test_a_low_score_that_is_not_a_number_is_refused(dataset: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    for value in ("nan", "inf"):
        err = label_in_process(capsys, str(dataset), "--out", str(tmp_path / "out"), "--model",
                               "baseline/constant-3", "--low-score", value)
        assert f"--low-score {float(value)}: give a finite number (scores run 1..5)" in err
    assert not (tmp_path / "out").exists()


def label(arguments: list[str], env: dict[str, str]) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([cli("roboreward"), "label", *arguments, "--quiet"], env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)


def test_hub_reruns_one_model_per_folder_and_no_stale_files(tmp_path: Path) -> None:
    content = write_v3(tmp_path / "content", default_episodes(3), episodes_per_file=3)
    commit = make_commit_sha("label reruns")
    local = private_local_path(tmp_path / "local")
    out = tmp_path / "out"
    with FakeHfHub([FakeRepo("lab/shelf", commits={commit: content}, refs={"main": commit})]) as hub:
        env = {**helm_environment(), "HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(tmp_path / "cache"),
               "HF_HUB_OFFLINE": "0"}
        common = ["--repo-id", "lab/shelf", "--out", str(out), "--local-path", str(local)]
        check_completed(label([*common, "--model", "baseline/constant-3", "--mode", "prefix", "--anchors", "2",
                               "--low-score", "3"], env), "roboreward label (prefix)")
        written = {name: (out / name).read_bytes() for name in os.listdir(out) if (out / name).is_file()}
        assert {"roboreward_progress.parquet", "low_score_episodes.json"} <= set(written)
        # another model into the same folder: refused before any work, every file as it was
        other = label([*common, "--model", "baseline/uniform-random"], env)
        assert other.returncode == EXIT_USAGE and "Traceback" not in other.stderr
        assert (f"--out {out} holds the labels of baseline/constant-3; this run is baseline/uniform-random"
                in other.stderr)
        assert {name: (out / name).read_bytes() for name in written} == written
        # the same model again, episode mode, from the hub cache (its files are links into blobs/)
        again = label([*common, "--model", "baseline/constant-3"], env)
    check_completed(again, "roboreward label (episode, rerun from the hub cache)")
    for name in ("roboreward_progress.parquet", "progress.png", "low_score_episodes.json"):
        assert not (out / name).exists(), name
        if name in written:
            assert f"removed {out / name} (an earlier run's; this run does not write it)" in again.stdout
    table = pq.read_table(out / "episode_rewards.parquet")
    assert table.schema.metadata[b"model"] == b"baseline/constant-3" and table.num_rows == 3


def test_a_bad_option_or_model_stops_before_any_work(dataset: Path, tmp_path: Path) -> None:
    local = str(private_local_path(tmp_path / "local"))
    for options, said in ((["--entry-options", "fps=0"], "fps must be a positive number"),
                          (["--entry-options", "failed=skip"], "options: 'failed' is not a reward option; use video"),
                          (["--model", "acme/no-such-model"], "acme/no-such-model")):
        process = label([str(dataset), "--out", str(tmp_path / "out"), "--local-path", local, "--model",
                         "baseline/constant-3", *options], helm_environment())
        assert process.returncode == EXIT_USAGE and "Traceback" not in process.stderr, process.stderr
        assert said in process.stderr and "(before any work: nothing was imported or sent)" in process.stderr
        assert not (tmp_path / "out").exists()  # the folders made for the model are removed again
    # the model is built first, then the import refuses the selection: no folder left either
    process = label([str(dataset), "--out", str(tmp_path / "out"), "--local-path", local, "--model",
                     "baseline/constant-3", "--episodes", "99"], helm_environment())
    assert process.returncode == EXIT_USAGE and "--episodes: episode 99 is not in" in process.stderr
    assert not (tmp_path / "out").exists()


def answers_except(task: str) -> "Callable[[Recorded], Reply]":
    """``ANSWER: 4``, except a 400 (not retried) for the rows of ``task``."""
    return lambda recorded: Reply(status=400) if task in recorded.raw.decode() else Reply(text="ANSWER: 4")


def test_failed_requests_are_never_scores_and_a_rerun_sends_only_them(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with FakeModelServer(answers_except("open the drawer")) as fake:
        env = helm_environment(fake)
        arguments = [str(dataset), "--out", str(out), "--local-path", str(private_local_path(tmp_path / "local", fake)),
                     "--model", "teetone/roboreward-8b", "--model-deployment", "vllm/roboreward-8b"]
        first = label(arguments, env)
        check_completed(first, "roboreward label (one task failing)")
        rows = pq.read_table(out / "episode_rewards.parquet").to_pylist()
        failed = [row for row in rows if row["task"] == "open the drawer"]
        assert failed and all(row["request_failed"] and row["score"] is None and row["success"] is None
                              and row["progress"] is None and row["error"] for row in failed)
        assert all(row["score"] == 4.0 and not row["request_failed"] for row in rows if row not in failed)
        assert f"warning: {len(failed)} of 3 requests failed" in first.stderr
        assert "Rerun the same command to send them again" in first.stderr
        written = (out / "episode_rewards.parquet").read_bytes()
        # every request failing (an empty cache, a server that refuses all): nothing written, the earlier outputs kept
        fake.behaviour = lambda recorded: Reply(status=400)
        empty_cache = [*arguments[:4], str(private_local_path(tmp_path / "empty", fake)), *arguments[5:]]
        down = label(empty_cache, env)
        assert down.returncode == EXIT_USAGE and "Traceback" not in down.stderr
        assert "every request failed (3)" in down.stderr and f"Nothing was written to {out}" in down.stderr
        assert (out / "episode_rewards.parquet").read_bytes() == written
        fake.clear()
        fake.behaviour = answers_except("no task fails now")
        again = label(arguments, env)
    check_completed(again, "roboreward label (rerun)")
    assert f"3 requests, {3 - len(failed)} answered from the request cache" in again.stdout
    assert len(fake.requests_to("chat")) == len(failed) and "warning" not in again.stderr  # only the failed ones
    assert {row["score"] for row in pq.read_table(out / "episode_rewards.parquet").to_pylist()} == {4.0}


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


def children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def start_label_on(silent_server: SilentServer, dataset: Path, tmp_path: Path) -> "subprocess.Popen[str]":
    """``roboreward label`` with the vLLM client on the silent server, once its first request is waiting."""
    local = private_local_path(tmp_path / "local")
    (local / "credentials.conf").write_text(f'vllmBaseUrl: "{silent_server.url}/v1"\n'
                                            f'vllmApiKey: "{VLLM_KEY}"\n', encoding="utf-8")
    process = subprocess.Popen([cli("roboreward"), "label", str(dataset), "--out", str(tmp_path / "out"),
                                "--local-path", str(local), "--model", "teetone/roboreward-4b", "--model-deployment",
                                "vllm/roboreward-4b", "--entry-options", "video=frames", "-n", "1", "--quiet"],
                               env=helm_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # Ctrl-C not ignored
    deadline = time.monotonic() + 300
    while not silent_server.accepted and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if not silent_server.accepted:
        reap([process])
        pytest.fail(f"label sent no request (status {process.returncode})")
    return process


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads child processes from /proc (Linux)")
def test_killing_label_leaves_nothing_talking_to_the_model(dataset: Path, tmp_path: Path,
                                                           silent_server: SilentServer) -> None:
    process = start_label_on(silent_server, dataset, tmp_path)
    try:
        assert [pid for pid in children(process.pid) if alive(pid)] == []  # the request is label's own
        process.kill()  # SIGKILL: no handler of the label command runs
        process.communicate(timeout=30)
        connection = silent_server.accepted[0]
        connection.settimeout(30)
        while connection.recv(1 << 16):  # the request's bytes, then the end: the kernel closed label's socket
            pass
    finally:
        reap([process])


def test_ctrl_c_ends_at_once_and_says_what_is_kept(dataset: Path, tmp_path: Path,
                                                    silent_server: SilentServer) -> None:
    process = start_label_on(silent_server, dataset, tmp_path)
    try:
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
        # the vLLM client would wait 300 s and retry twice: the request in flight is abandoned instead
        assert time.monotonic() - started < 30
    finally:
        reap([process])
    assert process.returncode == 130, err
    assert err.strip().endswith("roboreward label: interrupted; the requests not yet answered were abandoned. What "
                                "finished is kept: the working copy once imported, and every answer received, in "
                                "HELM's request cache (--local-path); rerun to continue (the outputs are written once "
                                "every episode is scored)")
    assert (tmp_path / "out" / "work" / "copy" / "test" / "metadata.jsonl").is_file()
    assert not (tmp_path / "out" / "episode_rewards.parquet").exists()
