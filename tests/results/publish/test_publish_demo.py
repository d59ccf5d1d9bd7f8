"""``roboreward publish`` on the demo suite (the bundled sample): refused without the flag, every reason with it."""

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import yaml

from helm_roboreward.results.publish.eval_results import EVAL_RESULTS_FILE, check_eval_results, check_eval_yaml
from helm_roboreward.results.publish.evidence import suite_facts
from helm_roboreward.results.publish.latex import LEADERBOARD_TEX, PUBLISHED_MARK, leaderboard_tex
from helm_roboreward.results.publish.manifest import MANIFEST_FILE
from tests.helpers.harness import check_completed, cli, helm_environment
from tests.helpers.suite import SUITE, SuiteCopy

SAMPLE_REASONS = ("not comparable with the published leaderboard: its runs read the bundled sample (data=sample), "
                  "not the public split (data=hf); none of the 23 official subsets ran; it includes subsets outside "
                  "the benchmark (sim_arena, sim_kuka, sim_panda)")
SOURCE = "https://huggingface.co/datasets/lab/demo-traces"


def publish(copy: SuiteCopy, out: Path, *extra: str) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([cli("roboreward"), "publish", "--suite", SUITE, "--output-path", str(copy.output), "--out",
                           str(out), "--source-url", SOURCE, *extra], cwd=copy.workdir, env=helm_environment(),
                          capture_output=True, text=True, timeout=300)


def test_the_demo_suite_is_refused_then_published_with_its_reasons(copy_suite: Callable[..., SuiteCopy],
                                                                   tmp_path: Path) -> None:
    copy = copy_suite()
    refused = publish(copy, tmp_path / "refused")
    assert refused.returncode == 2, refused.stderr
    assert refused.stdout.count(SAMPLE_REASONS) == 2 and refused.stdout.count("refused: not comparable") == 2
    assert "2 row(s) refused as not comparable; nothing was written for them" in refused.stderr
    assert not list((tmp_path / "refused").rglob(".eval_results"))
    assert check_eval_yaml((tmp_path / "refused" / "eval.yaml").read_text()) == []
    assert (copy.runs / MANIFEST_FILE).is_file()

    allowed = publish(copy, tmp_path / "allowed", "--allow-not-comparable")
    check_completed(allowed, "roboreward publish --allow-not-comparable")
    files = sorted(str(path.relative_to(tmp_path / "allowed")) for path in (tmp_path / "allowed").rglob("*.yaml"))
    assert files == [f"baseline__constant-3/{EVAL_RESULTS_FILE}", f"baseline__uniform-random/{EVAL_RESULTS_FILE}",
                     "eval.yaml"]
    text = (tmp_path / "allowed" / "baseline__constant-3" / EVAL_RESULTS_FILE).read_text()
    assert check_eval_results(text) == []
    entries = yaml.safe_load(text)
    assert len(entries) == 1 and entries[0]["dataset"] == {"id": "teetone/RoboReward", "task_id": "macro_mae"}
    assert entries[0]["notes"] == ("helm-roboreward, suite demo, deployment baseline/constant-3; official default "
                                   f"settings; {SAMPLE_REASONS}")
    assert entries[0]["source"]["url"] == SOURCE
    assert allowed.stdout.count("listed, not pushed") == 2
    manifest = json.loads((copy.runs / MANIFEST_FILE).read_text())
    assert [model["comparable"] for model in manifest["models"]] == [False, False]
    assert sum(len(files) for files in manifest["videos"].values()) == 58


def test_bad_options_say_what_to_give(copy_suite: Callable[..., SuiteCopy], tmp_path: Path) -> None:
    copy = copy_suite(summarized=False, media="none")
    done = subprocess.run([cli("roboreward"), "publish", "--suite", SUITE, "--output-path", str(copy.output),
                           "--out", str(tmp_path), "--source-url", "traces/"], env=helm_environment(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--source-url 'traces/': give one https:// address of the traces" in done.stderr
    missing = publish(copy, tmp_path, "--hub-repo", "x")
    assert missing.returncode == 2 and "--hub-repo 'x': give MODEL=ORG/NAME" in missing.stderr
    other = subprocess.run([cli("roboreward"), "publish", "--suite", "nope", "--output-path", str(copy.output),
                            "--out", str(tmp_path), "--source-url", SOURCE], env=helm_environment(),
                           capture_output=True, text=True, timeout=120)
    assert other.returncode == 2 and "no suite 'nope'" in other.stderr


def test_the_demo_latex_table_names_why_no_row_is_comparable(copy_suite: Callable[..., SuiteCopy],
                                                             tmp_path: Path) -> None:
    copy = copy_suite(summarized=False, media="none")
    facts = suite_facts(str(copy.output), SUITE, {"baseline/constant-3": "Constant 3"})
    text = leaderboard_tex(facts)
    assert PUBLISHED_MARK not in text  # the published rows are on the public split, not beside the sample
    constant, other = sorted(facts.models, key=lambda model: model.key != "baseline/constant-3")
    cells = []
    for subset in ["sim_arena", "sim_panda", "sim_kuka", None]:  # official order, then the macro mean
        mine = constant.macro_mae if subset is None else constant.subset_mae[subset]
        theirs = other.macro_mae if subset is None else other.subset_mae[subset]
        assert mine is not None and theirs is not None
        cells.append(rf"\textbf{{{mine:.3f}}}" if mine <= theirs else f"{mine:.3f}")
    assert "Constant 3$^{*}$ & " + " & ".join(cells) + r" \\" in text
    assert ("$^{*}$: no row of this suite is comparable with the published leaderboard: its runs read the bundled "
            "sample") in text
    if shutil.which("pdflatex"):
        (tmp_path / LEADERBOARD_TEX).write_text(text)
        done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", LEADERBOARD_TEX],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout[-3000:]
