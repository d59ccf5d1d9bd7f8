"""The request for a benchmark row is byte-identical to the one ``helm-run`` sends (issue 28, item 1).

``helm-run`` scores every sample row with one model per client family against the loopback fake; then
:class:`RewardModel` scores the same rows (task and mp4 path) against the same fake. The bodies the fake received
are compared byte for byte, as multisets (both send in parallel): the same prompt, the same media bytes (mp4, or
the same JPEG frames), the same model name, token allowance and decoding fields, in the same JSON.
"""

import subprocess
from collections import Counter
from pathlib import Path

import pytest

from helm_roboreward.reward import RewardModel
from tests.helpers.fakes import CHAT, GEMINI, RESPONSES, FakeModelServer
from tests.helpers.harness import (
    SAMPLE,
    TIMEOUT,
    check_completed,
    helm_environment,
    helm_run_command,
    private_local_path,
)
from tests.helpers.sample import sample_rows

# (model, deployment or None, the API the fake sees, what makes a family's requests apart in the fake's records)
FAMILIES = {
    "roboreward-8b-mp4": ("teetone/roboreward-8b", "vllm/roboreward-8b", CHAT, "teetone/RoboReward-8B"),
    "llama-4-scout-frames": ("meta/llama-4-scout-17b-16e-instruct", None, CHAT,
                             "meta-llama/Llama-4-Scout-17B-16E-Instruct"),
    "gpt-5-mini-responses-frames": ("openai/gpt-5-mini-2025-08-07", None, RESPONSES, "gpt-5-mini-2025-08-07"),
    "gemini-2.5-flash-two-turns-mp4": ("google/gemini-2.5-flash", None, GEMINI, "gemini-2.5-flash"),
}


def entry(model: str, deployment: str | None) -> str:
    return f"roboreward:subset=all,data=sample,model={model}" + (f",model_deployment={deployment}" if deployment
                                                                     else "")


def bodies(fake: FakeModelServer, api: str, served: str) -> Counter[bytes]:
    return Counter(r.raw for r in fake.requests_to(api) if r.model == served or r.model_in_path == served)


@pytest.fixture(scope="module")
def helm_run_bodies(tmp_path_factory: pytest.TempPathFactory,
                    reward_fake: FakeModelServer) -> dict[str, Counter[bytes]]:
    workdir = tmp_path_factory.mktemp("same-request")
    reward_fake.clear()
    local = private_local_path(workdir / "local", reward_fake)
    entries = [entry(model, deployment) for model, deployment, _, _ in FAMILIES.values()]
    process = subprocess.run(helm_run_command(entries, "same", local), cwd=workdir, env=helm_environment(reward_fake),
                             capture_output=True, text=True, timeout=TIMEOUT)
    check_completed(process, "helm-run")
    found = {key: bodies(reward_fake, api, served) for key, (_, _, api, served) in FAMILIES.items()}
    reward_fake.clear()
    return found


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_sample_row_sends_helm_runs_exact_body(family: str, helm_run_bodies: dict[str, Counter[bytes]],
                                                     fake: FakeModelServer, reward_local_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.root_url)  # google-genai reads its base URL from here
    model, deployment, api, served = FAMILIES[family]
    rows = sample_rows()
    reward = RewardModel(model, deployment, local_path=str(reward_local_path), cache=False)
    rewards = reward.score_many([(row["task"], str(SAMPLE / row["file_name"])) for row in rows], max_workers=4)
    assert not any(r.failed for r in rewards), [r.error for r in rewards if r.failed][:3]
    assert [r.score for r in rewards] == [3.0] * len(rows)
    expected = helm_run_bodies[family]
    assert sum(expected.values()) == len(rows), f"helm-run sent {sum(expected.values())} {family} requests"
    assert bodies(fake, api, served) == expected
