"""Inspect and helm-run give the same numbers and send the same requests (issue 38, "Same numbers as HELM").

One ``helm-run`` scores the bundled sample (``subset=all``, ``data=sample``) with both offline baselines and with two
models against the loopback fake: Llama 4 Scout (frames, this package's vLLM client) and RoboReward 8B (the mp4, the
same client). Then ``inspect eval helm_roboreward/roboreward_bench`` scores the same rows: the baselines and RoboReward
8B through the ``roboreward`` provider, Llama 4 Scout through Inspect's own ``openai-api`` provider. Per sample, the
scores equal helm-run's per-instance stats (the constant baseline's macro MAE is 1.289); the fake received the same
prompt text and the same image bytes from both; RoboReward 8B's request bodies are byte-identical. The log reads back
into the rows the HELM-suite reader gives.
"""

import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai")
pytestmark = pytest.mark.slow  # one helm-run and one inspect eval of four models: about 90 s on a loaded 2-core machine

from inspect_ai.log import EvalLog, read_eval_log  # noqa: E402

from helm_roboreward.helm_frontend.run_rows import instance_rows  # noqa: E402
from helm_roboreward.inspect_frontend.log_rows import read_inspect_log  # noqa: E402
from tests.helpers.fakes import CHAT, FakeModelServer, Recorded, Reply, media_parts  # noqa: E402
from tests.helpers.harness import (  # noqa: E402
    TIMEOUT,
    VLLM_KEY,
    check_completed,
    cli,
    helm_environment,
    helm_run_command,
    private_local_path,
    read_json,
)

LLAMA, LLAMA_SERVED = "meta/llama-4-scout-17b-16e-instruct", "meta-llama/Llama-4-Scout-17B-16E-Instruct"
ROBOREWARD_SERVED = "teetone/RoboReward-8B"
ENTRIES = {  # key -> (helm-run model (and deployment), Inspect model)
    "constant": ("baseline/constant-3", "roboreward/baseline/constant-3"),
    "random": ("baseline/uniform-random", "roboreward/baseline/uniform-random"),
    "llama": (LLAMA, f"openai-api/vllm/{LLAMA_SERVED}"),
    "roboreward": ("teetone/roboreward-8b,model_deployment=vllm/roboreward-8b", "roboreward/vllm/roboreward-8b"),
}
COMPARED = ("subset", "robot", "kind", "episode", "cluster", "video_sha256", "gold_score", "predicted", "abs_error",
            "invalid_output", "failed_request", "task")


def varied_answer(recorded: Recorded) -> Reply:
    """An answer that depends on what the request carries, so equal scores mean equal requests."""
    parts = media_parts(recorded)
    text = "".join(part.text or "" for part in parts)
    return Reply(text=f"ANSWER: {1 + (len(parts) + len(text)) % 5}")


def helm_run_dir(runs: Path, key: str) -> Path:
    model = ENTRIES[key][0].split(",")[0].replace("/", "_")
    (found,) = [path for path in runs.iterdir() if path.name.endswith(f"model={model}") or
                f"model={model}," in path.name]
    return found


@pytest.fixture(scope="module")
def both_runs(tmp_path_factory: pytest.TempPathFactory) -> Any:
    workdir = tmp_path_factory.mktemp("inspect-same")
    with FakeModelServer(varied_answer, served_models=(LLAMA_SERVED, ROBOREWARD_SERVED)) as fake:
        local = private_local_path(workdir / "local", fake)
        entries = [f"roboreward:subset=all,data=sample,model={model}" for model, _ in ENTRIES.values()]
        process = subprocess.run(helm_run_command(entries, "same", local), cwd=workdir,
                                 env=helm_environment(fake), capture_output=True, text=True, timeout=TIMEOUT)
        check_completed(process, "helm-run")
        helm_requests = fake.requests_to(CHAT)
        fake.clear()
        # The inspect command from outside the checkout: in its root, Inspect reads helm_roboreward/ as a folder
        # of task files, and the checkout's egg-info hides the editable install that names the task's package.
        env = {**helm_environment(fake), "VLLM_BASE_URL": fake.base_url, "VLLM_API_KEY": VLLM_KEY}
        command = [cli("inspect"), "eval", "helm_roboreward/roboreward_bench", "--model",
                   ",".join(model for _, model in ENTRIES.values()), "-T", "data=sample", "-T",
                   f"media_dir={workdir / 'inspect_media'}", "--log-dir", str(workdir / "logs"), "--display", "none",
                   "--max-connections", "4"]
        process = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=TIMEOUT)
        check_completed(process, "inspect eval")
        by_model = {log.eval.model: log for log in map(read_eval_log, (workdir / "logs").glob("*.eval"))}
        logs = {key: by_model[model] for key, (_, model) in ENTRIES.items()}
        inspect_requests = fake.requests_to(CHAT)
    return workdir / "benchmark_output" / "runs" / "same", logs, helm_requests, inspect_requests


def per_instance(run_dir: Path) -> dict[str, dict[str, float]]:
    stats = {}
    for entry in read_json(run_dir / "per_instance_stats.json"):
        stats[entry["instance_id"]] = {stat["name"]["name"]: stat["sum"] / stat["count"]
                                       for stat in entry["stats"] if stat["count"]}
    return stats


@pytest.mark.parametrize("key", list(ENTRIES))
def test_per_sample_scores_and_maes_equal_helm_runs(key: str, both_runs: Any) -> None:
    runs, logs, _, _ = both_runs
    log: EvalLog = logs[key]
    assert log.status == "success", log.error
    helm = per_instance(helm_run_dir(runs, key))
    samples = {str(sample.id): (sample.scores or {})["progress_score"] for sample in log.samples or []}
    assert set(samples) == set(helm) and len(samples) == 58
    for instance_id, score in samples.items():
        assert score.value == helm[instance_id]["abs_error"], instance_id
        assert (score.metadata or {})["predicted"] == helm[instance_id].get("predicted_score"), instance_id
    metrics = log.results.scores[0].metrics if log.results else {}
    stats = {stat["name"]["name"]: stat["mean"] for stat in read_json(helm_run_dir(runs, key) / "stats.json")
             if stat["name"].get("split") == "test" and "perturbation" not in stat["name"]}
    assert metrics["macro_mae"].value == pytest.approx(stats["macro_mae"], abs=1e-12)
    for name in [name for name in stats if name.startswith(("mae_subset_", "mae_robot_", "mae_kind_"))]:
        assert metrics[name].value == pytest.approx(stats[name], abs=1e-12), name
    if key == "constant":
        assert round(metrics["macro_mae"].value, 3) == 1.289
        assert metrics["macro_mae_low"].value < 1.289 < metrics["macro_mae_high"].value


def _prompt_and_images(requests: list[Recorded], served: str) -> Counter[tuple[str, tuple[bytes, ...]]]:
    found: Counter[tuple[str, tuple[bytes, ...]]] = Counter()
    for recorded in requests:
        if recorded.model == served:
            parts = media_parts(recorded)
            found[("".join(p.text or "" for p in parts if p.kind == "text"),
                   tuple(p.data or b"" for p in parts if p.kind != "text"))] += 1
    return found


def test_inspects_openai_provider_sends_helm_runs_prompt_and_frames(both_runs: Any) -> None:
    _, _, helm_requests, inspect_requests = both_runs
    sent = _prompt_and_images(helm_requests, LLAMA_SERVED)
    assert sum(sent.values()) == 58 and all(images for _, images in sent)
    assert _prompt_and_images(inspect_requests, LLAMA_SERVED) == sent


def test_the_roboreward_provider_sends_helm_runs_exact_mp4_body(both_runs: Any) -> None:
    _, _, helm_requests, inspect_requests = both_runs
    sent = Counter(r.raw for r in helm_requests if r.model == ROBOREWARD_SERVED)
    assert sum(sent.values()) == 58
    assert all(part.kind == "video" for r in helm_requests if r.model == ROBOREWARD_SERVED
               for part in media_parts(r)[1:])
    assert Counter(r.raw for r in inspect_requests if r.model == ROBOREWARD_SERVED) == sent


@pytest.mark.parametrize("key", ["constant", "llama"])
def test_the_log_reads_as_the_rows_of_the_helm_run(key: str, both_runs: Any) -> None:
    runs, logs, _, _ = both_runs
    run = read_inspect_log(logs[key].location)
    helm, _ = instance_rows(str(helm_run_dir(runs, key)), "all")
    inspect_rows = {row.instance_id: row for row in run.rows}
    assert set(inspect_rows) == set(helm)
    for instance_id, row in helm.items():
        assert {field: getattr(inspect_rows[instance_id], field) for field in COMPARED} == \
            {field: getattr(row, field) for field in COMPARED}, instance_id
    assert run.settings == "data=sample,video=frames" and run.source.data == "sample"
