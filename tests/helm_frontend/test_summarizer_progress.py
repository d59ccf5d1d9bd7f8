"""helm-summarize with the RoboReward summarizer says what it does early, logs its progress and exits soon.

Issue 36: on a busy machine helm-summarize printed nothing for minutes (HELM imports torch, spacy and nltk
before its first line, then reads every run without a line) and took long to exit after "Done." (the
collections Python makes while it exits walk every object: about 540,000 at 575 runs). The summarizer now logs a
first line as soon as HELM hands it the suite, the predictions pages' progress, and freezes the objects alive at
its start and end (``gc.freeze``). Timings: docs/benchmarks.md ("Start and exit of helm-summarize").
"""

import gc
import logging
import os
from collections.abc import Callable, Iterator

import pytest

from helm_roboreward.helm_frontend import summarizer
from helm_roboreward.helm_frontend.summarizer import RoboRewardSummarizer
from tests.helpers.harness import SCHEMA
from tests.helpers.suite import SUITE, SampleSuite, SuiteCopy

RUNS = 6
"""Runs of the shared suite ``demo`` (two baselines x three sample subsets)."""
FIRST = f"RoboReward summarizer: {RUNS} runs in suite {SUITE} "


def test_helm_summarize_says_what_it_does_before_it_writes_anything(sample_suite: SampleSuite) -> None:
    """The shared suite's own ``helm-summarize`` (tests/helpers/suite.py): our line comes before HELM's first file."""
    if (os.environ.get("HELM_LOG_LEVEL") or os.environ.get("LOG_LEVEL") or "INFO").upper() not in ("INFO", "DEBUG"):
        pytest.skip("HELM_LOG_LEVEL hides HELM's INFO lines, ours among them")
    log = sample_suite.workdir.parent / "logs" / f"helm-summarize-{SUITE}.log"
    assert log.is_file(), f"the shared suite's summarize log moved: {log} (tests/helpers/suite.py)"
    lines = log.read_text(errors="replace").splitlines()
    first = [index for index, line in enumerate(lines) if FIRST in line]
    assert len(first) == 1, "\n".join(lines[:20])
    writing = next(index for index, line in enumerate(lines) if " Writing " in line)
    assert first[0] < writing, "\n".join(lines[:first[0] + 1])
    assert "predictions pages (in this process)" in lines[first[0]]  # the shared suite summarizes with -n 1
    assert "; HELM took " in lines[first[0]] and " s to start" in lines[first[0]]
    done = [index for index, line in enumerate(lines) if f"predictions pages of {RUNS} runs written in " in line]
    runs_json = next(index for index, line in enumerate(lines) if line.endswith(f"runs/{SUITE}/runs.json"))
    assert len(done) == 1 and first[0] < done[0] < runs_json


class Collected(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage().strip())


@pytest.fixture()
def pipeline(copy_suite: Callable[..., SuiteCopy]) -> Iterator[tuple[list[str], int, int]]:
    """The summarizer's pipeline in this process on a copy of ``demo``, a progress line after every run.

    Yields HELM's log lines, then the objects frozen and those still tracked by the garbage collector right after
    it (the pipeline freezes this whole process's objects: unfrozen again at the end).
    """
    copy = copy_suite(summarized=False, media="link")
    logger, collected = logging.getLogger("helm"), Collected()
    level, cwd = logger.level, os.getcwd()
    logger.addHandler(collected)
    logger.setLevel(logging.INFO)
    try:
        os.chdir(copy.workdir)  # media paths are relative to the folder that holds benchmark_output
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(summarizer, "PROGRESS_SECONDS", 0.0, raising=False)
            RoboRewardSummarizer(release=None, suites=None, suite=SUITE, schema_path=str(SCHEMA),
                                 output_path="benchmark_output", verbose=False, num_threads=1,
                                 allow_unknown_models=True).run_pipeline(skip_completed=False)
        frozen, tracked = gc.get_freeze_count(), len(gc.get_objects())
        yield collected.messages, frozen, tracked
    finally:
        gc.unfreeze()
        os.chdir(cwd)
        logger.removeHandler(collected)
        logger.setLevel(level)


def test_the_pipeline_logs_its_start_and_the_pages_progress(pipeline: tuple[list[str], int, int]) -> None:
    messages, _, _ = pipeline
    ours = [message for message in messages if message.startswith("RoboReward summarizer:")]
    assert ours and ours[0].startswith(FIRST), messages[:10]
    assert messages.index(ours[0]) < next(index for index, m in enumerate(messages) if m.startswith("Writing "))
    assert f"(benchmark_output{os.sep}runs{os.sep}{SUITE})" in ours[0]
    progress = [message.split(" (")[0] for message in ours[1:-1]]
    assert progress == [f"RoboReward summarizer: predictions pages of {done} of {RUNS} runs written"
                        for done in range(1, RUNS)]
    assert ours[-1].startswith(f"RoboReward summarizer: predictions pages of {RUNS} runs written in ")


def test_the_pipeline_leaves_its_objects_to_no_further_garbage_collection(
        pipeline: tuple[list[str], int, int]) -> None:
    """What makes the exit quick: the collections at exit skip frozen objects, and nearly all are frozen."""
    _, frozen, tracked = pipeline
    assert frozen > 100_000 and tracked * 100 < frozen, (frozen, tracked)
