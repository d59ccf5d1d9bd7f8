"""The RoboReward runs' predictions pages are HELM's own files, byte for byte, in one process or several.

helm-summarize's page phase is done by :mod:`~helm_roboreward.helm_frontend.predictions_pages`
for RoboReward runs (metric
names rendered once, per-instance stats decoded once, worker processes): on copies of the shared demo suite's
runs (tests/helpers/suite.py), its files are compared with those of HELM's ``write_run_display_json`` and of a
``helm-summarize -n 1``.
"""

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from helm.benchmark.presentation.run_display import write_run_display_json
from helm.benchmark.presentation.schema import read_schema
from helm.benchmark.run_spec import RunSpec
from helm.common.codec import from_json

from helm_roboreward.helm_frontend.predictions_pages import PAGE_FILES, PredictionsPages, fits
from tests.helpers.harness import SCHEMA, TIMEOUT, check_completed, helm_environment, helm_summarize_command
from tests.helpers.suite import SUITE, SampleSuite, SuiteCopy


def run_folders(runs: Path) -> list[Path]:
    return sorted(path for path in runs.iterdir() if (path / "run_spec.json").exists())


def test_each_page_is_the_one_helm_writes(copy_suite: Callable[..., SuiteCopy]) -> None:
    ours, helms = copy_suite(summarized=False, media="link"), copy_suite(summarized=False, media="link")
    schema = read_schema(str(SCHEMA))
    pages = PredictionsPages(schema)
    folders = run_folders(ours.runs)
    assert len(folders) == 6
    cwd = os.getcwd()
    try:
        for folder in folders:
            spec = from_json((folder / "run_spec.json").read_text(), RunSpec)
            assert fits(spec)
            os.chdir(ours.workdir)  # media paths are relative to the folder that holds benchmark_output
            per_instance = pages.write(str(folder.relative_to(ours.workdir)), spec, skip_completed=False)
            assert isinstance(per_instance, list) and per_instance
            os.chdir(helms.workdir)
            write_run_display_json(str((helms.runs / folder.name).relative_to(helms.workdir)), spec, schema, False)
    finally:
        os.chdir(cwd)
    for folder in folders:
        for name in PAGE_FILES:
            assert (folder / name).read_bytes() == (helms.runs / folder.name / name).read_bytes(), (folder, name)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="worker processes need 2 CPUs")
def test_summarizing_in_worker_processes_writes_the_same_files(sample_suite: SampleSuite,
                                                               copy_suite: Callable[..., SuiteCopy]) -> None:
    """``-n 2`` (two worker processes) against the shared suite, summarized with ``-n 1`` (one process)."""
    copy = copy_suite(summarized=False, media="link")
    process = subprocess.run(helm_summarize_command(SUITE, "-n", "2"), cwd=copy.workdir, env=helm_environment(),
                             capture_output=True, text=True, timeout=TIMEOUT)
    check_completed(process, "helm-summarize -n 2")
    shared = sample_suite.runs()
    written = sorted(str(path.relative_to(shared)) for path in shared.rglob("*") if path.is_file())
    assert sorted(str(path.relative_to(copy.runs)) for path in copy.runs.rglob("*") if path.is_file()) == written
    different = [name for name in written if (shared / name).read_bytes() != (copy.runs / name).read_bytes()]
    assert different == []
