"""Regenerating the simulated sample (``scripts/make_sim_sample.py``) in a subprocess that may start early.

The regeneration test compares a fresh generation (the first :data:`EPISODES` episodes of each subset, or all of
them) with the bundled sample. Generating everything takes minutes of CPU
(pybullet rollouts) and waits on nothing else, so ``tests/conftest.py`` starts it in the background, at low
priority, as soon as collection selects that test, and runs the test last: the generation then uses the cores
the rest of the suite leaves idle instead of adding its own wall time. Run alone, the test generates in the
foreground as before.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.sample import REPO

GENERATOR = REPO / "scripts" / "make_sim_sample.py"
SIM_SAMPLE_DIR = Path(os.environ.get("ROBOREWARD_SIM_SAMPLE_DIR") or REPO / "helm_roboreward" / "sample")
"""The sample folder the tests check: ``$ROBOREWARD_SIM_SAMPLE_DIR`` or the bundled ``helm_roboreward/sample``."""
TEST_ID = "tests/protocol/test_sim_sample.py::test_regeneration_is_deterministic"
EPISODES: int | None = None if os.environ.get("ROBOREWARD_FULL_REGENERATION") == "1" else 2
"""Episodes per subset to regenerate: 2 by default (a spot check, about 45 s of CPU instead of about 160 s; every
episode is simulated in a fresh process from its own seed, so they are the whole sample's rows and videos), every
episode with ``ROBOREWARD_FULL_REGENERATION=1``."""
TIMEOUT = 900
BACKGROUND_NICENESS = 10


def sample_seed() -> str | None:
    """The seed the sample's README records (``Seed: `<n>```), or None."""
    match = re.search(r"Seed: `(\d+)`", (SIM_SAMPLE_DIR / "README.md").read_text(encoding="utf-8"))
    return match.group(1) if match else None


@dataclass
class Regeneration:
    """One run of the generator into ``root/sample``."""

    root: Path
    seed: str
    process: "subprocess.Popen[bytes]"

    @property
    def out(self) -> Path:
        return self.root / "sample"

    @property
    def log(self) -> Path:
        return self.root / "generator.log"

    def wait(self, timeout: float = TIMEOUT) -> Path:
        """The generated sample folder, once the generator ended successfully."""
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise AssertionError(f"the sample generator still ran after {timeout} s") from None
        output = self.log.read_text(errors="replace")[-4000:]
        assert code == 0, f"{GENERATOR.name} --seed {self.seed} exited with {code}\n{output}"
        return self.out

    def stop(self) -> None:
        """End the generator (and its workers) if it still runs."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def start(root: Path, seed: str, niceness: int = 0) -> Regeneration:
    """Start the generator with ``seed`` into ``root/sample`` (its output goes to ``root/generator.log``)."""
    root.mkdir(parents=True, exist_ok=True)

    def lower_priority() -> None:
        os.nice(niceness)

    command = [sys.executable, str(GENERATOR), "--out", str(root / "sample"), "--seed", seed]
    if EPISODES is not None:
        command += ["--episodes", str(EPISODES)]
    with open(root / "generator.log", "wb") as log:
        process = subprocess.Popen(command,
                                   cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                   preexec_fn=lower_priority if niceness else None)
    return Regeneration(root, seed, process)


_background: Regeneration | None = None


def start_in_background() -> None:
    """Start the generation now, at low priority, for the regeneration test to collect later."""
    global _background
    seed = sample_seed()
    if _background is None and seed is not None:
        _background = start(Path(tempfile.mkdtemp(prefix="roboreward-regeneration-")), seed, BACKGROUND_NICENESS)


def background() -> Regeneration | None:
    """The background generation, if one was started."""
    return _background


def stop_background() -> None:
    """Stop the background generation (if it still runs) and remove its folder."""
    global _background
    if _background is not None:
        _background.stop()
        shutil.rmtree(_background.root, ignore_errors=True)
        _background = None
