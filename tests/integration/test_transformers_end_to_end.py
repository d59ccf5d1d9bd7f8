"""A real ``helm-run`` over the whole bundled sample with TransformersQwen3VLClient and the tiny Qwen3-VL checkpoint.

The official in-process path end to end: a ``--local-path`` whose deployment points the client at the tiny
random-weight checkpoint (tests/helpers/tiny_qwen3vl.py, built once per session), every mp4 routed natively
(``video=auto``), the real transformers processor and ``generate`` on CPU (the video decoded by torchcodec where
it loads, else by PyAV; the provenance says which). The client itself is tested in
tests/helm_frontend/clients/test_transformers_client.py.
"""

import dataclasses
import os
import subprocess
import time
from pathlib import Path

import pytest

from helm_roboreward.helm_frontend.clients.transformers_client import PYAV, TORCHCODEC, torchcodec_usable
from tests.helpers.harness import (
    TRANSFORMERS_ENVIRONMENT,
    check_completed,
    cli,
    read_json,
    request_states,
    run_stats,
    transformers_local_path,
)
from tests.helpers.sample import sample_rows

DEPLOYMENT = "transformers/tiny-qwen3-vl"


@dataclasses.dataclass
class EndToEnd:
    run_dir: Path
    seconds: float


@pytest.fixture(scope="module")
def end_to_end(tiny_qwen3vl: Path, tmp_path_factory: pytest.TempPathFactory) -> EndToEnd:
    workdir = tmp_path_factory.mktemp("helm_run")
    local = transformers_local_path(workdir / "local", DEPLOYMENT, tiny_qwen3vl)
    entry = f"roboreward:subset=all,data=sample,model=teetone/roboreward-8b,model_deployment={DEPLOYMENT}"
    env = {**os.environ, **TRANSFORMERS_ENVIRONMENT}
    started = time.monotonic()
    process = subprocess.run(
        [cli("helm-run"), "--run-entries", entry, "--suite", "tiny", "-m", "100", "--local-path", str(local),
         "--output-path", str(workdir / "benchmark_output")],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=300)
    seconds = time.monotonic() - started
    check_completed(process, "helm-run")
    (run_dir,) = (workdir / "benchmark_output" / "runs" / "tiny").glob("roboreward:*")
    return EndToEnd(run_dir, seconds)


@pytest.mark.slow
def test_helm_run_end_to_end_with_the_tiny_checkpoint(end_to_end: EndToEnd) -> None:
    states = request_states(end_to_end.run_dir)
    assert len(states) == len(sample_rows())  # the whole bundled sample, mp4s routed natively (video=auto)
    answers: list[str] = []
    for state in states:
        assert state["result"]["success"] is True, state["result"].get("error")
        (completion,) = state["result"]["completions"]
        assert completion["finish_reason"]["video_frames"] > 0
        assert completion["finish_reason"]["video_decoder"] == (TORCHCODEC if torchcodec_usable() else PYAV)
        assert state["request"]["multimodal_prompt"]["media_objects"][1]["content_type"] == "video/mp4"
        answers.append(completion["text"])
    per_instance = read_json(end_to_end.run_dir / "per_instance_stats.json")
    assert len(per_instance) == len(states)
    for entry in per_instance:
        stats: dict[str, float] = {s["name"]["name"]: s["mean"] for s in entry["stats"]
                                   if "perturbation" not in s["name"]}
        assert 0 <= stats["abs_error"] <= 4 and stats["num_prompt_tokens"] > 0
    macro_mae = run_stats(end_to_end.run_dir)["macro_mae"]
    assert 0 <= macro_mae <= 4
    print(f"\nhelm-run {end_to_end.run_dir.name}: {len(states)} rows, macro MAE {macro_mae:.3f}, "
          f"{end_to_end.seconds:.1f} s; answers start {[a[:3] for a in answers]}")
