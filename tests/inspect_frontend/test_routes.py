"""What the Inspect task sends each model, and the one-line refusals (issue 38: never silently send something else).

Fast: the routing rule and the provider's checks, no eval. The ``inspect`` command prints a RouteError's message
alone (a PrerequisiteError), checked once through the real command.
"""

import subprocess
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")

from helm_roboreward.inspect_frontend.model_provider import RoboRewardModelAPI  # noqa: E402
from helm_roboreward.inspect_frontend.sample_media import RouteError, route  # noqa: E402
from tests.helpers.harness import TIMEOUT, cli, helm_environment  # noqa: E402


@pytest.mark.parametrize(("model", "video", "turn_per_part", "max_tokens"), [
    ("roboreward/baseline/constant-3", "frames", False, 5000),
    ("roboreward/vllm/roboreward-8b", "native", False, 5000),
    ("openai-api/vllm/meta-llama/Llama-4-Scout-17B-16E-Instruct", "frames", False, 5000),
    ("openai/gpt-5-mini-2025-08-07", "frames", False, 65000),
    ("google/gemini-2.5-flash", "native", True, 65000),
])
def test_the_official_route_of_each_family(model: str, video: str, turn_per_part: bool, max_tokens: int) -> None:
    routed = route(model)
    assert (routed.video, routed.turn_per_part, routed.max_tokens) == (video, turn_per_part, max_tokens)


def test_gemini_in_one_message_is_the_named_option() -> None:
    assert route("google/gemini-2.5-flash", layout="one_message").turn_per_part is False


@pytest.mark.parametrize(("model", "video", "layout", "says"), [
    ("openai-api/vllm/teetone/RoboReward-8B", "auto", "official", "cannot send video: run this package's client"),
    ("openai-api/vllm/Qwen/Qwen3-VL-8B-Instruct", "auto", "official", "--model roboreward/<deployment>"),
    ("openai/gpt-5-mini-2025-08-07", "native", "official", "was asked the mp4 (-T video=native)"),
    ("roboreward/baseline/constant-3", "bogus", "official", "-T video=bogus: give one of frames, native, auto"),
    ("roboreward/baseline/constant-3", "auto", "two_turns", "-T layout=two_turns: give one of official, one_message"),
    ("roboreward/vllm/no-such-model", "auto", "official", "no such deployment; `roboreward models` lists them"),
    ("roboreward/google/gemini-robotics-er-2-preview", "auto", "official", "its client is HELM's GoogleGenAIClient"),
])
def test_a_route_inspect_cannot_send_is_refused_in_one_line(model: str, video: str, layout: str, says: str) -> None:
    with pytest.raises(RouteError) as refused:
        route(model, video, layout)
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_a_vllm_deployment_without_its_server_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_BASE_URL", raising=False)
    with pytest.raises(RouteError, match="needs its vLLM server's URL: --model-base-url"):
        RoboRewardModelAPI("vllm/roboreward-8b")


def test_the_inspect_command_prints_the_refusal_alone(tmp_path: Path) -> None:
    done = subprocess.run([cli("inspect"), "eval", "helm_roboreward/roboreward_bench", "--model",
                           "roboreward/baseline/constant-3", "-T", "data=sample", "-T", "video=bogus", "--log-dir",
                           str(tmp_path / "logs"), "--display", "plain"], cwd=tmp_path, env=helm_environment(),
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode != 0
    assert "-T video=bogus: give one of frames, native, auto" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
