"""Hostile inputs to the comparability rule and publish (issue 36) on a 23-subset copy served by the loopback hub.

One module fixture: a copy of the split (sample videos under the 23 official subset ids) served as
``teetone/RoboReward``; ``helm-run`` of ``constant-3`` first with ``-m 1`` on one subset, then on all 23 with the
same settings (the full run supersedes the first). The rule is given the copy's own metadata hash, as
tests/results/publish/test_publish_hub.py does, so the row is comparable.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from helm_roboreward.config import MODEL_DEPLOYMENTS_FILE, config_dir
from helm_roboreward.protocol.rules import DATASET_ID, OFFICIAL_SUBSET_IDS
from helm_roboreward.results.publish.eval_results import EVAL_RESULTS_FILE
from helm_roboreward.results.publish.evidence import deployment_problems
from helm_roboreward.results.publish.manifest import MANIFEST_FILE
from helm_roboreward.results.publish.publish_command import add_publish_options, run_publish
from helm_roboreward.robot_data.predictions_export import prediction_records
from tests.helpers.fakes.hf_hub import FakeHfHub, FakeRepo, make_commit_sha
from tests.helpers.harness import PROD_ENV, TIMEOUT, check_completed, cli, helm_environment, private_local_path
from tests.helpers.suite import make_local_copy

COMMIT = make_commit_sha("hostile copy")
SUITE = "hostile"
MODEL = "baseline/constant-3"
FIRST = OFFICIAL_SUBSET_IDS[0]
SMALL_RUN = f"roboreward:subset={FIRST},revision={COMMIT},video=frames,model=baseline_constant-3"
FULL_RUN = f"roboreward:subset=all,revision={COMMIT},video=frames,model=baseline_constant-3"


@dataclass
class Hostile:
    output: Path
    cache: Path
    metadata_sha256: str


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    root = tmp_path_factory.mktemp("hostile")
    copy, workdir = root / "copy", root / "work"
    make_local_copy(copy, OFFICIAL_SUBSET_IDS)
    workdir.mkdir()
    with FakeHfHub([FakeRepo(DATASET_ID, commits={COMMIT: copy}, refs={"main": COMMIT})]) as hub:
        env = {**helm_environment(), "HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(root / "cache"),
               "HF_HUB_OFFLINE": "0"}
        local = str(private_local_path(workdir / "local"))
        for subset, rows in ((FIRST, "1"), ("all", "1000")):  # an -m 1 run, then the full one: same settings
            command = [cli("helm-run"), "-r", f"roboreward:subset={subset},revision={COMMIT},model={MODEL}",
                       "--suite", SUITE, "-m", rows, "--local-path", local, "-o", "benchmark_output"]
            done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=TIMEOUT)
            check_completed(done, f"helm-run subset={subset}")
    output = workdir / "benchmark_output"
    small = output / "runs" / SUITE / SMALL_RUN / "stats.json"
    os.utime(small, (small.stat().st_atime, small.stat().st_mtime - 3600))  # finished an hour before the full run
    sha = hashlib.sha256((copy / "test" / "metadata.jsonl").read_bytes()).hexdigest()
    yield Hostile(output, root / "cache", sha)


def private_copy(hostile: Hostile, tmp_path: Path) -> Path:
    shutil.copytree(hostile.output / "runs" / SUITE, tmp_path / "benchmark_output" / "runs" / SUITE)
    return tmp_path / "benchmark_output"


def publish(hostile: Hostile, output: Path, out: Path, *extra: str) -> int:
    parser = argparse.ArgumentParser()
    add_publish_options(parser)
    args = parser.parse_args(["--suite", SUITE, "--output-path", str(output), "--out", str(out), "--source-url",
                              "https://huggingface.co/datasets/lab/traces", "--hf-cache", str(hostile.cache),
                              "--local-path", str(PROD_ENV), *extra])
    return run_publish(args, published_sha256=hostile.metadata_sha256)


def test_the_full_run_is_comparable_and_publish_names_the_superseded_run(
        hostile: Hostile, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = private_copy(hostile, tmp_path)
    assert publish(hostile, output, tmp_path / "out") == 0
    printed = capsys.readouterr().out
    lines = [line for line in printed.splitlines() if "superseded" in line]
    assert "no Hub model repo (an offline baseline: it has no weights to hold results): listed, not pushed" in printed
    assert lines == [f"roboreward publish: 1 superseded run, in no number: {SMALL_RUN} (by {FULL_RUN}: {FIRST})"]
    manifest = json.loads((output / "runs" / SUITE / MANIFEST_FILE).read_text())
    assert manifest["superseded_runs"] == [{"run": SMALL_RUN, "by": FULL_RUN, "row": MODEL, "subsets": [FIRST]}]
    (model,) = manifest["models"]
    assert model["comparable"] and model["failed_requests"] == 0
    assert [run["name"] for run in model["runs"]] == [FULL_RUN]
    entries = yaml.safe_load((tmp_path / "out" / "baseline__constant-3" / EVAL_RESULTS_FILE).read_text())
    assert "; 0 failed requests (each charged the maximum error, failed=max_error, as the official rule says); " \
        in entries[0]["notes"]
    assert entries[0]["notes"].endswith("official default settings; comparable with the published leaderboard")


def test_an_edited_error_of_a_comparable_row_stops_publish_naming_the_file(
        hostile: Hostile, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = private_copy(hostile, tmp_path)
    path = output / "runs" / SUITE / FULL_RUN / "per_instance_stats.json"
    entries = json.loads(path.read_text())
    for stat in entries[0]["stats"]:
        if stat["name"]["name"] == "abs_error":
            stat["sum"] = 3.0
    path.write_text(json.dumps(entries))
    assert publish(hostile, output, tmp_path / "out") == 2
    error = capsys.readouterr().err
    assert str(path) in error and "differs from stats.json" in error and "\n" not in error.strip()
    assert not (tmp_path / "out").exists() and not (output / "runs" / SUITE / MANIFEST_FILE).exists()


def test_export_marks_only_the_rows_the_numbers_use_and_names_the_run(hostile: Hostile) -> None:
    records = list(prediction_records(str(hostile.output), SUITE, published_sha256=hostile.metadata_sha256,
                                      hf_cache=str(hostile.cache)))
    assert len(records) == 3 * len(OFFICIAL_SUBSET_IDS) + 1
    comparable = [record for record in records if record["comparable"]]
    assert len(comparable) == 3 * len(OFFICIAL_SUBSET_IDS)
    assert {record["used_run"] for record in records} == {FULL_RUN}
    (small,) = [record for record in records if record["run"] == SMALL_RUN]
    assert small["comparable"] is False
    assert small["comparability"] == (f"superseded: the suite's numbers for {MODEL} on {FIRST} use run {FULL_RUN}, "
                                      "not this run's rows")


def test_a_redefined_deployment_is_not_comparable_and_the_manifest_records_each_deployment(
        hostile: Hostile, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    local = tmp_path / "local"
    local.mkdir()
    text = (PROD_ENV / MODEL_DEPLOYMENTS_FILE).read_text()
    (local / MODEL_DEPLOYMENTS_FILE).write_text(text.replace("score: 3", "score: 4", 1))
    output = private_copy(hostile, tmp_path)
    assert publish(hostile, output, tmp_path / "out", "--local-path", str(local)) == 2
    printed = capsys.readouterr().out
    reason = (f"deployment {MODEL} differs from the package's definition in {local / MODEL_DEPLOYMENTS_FILE}: "
              "client_spec.args.score 4 (package: 3)")
    assert reason in printed and "refused: not comparable" in printed
    manifest = json.loads((output / "runs" / SUITE / MANIFEST_FILE).read_text())
    assert manifest["deployments"] == [{
        "name": MODEL, "model_name": MODEL, "defined_in": str(local / MODEL_DEPLOYMENTS_FILE),
        "client_class": "helm_roboreward.helm_frontend.clients.baselines.ConstantScoreClient",
        "client_args": {"score": 4}, "differences": ["client_spec.args.score 4 (package: 3)"]}]


def package_entry(name: str) -> dict[str, object]:
    content = yaml.safe_load((Path(config_dir()) / MODEL_DEPLOYMENTS_FILE).read_text())
    return next(entry for entry in content["model_deployments"] if entry["name"] == name)


def test_the_issues_redefined_vllm_deployment_names_each_difference() -> None:
    redefined = package_entry("vllm/roboreward-8b")
    args = dict(redefined["client_spec"]["args"])  # type: ignore[index]
    args.update(served_model_name="lab/other-checkpoint", video_fps=8, video_max_frames=4, decoding="greedy")
    redefined = {**redefined, "client_spec": {**redefined["client_spec"], "args": args}}  # type: ignore[dict-item]
    problems = deployment_problems("teetone/roboreward-8b", "vllm/roboreward-8b", redefined,
                                   "lab/model_deployments.yaml")
    assert problems[0].startswith("deployment vllm/roboreward-8b differs from the package's definition in "
                                  "lab/model_deployments.yaml: ")
    for difference in ("client_spec.args.served_model_name lab/other-checkpoint (package: teetone/RoboReward-8B)",
                       "client_spec.args.video_fps 8 (package: 2)", "client_spec.args.decoding greedy (package: "
                       "checkpoint)", "client_spec.args.video_max_frames 4 (package: "):
        assert difference in problems[0]
    assert deployment_problems("teetone/roboreward-8b", "vllm/roboreward-8b", package_entry("vllm/roboreward-8b"),
                               "x") == []
    unknown = deployment_problems("teetone/roboreward-8b", "lab/rr8", {"name": "lab/rr8"}, "lab/d.yaml")
    assert unknown == ["deployment lab/rr8 of the published model teetone/roboreward-8b is not one the package "
                       "defines (lab/d.yaml defines it): run the package's deployment of that model"]
    assert deployment_problems("lab/new-model", "lab/new-model", {"name": "lab/new-model"}, "lab/d.yaml") == []


def test_source_url_must_be_one_well_formed_https_url(hostile: Hostile, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    for url in ("http://example.org/traces", "https://", "https://example.org/a b", "https://ex\x00ample.org",
                "https://example.org/x\nhttps://evil", "ftp://example.org"):
        parser = argparse.ArgumentParser()
        add_publish_options(parser)
        args = parser.parse_args(["--suite", SUITE, "--output-path", str(hostile.output), "--out",
                                  str(tmp_path / "out"), "--source-url", url])
        assert run_publish(args, published_sha256=hostile.metadata_sha256) == 2
        assert f"--source-url {url!r}: give one https:// address of the traces" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
