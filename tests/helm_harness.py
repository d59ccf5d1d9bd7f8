"""Running the real ``helm-run`` against the loopback fake model server, and reading what it wrote.

:func:`private_local_path` makes a ``--local-path`` whose YAML files link to the repository's
``prod_env/`` and whose ``credentials.conf`` points every client at the fake:

- ``vllmBaseUrl`` / ``openaiBaseUrl``: ``http://127.0.0.1:<port>/v1`` (HELM injects ``<host>BaseUrl``
  as ``base_url`` into OpenAIVideoClient and OpenAIResponseClient);
- ``openaiApiKey`` / ``anthropicApiKey`` / ``googleApiKey``: fake keys (injected as ``api_key``).

HELM's AnthropicMessagesClient and GoogleGenAIClient take no ``base_url``; the ``anthropic`` and
``google-genai`` packages read ``ANTHROPIC_BASE_URL`` and ``GOOGLE_GEMINI_BASE_URL`` from the
environment instead, which :func:`helm_environment` sets for the subprocess.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.fake_openai_server import FakeModelServer

REPO = Path(__file__).resolve().parent.parent
PROD_ENV = REPO / "prod_env"
SAMPLE = REPO / "helm_roboreward" / "sample" / "test"
TIMEOUT = 300

OPENAI_KEY = "sk-fake-openai"
ANTHROPIC_KEY = "sk-ant-fake"
GOOGLE_KEY = "fake-google-key"
VLLM_KEY = "fake-vllm-key"

_LEAKY_ENVIRONMENT = (
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN", "GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_ENTERPRISE", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_VERTEX_BASE_URL",
)


def cli(name: str) -> str:
    """A console script of the Python running the tests (the venv's), else one on PATH."""
    candidate = Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    assert found, f"{name} not found next to {sys.executable} or on PATH"
    return found


def private_local_path(folder: Path, fake: FakeModelServer) -> Path:
    """A --local-path: YAML links to prod_env/, credentials pointing at the fake."""
    folder.mkdir(parents=True)
    for name in ("model_metadata.yaml", "model_deployments.yaml"):
        (folder / name).symlink_to(PROD_ENV / name)
    (folder / "credentials.conf").write_text(
        f'vllmBaseUrl: "{fake.base_url}"\n'
        f'vllmApiKey: "{VLLM_KEY}"\n'
        f'openaiBaseUrl: "{fake.base_url}"\n'
        f'openaiApiKey: "{OPENAI_KEY}"\n'
        f'anthropicApiKey: "{ANTHROPIC_KEY}"\n'
        f'googleApiKey: "{GOOGLE_KEY}"\n',
        encoding="utf-8",
    )
    return folder


def helm_environment(fake: FakeModelServer) -> dict[str, str]:
    """The subprocess environment: offline, no real provider credentials, SDK base URLs on the fake."""
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_ENVIRONMENT}
    loopback = "127.0.0.1,localhost"
    env.update({
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONWARNINGS": "ignore",
        "ANTHROPIC_BASE_URL": fake.root_url,
        "GOOGLE_GEMINI_BASE_URL": fake.root_url,
        "NO_PROXY": ",".join(filter(None, [env.get("NO_PROXY"), loopback])),
        "no_proxy": ",".join(filter(None, [env.get("no_proxy"), loopback])),
    })
    return env


def helm_run_command(entries: Sequence[str], suite: str, local_path: Path, output: str = "benchmark_output",
                     threads: int = 4) -> list[str]:
    return [cli("helm-run"), "-r", *entries, "--suite", suite, "-m", "100", "-n", str(threads),
            "--local-path", str(local_path), "-o", output]


def check_completed(process: "subprocess.CompletedProcess[str]", what: str) -> None:
    assert process.returncode == 0, (
        f"{what} exited with {process.returncode}\n--- stdout (tail)\n{process.stdout[-4000:]}\n"
        f"--- stderr (tail)\n{process.stderr[-6000:]}"
    )


def read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def run_stats(run_dir: Path) -> dict[str, float]:
    """Run-level means of the test split, by stat name (no perturbations)."""
    stats = {}
    for stat in read_json(run_dir / "stats.json"):
        name = stat["name"]
        if name.get("split") == "test" and "perturbation" not in name and "sub_split" not in name:
            stats[name["name"]] = stat["mean"]
    return stats


def request_states(run_dir: Path) -> list[dict[str, Any]]:
    return list(read_json(run_dir / "scenario_state.json")["request_states"])


def prompt_of(state: dict[str, Any]) -> str:
    media = state["request"]["multimodal_prompt"]["media_objects"]
    assert media[0]["content_type"] == "text/plain"
    return str(media[0]["text"])


def media_locations(state: dict[str, Any]) -> list[str]:
    media = state["request"]["multimodal_prompt"]["media_objects"]
    return [str(m["location"]) for m in media[1:]]


def gold_of(state: dict[str, Any]) -> int:
    return int(state["instance"]["references"][0]["output"]["text"])


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sample_rows() -> list[dict[str, Any]]:
    with open(SAMPLE / "metadata.jsonl", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def rows_of(subset: str) -> list[dict[str, Any]]:
    return [row for row in sample_rows() if row["file_name"].split("/")[0] == subset]
