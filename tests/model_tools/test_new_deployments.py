"""The current registry's new deployments, through the real ``helm-run`` and client libraries against the loopback fake.

In the style of ``tests/integration/test_model_families.py``: one ``helm-run`` per group evaluates the
``sim_kuka`` sample subset, every client pointed at one :class:`~tests.helpers.fakes.FakeModelServer`; the
test reads what the fake received (the served model id, the layout, max tokens, the reasoning effort, Gemini's
thinking config) and the run names (video mode under ``video=auto``).

| model | deployment | API, served id | media | effort |
|---|---|---|---|---|
| google/gemini-robotics-er-2-preview | the package's (GoogleGenAIClient) | Gemini, same id | mp4 | - |
| google/gemini-3.1-pro-preview | HELM 0.5.16's (include_thoughts) | Gemini, gemini-3.1-pro-preview | mp4 | - |
| openai/gpt-5.5-2026-04-23 | the package's (OpenAIResponseClient) | responses, gpt-5.5-2026-04-23 | frames | default |
| openai/gpt-5.5-2026-04-23-xhigh-reasoning-effort | the package's | responses, gpt-5.5-2026-04-23 | frames | xhigh |
| openai/gpt-5.5 / openai/gpt-5.5-xhigh (aliases) | the package's | responses, gpt-5.5-2026-04-23 | frames | both |

The aliases run in a second ``helm-run`` with its own local path: their requests equal the snapshot's, so a shared
request cache would answer them without a request.
"""

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fakes import GEMINI, RESPONSES, FakeModelServer, Recorded, media_parts, user_messages
from tests.helpers.harness import (
    GOOGLE_KEY,
    OPENAI_KEY,
    TIMEOUT,
    check_completed,
    helm_environment,
    helm_run_command,
    private_local_path,
    request_states,
)
from tests.helpers.sample import rows_of

pytestmark = pytest.mark.slow  # helm-run against a loopback server for every new deployment

SUBSET = "sim_kuka"


@dataclass(frozen=True)
class Deployment:
    key: str
    model: str
    api: str
    served: str
    mode: str
    max_tokens: int
    effort: str | None = None
    alias: bool = False

    @property
    def entry(self) -> str:
        return f"roboreward:subset={SUBSET},data=sample,model={self.model}"

    @property
    def run_name(self) -> str:
        return f"roboreward:subset={SUBSET},data=sample,video={self.mode},model={self.model.replace('/', '_')}"


NEW = [
    Deployment("er-2", "google/gemini-robotics-er-2-preview", GEMINI, "gemini-robotics-er-2-preview", "native", 65000),
    Deployment("gemini-3.1-pro", "google/gemini-3.1-pro-preview", GEMINI, "gemini-3.1-pro-preview", "native", 65000),
    Deployment("gpt-5.5", "openai/gpt-5.5-2026-04-23", RESPONSES, "gpt-5.5-2026-04-23", "frames", 65000),
    Deployment("gpt-5.5-xhigh", "openai/gpt-5.5-2026-04-23-xhigh-reasoning-effort", RESPONSES, "gpt-5.5-2026-04-23",
               "frames", 65000, effort="xhigh"),
]
ALIASES = [
    Deployment("alias-gpt-5.5", "openai/gpt-5.5", RESPONSES, "gpt-5.5-2026-04-23", "frames", 65000, alias=True),
    Deployment("alias-gpt-5.5-xhigh", "openai/gpt-5.5-xhigh", RESPONSES, "gpt-5.5-2026-04-23", "frames", 65000,
               effort="xhigh", alias=True),
]
ALL = NEW + ALIASES


def _effort(recorded: Recorded) -> str | None:
    reasoning = recorded.body.get("reasoning") or {}
    return reasoning.get("effort")


@dataclass
class Runs:
    workdir: Path
    requests: dict[str, list[Recorded]]
    """Group (``new`` / ``aliases``) -> what the fake received during that group's helm-run."""

    def run_dir(self, deployment: Deployment) -> Path:
        group = "aliases" if deployment.alias else "new"
        return self.workdir / group / "benchmark_output" / "runs" / "current" / deployment.run_name

    def requests_of(self, deployment: Deployment) -> list[Recorded]:
        group = "aliases" if deployment.alias else "new"
        return [r for r in self.requests[group]
                if r.api == deployment.api and r.model == deployment.served
                and (deployment.api != RESPONSES or _effort(r) == deployment.effort)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    workdir = tmp_path_factory.mktemp("new-deployments")
    received: dict[str, list[Recorded]] = {}
    with FakeModelServer() as fake:
        for group, deployments in (("new", NEW), ("aliases", ALIASES)):
            folder = workdir / group
            local = private_local_path(folder / "local", fake)
            before = len(fake.requests)
            process = subprocess.run(helm_run_command([d.entry for d in deployments], "current", local),
                                     cwd=folder, env=helm_environment(fake), capture_output=True, text=True,
                                     timeout=TIMEOUT)
            check_completed(process, f"helm-run ({group})")
            received[group] = fake.requests[before:]
    yield Runs(workdir, received)


@pytest.mark.parametrize("deployment", ALL, ids=[d.key for d in ALL])
def test_one_request_per_row_with_the_served_model_id(runs: Runs, deployment: Deployment) -> None:
    assert runs.run_dir(deployment).is_dir(), deployment.run_name
    assert len(runs.requests_of(deployment)) == len(rows_of(SUBSET))


@pytest.mark.parametrize("deployment", ALL, ids=[d.key for d in ALL])
def test_max_tokens_include_the_reasoning_allowance(runs: Runs, deployment: Deployment) -> None:
    for state in request_states(runs.run_dir(deployment)):
        assert state["request"]["max_tokens"] == deployment.max_tokens
        assert state["result"]["success"] is True
    for recorded in runs.requests_of(deployment):
        if deployment.api == RESPONSES:
            assert recorded.body["max_output_tokens"] == deployment.max_tokens
        else:
            assert recorded.body["generationConfig"]["maxOutputTokens"] == deployment.max_tokens


@pytest.mark.parametrize("deployment", [d for d in ALL if d.api == GEMINI], ids=[d.key for d in ALL if d.api == GEMINI])
def test_gemini_gets_the_mp4_as_two_user_turns(runs: Runs, deployment: Deployment) -> None:
    for recorded in runs.requests_of(deployment):
        assert recorded.path == f"/v1beta/models/{deployment.served}:generateContent"
        assert recorded.headers["x-goog-api-key"] == GOOGLE_KEY
        contents = user_messages(recorded)
        assert [content["role"] for content in contents] == ["user", "user"]
        assert [part.kind for part in media_parts(recorded)] == ["text", "video"]
        assert media_parts(recorded)[1].mime_type == "video/mp4"


def _thinking_config(recorded: Recorded) -> dict[str, Any] | None:
    config = recorded.body.get("generationConfig", {})
    found = config.get("thinkingConfig", config.get("thinking_config"))
    return dict(found) if isinstance(found, dict) else None


def test_gemini_3_1_pro_asks_for_thoughts_and_robotics_er_2_does_not(runs: Runs) -> None:
    (er2, pro) = NEW[0], NEW[1]
    for recorded in runs.requests_of(pro):
        thinking = _thinking_config(recorded)
        assert thinking is not None and thinking.get("includeThoughts", thinking.get("include_thoughts")) is True
    for recorded in runs.requests_of(er2):
        assert _thinking_config(recorded) is None


@pytest.mark.parametrize("deployment", [d for d in ALL if d.api == RESPONSES],
                         ids=[d.key for d in ALL if d.api == RESPONSES])
def test_gpt_5_5_gets_frames_in_one_message_with_its_effort(runs: Runs, deployment: Deployment) -> None:
    for recorded in runs.requests_of(deployment):
        assert recorded.path == "/v1/responses"
        assert recorded.headers["authorization"] == f"Bearer {OPENAI_KEY}"
        assert recorded.body["model"] == "gpt-5.5-2026-04-23"
        assert _effort(recorded) == deployment.effort
        (message,) = user_messages(recorded)
        kinds = [part["type"] for part in message["content"]]
        assert kinds[0] == "input_text" and set(kinds[1:]) == {"input_image"}
        assert "temperature" not in recorded.body


def test_every_request_belongs_to_a_deployment(runs: Runs) -> None:
    counted = sum(len(runs.requests_of(d)) for d in ALL)
    assert counted == sum(len(requests) for requests in runs.requests.values())
