"""``roboreward label`` against hostile datasets, folders and signals (issue 27, third integrity sweep).

Rows of docs/bad_inputs.md, section "Your own robot data and exports (issue 27)". Refusals run in process
before any helm-run; the rest run the command and the real ``helm-run`` as a user does: reruns of a hub dataset
through huggingface_hub's cache, another model's outputs in ``--out``, helm-run's own error, and SIGKILL while
helm-run waits on a loopback server that accepts and never answers.
"""

import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from helm_roboreward import cli as roboreward
from tests.helpers.fakes.hf_hub import FakeHfHub, FakeRepo, make_commit_sha
from tests.helpers.harness import VLLM_KEY, check_completed, cli, helm_environment, private_local_path
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
    assert not (tmp_path / "out").exists()  # refused before the working copy and helm-run


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


def test_helm_runs_own_error_is_shown(dataset: Path, tmp_path: Path) -> None:
    process = label([str(dataset), "--out", str(tmp_path / "out"), "--local-path",
                     str(private_local_path(tmp_path / "local")), "--model", "baseline/constant-3",
                     "--entry-options", "fps=0"], helm_environment())
    assert process.returncode == EXIT_USAGE and "Traceback" not in process.stderr.split("(last lines)")[0]
    assert "roboreward label: helm-run exited with status 1 for roboreward:data=" in process.stderr
    assert "fps must be a positive number" in process.stderr  # helm-run's reason, from its log
    assert "run helm-run --suite" not in process.stderr


class SilentServer:
    """A loopback socket that accepts connections and never answers."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(16)
        self.accepted: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.accepted.append(connection)

    @property
    def port(self) -> int:
        return int(self.socket.getsockname()[1])

    def close(self) -> None:
        for connection in self.accepted:
            connection.close()
        self.socket.close()


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


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads child processes from /proc (Linux)")
def test_killing_label_stops_its_helm_run(dataset: Path, tmp_path: Path, silent_server: SilentServer) -> None:
    local = private_local_path(tmp_path / "local")
    (local / "credentials.conf").write_text(f'vllmBaseUrl: "http://127.0.0.1:{silent_server.port}/v1"\n'
                                            f'vllmApiKey: "{VLLM_KEY}"\n', encoding="utf-8")
    process = subprocess.Popen([cli("roboreward"), "label", str(dataset), "--out", str(tmp_path / "out"),
                                "--local-path", str(local), "--model", "teetone/roboreward-4b", "--model-deployment",
                                "vllm/roboreward-4b", "--entry-options", "video=frames", "-n", "1",
                                "--quiet"], env=helm_environment(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    helm_runs: list[int] = []
    try:
        deadline = time.monotonic() + 300
        while not silent_server.accepted and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert silent_server.accepted, "helm-run sent no request"
        helm_runs = children(process.pid)
        assert helm_runs
        process.kill()  # SIGKILL: no handler of the label command runs
        process.wait()
        deadline = time.monotonic() + 30
        while any(alive(pid) for pid in helm_runs) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(alive(pid) for pid in helm_runs), "helm-run outlived the label command"
    finally:
        if process.poll() is None:
            process.kill()
        for pid in helm_runs:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
