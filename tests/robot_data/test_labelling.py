"""``roboreward label`` for real: a LeRobot v3.0 dataset (AV1, shared mp4s) scored through the reward API.

Prefix mode with ``baseline/constant-3`` (every output file), episode mode with ``baseline/uniform-random`` on a
selection, the vLLM client against a loopback server (what reaches the model, and the request cache shared with
``helm-run``: the path earlier versions took), and the tiny random Qwen3-VL through the in-process transformers
client. Each checks that the placeholder reward reaches no model, that no gold-based statistic is reported, and
that the source dataset is untouched.
"""

import hashlib
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from PIL import Image

from helm_roboreward.protocol.rules import build_prompt
from helm_roboreward.robot_data.importing import ImportRequest
from helm_roboreward.robot_data.label_outputs import EPISODE_COLUMNS
from helm_roboreward.robot_data.labelling import LabellingError, LabelRequest, entry_options, label_episodes
from tests.helpers.fakes import FakeModelServer
from tests.helpers.fakes.server import media_parts, without_media_payloads
from tests.helpers.harness import (
    TRANSFORMERS_ENVIRONMENT,
    check_completed,
    cli,
    helm_environment,
    private_local_path,
    transformers_local_path,
)
from tests.helpers.lerobot_datasets import (
    CAMERA,
    default_episodes,
    lerobot_python,
    read_progress_with_lerobot,
    write_v3,
)

TIMEOUT = 600


@dataclass
class Labelled:
    source: Path
    out: Path
    output: str
    digests_before: dict[str, str]


def digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file()}


def label(source: Path, out: Path, local: Path, *options: str, env: dict[str, str] | None = None) -> str:
    process = subprocess.run([cli("roboreward"), "label", str(source), "--out", str(out), "--local-path", str(local),
                              "--quiet", *options], env=env or helm_environment(), capture_output=True, text=True,
                             timeout=TIMEOUT)
    check_completed(process, "roboreward label")
    return process.stdout


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_v3(tmp_path_factory.mktemp("lerobot") / "kitchen_robot", default_episodes(4), episodes_per_file=3)


@pytest.fixture(scope="module")
def prefix_run(dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Labelled:
    work = tmp_path_factory.mktemp("label_prefix")
    before = digests(dataset)
    output = label(dataset, work / "out", private_local_path(work / "local"), "--model", "baseline/constant-3",
                   "--mode", "prefix", "--anchors", "3", "--low-score", "3")
    return Labelled(dataset, work / "out", output, before)


def settings_of(out: Path) -> dict[str, Any]:
    return dict(json.loads(pq.read_schema(out / "episode_rewards.parquet").metadata[b"roboreward"]))


def test_episode_rewards(prefix_run: Labelled) -> None:
    table = pq.read_table(prefix_run.out / "episode_rewards.parquet")
    assert tuple(table.column_names) == EPISODE_COLUMNS
    rows = table.to_pylist()
    assert [row["episode_index"] for row in rows] == [0, 1, 2, 3]
    assert {(row["score"], row["progress"], row["success"], row["raw_output"], row["prompt_version"],
             row["camera_key"], row["model"], row["request_failed"]) for row in rows} == {
        (3.0, 0.5, False, "ANSWER: 3", "1", CAMERA, "baseline/constant-3", False)}
    assert rows[1]["task"] == "open the drawer"
    settings = json.loads(table.schema.metadata[b"roboreward"])
    assert settings["model"] == "baseline/constant-3" and settings["deployment"] == "baseline/constant-3"
    assert settings["reward_model"]["client"] == "helm_roboreward.helm_frontend.clients.baselines.ConstantScoreClient"
    assert settings["reward_model"]["video"] == "frames" and settings["reward_model"]["prompt_version"] == "1"
    assert settings["mode"] == "prefix" and settings["anchors"] == 3 and settings["subset"] == "kitchen_robot"
    # the media where helm-run -o benchmark_output put them in the working folder (media locations, cache keys)
    assert settings["media_dir"] == "benchmark_output/scenarios/roboreward"
    assert settings["requests"] == 12 and settings["failed_requests"] == 0
    assert list((prefix_run.out / "work/benchmark_output/scenarios/roboreward/frames").iterdir())
    assert table.schema.metadata[b"model"] == b"baseline/constant-3"
    assert "12 requests, 0 answered from the request cache" in prefix_run.output


def test_progress_follows_lerobots_schema(prefix_run: Labelled) -> None:
    table = pq.read_table(prefix_run.out / "roboreward_progress.parquet")
    assert [(field.name, str(field.type)) for field in table.schema] == [
        ("index", "int64"), ("episode_index", "int64"), ("frame_index", "int64"), ("progress_sparse", "float")]
    assert table.schema.metadata == {b"reward_model_path": b"baseline/constant-3"}
    columns = table.to_pydict()
    assert columns["index"] == list(range(8 + 9 + 10 + 11))  # one row per frame, sorted by the dataset index
    assert columns["frame_index"][8:10] == [0, 1] and columns["episode_index"][8:10] == [1, 1]
    assert set(columns["progress_sparse"]) == {0.5}


def test_plots_contact_sheet_and_low_scores(prefix_run: Labelled) -> None:
    assert Image.open(prefix_run.out / "progress.png").size[0] > 300
    sheet = Image.open(prefix_run.out / "last_frames.png")
    assert sheet.size == (4 * 160, 120 + 18)
    low = json.loads((prefix_run.out / "low_score_episodes.json").read_text())
    assert low["threshold"] == 3 and low["count"] == 4 and low["episodes_option"] == "0:4"
    assert "4 episode(s) scored <= 3" in prefix_run.output


def test_the_placeholder_is_reported_nowhere(prefix_run: Labelled) -> None:
    provenance = json.loads((prefix_run.out / "work/copy/roboreward_import.json").read_text())
    assert provenance["labels"]["source"] == "placeholder"  # the work copy says its rewards are placeholders
    assert "mae" not in prefix_run.output.lower() and "error" not in prefix_run.output.lower()


def test_the_source_dataset_is_untouched(prefix_run: Labelled) -> None:
    assert digests(prefix_run.source) == prefix_run.digests_before


@pytest.mark.skipif(lerobot_python() is None, reason="set ROBOREWARD_LEROBOT_PYTHON to a venv with lerobot")
def test_lerobots_rabc_reader_loads_the_progress(prefix_run: Labelled) -> None:
    python = lerobot_python()
    assert python is not None
    result = read_progress_with_lerobot(python, prefix_run.out / "roboreward_progress.parquet", [0, 9, 37])
    assert result["frames"] == 38 and result["lookup"] == {"0": 0.5, "9": 0.5, "37": 0.5}
    assert len(result["weights"]) == 3


def test_uniform_random_in_episode_mode_on_a_selection(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    label(dataset, out, private_local_path(tmp_path / "local"), "--model", "baseline/uniform-random",
          "--episodes", "1,3")
    rows = pq.read_table(out / "episode_rewards.parquet").to_pylist()
    assert [row["episode_index"] for row in rows] == [1, 3]
    for row in rows:
        assert row["score"] in {1.0, 2.0, 3.0, 4.0, 5.0} and row["raw_output"] == f"ANSWER: {int(row['score'])}"
        assert row["progress"] == (row["score"] - 1) / 4 and row["success"] == (row["score"] == 5)
    assert not (out / "roboreward_progress.parquet").exists() and (out / "last_frames.png").exists()
    assert settings_of(out)["requests"] == 2


def test_out_inside_the_dataset_and_bad_entries_are_refused(dataset: Path) -> None:
    request = LabelRequest(dataset=ImportRequest(root=str(dataset), out="", source={"kind": "local"}),
                           out=str(dataset / "labels"), model="baseline/constant-3", progress=False)
    with pytest.raises(LabellingError, match="lies inside the dataset .*never modified"):
        label_episodes(request)
    with pytest.raises(LabellingError, match="--mode prefix needs --anchors K with K >= 2"):
        label_episodes(LabelRequest(**{**request.__dict__, "mode": "prefix", "anchors": 1}))
    with pytest.raises(LabellingError, match="'model' must not be set .*use --model and --model-deployment"):
        entry_options("video=frames,model=x")
    with pytest.raises(LabellingError, match="--entry-options 'video': .*must be key=value"):
        entry_options("video")
    with pytest.raises(LabellingError, match="-n/--threads 0: give a whole number >= 1"):
        label_episodes(LabelRequest(**{**request.__dict__, "out": str(dataset.parent / "o"), "threads": 0}))
    assert entry_options(" video=frames, max_frames=16 ") == {"video": "frames", "max_frames": "16"}


def test_what_reaches_the_model_and_the_cache_helm_run_wrote(dataset: Path, tmp_path: Path) -> None:
    """The vLLM client on a loopback server: label's requests are helm-run's (earlier versions ran helm-run on the
    working copy), and a label run reuses a request cache helm-run wrote: it sends nothing again."""
    model = ["--model", "teetone/roboreward-8b", "--model-deployment", "vllm/roboreward-8b"]
    tasks = {build_prompt(spec.task) for spec in default_episodes(4)}
    with FakeModelServer() as fake:
        env = helm_environment(fake)
        out = tmp_path / "out"
        first = label(dataset, out, private_local_path(tmp_path / "local", fake), *model, "--mode", "prefix",
                      "--anchors", "2", env=env)
        assert "8 requests, 0 answered from the request cache" in first
        ours = fake.requests_to("chat")
        assert len(ours) == 8
        for recorded in ours:
            parts = media_parts(recorded)
            assert parts[0].text in tasks and [part.kind for part in parts[1:]] == ["video"]
            text = without_media_payloads(recorded)
            assert "episode_" not in text and "placeholder" not in text and "upto" not in text  # no file name
        # the command earlier versions ran: helm-run on the working copy, in the working folder, its own cache
        fake.clear()
        helm_local = private_local_path(tmp_path / "helm-local", fake)
        entry = (f"roboreward:data={out / 'work' / 'copy'},subset=kitchen_robot,model=teetone/roboreward-8b,"
                 "model_deployment=vllm/roboreward-8b")
        done = subprocess.run([cli("helm-run"), "-r", entry, "--suite", "roboreward-label", "-m", "8", "-n", "2",
                               "--local-path", str(helm_local), "-o", "benchmark_output"], cwd=out / "work", env=env,
                              capture_output=True, text=True, timeout=TIMEOUT)
        check_completed(done, "helm-run on the working copy")
        theirs = fake.requests_to("chat")
        assert sorted(recorded.raw for recorded in theirs) == sorted(recorded.raw for recorded in ours)
        fake.clear()
        again = label(dataset, out, helm_local, *model, "--mode", "prefix", "--anchors", "2", env=env)
        assert fake.requests_to("chat") == [] and "8 requests, 8 answered from the request cache" in again
    assert settings_of(out)["answers_from_cache"] == 8


@pytest.mark.slow
def test_the_tiny_qwen3vl_labels_through_the_transformers_client(dataset: Path, tiny_qwen3vl: Path,
                                                                 tmp_path: Path) -> None:
    local = transformers_local_path(tmp_path / "local", "transformers/tiny-qwen3-vl", tiny_qwen3vl)
    out = tmp_path / "out"
    output = label(dataset, out, local, "--model", "teetone/roboreward-8b", "--model-deployment",
                   "transformers/tiny-qwen3-vl", "--mode", "prefix", "--anchors", "2", "-n", "1",
                   env={**helm_environment(), **TRANSFORMERS_ENVIRONMENT})
    assert "4 episodes" in output
    rows = pq.read_table(out / "episode_rewards.parquet").to_pylist()
    assert len(rows) == 4 and all(row["model"] == "teetone/roboreward-8b" for row in rows)
    assert all(len(row["raw_output"]) == 6 and not row["request_failed"] for row in rows)  # the tiny model's answers
    assert settings_of(out)["reward_model"]["video"] == "native"  # the mp4 itself, as the benchmark sends it
    progress = pq.read_table(out / "roboreward_progress.parquet")
    assert progress.num_rows == 8 + 9 + 10 + 11
