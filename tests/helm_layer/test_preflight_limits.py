"""Pre-flight request limits: every instance is checked against its deployment's documented (or declared) limits
after its media is prepared and before any request; a run over them stops with one message naming the rows, the
limit and the fix, and sends nothing. Default runs are unaffected."""

import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from helm.benchmark.config_registry import register_builtin_configs_from_helm_package
from helm.benchmark.model_deployment_registry import (
    ALL_MODEL_DEPLOYMENTS,
    DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT,
    ClientSpec,
    ModelDeployment,
    get_model_deployment,
    register_model_deployment,
)
from helm.benchmark.model_metadata_registry import ALL_MODELS_METADATA, MODEL_NAME_TO_MODEL_METADATA
from helm.benchmark.run_spec_factory import construct_run_specs
from helm.common.object_spec import parse_object_spec

import helm_roboreward.helm_layer.plugin  # noqa: F401  (what helm-run's entry point loading does)
from helm_roboreward.core.request_limits import (
    MEGABYTE,
    PlannedRequest,
    RequestLimitError,
    RequestLimits,
    base64_length,
    check_requests,
)
from helm_roboreward.helm_layer import model_registry
from helm_roboreward.helm_layer.model_registry import register_package_models
from helm_roboreward.helm_layer.request_limits import limits_for_deployment
from helm_roboreward.helm_layer.routing import run_request_limits
from tests.helpers.fakes import CHAT, FakeModelServer, media_parts
from tests.helpers.harness import (
    ANTHROPIC_KEY,
    OPENAI_KEY,
    TIMEOUT,
    VLLM_KEY,
    check_completed,
    helm_environment,
    helm_run_command,
)
from tests.helpers.sample import rows_of

SUBSET = "sim_kuka"
SCOUT = "meta/llama-4-scout-17b-16e-instruct"
CLAUDE = "anthropic/claude-sonnet-4-5-20250929"
GPT5_MINI = "openai/gpt-5-mini-2025-08-07"
ANTHROPIC = RequestLimits(max_images=100, max_request_bytes=32 * MEGABYTE, source="Anthropic Messages API")


@pytest.fixture(scope="module", autouse=True)
def _helm_builtins() -> None:
    if "openai/gpt-5-mini-2025-08-07" not in MODEL_NAME_TO_MODEL_METADATA:
        register_builtin_configs_from_helm_package()
    register_package_models()  # as helm-run: the plugin after the built-ins (twins of HELM's own deployments)


@pytest.fixture
def restored_registry() -> Iterator[None]:
    """Deployments a test registers are gone afterwards (HELM's registries are process-wide)."""
    deployments = list(ALL_MODEL_DEPLOYMENTS)
    by_name = dict(DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT)
    models = list(ALL_MODELS_METADATA)
    models_by_name = dict(MODEL_NAME_TO_MODEL_METADATA)
    yield
    ALL_MODEL_DEPLOYMENTS[:] = deployments
    DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT.clear()
    DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT.update(by_name)
    ALL_MODELS_METADATA[:] = models
    MODEL_NAME_TO_MODEL_METADATA.clear()
    MODEL_NAME_TO_MODEL_METADATA.update(models_by_name)


def request(line: int, images: int = 0, videos: int = 0, sizes: tuple[int, ...] = (),
            text: int = 900) -> PlannedRequest:
    return PlannedRequest(f"metadata line {line}", images, videos, sizes, text)


# --------------------------------------------------------------------------------------------- the check


def test_base64_inflation() -> None:
    assert [base64_length(n) for n in (0, 1, 2, 3, 4, 3_000_000)] == [0, 4, 4, 4, 8, 4_000_000]


def test_requests_within_the_limits_pass() -> None:
    check_requests([request(1, images=100, sizes=(100_000,) * 100)], ANTHROPIC, "anthropic/x")


def test_too_many_images_names_the_rows_the_limit_and_max_frames() -> None:
    requests = [request(3, images=101, sizes=(1000,) * 101), request(4, images=5, sizes=(1000,) * 5),
                request(9, images=130, sizes=(1000,) * 130)]
    with pytest.raises(RequestLimitError) as error:
        check_requests(requests, ANTHROPIC, "anthropic/claude-sonnet-4-5-20250929")
    message = str(error.value)
    assert "2 of 3 row(s)" in message and "'anthropic/claude-sonnet-4-5-20250929'" in message
    assert "metadata line 3: 101 images" in message and "metadata line 9: 130 images" in message
    assert "metadata line 4" not in message
    assert "at most 100 images and 32 MB per request (Anthropic Messages API)" in message
    assert "max_frames=100" in message and "Nothing was sent" in message


def test_request_bytes_count_media_at_four_thirds() -> None:
    raw = 25 * MEGABYTE  # fits 32 MB as raw bytes, not once base64-encoded (33.3 MB)
    over = [request(7, images=10, sizes=(raw // 10,) * 10)]
    with pytest.raises(RequestLimitError) as error:
        check_requests(over, ANTHROPIC, "anthropic/x")
    assert "metadata line 7: 33.3 MB with base64" in str(error.value)
    assert "max_side=" in str(error.value)
    check_requests(over, RequestLimits(max_request_bytes=32 * MEGABYTE, inline_base64=False), "vllm/x")


def test_native_video_over_the_inline_limit_suggests_frames() -> None:
    limits = RequestLimits(max_request_bytes=100 * MEGABYTE, source="Gemini API inline data")
    with pytest.raises(RequestLimitError, match=r"video=frames"):
        check_requests([request(2, videos=1, sizes=(80 * MEGABYTE,))], limits, "google/gemini-2.5-pro")


def test_more_than_ten_rows_are_counted_not_listed() -> None:
    requests = [request(line, images=5, sizes=(10,) * 5) for line in range(1, 26)]
    with pytest.raises(RequestLimitError) as error:
        check_requests(requests, RequestLimits(max_images=3), "vllm/x")
    assert "25 of 25 row(s)" in str(error.value) and "and 15 more" in str(error.value)


def test_limits_are_whole_numbers() -> None:
    with pytest.raises(ValueError, match="max_images=-1 must be a whole number"):
        RequestLimits(max_images=-1)


# --------------------------------------------------------------------------------------------- per deployment


@pytest.mark.parametrize("deployment, images, megabytes", [
    (CLAUDE, 100, 32),
    ("openai/gpt-5-mini-2025-08-07", 500, 50),
    ("openai/gpt-5.5-2026-04-23", 500, 50),
    ("google/gemini-2.5-pro", 0, 100),
    ("google/gemini-robotics-er-2-preview", 0, 100),
    ("transformers/roboreward-8b", 0, 0),
    ("vllm/roboreward-8b", 0, 0),
    ("baseline/constant-3", 0, 0),
])
def test_documented_limits_by_client(deployment: str, images: int, megabytes: int) -> None:
    limits = limits_for_deployment(get_model_deployment(deployment))
    assert (limits.max_images, limits.max_request_bytes) == (images, megabytes * MEGABYTE)
    assert limits.source.startswith("http") or "https://" in limits.source or limits.is_empty


def test_anthropic_long_context_models_take_600_images() -> None:
    long = ModelDeployment(name="anthropic/long", model_name=CLAUDE, max_sequence_length=1_000_000,
                           client_spec=ClientSpec(class_name="helm.clients.anthropic_client.AnthropicMessagesClient"))
    assert limits_for_deployment(long).max_images == 600


@pytest.mark.parametrize("entry", [
    f"model={CLAUDE}",
    "model=teetone/roboreward-8b",
    "model=teetone/roboreward-8b,model_deployment=vllm/roboreward-8b",
    "decoding=greedy,model=teetone/roboreward-8b,model_deployment=vllm/roboreward-8b",
    "layout=one_message,model=google/gemini-2.5-pro",
    "model=google/gemini-2.5-pro,model_deployment=google/gemini-2.5-pro-one-message",
    f"model={SCOUT}",
    f"model={SCOUT},model_deployment=google/llama-4-scout-17b-16e-instruct",
])
def test_the_scenario_finds_the_deployment_routing_chose_from_the_run_name(entry: str) -> None:
    """The pre-flight check reads the deployment from the run's name; it must be the one routing put in the spec."""
    specs = construct_run_specs(parse_object_spec(f"roboreward:subset={SUBSET},data=sample,{entry}"))
    for spec in specs:
        resolved = run_request_limits(spec.name, spec.scenario_spec.args)
        assert resolved is not None
        assert resolved[0] == spec.adapter_spec.model_deployment, spec.name
        with_groups = run_request_limits(spec.name + ",groups=roboreward_sim_kuka", spec.scenario_spec.args)
        assert with_groups == resolved  # conf groups appended by helm-run change nothing


def test_the_limits_stay_out_of_the_scenario_arguments() -> None:
    """HELM names summarize tables and instance folders after every scenario argument (no per-model values)."""
    entries = [f"roboreward:subset={SUBSET},data=sample,model={model}" for model in (CLAUDE, GPT5_MINI)]
    specs = [spec for entry in entries for spec in construct_run_specs(parse_object_spec(entry))]
    assert specs[0].scenario_spec.args == specs[1].scenario_spec.args
    assert run_request_limits("not-a-roboreward-name", {}) is None


@pytest.mark.usefixtures("restored_registry")
def test_declared_limits_leave_the_client_arguments_and_override_documented_ones() -> None:
    deployment = ModelDeployment(
        name="anthropic/declared-limits-test", model_name=CLAUDE,
        client_spec=ClientSpec(class_name="helm.clients.anthropic_client.AnthropicMessagesClient",
                               args={"max_images_per_prompt": 4}))
    register_model_deployment(deployment)
    assert "anthropic/declared-limits-test" in model_registry.take_declared_request_limits()
    stripped = get_model_deployment("anthropic/declared-limits-test")
    assert stripped.client_spec.args == {}
    limits = limits_for_deployment(stripped)
    assert (limits.max_images, limits.max_request_bytes) == (4, 32 * MEGABYTE)
    assert "declared by deployment anthropic/declared-limits-test (max_images_per_prompt: 4)" in limits.source


@pytest.mark.usefixtures("restored_registry")
def test_a_bad_declared_limit_names_the_deployment() -> None:
    register_model_deployment(ModelDeployment(
        name="vllm/bad-limit-test", model_name=SCOUT,
        client_spec=ClientSpec(class_name=model_registry.OPENAI_VIDEO_CLIENT,
                               args={"max_images_per_prompt": "three"})))
    model_registry.take_declared_request_limits()
    with pytest.raises(ValueError, match=r"'vllm/bad-limit-test' declares max_images_per_prompt: 'three'"):
        limits_for_deployment(get_model_deployment("vllm/bad-limit-test"))


# --------------------------------------------------------------------------------------------- helm-run

TEST_DEPLOYMENTS = f"""\
model_deployments:
  - name: vllm/scout-3-images
    model_name: {SCOUT}
    max_sequence_length: 1000000
    client_spec:
      class_name: "helm_roboreward.clients.openai_video_client.OpenAIVideoClient"
      args:
        served_model_name: scout-3-images
        max_images_per_prompt: 3
  - name: anthropic/tight-limits
    model_name: {CLAUDE}
    max_sequence_length: 200000
    client_spec:
      class_name: "helm.clients.anthropic_client.AnthropicMessagesClient"
      args:
        max_images_per_prompt: 4
        max_request_bytes: 60000
"""


def limited_local_path(folder: Path, fake: FakeModelServer) -> Path:
    """A --local-path of its own: the two test deployments (the package's come from the plugin) and credentials."""
    folder.mkdir(parents=True)
    (folder / "model_deployments.yaml").write_text(TEST_DEPLOYMENTS, encoding="utf-8")
    (folder / "credentials.conf").write_text(textwrap.dedent(f"""\
        vllmBaseUrl: "{fake.base_url}"
        vllmApiKey: "{VLLM_KEY}"
        openaiBaseUrl: "{fake.base_url}"
        openaiApiKey: "{OPENAI_KEY}"
        anthropicApiKey: "{ANTHROPIC_KEY}"
        """), encoding="utf-8")
    return folder


def run(tmp_path: Path, fake: FakeModelServer, entry: str, suite: str) -> subprocess.CompletedProcess[str]:
    local = limited_local_path(tmp_path / f"local-{suite}", fake)
    return subprocess.run(helm_run_command([entry], suite, local), cwd=tmp_path, env=helm_environment(fake),
                          capture_output=True, text=True, timeout=TIMEOUT)


def test_a_vllm_image_limit_stops_the_frames_run_before_any_request(tmp_path: Path) -> None:
    entry = f"roboreward:subset={SUBSET},data=sample,model={SCOUT},model_deployment=vllm/scout-3-images"
    with FakeModelServer() as fake:
        process = run(tmp_path, fake, entry, "limited")
        requests = fake.requests
    output = process.stdout + process.stderr
    assert process.returncode != 0, output[-3000:]
    assert requests == []
    assert "would exceed the request limits of model deployment 'vllm/scout-3-images'" in output
    assert "at most 3 images per request" in output and "max_images_per_prompt: 3" in output
    assert "metadata line" in output and "max_frames=3" in output
    assert len(rows_of(SUBSET)) > 0


def test_the_fix_it_names_makes_the_run_go_through(tmp_path: Path) -> None:
    entry = f"roboreward:subset={SUBSET},data=sample,max_frames=3,model={SCOUT},model_deployment=vllm/scout-3-images"
    with FakeModelServer() as fake:
        process = run(tmp_path, fake, entry, "fixed")
        requests = fake.requests_to(CHAT, "scout-3-images")
    check_completed(process, "helm-run max_frames=3")
    assert len(requests) == len(rows_of(SUBSET))
    assert all(sum(part.kind == "image" for part in media_parts(r)) <= 3 for r in requests)


def test_an_anthropic_like_deployment_stops_on_images_and_bytes(tmp_path: Path) -> None:
    entry = f"roboreward:subset={SUBSET},data=sample,model={CLAUDE},model_deployment=anthropic/tight-limits"
    with FakeModelServer() as fake:
        process = run(tmp_path, fake, entry, "tight")
        requests = fake.requests
    output = process.stdout + process.stderr
    assert process.returncode != 0, output[-3000:]
    assert requests == []
    assert "'anthropic/tight-limits': at most 4 images and 60 kB per request" in output
    assert "with base64" in output
    assert "max_frames=4" in output and "max_side=" in output
