"""What the reward tests share (tests/reward): names, a backend that never answers, and their ``--local-path``.

HELM's registries load once per process from one ``--local-path`` (``models.helm_registries``), so every in-process
:class:`~helm_roboreward.reward.RewardModel` of a test session uses the one :func:`reward_local_path` builds:
prod_env's model files plus two test deployments (``silent/roboreward-8b``: the vLLM client with a 1-s timeout and
no retries, its server a :class:`~tests.helpers.fakes.silent.SilentServer`; ``tiny/roboreward-8b``: the tiny
random Qwen3-VL in process).
``credentials.conf`` points every client at one :class:`~tests.helpers.fakes.FakeModelServer`.
"""

import json
from pathlib import Path

from tests.helpers.fakes import FakeModelServer
from tests.helpers.fakes.silent import SilentServer
from tests.helpers.harness import ANTHROPIC_KEY, GOOGLE_KEY, OPENAI_KEY, PROD_ENV, VLLM_KEY

SILENT_DEPLOYMENT = "silent/roboreward-8b"
TINY_DEPLOYMENT = "tiny/roboreward-8b"
RR8B = "teetone/roboreward-8b"


def write_credentials(folder: Path, fake: FakeModelServer, silent: SilentServer) -> None:
    """Every provider's key and base URL on the fake; the silent deployment's on the silent backend."""
    (folder / "credentials.conf").write_text(
        f'vllmBaseUrl: "{fake.base_url}"\nvllmApiKey: "{VLLM_KEY}"\n'
        f'openaiBaseUrl: "{fake.base_url}"\nopenaiApiKey: "{OPENAI_KEY}"\n'
        f'anthropicApiKey: "{ANTHROPIC_KEY}"\ngoogleApiKey: "{GOOGLE_KEY}"\n'
        f'silentBaseUrl: "{silent.url}/v1"\n', encoding="utf-8")


def reward_local_path(folder: Path, fake: FakeModelServer, silent: SilentServer, tiny_checkpoint: Path) -> Path:
    """The session's ``--local-path`` (see the module's docstring)."""
    folder.mkdir(parents=True)
    (folder / "model_metadata.yaml").symlink_to(PROD_ENV / "model_metadata.yaml")
    deployments = (PROD_ENV / "model_deployments.yaml").read_text(encoding="utf-8").rstrip("\n") + "\n"
    deployments += (
        f"  - name: {SILENT_DEPLOYMENT}\n    model_name: {RR8B}\n    max_sequence_length: 262144\n"
        "    client_spec:\n"
        "      class_name: \"helm_roboreward.helm_frontend.clients.openai_video_client.OpenAIVideoClient\"\n"
        "      args:\n        served_model_name: teetone/RoboReward-8B\n        timeout_seconds: 1\n"
        "        max_retries: 0\n"
        f"  - name: {TINY_DEPLOYMENT}\n    model_name: {RR8B}\n    max_sequence_length: 262144\n"
        "    client_spec:\n"
        "      class_name: \"helm_roboreward.helm_frontend.clients.transformers_client.TransformersQwen3VLClient\"\n"
        f"      args:\n        checkpoint: {json.dumps(str(tiny_checkpoint))}\n")
    (folder / "model_deployments.yaml").write_text(deployments, encoding="utf-8")
    write_credentials(folder, fake, silent)
    return folder
