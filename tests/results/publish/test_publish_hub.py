"""Publishing a suite that read a copy of the split from the loopback hub: comparable rows, the manifest, the Hub's
eval results, pull requests, the LaTeX table.

One real ``helm-run`` (module fixture) reads all 23 official subsets (a copy made of sample videos, served as
``teetone/RoboReward`` by the fake hub) for two baselines: ``constant-3`` with the official settings and
``uniform-random`` with ``fps=2``. The rule is given the copy's own metadata hash as the published one (a hash
cannot be forged), so the official row is comparable and the other one is not, for its setting alone.
"""

import argparse
import hashlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from helm_roboreward.protocol.rules import DATASET_ID, OFFICIAL_SUBSET_IDS
from helm_roboreward.results.publish.comparability import PUBLISHED_METADATA_SHA256
from helm_roboreward.results.publish.eval_results import EVAL_RESULTS_FILE, MACRO_TASK, check_eval_results
from helm_roboreward.results.publish.evidence import SuiteFacts, suite_facts
from helm_roboreward.results.publish.hub_prs import open_pull_request
from helm_roboreward.results.publish.latex import LEADERBOARD_TEX, PUBLISHED_MARK, write_leaderboard_tex
from helm_roboreward.results.publish.manifest import MANIFEST_FILE, build_manifest, write_manifest
from helm_roboreward.results.publish.publish_command import add_publish_options, run_publish
from tests.helpers.fakes.hf_hub import FakeHfHub, FakeRepo, make_commit_sha
from tests.helpers.harness import TIMEOUT, check_completed, cli, helm_environment, private_local_path
from tests.helpers.suite import make_local_copy

COMMIT = make_commit_sha("publish copy")
SUITE = "published"
WEIGHTS_REPO = "lab/constant-3-weights"
OFFICIAL_MODEL, ODD_MODEL = "baseline/constant-3", "baseline/uniform-random"
PDFLATEX_MISSING = "pdflatex not found: install Debian's texlive-latex-base and texlive-latex-recommended"


@dataclass
class HubSuite:
    workdir: Path
    output: Path
    cache: Path
    copy: Path
    metadata_sha256: str
    hub: FakeHfHub

    def facts(self, published: str) -> SuiteFacts:
        return suite_facts(str(self.output), SUITE, {OFFICIAL_MODEL: "Constant 3", ODD_MODEL: "Uniform & random"},
                           published, str(self.cache))


@pytest.fixture(scope="module")
def hub_suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubSuite]:
    root = tmp_path_factory.mktemp("publish-hub")
    copy, weights, workdir = root / "copy", root / "weights", root / "work"
    make_local_copy(copy, OFFICIAL_SUBSET_IDS)
    weights.mkdir()
    (weights / "README.md").write_text("weights\n")
    workdir.mkdir()
    repos = [FakeRepo(DATASET_ID, commits={COMMIT: copy}, refs={"main": COMMIT}),
             FakeRepo(WEIGHTS_REPO, commits={make_commit_sha("weights"): weights},
                      refs={"main": make_commit_sha("weights")}, repo_type="model")]
    with FakeHfHub(repos, upload_root=root / "uploads") as hub:
        env = {**helm_environment(), "HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(root / "cache"),
               "HF_HUB_OFFLINE": "0"}
        entries = [f"roboreward:subset=all,revision={COMMIT},model={OFFICIAL_MODEL}",
                   f"roboreward:subset=all,revision={COMMIT},fps=2,model={ODD_MODEL}"]
        command = [cli("helm-run"), "-r", *entries, "--suite", SUITE, "-m", "1000", "--local-path",
                   str(private_local_path(workdir / "local")), "-o", "benchmark_output"]
        done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=TIMEOUT)
        check_completed(done, "helm-run on the hub copy")
        sha = hashlib.sha256((copy / "test" / "metadata.jsonl").read_bytes()).hexdigest()
        yield HubSuite(workdir, workdir / "benchmark_output", root / "cache", copy, sha, hub)


def test_given_the_copys_own_hash_the_official_row_is_comparable_and_the_other_says_why(hub_suite: HubSuite) -> None:
    facts = hub_suite.facts(hub_suite.metadata_sha256)
    verdicts = facts.verdicts()
    assert verdicts[OFFICIAL_MODEL].comparable, verdicts[OFFICIAL_MODEL].reasons
    assert verdicts[ODD_MODEL].reasons == ("non-default settings: frames_per_second=2.0 (official: 1.0)",)
    official = next(model for model in facts.models if model.key == OFFICIAL_MODEL)
    assert list(official.subset_mae) == OFFICIAL_SUBSET_IDS and official.macro_mae is not None


def test_with_the_published_hash_a_copy_is_not_comparable(hub_suite: HubSuite) -> None:
    verdict = hub_suite.facts(PUBLISHED_METADATA_SHA256).verdicts()[OFFICIAL_MODEL]
    assert verdict.reasons == (f"test/metadata.jsonl at revision {COMMIT} has SHA-256 "
                               f"{hub_suite.metadata_sha256[:12]}..., not the published "
                               f"{PUBLISHED_METADATA_SHA256[:12]}...",)


def test_an_unknown_metadata_hash_is_a_reason_with_the_command_that_fetches_it(hub_suite: HubSuite,
                                                                                tmp_path: Path) -> None:
    facts = suite_facts(str(hub_suite.output), SUITE, None, hub_suite.metadata_sha256, str(tmp_path / "empty-cache"))
    reason = facts.verdicts()[OFFICIAL_MODEL].reasons[0]
    assert reason.startswith(f"the SHA-256 of test/metadata.jsonl at revision {COMMIT} is unknown (no test/"
                             "metadata.jsonl for that commit in the Hugging Face cache; fetch it with `hf download "
                             f"{DATASET_ID} test/metadata.jsonl --repo-type dataset --revision {COMMIT}`)")


def test_the_manifest_fingerprints_data_code_models_and_every_video(hub_suite: HubSuite) -> None:
    manifest = build_manifest(hub_suite.facts(hub_suite.metadata_sha256))
    assert manifest["data"] == [{"data": "hf", "revision": COMMIT, "metadata_sha256": hub_suite.metadata_sha256,
                                 "metadata_problem": None, "rows": 3 * len(OFFICIAL_SUBSET_IDS)}]
    copy_videos = {str(path.relative_to(hub_suite.copy / "test")): hashlib.sha256(path.read_bytes()).hexdigest()
                   for path in (hub_suite.copy / "test").rglob("*.mp4")}
    assert manifest["videos"] == {COMMIT: dict(sorted(copy_videos.items()))}
    assert manifest["package"]["version"] and manifest["environment"]["packages"]["crfm-helm"]
    models = {model["key"]: model for model in manifest["models"]}
    assert models[OFFICIAL_MODEL]["comparable"] and not models[ODD_MODEL]["comparable"]
    run = models[ODD_MODEL]["runs"][0]
    assert run["scenario_args"]["frames_per_second"] == 2.0 and run["adapter"]["temperature"] == 0.0
    assert run["rows_in_run"] == run["rows_evaluated"] == 3 * len(OFFICIAL_SUBSET_IDS)


def publish_args(out: Path, output: Path, *extra: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_publish_options(parser)
    return parser.parse_args(["--suite", SUITE, "--output-path", str(output), "--out", str(out), "--source-url",
                              "https://huggingface.co/datasets/lab/traces", *extra])


def test_publish_writes_the_comparable_row_refuses_the_other_and_opens_a_pull_request(
        hub_suite: HubSuite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", hub_suite.hub.url)
    suite_copy = tmp_path / "benchmark_output" / "runs" / SUITE
    shutil.copytree(hub_suite.output / "runs" / SUITE, suite_copy)  # publish writes the manifest beside the runs
    args = publish_args(tmp_path / "out", tmp_path / "benchmark_output", "--open-pr", "--hf-cache",
                        str(hub_suite.cache), "--hub-repo", f"{OFFICIAL_MODEL}={WEIGHTS_REPO}")
    before = len(hub_suite.hub.pull_requests)
    assert run_publish(args, published_sha256=hub_suite.metadata_sha256) == 2
    output = capsys.readouterr()
    assert "refused: not comparable" in output.out and "1 row(s) refused" in output.err
    written = tmp_path / "out" / "lab__constant-3-weights" / EVAL_RESULTS_FILE
    assert sorted(str(path.relative_to(tmp_path / "out")) for path in (tmp_path / "out").rglob("*.yaml")) == [
        "eval.yaml", f"lab__constant-3-weights/{EVAL_RESULTS_FILE}"]
    text = written.read_text()
    assert check_eval_results(text) == []
    entries = yaml.safe_load(text)
    assert entries[0]["dataset"] == {"id": DATASET_ID, "task_id": MACRO_TASK, "revision": COMMIT}
    assert entries[0]["notes"].endswith("official default settings; comparable with the published leaderboard")
    pulls = hub_suite.hub.pull_requests[before:]
    assert [(pull.repo_type, pull.repo_id, pull.target) for pull in pulls] == [("model", WEIGHTS_REPO, "main")]
    repo = hub_suite.hub.repos[("model", WEIGHTS_REPO)]
    assert (repo.files(pulls[0].commit)[EVAL_RESULTS_FILE]).read_text() == text
    assert EVAL_RESULTS_FILE not in repo.files(repo.refs["main"])  # a pull request, not a push
    assert f"pull request on {WEIGHTS_REPO}: {hub_suite.hub.url}/{WEIGHTS_REPO}/discussions/" in output.out
    manifest = json.loads((suite_copy / MANIFEST_FILE).read_text())
    assert manifest["suite"] == SUITE and len(manifest["models"]) == 2


def test_allowed_rows_say_why_and_a_model_without_a_hub_repo_is_listed_not_pushed(
        hub_suite: HubSuite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", hub_suite.hub.url)
    shutil.copytree(hub_suite.output / "runs" / SUITE, tmp_path / "benchmark_output" / "runs" / SUITE)
    before = len(hub_suite.hub.pull_requests)
    args = publish_args(tmp_path / "out", tmp_path / "benchmark_output", "--open-pr", "--allow-not-comparable",
                        "--hf-cache", str(hub_suite.cache))
    assert run_publish(args, published_sha256=hub_suite.metadata_sha256) == 0
    assert hub_suite.hub.pull_requests[before:] == []
    assert capsys.readouterr().out.count("listed, not pushed") == 2
    odd = yaml.safe_load((tmp_path / "out" / "baseline__uniform-random" / EVAL_RESULTS_FILE).read_text())
    assert odd[0]["notes"].endswith("non-default settings: frames_per_second=2.0 (official: 1.0); not comparable "
                                    "with the published leaderboard: non-default settings: frames_per_second=2.0 "
                                    "(official: 1.0)")


def test_a_pull_request_on_a_missing_repo_says_what_to_check(hub_suite: HubSuite) -> None:
    pull = open_pull_request("lab/no-such-model", "- {}\n", "x", endpoint=hub_suite.hub.url)
    assert pull.url is None and pull.error is not None
    assert pull.error.startswith(f"no model repo lab/no-such-model on {hub_suite.hub.url} (or no access to it)")


def test_the_latex_table_shows_the_published_rows_beside_a_public_split_suite(hub_suite: HubSuite,
                                                                              tmp_path: Path) -> None:
    path = write_leaderboard_tex(hub_suite.facts(hub_suite.metadata_sha256), str(tmp_path))
    text = Path(path).read_text()
    assert text.count(PUBLISHED_MARK) >= 25 + 1  # 25 published rows and the caption's legend
    assert r"Uniform \& random$^{*}$" in text and "Constant 3 &" in text
    assert rf"Suite \texttt{{{SUITE}}}, dataset revision \texttt{{{COMMIT}}}" in text
    assert ("$^{*}$: not comparable with the published leaderboard. Uniform \\& random: non-default settings: "
            "frames\\_per\\_second=2.0 (official: 1.0).") in text
    assert r"RoboReward 8B$^{\dagger}$ & \textbf{0.768} & \textbf{0.701} & \textbf{0.340} &" in text
    header = next(line for line in text.splitlines() if line.startswith("Model &"))
    assert header.count(r"\rotatebox") == len(OFFICIAL_SUBSET_IDS) + 1
    if shutil.which("pdflatex") is None:
        pytest.skip(PDFLATEX_MISSING)
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", LEADERBOARD_TEX], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:]
    assert (tmp_path / "leaderboard.pdf").stat().st_size > 1000


def test_the_manifest_is_written_beside_the_runs(hub_suite: HubSuite, tmp_path: Path) -> None:
    shutil.copytree(hub_suite.output / "runs" / SUITE, tmp_path / "runs" / SUITE)
    facts = suite_facts(str(tmp_path), SUITE, None, hub_suite.metadata_sha256, str(hub_suite.cache))
    path = write_manifest(facts)
    assert path == str(tmp_path / "runs" / SUITE / MANIFEST_FILE)
    assert json.loads(Path(path).read_text())["benchmark"]["published_metadata_sha256"] == \
        hub_suite.metadata_sha256
