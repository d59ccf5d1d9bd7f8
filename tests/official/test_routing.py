"""Which model gets the native mp4 and which gets frames (PROTOCOL section 4), against HELM 0.5.16's built-ins."""


import pytest
from helm.benchmark.config_registry import register_builtin_configs_from_helm_package
from helm.benchmark.model_deployment_registry import get_default_model_deployment_for_model, get_model_deployment
from helm.benchmark.model_metadata_registry import MODEL_NAME_TO_MODEL_METADATA

import helm_roboreward.helm_frontend.plugin  # noqa: F401  (registers the baselines, as helm-run does)
from helm_roboreward.helm_frontend.routing import (
    choose_video_mode,
    client_sends_video,
    model_takes_video,
    needs_reasoning_allowance,
)
from helm_roboreward.protocol.rules import FRAMES, NATIVE

GOOGLE_GENAI = "helm.clients.google_genai_client.GoogleGenAIClient"
OPENAI_CLIENT = "helm.clients.openai_client.OpenAIClient"
OPENAI_RESPONSES = "helm.clients.openai_responses_client.OpenAIResponseClient"
ANTHROPIC_CLIENT = "helm.clients.anthropic_client.AnthropicMessagesClient"


def register_helm_builtins_once() -> None:
    """HELM's built-in models and deployments, registered once per process (registering twice duplicates them)."""
    if "openai/gpt-5-mini-2025-08-07" not in MODEL_NAME_TO_MODEL_METADATA:
        register_builtin_configs_from_helm_package()


@pytest.fixture(scope="module", autouse=True)
def _helm_builtins() -> None:
    register_helm_builtins_once()


def builtin_deployment(model: str) -> tuple[str, str]:
    """(default deployment name, client class) of a model as HELM 0.5.16 ships it."""
    deployment = get_default_model_deployment_for_model(model)
    assert deployment, f"HELM has no deployment for {model}"
    return deployment, get_model_deployment(deployment).client_spec.class_name


# model, expected client class of its default built-in deployment (None: whatever HELM ships), mode under auto
SEED_MODELS = [
    ("google/gemini-2.5-flash", GOOGLE_GENAI, NATIVE),
    ("google/gemini-robotics-er-1.5-preview", GOOGLE_GENAI, NATIVE),
    ("openai/gpt-5-mini-2025-08-07", OPENAI_RESPONSES, FRAMES),
    ("anthropic/claude-sonnet-4-5-20250929", ANTHROPIC_CLIENT, FRAMES),
    # HELM serves Llama 4 Scout through Vertex AI's GoogleGenAIClient: the client could send video,
    # but Llama officially got frames, so auto must still give frames.
    ("meta/llama-4-scout-17b-16e-instruct", None, FRAMES),
    ("baseline/constant-3", "helm_roboreward.helm_frontend.clients.baselines.ConstantScoreClient", FRAMES),
    ("baseline/uniform-random", "helm_roboreward.helm_frontend.clients.baselines.RandomScoreClient", FRAMES),
]


@pytest.mark.parametrize("model, client_class, expected", SEED_MODELS, ids=[m for m, _, _ in SEED_MODELS])
def test_auto_routing_of_seed_models(model: str, client_class: str, expected: str) -> None:
    deployment, actual_client = builtin_deployment(model)
    if client_class is not None:
        assert actual_client == client_class
    assert choose_video_mode("auto", model, actual_client, deployment) == expected


def test_qwen25_vl_gets_frames_under_auto_unless_its_client_sends_video() -> None:
    """Qwen2.5-VL officially got the mp4, but HELM's built-in client for it is a local HF client."""
    model = "qwen/qwen2.5-vl-7b-instruct"
    deployment, client_class = builtin_deployment(model)
    assert model_takes_video(model)
    expected = NATIVE if client_sends_video(client_class) else FRAMES
    assert choose_video_mode("auto", model, client_class, deployment) == expected


@pytest.mark.parametrize("model", [m for m, _, _ in SEED_MODELS] + ["qwen/qwen2.5-vl-7b-instruct"])
def test_frames_is_always_frames(model: str) -> None:
    deployment, client_class = builtin_deployment(model)
    assert choose_video_mode("frames", model, client_class, deployment) == FRAMES


@pytest.mark.parametrize(
    "model", ["openai/gpt-5-mini-2025-08-07", "anthropic/claude-sonnet-4-5-20250929", "qwen/qwen2.5-vl-7b-instruct"]
)
def test_native_on_a_client_that_cannot_send_video_is_an_error(model: str) -> None:
    deployment, client_class = builtin_deployment(model)
    with pytest.raises(ValueError, match="video=frames") as error:
        choose_video_mode("native", model, client_class, deployment)
    assert deployment in str(error.value)
    assert client_class in str(error.value)


def test_native_with_openai_chat_client_is_an_error() -> None:
    with pytest.raises(ValueError, match="video=frames"):
        choose_video_mode("native", "openai/gpt-4o-2024-08-06", OPENAI_CLIENT, "openai/gpt-4o-2024-08-06")


@pytest.mark.parametrize("model", ["google/gemini-2.5-flash", "google/gemini-robotics-er-1.5-preview"])
def test_native_on_a_video_client_is_native(model: str) -> None:
    deployment, client_class = builtin_deployment(model)
    assert choose_video_mode("native", model, client_class, deployment) == NATIVE


def test_native_is_honoured_for_a_model_outside_the_official_list_when_the_client_sends_video() -> None:
    # Llama 4 Scout on Vertex AI: the user asked for the mp4 explicitly and the client can send it.
    deployment, client_class = builtin_deployment("meta/llama-4-scout-17b-16e-instruct")
    assert client_class == GOOGLE_GENAI
    assert choose_video_mode("native", "meta/llama-4-scout-17b-16e-instruct", client_class, deployment) == NATIVE


def test_unknown_mode_is_an_error() -> None:
    with pytest.raises(ValueError, match="video='both' is not one of"):
        choose_video_mode("both", "google/gemini-2.5-flash", GOOGLE_GENAI, "google/gemini-2.5-flash")


@pytest.mark.parametrize(
    "model",
    [
        "google/gemini-2.5-flash",
        "google/gemini-robotics-er-1.5-preview",
        "google/gemini-3-pro-preview",
        "someone/Qwen3-VL-8B-Instruct",
        "qwen/qwen2.5-vl-72b-instruct",
        "teetone/roboreward-8b",
    ],
)
def test_models_that_officially_take_video(model: str) -> None:
    assert model_takes_video(model)


@pytest.mark.parametrize(
    "model",
    ["openai/gpt-5-mini-2025-08-07", "anthropic/claude-sonnet-4-5-20250929", "meta/llama-4-scout-17b-16e-instruct",
     "google/gemma-3-27b-it", "baseline/constant-3"],
)
def test_models_that_officially_take_frames(model: str) -> None:
    assert not model_takes_video(model)


@pytest.mark.parametrize(
    "model, expected",
    [
        ("openai/gpt-5-mini-2025-08-07", True),
        ("openai/gpt-4o-2024-08-06", True),
        ("google/gemini-2.5-flash", True),
        ("google/gemini-robotics-er-1.5-preview", True),
        ("anthropic/claude-sonnet-4-5-20250929", False),
        ("meta/llama-4-scout-17b-16e-instruct", False),
        ("qwen/qwen2.5-vl-7b-instruct", False),
        ("google/gemma-3-27b-it", False),
        ("baseline/constant-3", False),
    ],
)
def test_needs_reasoning_allowance(model: str, expected: bool) -> None:
    assert needs_reasoning_allowance(model) is expected


# ----------------------------------------------------------------------------------------- refusals, from the run spec

def _expand(entry: str) -> list:
    from helm.benchmark.run_spec_factory import construct_run_specs
    from helm.common.object_spec import parse_object_spec

    return construct_run_specs(parse_object_spec(entry))


@pytest.fixture
def restored_registry():
    from helm.benchmark.model_deployment_registry import ALL_MODEL_DEPLOYMENTS, DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT
    from helm.benchmark.model_metadata_registry import ALL_MODELS_METADATA

    saved = (list(ALL_MODEL_DEPLOYMENTS), dict(DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT), list(ALL_MODELS_METADATA),
             dict(MODEL_NAME_TO_MODEL_METADATA))
    yield
    ALL_MODEL_DEPLOYMENTS[:] = saved[0]
    DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT.clear()
    DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT.update(saved[1])
    ALL_MODELS_METADATA[:] = saved[2]
    MODEL_NAME_TO_MODEL_METADATA.clear()
    MODEL_NAME_TO_MODEL_METADATA.update(saved[3])


def _register(model: str, deployment: str, client: str, args: dict | None = None) -> None:
    from helm.benchmark.model_deployment_registry import ClientSpec, ModelDeployment, register_model_deployment
    from helm.benchmark.model_metadata_registry import ModelMetadata, register_model_metadata

    if model not in MODEL_NAME_TO_MODEL_METADATA:
        register_model_metadata(ModelMetadata(name=model, display_name=model, description="test",
                                              creator_organization_name="test", access="open", release_date=None,
                                              tags=["VISION_LANGUAGE_MODEL_TAG"]))
    register_model_deployment(ModelDeployment(name=deployment, model_name=model,
                                              client_spec=ClientSpec(class_name=client, args=args or {})))


@pytest.mark.usefixtures("restored_registry")
def test_models_written_alike_in_run_names_are_refused_naming_both() -> None:
    constant = "helm_roboreward.helm_frontend.clients.baselines.ConstantScoreClient"
    _register("acme/x_y", "acme/x_y", constant)
    _register("acme_x/y", "acme_x/y", constant)
    for model, other in (("acme/x_y", "acme_x/y"), ("acme_x/y", "acme/x_y")):
        with pytest.raises(ValueError, match="share one output folder") as error:
            _expand(f"roboreward:subset=sim_kuka,data=sample,model={model}")
        assert model in str(error.value) and other in str(error.value)


@pytest.mark.usefixtures("restored_registry")
def test_declared_limits_on_a_helm_client_are_refused() -> None:
    _register("anthropic/claude-sonnet-4-5-20250929", "anthropic/tight-limits", ANTHROPIC_CLIENT,
              {"max_images_per_prompt": 4})
    with pytest.raises(ValueError, match="takes no such argument"):
        _expand("roboreward:subset=sim_kuka,data=sample,model=anthropic/claude-sonnet-4-5-20250929,"
                "model_deployment=anthropic/tight-limits")


def test_an_unknown_deployment_is_an_error() -> None:
    with pytest.raises(ValueError, match="not registered with HELM"):
        _expand("roboreward:subset=sim_kuka,data=sample,model=teetone/roboreward-8b,model_deployment=vllm/nowhere")


def test_routing_again_changes_nothing() -> None:
    """HELM copies a run spec many times while expanding (max_eval_instances, groups): each copy routes again."""
    import dataclasses

    (spec,) = _expand("roboreward:subset=bridge,fps=2,model=openai/gpt-5-mini-2025-08-07")
    again = dataclasses.replace(spec, groups=spec.groups + ["extra"])
    assert (again.name, again.scenario_spec, again.adapter_spec) == (spec.name, spec.scenario_spec, spec.adapter_spec)
    assert spec.adapter_spec.max_tokens == 65000  # the allowance is added once
