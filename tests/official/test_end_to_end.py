"""The real CLIs on the bundled sample: helm-run (plugin loaded by its entry point) then helm-summarize.

The suite is the session's shared one (tests/helpers/suite.py, suite ``demo``): ``helm-run --conf-paths
run_specs/roboreward_sample.conf`` in a temporary working directory with ``-o benchmark_output`` (relative), as a
user would, with a private ``--local-path`` whose YAML files link to the repository's ``prod_env/`` ones, then
``helm-summarize`` with the package's schema and ``RoboRewardSummarizer``. This module adds

- a rerun of the uniform-random baseline (fresh output folder, fresh request cache) for the determinism check:
  it computes every answer again instead of reading the first run's cache;
- plain ``helm-summarize`` (HELM's own summarizer, the README's "Reproducing the leaderboard" command) on a copy
  of the suite, so the leaderboard is checked as both summarizers write it.
"""

import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from helm_roboreward.helm_frontend.summarizer import MEAN_DISPLAY, MEAN_HEADER
from tests.helpers.harness import (
    check_completed,
    cli,
    finish_logged,
    helm_environment,
    helm_summarize_command,
    private_local_path,
    read_json,
    reap,
    run_stat,
    start_logged,
    summarized_stat,
)
from tests.helpers.sample import constant_mae, rows_of, sample_rows
from tests.helpers.suite import MEDIA_PREFIX, MODELS, SUBSETS, SUITE, SampleSuite, run_name


@dataclass
class Suite:
    workdir: Path
    runs: Path
    rerun_runs: Path
    plain: "subprocess.Popen[str]"
    """Plain helm-summarize (no summarizer class) on a copy of the suite, started with the rerun."""
    plain_workdir: Path


@pytest.fixture(scope="module")
def suite(sample_suite: SampleSuite, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Suite]:
    rerun = tmp_path_factory.mktemp("e2e-rerun")
    plain = sample_suite.copy(tmp_path_factory.mktemp("e2e-plain"), summarized=False)
    # The rerun (no --plugins either) and the plain summarize run at once; their output goes to files.
    entries = [f"roboreward:subset={subset},data=sample,model=baseline/uniform-random" for subset in SUBSETS]
    command = [cli("helm-run"), "-r", *entries, "--suite", SUITE, "-m", "100", "--local-path",
               str(private_local_path(rerun / "local")), "-o", "benchmark_output"]
    process = start_logged(command, rerun, helm_environment(), rerun / "helm-run.log")
    started = [process]
    try:
        summarize = start_logged(helm_summarize_command(SUITE, summarizer=False), plain.workdir, helm_environment(),
                                 plain.workdir / "helm-summarize.log")
        started.append(summarize)
        code, output = finish_logged(process, rerun / "helm-run.log")
        check_completed(subprocess.CompletedProcess(command, code, output, output), "helm-run (rerun)")
        yield Suite(sample_suite.workdir, sample_suite.runs(), rerun / "benchmark_output" / "runs" / SUITE, summarize,
                    plain.workdir)
    finally:
        if len(started) == 2:
            finish_logged(summarize, plain.workdir / "helm-summarize.log")
        reap(started)


@pytest.fixture(scope="module")
def plain_runs(suite: Suite) -> Path:
    """The suite as plain helm-summarize (HELM's own summarizer, the README's leaderboard command) leaves it."""
    code, output = finish_logged(suite.plain, suite.plain_workdir / "helm-summarize.log")
    check_completed(subprocess.CompletedProcess(suite.plain.args, code, output, output), "plain helm-summarize")
    return suite.plain_workdir / "benchmark_output" / "runs" / SUITE


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
    expected = constant_mae(rows_of(subset))
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


@pytest.mark.parametrize("summarizer, mean_header", [("plain", MEAN_HEADER), ("ours", MEAN_DISPLAY)])
def test_leaderboard_table(suite: Suite, request: pytest.FixtureRequest, summarizer: str, mean_header: str) -> None:
    runs = request.getfixturevalue("plain_runs") if summarizer == "plain" else suite.runs
    tables = read_json(runs / "groups" / "roboreward_sample.json")
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
                assert expected == pytest.approx(constant_mae(rows_of(subset)), abs=1e-12)
            assert row[column]["value"] == pytest.approx(expected, abs=1e-12)
            assert row[column]["run_spec_names"] == [run_name(subset, model)]
            maes.append(expected)
        mean_column = header.index(mean_header)
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


# --- Reward-model metrics on the demo suite (docs/reward_metrics.md) ------------------------------------------

PAIRS = {"sim_arena": (24, 0, 0), "sim_panda": (15, 5, 5), "sim_kuka": (13, 5, 5)}
"""Per subset: same-task preference pairs, ladder videos, clip episodes of the bundled sample."""


@pytest.mark.parametrize("subset", SUBSETS)
def test_constant_baseline_ties_every_pair(suite: Suite, subset: str) -> None:
    """Constant 3 orders nothing: every pair ties (counted half), so each ordering accuracy is exactly 0.5.

    A plain run's metric does not compute these statistics; the summarizer does, from the rows the run wrote.
    """
    run_dir = suite.runs / run_name(subset, "constant-3")
    assert not any(stat["name"]["name"] == "preference_pairs" for stat in read_json(run_dir / "stats.json"))
    run_stat = summarized_stat
    pairs, videos, episodes = PAIRS[subset]
    assert run_stat(run_dir, "preference_pairs") == pairs
    assert run_stat(run_dir, "ladder_videos") == videos
    assert run_stat(run_dir, "clip_episodes") == episodes
    assert run_stat(run_dir, "preference_accuracy") == 0.5
    assert run_stat(run_dir, "success_auroc") == 0.5
    assert run_stat(run_dir, "success_mcc") == 0.0
    if videos:
        assert run_stat(run_dir, "ladder_accuracy") == 0.5 and run_stat(run_dir, "ladder_tau_b") == 0.0
    if episodes:
        assert run_stat(run_dir, "clip_accuracy") == 0.5


def test_reward_model_table_on_the_leaderboard(suite: Suite) -> None:
    tables = read_json(suite.runs / "groups" / "roboreward_sample.json")
    table = next(t for t in tables if t["name"] == "reward_model_all")  # the summarizer's table over all subsets
    header = [cell["value"] for cell in table["header"]]
    rows = {row[0]["value"]: row for row in table["rows"]}
    assert set(rows) == set(MODELS.values())
    column = next(i for i, value in enumerate(header) if value.startswith("Preference acc"))
    assert rows[MODELS["constant-3"]][column]["value"] == 0.5
    random_value = rows[MODELS["uniform-random"]][column]["value"]
    subsets = [summarized_stat(suite.runs / run_name(subset, "uniform-random"), "preference_accuracy")
               for subset in SUBSETS]
    assert random_value == pytest.approx(sum(subsets) / len(subsets), abs=1e-12)  # macro over subsets
    pairs_column = header.index("# preference pairs")
    assert rows[MODELS["constant-3"]][pairs_column]["value"] == sum(pairs for pairs, _, _ in PAIRS.values())
