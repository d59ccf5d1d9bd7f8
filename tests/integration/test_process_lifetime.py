"""A helm-run that ends leaves no process behind: its frame workers stop with it (issue "The protocol you can read").

Every process helm-run starts inherits its environment, so a token put there finds them all in ``/proc``, even
once they are orphaned (re-parented to init), which a parent-child walk after the exit could not.
"""

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.helpers.harness import PROD_ENV, TIMEOUT, cli, helm_environment, reap
from tests.helpers.videos import make_video

VIDEOS = 40  # above the threshold under which no worker starts (32)


def processes_with(token: str) -> set[int]:
    """The live processes whose environment holds ``token``."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if token.encode() in handle.read():
                    found.add(int(entry))
        except OSError:  # gone, or not ours to read
            continue
    return found


def many_distinct_videos(root: Path) -> Path:
    rows = []
    (root / "test" / "sim_panda").mkdir(parents=True)
    for index in range(VIDEOS):
        name = f"sim_panda/sim_panda_originalsplit_train_index_{index}.mp4"  # the real split's OXE pattern
        make_video(root / "test" / name, num_frames=12, first_number=index * 12)
        rows.append({"file_name": name, "task": "pick up the cube", "reward": 1 + index % 5})
    (root / "test" / "metadata.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return root


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc to find the processes")
def test_a_finished_helm_run_leaves_no_worker_behind(tmp_path: Path) -> None:
    data = many_distinct_videos(tmp_path / "data")
    token = f"ROBOREWARD_LIFETIME_TOKEN={uuid.uuid4().hex}"
    name, value = token.split("=")
    env = {**helm_environment(), "ROBOREWARD_JOBS": "2", name: value}
    entry = f"roboreward:subset=all,data={data},model=baseline/constant-3"
    process = subprocess.Popen([cli("helm-run"), "--run-entries", entry, "--suite", "lifetime", "-m", "1000",
                                "--local-path", str(PROD_ENV), "--output-path", str(tmp_path / "out")],
                               cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen: set[int] = set()
    deadline = time.monotonic() + TIMEOUT
    try:
        while process.poll() is None:
            assert time.monotonic() < deadline, "helm-run did not finish"
            seen |= processes_with(token)
            time.sleep(0.02)
        output = process.communicate()[0]
    finally:
        reap([process])
    assert process.returncode == 0, output[-3000:]
    assert len(seen - {process.pid}) >= 2, f"no frame workers were seen: {seen}"  # the test would prove nothing
    time.sleep(0.5)  # what exits with helm-run has had time to go
    assert not processes_with(token), "processes outlived helm-run"
