"""Fixtures shared across the test tree.

- ``sample_suite`` (session): the real ``helm-run`` + ``helm-summarize`` over the bundled sample, built once
  (:mod:`tests.helpers.suite`; once for all pytest-xdist workers too) and shared by the end-to-end, report,
  browser, leak, missing-media and path-safety tests. Read it, never change it: the fixture fails the session if
  anything under its ``benchmark_output`` changed.
- ``copy_suite`` (function): private copies of it, for the tests that damage or extend a suite.
- ``tiny_qwen3vl`` / ``tiny_qwen3vl_moe`` (session): the tiny random-weight Qwen3-VL checkpoints;
  ``tiny_qwen3vl_digits`` (session): the dense one answering one digit 1..5 (score-token log-probabilities).

And one scheduling hook: when the sample regeneration test (minutes of pybullet CPU, waiting on nothing else) is
selected, its generator starts in the background at low priority right after collection and the test runs last
(tests/helpers/regeneration.py), so the generation fills the cores the rest of the suite leaves idle. Under
pytest-xdist (``scripts/test`` runs two workers, ``--dist loadfile``) the test instead goes first and generates in
its worker while the other worker runs the rest.

And one reporting hook for ``scripts/test``: the tests skipped for want of a system component (a browser, Slurm,
FFmpeg's shared libraries), counted per component, go to the file ``$ROBOREWARD_SKIP_SUMMARY`` names.

And two settings made when this file loads, before any test runs, inherited by every process a test starts:

- the normal time-sharing scheduler (:func:`leave_real_time_scheduling`, also before each test): under a real-time
  policy (``SCHED_FIFO`` / ``SCHED_RR``, set by a launcher, or on a worker mid-run as seen here), two threads that
  busy-wait (an exiting thread pool's threads, a process reaping its children) keep both cores of a 2-core machine
  and never let run the thread they wait for; the worker then hangs for good and starves everything else,
  pytest-timeout's watchdog included;
- every thread pool of native code capped at one thread (:data:`ONE_THREAD`): two pytest-xdist workers, the HELM
  subprocesses they start and each process's OpenMP team otherwise ask for several times the cores of a 2-core
  machine, and OpenMP's threads wait for one another at every parallel region. Results do not depend on it: the
  tests compare answers made in the same conditions.
"""

import importlib.util
import os
import pickle
import re
import sys
from collections.abc import Callable, Iterator
from itertools import count
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.helpers import regeneration  # (none of the imports above loads torch or numpy)


def leave_real_time_scheduling() -> None:
    """Move every thread of this process from a real-time scheduling policy to ``SCHED_OTHER`` (Linux; else no-op).

    Threads and processes started later inherit it. Lowering a policy needs no privilege.
    """
    real_time = {getattr(os, name) for name in ("SCHED_FIFO", "SCHED_RR") if hasattr(os, name)}
    if not real_time or not hasattr(os, "sched_setscheduler"):
        return
    tasks = Path("/proc/self/task")
    for thread in sorted(int(name) for name in os.listdir(tasks)) if tasks.is_dir() else [0]:
        try:
            if os.sched_getscheduler(thread) in real_time:
                os.sched_setscheduler(thread, os.SCHED_OTHER, os.sched_param(0))
        except OSError:  # the thread has ended meanwhile
            pass


leave_real_time_scheduling()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Leave a real-time policy again before each test: it was seen set on a worker mid-run, not only at its start."""
    leave_real_time_scheduling()

ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
              "TOKENIZERS_PARALLELISM": "false"}
"""Set here, overriding the caller's values, before any test module imports torch, numpy or tokenizers (they read
them once, when loaded); every subprocess a test starts inherits them."""
os.environ.update(ONE_THREAD)
if "torch" in sys.modules:  # imported before this file (by a plugin): its thread pool has sized itself already
    sys.modules["torch"].set_num_threads(1)

if TYPE_CHECKING:  # imported when first used: collecting the unit tests needs neither HELM nor PyAV
    from tests.helpers.fakes.silent import SilentServer
    from tests.helpers.suite import SampleSuite, SuiteCopy


@pytest.hookimpl(trylast=True)  # after -m / -k deselection: only a test that will run starts its generator
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    distributed = hasattr(config, "workerinput")
    if distributed:
        # pytest-xdist (scripts/test): every worker collects every test, in this same order, and the scheduler
        # hands out files in that order. The long whole-pipeline modules go first, so short unit tests fill the
        # end instead of one worker finishing a long module alone.
        items.sort(key=lambda item: 0 if item.nodeid.startswith("tests/integration/") else 1)
    chosen = [item for item in items if item.nodeid == regeneration.TEST_ID]
    if not chosen or config.option.collectonly or importlib.util.find_spec("pybullet") is None:
        return
    items.remove(chosen[0])
    if distributed:  # first of all: the worker that gets its file generates while the other runs the rest
        items.insert(0, chosen[0])
        return
    items.append(chosen[0])
    regeneration.start_in_background()


def pytest_sessionfinish(session: pytest.Session) -> None:
    regeneration.stop_background()


SYSTEM_COMPONENTS = {
    "a browser (chromium, chromedriver)": re.compile(r"chrom", re.IGNORECASE),
    "Slurm": re.compile(r"slurm", re.IGNORECASE),
    "FFmpeg's shared libraries (torchcodec)": re.compile(r"ffmpeg|torchcodec", re.IGNORECASE),
    "TeX Live (pdflatex)": re.compile(r"pdflatex|texlive", re.IGNORECASE),
}
"""What a skip reason names when a system package would let the test run (the packages .ci/run installs)."""


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    target = os.environ.get("ROBOREWARD_SKIP_SUMMARY")
    if not target or hasattr(config, "workerinput"):  # asked for by scripts/test; the controller sees every report
        return
    skipped: dict[str, list[str]] = {}
    others = 0
    for report in terminalreporter.stats.get("skipped", []):
        reason = str(report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr)
        component = next((name for name, pattern in SYSTEM_COMPONENTS.items() if pattern.search(reason)), None)
        if component is None:
            others += 1
        else:
            skipped.setdefault(component, []).append(reason.removeprefix("Skipped: ").splitlines()[0])
    lines = [f"  {component}: {len(reasons)} skipped ({reasons[0]})" for component, reasons in skipped.items()]
    if lines and others:
        lines.append(f"  and {others} skipped for other reasons (pytest -rs says why)")
    Path(target).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


@pytest.fixture(scope="session")
def sample_suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator["SampleSuite"]:
    from tests.helpers.suite import build_sample_suite

    if os.environ.get("PYTEST_XDIST_WORKER"):
        # pytest-xdist: the first worker to get here builds it in the folder the session's workers share (their
        # base temporary folders' parent), the others wait on the lock and read what it recorded.
        from filelock import FileLock

        shared = tmp_path_factory.getbasetemp().parent / "sample-suite"
        record = shared / "suite.pickle"
        with FileLock(f"{shared}.lock"):
            if record.exists():
                suite = pickle.loads(record.read_bytes())
            else:
                shared.mkdir()
                suite = build_sample_suite(shared)
                record.write_bytes(pickle.dumps(suite))
    else:
        suite = build_sample_suite(tmp_path_factory.mktemp("sample-suite"))
    steps = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in suite.timings.items())
    print(f"\n[sample_suite] built in {suite.workdir.parent}: {steps}")
    yield suite
    suite.assert_unchanged()


@pytest.fixture
def copy_suite(sample_suite: "SampleSuite", tmp_path: Path) -> Callable[..., "SuiteCopy"]:
    """``copy_suite(**options)``: a fresh private copy of the shared suite (see :meth:`SampleSuite.copy`)."""
    numbers = count()

    def make(**options: Any) -> "SuiteCopy":
        return sample_suite.copy(tmp_path / f"suite-copy-{next(numbers)}", **options)

    return make


@pytest.fixture
def silent_hub() -> Iterator["SilentServer"]:
    """A hub (any HTTP server) that accepts connections and never answers."""
    from tests.helpers.fakes.silent import SilentServer

    hub = SilentServer()
    yield hub
    hub.close()


@pytest.fixture(scope="session")
def tiny_qwen3vl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-weight Qwen3-VL checkpoint folder (dense)."""
    from tests.helpers.tiny_qwen3vl import build_tiny_qwen3vl  # transformers: only for the tests that need it

    return build_tiny_qwen3vl(tmp_path_factory.mktemp("tiny") / "qwen3-vl")


@pytest.fixture(scope="session")
def tiny_qwen3vl_moe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Its mixture-of-experts counterpart (``Qwen3VLMoeForConditionalGeneration``)."""
    from tests.helpers.tiny_qwen3vl import build_tiny_qwen3vl

    return build_tiny_qwen3vl(tmp_path_factory.mktemp("tiny") / "qwen3-vl-moe", moe=True)


@pytest.fixture(scope="session")
def tiny_qwen3vl_digits(tiny_qwen3vl: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dense checkpoint with a generation config that makes it answer one digit 1..5, then stop."""
    from tests.helpers.tiny_qwen3vl import build_digit_answering

    return build_digit_answering(tiny_qwen3vl, tmp_path_factory.mktemp("tiny") / "qwen3-vl-digits")
