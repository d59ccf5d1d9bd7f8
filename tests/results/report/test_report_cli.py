"""``roboreward report`` on the demo suite built by the real helm-run, and every bad input.

The suite is the session's shared one (tests/helpers/suite.py: helm-run on the bundled sample with the offline
baselines, in a temporary folder with a private ``--local-path`` whose YAML files link to the repository's
``prod_env/`` ones, then helm-summarize); each bad input is a modified copy of its ``runs/`` as helm-run wrote
them (before the summary).
"""

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image

from helm_roboreward import cli
from helm_roboreward.helm_frontend.scenario import instance_id
from tests.helpers.harness import TIMEOUT, check_completed, helm_environment, helm_summarize_command
from tests.helpers.harness import cli as console_script
from tests.helpers.report_cli import one_line_error, report, run_dirs, runs_of
from tests.helpers.sample import constant_mae, rows_of, sample_rows, subset_of
from tests.helpers.suite import SUITE, SampleSuite, SuiteCopy

SAMPLE_SUBSETS = ["sim_arena", "sim_panda", "sim_kuka"]


@pytest.fixture()
def built(sample_suite: SampleSuite) -> Path:
    """The working folder of the shared demo suite: benchmark_output/ and local/ (read only)."""
    return sample_suite.workdir


@pytest.fixture()
def copy(copy_suite: Callable[..., SuiteCopy]) -> Path:
    """A private copy of the suite's runs as helm-run wrote them (no media, not summarized), to damage."""
    return copy_suite(summarized=False, media="none").output


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def subset_maes_from_stats(output: Path) -> dict[str, dict[str, float]]:
    """``model -> subset -> MAE`` as recorded by helm-run in each run's stats.json."""
    maes: dict[str, dict[str, float]] = {}
    for run in run_dirs(output):
        model = json.loads((run / "run_spec.json").read_text())["adapter_spec"]["model"]
        for stat in json.loads((run / "stats.json").read_text()):
            name = stat["name"]
            if name["name"].startswith("mae_subset_") and name.get("perturbation") is None:
                maes.setdefault(model, {})[name["name"][len("mae_subset_"):]] = stat["sum"] / stat["count"]
    return maes


def test_report_on_the_demo_suite(built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    process = subprocess.run(
        [console_script("roboreward"), "report", "--suite", SUITE, "--out", str(out), "--local-path", "local"],
        cwd=built, capture_output=True, text=True, timeout=TIMEOUT)  # defaults: benchmark_output, 2000 resamples
    assert process.returncode == 0, process.stderr
    text = (out / "report.md").read_text()
    for heading in ("# RoboRewardBench report: suite `demo`", "## Leaderboard", "## Macro MAE with 95% confidence",
                    "## Pairwise comparisons", "## Per-subset MAE", "## Failure modes", "## Confusion matrices",
                    "## Method"):
        assert heading in text
    assert "2000 resamples, seed 0" in text and "Constant 3 (baseline)" in text and "## Warnings" not in text
    assert "too small to separate models" in text  # a handful of episode clusters per sample subset
    assert ("Published leaderboard rows left out: the runs read the bundled sample (data=sample), not the public "
            "test split the published numbers are on.") in text and "## Published leaderboard" not in text
    assert "## Peer metrics" in text and "| Model | MAE macro | MAE micro | Exact macro |" in text
    reward = [row for row in read_csv(out / "reward_model.csv") if row["statistic"] == "preference_accuracy"]
    macro = [row for row in reward if row["subset"] == "macro"]
    assert len(macro) == 2 and all(row["too_small"] == "yes" and 0 < int(row["clusters"]) < 30 for row in macro)
    per_subset = [row for row in reward if row["subset"] in SAMPLE_SUBSETS]
    assert per_subset and all(row["ci_low"] and row["too_small"] == "yes" for row in per_subset)
    assert re.search(r"\| Uniform random \(baseline\) \| parsed \| [0-9.]+ \[[0-9.]+, [0-9.]+\] \(\d+ clusters; too "
                     r"small\) \|", text)
    peers = {row["statistic"]: row for row in read_csv(out / "peer_metrics.csv") if row["model"] ==
             "baseline/constant-3"}
    assert float(peers["exact_micro"]["value"]) == pytest.approx(
        sum(row["reward"] == 3 for row in sample_rows()) / len(sample_rows()), abs=1e-6)
    assert peers["mean_prediction_gold_5"]["value"] == "3.000000"
    recorded = subset_maes_from_stats(built / "benchmark_output")
    rows = read_csv(out / "leaderboard.csv")
    assert list(rows[0])[:5] == ["model", "mean"] + SAMPLE_SUBSETS
    assert {row["model_id"] for row in rows} == set(recorded) == {"baseline/constant-3", "baseline/uniform-random"}
    for row in rows:
        expected = recorded[row["model_id"]]
        for subset in SAMPLE_SUBSETS:
            assert float(row[subset]) == pytest.approx(expected[subset], abs=1e-6)
        assert float(row["mean"]) == pytest.approx(sum(expected.values()) / 3, abs=1e-6)
    # The comparability rule (docs/publishing.md), once per model, in the text, the CSV and the LaTeX table.
    assert "## Comparable with the published leaderboard?" in text
    assert text.count("not comparable with the published leaderboard: its runs read the bundled sample") == 2
    assert {row["comparable"] for row in rows} == {"no"} and all(row["comparability"] for row in rows)
    tex = (out / "leaderboard.tex").read_text(encoding="utf-8")
    assert "\\toprule" in tex and "Constant 3 (baseline)" in tex and "comparable with the published" in tex
    pngs = sorted(path.name for path in out.glob("*.png"))
    assert pngs == ["confusion_baseline_constant-3.png", "confusion_baseline_uniform-random.png", "macro_mae.png",
                    "mae_heatmap.png", "reward_model.png"]
    for name in pngs:
        with Image.open(out / name) as image:
            image.verify()
            assert image.format == "PNG" and image.size[0] > 100
        assert f"]({name})" in text


def test_same_seed_same_report_and_display_name_fallback(copy: Path, tmp_path: Path) -> None:
    assert report(copy, tmp_path / "a", "--seed", "3") == 0
    assert report(copy, tmp_path / "b", "--seed", "3", local=tmp_path / "nowhere") == 0
    first, second = (tmp_path / "a" / "report.md").read_text(), (tmp_path / "b" / "report.md").read_text()
    # The package's own metadata still names the baselines; only the local path differs.
    assert first == second and "seed 3" in first


def test_failed_request_is_counted_and_left_out(copy: Path, tmp_path: Path) -> None:
    run = runs_of(copy, "baseline/constant-3")[0]
    entries = json.loads((run / "per_instance_stats.json").read_text())
    by_id = {instance_id(row["file_name"]): row for row in sample_rows()}
    failed_row = by_id[entries[0]["instance_id"]]
    subset = subset_of(failed_row["file_name"])
    assert f"subset={subset}," in run.name
    entries[0]["stats"] = [dict(stat, sum=1.0, mean=1.0, max=1.0, min=1.0) for stat in entries[0]["stats"]
                           if stat["name"]["name"] == "failed_request"]
    (run / "per_instance_stats.json").write_text(json.dumps(entries))
    # What the constant-3 baseline scores, from the sample's labels, with and without the failed row.
    total = len(sample_rows())
    answered = {name: [row for row in rows_of(name) if row["file_name"] != failed_row["file_name"]]
                for name in SAMPLE_SUBSETS}
    recorded = subset_maes_from_stats(copy)  # before the edit below: what the run recorded
    # stats.json agrees with the edited rows (a disagreement stops the report: tests/results/test_one_truth.py)
    stats = json.loads((run / "stats.json").read_text())
    for stat in stats:
        if stat["name"]["name"] == f"mae_subset_{subset}":
            stat.update(sum=constant_mae(answered[subset], 3), mean=constant_mae(answered[subset], 3))
    (run / "stats.json").write_text(json.dumps(stats))
    assert report(copy, tmp_path / "r") == 0
    text = (tmp_path / "r" / "report.md").read_text()
    assert sum(len(rows) for rows in answered.values()) == total - 1
    macro = sum(constant_mae(rows, 3) for rows in answered.values()) / len(SAMPLE_SUBSETS)
    assert recorded["baseline/constant-3"][subset] == pytest.approx(constant_mae(rows_of(subset), 3), abs=1e-12)
    other = sum(recorded["baseline/uniform-random"].values()) / len(SAMPLE_SUBSETS)
    rank = 1 if round(macro, 12) < round(other, 12) else 2
    # failure modes: counted over all rows
    assert f"| Constant 3 (baseline) | {total} | 1 ({100 / total:.1f}%) |" in text
    # left out of the MAE
    assert f"| {rank} | Constant 3 (baseline) | {macro:.3f} | [" in text and f"| 3 | {total - 1} |" in text
    # the pair compares the rows both have
    assert re.search(rf"\| (yes|no) \| {total - 1} \| 3 \|", text)


def test_published_rows_need_the_hub_split_and_can_be_turned_off(copy: Path, tmp_path: Path) -> None:
    for run in run_dirs(copy):  # claim the hub: the instances still record the sample's revision
        spec = json.loads((run / "run_spec.json").read_text())
        spec["scenario_spec"]["args"]["data"] = "hf"
        (run / "run_spec.json").write_text(json.dumps(spec))
    assert report(copy, tmp_path / "claimed") == 0
    text = (tmp_path / "claimed" / "report.md").read_text()
    assert re.search(r"Published leaderboard rows left out: run \S+ says data=hf but its instances record a copy's "
                     r"revision \(sample-[0-9a-f]+\), not the hub's\.", text)
    assert report(copy, tmp_path / "off", "--no-published") == 0
    off = (tmp_path / "off" / "report.md").read_text()
    assert "Published leaderboard" not in off and "published, not rerun" not in off


def test_model_missing_a_subset(copy: Path, tmp_path: Path) -> None:
    kuka = [run for run in runs_of(copy, "baseline/uniform-random") if "sim_kuka" in run.name][0]
    shutil.rmtree(kuka)
    assert report(copy, tmp_path / "r") == 0
    text = (tmp_path / "r" / "report.md").read_text()
    assert "Uniform random (baseline): no errors for Sim KUKA (sample); mean over 2 of 3 subsets" in text
    row = [r for r in read_csv(tmp_path / "r" / "leaderboard.csv") if r["model_id"] == "baseline/uniform-random"][0]
    assert row["sim_kuka"] == "" and row["missing_subsets"] == "sim_kuka"
    assert float(row["mean"]) == pytest.approx((float(row["sim_arena"]) + float(row["sim_panda"])) / 2, abs=2e-6)


def test_single_model_has_no_pairwise_table(copy: Path, tmp_path: Path) -> None:
    for run in runs_of(copy, "baseline/uniform-random"):
        shutil.rmtree(run)
    assert report(copy, tmp_path / "r") == 0
    text = (tmp_path / "r" / "report.md").read_text()
    assert "Only one model in the suite: there is no pair to compare." in text and "| Model A |" not in text


def test_run_without_stats_is_skipped_with_a_warning(copy: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    broken = run_dirs(copy)[0]
    (broken / "stats.json").unlink()
    (run_dirs(copy)[1] / "per_instance_stats.json").write_text("{not json")
    malformed = [{"instance_id": "x", "stats": [{"name": {"name": "abs_error"}, "count": 1}]}]  # no "sum"
    (run_dirs(copy)[2] / "per_instance_stats.json").write_text(json.dumps(malformed))
    assert report(copy, tmp_path / "r") == 0
    text = (tmp_path / "r" / "report.md").read_text()
    assert "## Warnings" in text and f"run {broken.name} skipped: no stats.json" in text
    assert "per_instance_stats.json is unreadable" in text and "skipped: malformed stats or instances" in text
    assert "warning" in capsys.readouterr().err


def test_foreign_and_unreadable_runs_are_named_in_the_warnings(copy: Path, tmp_path: Path) -> None:
    source = run_dirs(copy)[0]
    foreign = source.parent / "mmlu:subject=anatomy,model=baseline_constant-3"
    shutil.copytree(source, foreign)
    spec = json.loads((foreign / "run_spec.json").read_text())
    spec["scenario_spec"]["class_name"] = "helm.benchmark.scenarios.mmlu_scenario.MMLUScenario"
    (foreign / "run_spec.json").write_text(json.dumps(spec))
    broken = run_dirs(copy)[1]
    (broken / "run_spec.json").write_text("{cut in the mid")
    assert report(copy, tmp_path / "r") == 0
    text = (tmp_path / "r" / "report.md").read_text()
    assert f"1 run(s) of other benchmarks ignored: {foreign.name}" in text
    assert f"run {broken.name} skipped: run_spec.json is unreadable" in text


def test_a_model_whose_subsets_come_from_runs_with_other_settings_gets_a_note(copy: Path, tmp_path: Path) -> None:
    run = runs_of(copy, "baseline/constant-3")[0]
    spec = json.loads((run / "run_spec.json").read_text())
    spec["name"] = spec["name"].replace("video=frames", "video=frames,last_frame=true")
    (run / "run_spec.json").write_text(json.dumps(spec))
    assert report(copy, tmp_path / "r") == 0
    text = (tmp_path / "r" / "report.md").read_text()
    assert re.search(r"baseline/constant-3: its subsets come from runs with different settings \(data=sample,"
                     r"video=frames, data=sample,video=frames,last_frame=true\); its macro MAE mixes them", text), text
    assert "baseline/uniform-random: its subsets come" not in text


def test_no_usable_run_fails(copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for run in run_dirs(copy):
        (run / "per_instance_stats.json").unlink()
    assert report(copy, tmp_path / "r") == 2
    assert "none of the 6 RoboReward runs of suite 'demo' is usable" in one_line_error(capsys)
    assert not (tmp_path / "r").exists()


def with_settings(run: Path, extra: str) -> Path:
    """A copy of ``run`` whose run entry had ``extra`` options too (same model and deployment: one leaderboard cell)."""
    other = run.parent / run.name.replace("data=sample", f"data=sample,{extra}")
    shutil.copytree(run, other)
    spec = json.loads((other / "run_spec.json").read_text())
    spec["name"] = other.name
    (other / "run_spec.json").write_text(json.dumps(spec))
    os.utime(other / "stats.json", (run.stat().st_mtime + 60,) * 2)
    return other


def test_runs_of_one_model_with_other_settings_in_one_subset_are_refused(
        copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """HELM's leaderboard averages them in one cell (its rows are model + deployment); the report took the latest."""
    original = runs_of(copy, "baseline/constant-3")[0]
    newer = with_settings(original, "last_frame=true")
    assert report(copy, tmp_path / "r") == 2
    err = one_line_error(capsys)
    assert original.name in err and newer.name in err and "baseline/constant-3" in err
    assert "averages them in one cell" in err and "another suite" in err and "Nothing was written" in err
    assert not (tmp_path / "r").exists()


def test_runs_of_one_model_through_two_deployments_are_two_rows(copy: Path, tmp_path: Path) -> None:
    """Different deployments are different leaderboard rows (HELM: model_deployment + model); the report agrees."""
    original = runs_of(copy, "baseline/constant-3")[0]
    other = original.parent / f"{original.name},model_deployment=baseline_constant-3-copy"
    shutil.copytree(original, other)
    spec = json.loads((other / "run_spec.json").read_text())
    spec["name"] = other.name
    spec["adapter_spec"]["model_deployment"] = "baseline/constant-3-copy"
    (other / "run_spec.json").write_text(json.dumps(spec))
    assert report(copy, tmp_path / "r") == 0
    rows = {row["model_id"]: row for row in read_csv(tmp_path / "r" / "leaderboard.csv")}
    assert set(rows) == {"baseline/constant-3@baseline/constant-3", "baseline/constant-3@baseline/constant-3-copy",
                         "baseline/uniform-random"}
    assert rows["baseline/constant-3@baseline/constant-3-copy"]["model"] == \
        "Constant 3 (baseline) (baseline/constant-3-copy)"
    assert rows["baseline/constant-3@baseline/constant-3-copy"]["missing_subsets"] != ""  # one subset only there


def test_a_run_folder_deleted_since_the_last_summarize_is_named(copy_suite: Callable[..., SuiteCopy], tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    summarized = copy_suite(summarized=True, media="none")
    gone = runs_of(summarized.output, "baseline/uniform-random")[0]
    shutil.rmtree(gone)
    assert report(summarized.output, tmp_path / "r") == 2
    err = one_line_error(capsys)
    assert gone.name in err and "are on the leaderboard" in err and "helm-summarize again" in err
    assert not (tmp_path / "r").exists()


KEPT_WHEN_ALL_FAILED = {"failed_request", "num_frames", "media_bytes", "num_instances", "eval_coverage"}
"""What a failed=skip run whose every request failed records (tests/official/test_metrics.py)."""


def every_request_failed(run: Path) -> None:
    """Rewrite a run as failed=skip records it when every request failed: no error, no score, no ordering stat."""
    def failed_only(stats: list[dict]) -> list[dict]:
        kept = [stat for stat in stats if stat["name"]["name"] in KEPT_WHEN_ALL_FAILED]
        return [dict(stat, sum=stat["count"], mean=1.0, min=1.0, max=1.0)
                if stat["name"]["name"] == "failed_request" else stat for stat in kept]

    entries = json.loads((run / "per_instance_stats.json").read_text())
    (run / "per_instance_stats.json").write_text(json.dumps([dict(e, stats=failed_only(e["stats"])) for e in entries]))
    (run / "stats.json").write_text(json.dumps(failed_only(json.loads((run / "stats.json").read_text()))))


def test_a_model_whose_every_request_failed_is_reported_as_such(copy_suite: Callable[..., SuiteCopy],
                                                                tmp_path: Path) -> None:
    """failed=skip and every request failed: the leaderboard has no value for it; the report says so in its row
    and reports the other model (it used to stop for every model, asking for helm-summarize again)."""
    suite = copy_suite(summarized=False, media="link")
    for run in runs_of(suite.output, "baseline/uniform-random"):
        every_request_failed(run)
    process = subprocess.run(helm_summarize_command(SUITE), cwd=suite.workdir, env=helm_environment(),
                             capture_output=True, text=True, timeout=TIMEOUT)
    check_completed(process, "helm-summarize")
    assert report(suite.output, tmp_path / "r") == 0
    text = (tmp_path / "r" / "report.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| Uniform random (baseline) |"))
    assert "every request failed" in row, row
    rows = {r["model_id"]: r for r in read_csv(tmp_path / "r" / "leaderboard.csv")}
    assert rows["baseline/uniform-random"]["mean"] == "" and \
        rows["baseline/uniform-random"]["failed_subsets"] == " ".join(SAMPLE_SUBSETS)
    expected = {subset: constant_mae(rows_of(subset), 3) for subset in SAMPLE_SUBSETS}
    assert [float(rows["baseline/constant-3"][s]) for s in SAMPLE_SUBSETS] == pytest.approx(
        [expected[s] for s in SAMPLE_SUBSETS], abs=1e-6)


def test_missing_suite_lists_the_available_ones(copy: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["report", "--suite", "nope", "--output-path", str(copy), "--out", str(tmp_path / "r")]) == 2
    assert "no suite 'nope'" in (err := one_line_error(capsys)) and "available suites: demo" in err
    assert cli.main(["report", "--suite", "x", "--output-path", str(tmp_path / "none"), "--out", "r"]) == 2
    assert "does not exist" in one_line_error(capsys)


def test_suite_without_roboreward_runs_names_the_runs_found(copy: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    for run in run_dirs(copy):
        spec = json.loads((run / "run_spec.json").read_text())
        spec["scenario_spec"]["class_name"] = "helm.benchmark.scenarios.mmlu_scenario.MMLUScenario"
        (run / "run_spec.json").write_text(json.dumps(spec))
    assert report(copy, tmp_path / "r") == 2
    err = one_line_error(capsys)
    assert "suite 'demo' has no RoboReward runs" in err and run_dirs(copy)[0].name in err
    (copy / "runs" / "empty").mkdir()
    assert cli.main(["report", "--suite", "empty", "--output-path", str(copy), "--out", str(tmp_path / "r")]) == 2
    assert "runs found: none" in one_line_error(capsys)


def test_matplotlib_missing(copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` raise ImportError
    assert report(copy, tmp_path / "r") == 2
    assert "pip install '.[report]'" in one_line_error(capsys)


@pytest.mark.parametrize("option", [["--confidence", "1.5"], ["--resamples", "0"], ["--seed", "-1"]])
def test_bad_options(copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], option: list[str]) -> None:
    assert report(copy, tmp_path / "r", *option) == 2
    assert option[0] in one_line_error(capsys)


def all_subsets_run(copy: Path, parts: list[Path]) -> Path:
    """A ``subset=all`` run of the model of ``parts`` holding their rows (same settings)."""
    merged = copy / "runs" / SUITE / "roboreward:subset=all,data=sample,video=frames,model=baseline_constant-3"
    merged.mkdir()
    spec = json.loads((parts[0] / "run_spec.json").read_text())
    spec["scenario_spec"]["args"]["subset"] = "all"
    spec["name"] = merged.name
    (merged / "run_spec.json").write_text(json.dumps(spec))

    def concatenated(name: str) -> list[dict]:
        return [item for part in parts for item in json.loads((part / name).read_text())]

    for name in ("stats.json", "per_instance_stats.json"):
        (merged / name).write_text(json.dumps(concatenated(name)))
    states = [state for part in parts
              for state in json.loads((part / "scenario_state.json").read_text())["request_states"]]
    (merged / "scenario_state.json").write_text(json.dumps({"request_states": states}))
    return merged


def test_overlapping_runs_with_the_same_settings_use_the_latest(copy: Path, tmp_path: Path) -> None:
    parts = runs_of(copy, "baseline/constant-3")
    merged = all_subsets_run(copy, parts)
    os.utime(merged / "stats.json", (parts[0].stat().st_mtime + 60,) * 2)
    assert report(copy, tmp_path / "r") == 0
    text = (tmp_path / "r" / "report.md").read_text()
    assert f"runs {merged.name} and {parts[0].name} both cover" in text
    assert f"with the same settings; the latest ({merged.name}) is used" in text


def test_a_run_over_all_subsets_contributes_each_subset(copy: Path, tmp_path: Path) -> None:
    parts = runs_of(copy, "baseline/constant-3")
    all_subsets_run(copy, parts)
    for part in parts:
        shutil.rmtree(part)
    assert report(copy, tmp_path / "r") == 0
    row = [r for r in read_csv(tmp_path / "r" / "leaderboard.csv") if r["model_id"] == "baseline/constant-3"][0]
    assert [row[subset] for subset in SAMPLE_SUBSETS] == [f"{constant_mae(rows_of(subset), 3):.6f}"
                                                          for subset in SAMPLE_SUBSETS]
    assert "## Warnings" not in (tmp_path / "r" / "report.md").read_text()  # stats.json agrees per subset
