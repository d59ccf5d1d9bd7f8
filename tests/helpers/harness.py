"""Running the real HELM commands (``helm-run``, ``helm-summarize``) as a user would, and reading what they wrote.

:func:`private_local_path` makes a ``--local-path`` whose YAML files link to the repository's ``prod_env/``
(so HELM's request cache is written there, not into the repository). Given a loopback fake
(:class:`~tests.helpers.fakes.FakeModelServer`), its ``credentials.conf`` points every client at it:

- ``vllmBaseUrl`` / ``openaiBaseUrl``: ``http://127.0.0.1:<port>/v1`` (HELM injects ``<host>BaseUrl``
  as ``base_url`` into OpenAIVideoClient and OpenAIResponseClient);
- ``openaiApiKey`` / ``anthropicApiKey`` / ``googleApiKey``: fake keys (injected as ``api_key``).

HELM's AnthropicMessagesClient and GoogleGenAIClient take no ``base_url``; the ``anthropic`` and
``google-genai`` packages read ``ANTHROPIC_BASE_URL`` and ``GOOGLE_GEMINI_BASE_URL`` from the
environment instead, which :func:`helm_environment` sets for the subprocess.
"""

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tests.helpers.fakes import FakeModelServer
from tests.helpers.sample import REPO, SAMPLE

PROD_ENV = REPO / "prod_env"
SCHEMA = REPO / "static" / "schema_roboreward.yaml"
"""The package's schema, as ``roboreward files`` writes it."""
SAMPLE_CONF = REPO / "run_specs" / "roboreward_sample.conf"
"""The offline demo: both baselines on every sample subset."""
SUMMARIZER = "helm_roboreward.helm_frontend.summarizer.RoboRewardSummarizer"
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

__all__ = [
    "ANTHROPIC_KEY", "GOOGLE_KEY", "OPENAI_KEY", "PROD_ENV", "REPO", "SAMPLE", "SAMPLE_CONF", "SCHEMA", "SUMMARIZER",
    "TIMEOUT", "VLLM_KEY", "check_completed", "cli", "finish_logged", "gold_of", "helm_environment",
    "helm_run_command", "helm_summarize_command", "media_locations", "private_local_path", "prompt_of", "read_json",
    "reap", "request_states", "run_stat", "run_stats", "sha256", "start_logged",
]


def cli(name: str) -> str:
    """A console script of the Python running the tests (the venv's), else one on PATH."""
    candidate = Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    assert found, f"{name} not found next to {sys.executable} or on PATH"
    return found


def private_local_path(folder: Path, fake: FakeModelServer | None = None) -> Path:
    """A --local-path: YAML links to prod_env/, and with a fake, credentials pointing at it."""
    folder.mkdir(parents=True)
    for name in ("model_metadata.yaml", "model_deployments.yaml"):
        (folder / name).symlink_to(PROD_ENV / name)
    if fake is not None:
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


def transformers_local_path(folder: Path, deployment: str, checkpoint: Path) -> Path:
    """A --local-path with prod_env's model metadata and one TransformersQwen3VLClient deployment of
    ``teetone/roboreward-8b`` named ``deployment``, loading ``checkpoint`` (a local folder)."""
    folder.mkdir(parents=True)
    shutil.copyfile(PROD_ENV / "model_metadata.yaml", folder / "model_metadata.yaml")
    (folder / "model_deployments.yaml").write_text(
        "model_deployments:\n"
        f"  - name: {deployment}\n"
        "    model_name: teetone/roboreward-8b\n"
        "    max_sequence_length: 262144\n"
        "    client_spec:\n"
        '      class_name: "helm_roboreward.helm_frontend.clients.transformers_client.TransformersQwen3VLClient"\n'
        "      args:\n"
        f"        checkpoint: {json.dumps(str(checkpoint))}\n",
        encoding="utf-8")
    return folder


TRANSFORMERS_ENVIRONMENT = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                            "PYTHONWARNINGS": "ignore"}
"""What a helm-run of the in-process transformers client adds to the environment: offline, quiet."""


def helm_environment(fake: FakeModelServer | None = None) -> dict[str, str]:
    """The subprocess environment: offline, no real provider credentials, SDK base URLs on the fake (if any)."""
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_ENVIRONMENT}
    loopback = "127.0.0.1,localhost"
    env.update({
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONWARNINGS": "ignore",
        "NO_PROXY": ",".join(filter(None, [env.get("NO_PROXY"), loopback])),
        "no_proxy": ",".join(filter(None, [env.get("no_proxy"), loopback])),
    })
    if fake is not None:
        env.update({"ANTHROPIC_BASE_URL": fake.root_url, "GOOGLE_GEMINI_BASE_URL": fake.root_url})
    return env


def helm_run_command(entries: Sequence[str], suite: str, local_path: Path, output: str = "benchmark_output",
                     threads: int = 4) -> list[str]:
    """``helm-run -r <entries>`` (no ``--plugins``: the package's entry point must load the plugin)."""
    return [cli("helm-run"), "-r", *entries, "--suite", suite, "-m", "100", "-n", str(threads),
            "--local-path", str(local_path), "-o", output]


def helm_summarize_command(suite: str, *extra: str, schema: Path = SCHEMA, summarizer: bool = True,
                           output: str = "benchmark_output", local_path: Path = PROD_ENV) -> list[str]:
    """``helm-summarize`` with the package's schema, ``--schema-validation error`` and (by default) our summarizer.

    ``-n 1``: summarize renders mako templates in threads, and CPython 3.11.7's ast module can then fail at
    random with "SystemError: AST constructor recursion depth mismatch" (seen once here).
    """
    command = [cli("helm-summarize"), "--suite", suite, "--schema-path", str(schema), "--schema-validation", "error",
               "-o", output, "--local-path", str(local_path), "-n", "1"]
    if summarizer:
        command += ["--summarizer-class-name", SUMMARIZER]
    return [*command, *extra]


def check_completed(process: "subprocess.CompletedProcess[str]", what: str) -> None:
    assert process.returncode == 0, (
        f"{what} exited with {process.returncode}\n--- stdout (tail)\n{process.stdout[-4000:]}\n"
        f"--- stderr (tail)\n{process.stderr[-6000:]}"
    )


def start_logged(command: Sequence[str], cwd: Path, env: dict[str, str], log: Path,
                 new_session: bool = False) -> "subprocess.Popen[str]":
    """Start a process whose output goes to ``log`` (never to a pipe nobody reads: a full pipe stalls it)."""
    with open(log, "w") as out:
        return subprocess.Popen(list(command), cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, text=True,
                                start_new_session=new_session)


def finish_logged(process: "subprocess.Popen[str]", log: Path, timeout: float = TIMEOUT) -> tuple[int, str]:
    """Wait for a :func:`start_logged` process (killed on timeout): ``(exit status, its output)``."""
    try:
        process.wait(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, log.read_text(errors="replace")


def reap(processes: Iterable["subprocess.Popen[Any]"], group: bool = False) -> None:
    """Kill each of ``processes`` that still runs (its whole process group with ``group``, for one started with
    ``start_new_session``) and wait for every one: no child outlives the test, none stays a zombie.

    For a ``finally:`` after starting several processes: whatever failed first (a timeout, an assertion on the first
    one's output), the others are still ended and waited for. Waiting twice is harmless.
    """
    processes = list(processes)
    for process in processes:
        if process.returncode is not None:  # already waited for (its pid may belong to another process now)
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if group:  # even when the leader has ended (a zombie until waited): its group may still run
                os.killpg(process.pid, signal.SIGKILL)
            elif process.poll() is None:
                process.kill()
    for process in processes:
        process.wait()


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


def run_stat(run_dir: Path, name: str) -> float:
    """The run-level value of one stat (test split, no perturbation), which must occur exactly once."""
    matches = [s for s in read_json(run_dir / "stats.json") if s["name"] == {"name": name, "split": "test"}]
    assert len(matches) == 1, f"{name} in {run_dir.name}: {len(matches)} entries"
    return float(matches[0]["mean"])


def summarized_stat(run_dir: Path, name: str) -> float:
    """The run-level value of one stat as helm-summarize holds it (``runs.json``): the run's own stats plus the
    reward-model statistics the summarizer computes from the run's rows."""
    runs = {Path(run["run_path"]).name: run for run in read_json(run_dir.parent / "runs.json")}
    matches = [s for s in runs[run_dir.name]["stats"] if s["name"] == {"name": name, "split": "test"}]
    assert len(matches) == 1, f"{name} in {run_dir.name}: {len(matches)} entries"
    return float(matches[0]["sum"]) / float(matches[0]["count"])


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
