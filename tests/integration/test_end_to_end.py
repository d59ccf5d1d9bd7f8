"""The real CLIs on the bundled sample: helm-run (plugin loaded by its entry point) then helm-summarize.

Runs in a temporary working directory with ``-o benchmark_output`` (relative), as a user would.
helm-run gets a private ``--local-path`` whose YAML files link to the repository's ``prod_env/`` ones,
so HELM's request cache is written there (not into the repository) and the rerun for the
determinism check computes every answer again instead of reading the first run's cache.
"""

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helm_harness import cli

REPO = Path(__file__).resolve().parent.parent
CONF = REPO / "run_specs" / "roboreward_sample.conf"
SCHEMA = REPO / "static" / "schema_roboreward.yaml"
PROD_ENV = REPO / "prod_env"
METADATA = REPO / "helm_roboreward" / "sample" / "test" / "metadata.jsonl"

SUBSETS = {"sim_arena": "Sim Arena (sample)", "sim_panda": "Sim Panda (sample)", "sim_kuka": "Sim KUKA (sample)"}
MODELS = {"constant-3": "Constant 3 (baseline)", "uniform-random": "Uniform random (baseline)"}
MEDIA_PREFIX = "benchmark_output/scenarios/roboreward/"
TIMEOUT = 300




def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONWARNINGS": "ignore"})
    return env


def private_local_path(folder: Path) -> Path:
    """A --local-path whose configuration files are links to the repository's prod_env/ files."""
    folder.mkdir(parents=True)
    for name in ("model_metadata.yaml", "model_deployments.yaml"):
        (folder / name).symlink_to(PROD_ENV / name)
    return folder


def helm_run_command(local_path: Path) -> list[str]:
    return [cli("helm-run"), "--conf-paths", str(CONF), "--suite", "test", "-m", "100",
            "--local-path", str(local_path), "-o", "benchmark_output"]


def check_completed(process: "subprocess.CompletedProcess[str]", what: str) -> None:
    assert process.returncode == 0, (
        f"{what} exited with {process.returncode}\n--- stdout (tail)\n{process.stdout[-4000:]}\n"
        f"--- stderr (tail)\n{process.stderr[-4000:]}"
    )


@dataclass
class Suite:
    workdir: Path
    runs: Path
    rerun_runs: Path


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    first = tmp_path_factory.mktemp("e2e")
    second = tmp_path_factory.mktemp("e2e-rerun")
    env = environment()
    # No --plugins: the package's `helm` entry point must load the plugin by itself.
    run = subprocess.run(helm_run_command(private_local_path(first / "local")), cwd=first, env=env,
                         capture_output=True, text=True, timeout=TIMEOUT)
    check_completed(run, "helm-run")
    # The determinism rerun (fresh output folder, fresh request cache) overlaps with summarize.
    # Its output goes to files: a full pipe would stall it while summarize runs.
    with open(second / "stdout.log", "w+") as out, open(second / "stderr.log", "w+") as err:
        rerun = subprocess.Popen(helm_run_command(private_local_path(second / "local")), cwd=second, env=env,
                                 stdout=out, stderr=err, text=True)
        try:
            # -n 1: summarize renders mako templates in threads, and CPython 3.11.7's ast module can then fail
            # at random with "SystemError: AST constructor recursion depth mismatch" (seen once here).
            summarize = subprocess.run(
                [cli("helm-summarize"), "--suite", "test", "--schema-path", str(SCHEMA), "--schema-validation",
                 "error", "-o", "benchmark_output", "--local-path", str(PROD_ENV), "-n", "1"],
                cwd=first, env=env, capture_output=True, text=True, timeout=TIMEOUT,
            )
            check_completed(summarize, "helm-summarize")
            rerun.wait(timeout=TIMEOUT)
        finally:
            if rerun.poll() is None:
                rerun.kill()
                rerun.wait()
        out.seek(0)
        err.seek(0)
        check_completed(subprocess.CompletedProcess(rerun.args, rerun.returncode, out.read(), err.read()),
                        "helm-run (rerun)")
    return Suite(first, first / "benchmark_output" / "runs" / "test", second / "benchmark_output" / "runs" / "test")


def read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def sample_rows() -> list[dict[str, Any]]:
    with open(METADATA, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def rows_of(subset: str) -> list[dict[str, Any]]:
    return [row for row in sample_rows() if row["file_name"].split("/")[0] == subset]


def run_name(subset: str, model: str) -> str:
    return f"roboreward:subset={subset},data=sample,video=frames,model=baseline_{model}"


def run_stat(run_dir: Path, name: str) -> float:
    """The run-level value of a stat (test split, no perturbation)."""
    matches = [s for s in read_json(run_dir / "stats.json") if s["name"] == {"name": name, "split": "test"}]
    assert len(matches) == 1, f"{name} in {run_dir.name}: {len(matches)} entries"
    return matches[0]["mean"]


def constant_mae(subset: str) -> float:
    rows = rows_of(subset)
    return sum(abs(3 - row["reward"]) for row in rows) / len(rows)


def answers(run_dir: Path) -> dict[str, str]:
    """Instance id -> the completion text, from scenario_state.json."""
    states = read_json(run_dir / "scenario_state.json")["request_states"]
    return {state["instance"]["id"]: state["result"]["completions"][0]["text"] for state in states}


# ---------------------------------------------------------------------------------------------


def test_six_runs(suite: Suite) -> None:
    folders = {p.name for p in suite.runs.iterdir() if p.is_dir() and p.name.startswith("roboreward:")}
    assert folders == {run_name(subset, model) for subset in SUBSETS for model in MODELS}


@pytest.mark.parametrize("subset", SUBSETS)
def test_constant_baseline_mae_matches_the_metadata(suite: Suite, subset: str) -> None:
    run_dir = suite.runs / run_name(subset, "constant-3")
    expected = constant_mae(subset)
    assert run_stat(run_dir, "abs_error") == pytest.approx(expected, abs=1e-12)
    assert run_stat(run_dir, "macro_mae") == pytest.approx(expected, abs=1e-12)
    assert run_stat(run_dir, "num_subsets") == 1
    assert run_stat(run_dir, "failed_request") == 0
    assert run_stat(run_dir, "invalid_output") == 0
    assert run_stat(run_dir, f"mae_subset_{subset}") == pytest.approx(expected, abs=1e-12)
    assert run_stat(run_dir, "num_instances") == len(rows_of(subset))


@pytest.mark.parametrize("subset", SUBSETS)
def test_per_instance_stats_cover_every_row(suite: Suite, subset: str) -> None:
    run_dir = suite.runs / run_name(subset, "constant-3")
    rows = {row["file_name"]: row for row in rows_of(subset)}
    instances = {inst["id"]: inst for inst in read_json(run_dir / "instances.json")}
    per_instance = read_json(run_dir / "per_instance_stats.json")
    ids = [entry["instance_id"] for entry in per_instance]
    assert len(ids) == len(rows) == len(set(ids))
    assert set(ids) == set(instances)
    assert {inst["extra_data"]["source_file"] for inst in instances.values()} == set(rows)
    for entry in per_instance:
        instance_id = entry["instance_id"]
        assert re.fullmatch(r"rr-[0-9a-f]{16}", instance_id), instance_id
        row = rows[instances[instance_id]["extra_data"]["source_file"]]
        assert instances[instance_id]["references"][0]["output"]["text"] == str(row["reward"])
        stats = {s["name"]["name"]: s["mean"] for s in entry["stats"] if "perturbation" not in s["name"]}
        assert stats["abs_error"] == abs(3 - row["reward"])
        assert stats["gold_score"] == row["reward"]
        assert stats["predicted_score"] == 3


@pytest.mark.parametrize("subset", SUBSETS)
def test_uniform_random_baseline_is_deterministic(suite: Suite, subset: str) -> None:
    first = answers(suite.runs / run_name(subset, "uniform-random"))
    second = answers(suite.rerun_runs / run_name(subset, "uniform-random"))
    assert first == second
    assert set(first.values()) <= {f"ANSWER: {k}" for k in range(1, 6)}
    first_mae = run_stat(suite.runs / run_name(subset, "uniform-random"), "abs_error")
    assert first_mae == run_stat(suite.rerun_runs / run_name(subset, "uniform-random"), "abs_error")


def test_uniform_random_baseline_is_not_constant(suite: Suite) -> None:
    all_answers = set()
    for subset in SUBSETS:
        all_answers |= set(answers(suite.runs / run_name(subset, "uniform-random")).values())
    assert len(all_answers) >= 3


def test_leaderboard_table(suite: Suite) -> None:
    tables = read_json(suite.runs / "groups" / "roboreward_sample.json")
    table = next(t for t in tables if t["name"] == "accuracy")
    header = [cell["value"] for cell in table["header"]]
    for display_name in SUBSETS.values():
        assert any(display_name in value for value in header), (display_name, header)
    column_of = {}
    for index, cell in enumerate(table["header"]):
        run_group = cell.get("metadata", {}).get("run_group")
        for subset, display_name in SUBSETS.items():
            if run_group == display_name:
                column_of[subset] = index
    assert set(column_of) == set(SUBSETS)
    rows = {row[0]["value"]: row for row in table["rows"]}
    assert set(rows) == set(MODELS.values())
    for model, display_name in MODELS.items():
        row = rows[display_name]
        maes = []
        for subset, column in column_of.items():
            expected = run_stat(suite.runs / run_name(subset, model), "abs_error")
            if model == "constant-3":
                assert expected == pytest.approx(constant_mae(subset), abs=1e-12)
            assert row[column]["value"] == pytest.approx(expected, abs=1e-12)
            assert row[column]["run_spec_names"] == [run_name(subset, model)]
            maes.append(expected)
        mean_column = header.index("Mean score")
        assert row[mean_column]["value"] == pytest.approx(sum(maes) / len(maes), abs=1e-12)


def test_model_display_names_come_from_prod_env(suite: Suite) -> None:
    models = {m["name"]: m["display_name"] for m in read_json(suite.runs / "schema.json")["models"]}
    assert models["baseline/constant-3"] == "Constant 3 (baseline)"
    assert models["baseline/uniform-random"] == "Uniform random (baseline)"


def test_requests_leak_no_label_and_point_into_benchmark_output(suite: Suite) -> None:
    rows = sample_rows()
    stems = {Path(row["file_name"]).stem for row in rows}
    checks = {row["gpt5_mini_check"] for row in rows}
    tasks = {row["file_name"]: row["task"] for row in rows}
    media_root = (suite.workdir / MEDIA_PREFIX).resolve()
    seen_media = 0
    for run_dir in suite.runs.iterdir():
        if not run_dir.name.startswith("roboreward:"):
            continue
        for state in read_json(run_dir / "scenario_state.json")["request_states"]:
            media_objects = state["request"]["multimodal_prompt"]["media_objects"]
            texts = [m["text"] for m in media_objects if m["content_type"] == "text/plain"]
            assert len(texts) == 1 and media_objects[0]["content_type"] == "text/plain"
            text = texts[0]
            assert text.endswith("\n\nTask: " + tasks[state["instance"]["extra_data"]["source_file"]])
            assert not re.search(r"ANSWER:\s*-?\d", text), "a gold-looking answer in the prompt"
            assert not re.search(r"score_\d|_attempt_|_relabel_|\.mp4", text, re.IGNORECASE)
            assert not any(check in text for check in checks), "gpt5_mini_check text in the prompt"
            assert "gpt5_mini_check" not in text
            assert not any(stem in text for stem in stems)
            for media in media_objects[1:]:
                assert media["content_type"] == "image/jpeg"
                location = media["location"]
                assert os.path.normpath(location).startswith(MEDIA_PREFIX), location
                resolved = (suite.workdir / location).resolve()
                assert resolved.is_file(), location
                assert resolved.is_relative_to(media_root), location
                assert "score_" not in location
                assert not any(subset in location for subset in SUBSETS), location
                assert not any(stem in location for stem in stems), location
                seen_media += 1
    assert seen_media > 0
