"""The ``roboreward`` run spec as helm-run builds it: names, routing, token budgets, adapter, errors."""

import logging
import os
from collections.abc import Iterator
from datetime import date

import pytest
from helm.benchmark.config_registry import register_builtin_configs_from_helm_package
from helm.benchmark.model_deployment_registry import (
    ALL_MODEL_DEPLOYMENTS,
    DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT,
    ClientSpec,
    ModelDeployment,
    get_default_model_deployment_for_model,
    get_model_deployment,
    register_model_deployment,
)
from helm.benchmark.model_metadata_registry import (
    ALL_MODELS_METADATA,
    MODEL_NAME_TO_MODEL_METADATA,
    ModelMetadata,
    register_model_metadata,
)
from helm.benchmark.run_spec import RunSpec
from helm.benchmark.run_spec_factory import construct_run_specs
from helm.common.object_spec import create_object, parse_object_spec

import helm_roboreward.helm_frontend.plugin  # noqa: F401  (what helm-run's entry point loading does)
from helm_roboreward.helm_frontend import routing
from helm_roboreward.helm_frontend.routing import run_name_data
from helm_roboreward.helm_frontend.run_specs import get_roboreward_spec
from helm_roboreward.helm_frontend.scenario import RoboRewardScenario
from helm_roboreward.protocol.rules import NATIVE_VIDEO_TAG, OFFICIAL_SUBSET_IDS, SAMPLE_SUBSET_IDS

GPT5_MINI = "openai/gpt-5-mini-2025-08-07"
GEMINI_FLASH = "google/gemini-2.5-flash"
GEMINI_ER = "google/gemini-robotics-er-1.5-preview"
CLAUDE = "anthropic/claude-sonnet-4-5-20250929"
LLAMA_SCOUT = "meta/llama-4-scout-17b-16e-instruct"
CONSTANT = "baseline/constant-3"
RANDOM = "baseline/uniform-random"


def register_helm_builtins_once() -> None:
    """HELM's built-in models and deployments, registered once per process (registering twice duplicates them)."""
    if GPT5_MINI not in MODEL_NAME_TO_MODEL_METADATA:
        register_builtin_configs_from_helm_package()


@pytest.fixture(scope="module", autouse=True)
def _helm_builtins() -> None:
    register_helm_builtins_once()


def expand(description: str) -> list[RunSpec]:
    """What helm-run does with one run entry."""
    return construct_run_specs(parse_object_spec(description))


def expand_one(description: str) -> RunSpec:
    specs = expand(description)
    assert len(specs) == 1, [spec.name for spec in specs]
    return specs[0]


def sanitized(model: str) -> str:
    return model.replace("/", "_")


# ---------------------------------------------------------------------------------------------
# The run spec function alone
# ---------------------------------------------------------------------------------------------


def test_defaults_without_a_model() -> None:
    spec = get_roboreward_spec()
    assert spec.name == "roboreward:subset=all,video=auto"
    assert spec.groups == ["roboreward_all"]
    assert spec.scenario_spec.class_name == "helm_roboreward.helm_frontend.scenario.RoboRewardScenario"
    # Only what changes the instances, defaults left out: HELM names a subset's tables after these arguments.
    assert spec.scenario_spec.args == {"subset": "all", "video": "auto"}
    assert [m.class_name for m in spec.metric_specs] == ["helm_roboreward.helm_frontend.metrics.RoboRewardMetric"]
    assert spec.metric_specs[0].args == {"failed": "max_error"}


def test_adapter_spec_is_the_official_generation_setting() -> None:
    adapter = get_roboreward_spec(subset="bridge").adapter_spec
    assert adapter.method == "generation_multimodal"
    assert adapter.temperature == 0.0
    assert adapter.num_outputs == 1
    assert adapter.max_train_instances == 0
    assert adapter.num_train_trials == 1
    assert adapter.num_trials == 1
    assert adapter.stop_sequences == []
    assert adapter.max_tokens == 5000
    for field in ("global_prefix", "global_suffix", "instructions", "input_prefix", "input_suffix",
                  "output_prefix", "output_suffix", "instance_prefix"):
        assert getattr(adapter, field) == "", field


# ---------------------------------------------------------------------------------------------
# Through HELM's run entry parsing and expanders
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model, video",
    [
        (GPT5_MINI, "frames"),
        (CLAUDE, "frames"),
        (LLAMA_SCOUT, "frames"),
        (CONSTANT, "frames"),
        (RANDOM, "frames"),
        (GEMINI_FLASH, "native"),
        (GEMINI_ER, "native"),
    ],
)
def test_run_name_and_resolved_video_mode(model: str, video: str) -> None:
    spec = expand_one(f"roboreward:subset=bridge,model={model}")
    assert spec.name == f"roboreward:subset=bridge,video={video},model={sanitized(model)}"
    assert spec.scenario_spec.args["video"] == video
    assert spec.adapter_spec.model == model
    assert spec.groups == ["roboreward_bridge"]


@pytest.mark.parametrize(
    "entry",
    [
        "roboreward:video=auto,subset=droid,model={model}",
        "roboreward:subset=droid,video=auto,model={model}",
        "roboreward:subset=droid,model={model},video=auto",
        "roboreward:model={model},subset=droid,video=auto",
        "roboreward:model={model},subset=droid",
    ],
)
@pytest.mark.parametrize("model, video", [(GEMINI_FLASH, "native"), (GPT5_MINI, "frames"), (CONSTANT, "frames")])
def test_auto_is_resolved_wherever_video_appears_in_the_entry(entry: str, model: str, video: str) -> None:
    spec = expand_one(entry.format(model=model))
    assert spec.name == f"roboreward:subset=droid,video={video},model={sanitized(model)}"
    assert spec.scenario_spec.args["video"] == video


@pytest.mark.parametrize(
    "model, max_tokens",
    [
        (CLAUDE, 5000),
        (CONSTANT, 5000),
        (RANDOM, 5000),
        (LLAMA_SCOUT, 5000),
        (GPT5_MINI, 65000),
        (GEMINI_FLASH, 65000),
        (GEMINI_ER, 65000),
    ],
)
def test_max_tokens_per_model_family(model: str, max_tokens: int) -> None:
    assert expand_one(f"roboreward:subset=bridge,model={model}").adapter_spec.max_tokens == max_tokens


@pytest.mark.parametrize("model", [GPT5_MINI, GEMINI_FLASH, CLAUDE, CONSTANT])
def test_adapter_spec_survives_helm_model_adjustments(model: str) -> None:
    adapter = expand_one(f"roboreward:subset=bridge,model={model}").adapter_spec
    assert adapter.method == "generation_multimodal"
    assert adapter.temperature == 0.0
    assert adapter.num_outputs == 1
    assert adapter.max_train_instances == 0
    assert adapter.stop_sequences == []
    assert adapter.global_prefix == adapter.instructions == adapter.input_prefix == adapter.output_prefix == ""
    assert adapter.model_deployment


def test_non_default_arguments_appear_in_the_run_name() -> None:
    spec = expand_one(
        "roboreward:subset=bridge,fps=0.5,last_frame=1,max_frames=8,max_side=448,failed=skip,"
        f"model={CONSTANT}"
    )
    assert spec.name == (
        "roboreward:subset=bridge,video=frames,fps=0.5,last_frame=1,max_frames=8,max_side=448,failed=skip,"
        "model=baseline_constant-3"
    )
    args = spec.scenario_spec.args
    assert (args["frames_per_second"], args["include_last_frame"], args["max_frames"], args["max_side"]) == (
        0.5, True, 8, 448)
    assert set(args) == {"subset", "video", "frames_per_second", "include_last_frame", "max_frames", "max_side"}
    assert spec.metric_specs[0].args == {"failed": "skip"}


def test_jobs_is_not_a_run_entry_argument() -> None:
    with pytest.raises(ValueError, match="unknown argument"):
        expand(f"roboreward:subset=bridge,jobs=4,model={CONSTANT}")


def test_default_arguments_given_explicitly_leave_the_name_unchanged() -> None:
    spec = expand_one(
        "roboreward:subset=bridge,data=hf,revision=main,fps=1,last_frame=0,max_frames=0,max_side=0,failed=max_error,"
        f"layout=official,decoding=official,score=parsed,model={CONSTANT}"
    )
    assert spec.name == "roboreward:subset=bridge,video=frames,model=baseline_constant-3"
    assert spec.scenario_spec.args == {"subset": "bridge", "video": "frames"}


@pytest.mark.parametrize("flag", ["true", "yes", "on", "1"])
def test_last_frame_flag_spellings(flag: str) -> None:
    spec = expand_one(f"roboreward:subset=bridge,last_frame={flag},model={CONSTANT}")
    assert "last_frame=1" in spec.name
    assert spec.scenario_spec.args["include_last_frame"] is True


def test_sample_data_in_the_name() -> None:
    spec = expand_one(f"roboreward:subset=sim_arena,data=sample,model={RANDOM}")
    assert spec.name == "roboreward:subset=sim_arena,data=sample,video=frames,model=baseline_uniform-random"
    assert spec.groups == ["roboreward_sim_arena"]
    assert spec.scenario_spec.args["data"] == "sample"


def test_hf_revision_in_the_name() -> None:
    spec = expand_one(f"roboreward:subset=bridge,revision=v1.0,model={CONSTANT}")
    assert spec.name == "roboreward:subset=bridge,revision=v1.0,video=frames,model=baseline_constant-3"
    assert spec.scenario_spec.args["revision"] == "v1.0"


def test_local_data_path_becomes_a_slash_free_run_name_value(tmp_path) -> None:
    folder = tmp_path / "my copy" / "RoboReward"
    folder.mkdir(parents=True)
    spec = expand_one(f"roboreward:subset=bridge,data={folder},model={CONSTANT}")
    spelled = run_name_data(str(folder))
    assert "/" not in spelled and os.sep not in spelled and "," not in spelled and " " not in spelled
    assert spelled.startswith("RoboReward-")
    assert spec.name == f"roboreward:subset=bridge,data={spelled},video=frames,model=baseline_constant-3"
    assert "/" not in spec.name
    assert spec.scenario_spec.args["data"] == str(folder)  # the scenario still gets the real path


def test_run_name_data_is_stable_and_distinguishes_folders(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = tmp_path / "a" / "data"
    b = tmp_path / "b" / "data"
    assert run_name_data(str(a)) != run_name_data(str(b))  # same folder name, different places
    assert run_name_data(str(a)) == run_name_data(str(a) + "/")
    monkeypatch.chdir(tmp_path)
    assert run_name_data("a/data") == run_name_data(str(a))
    assert run_name_data("hf") == "hf" and run_name_data("sample") == "sample"


def test_local_data_accepts_any_subset_name(tmp_path) -> None:
    spec = expand_one(f"roboreward:subset=my_lab_robot,data={tmp_path},model={CONSTANT}")
    assert spec.groups == ["roboreward_my_lab_robot"]


def test_model_vlm_names_the_new_spelling() -> None:
    """A HELM model group does not hold this package's models (other benchmarks stay as stock HELM's)."""
    with pytest.raises(ValueError, match=r"--models-to-run \$\(roboreward models --group all --names\)"):
        expand("roboreward:subset=bridge,model=vlm")


def expand_group(description: str, group: str) -> list[RunSpec]:
    """What helm-run builds for ``--models-to-run $(roboreward models --group <group> --names)``."""
    from helm.benchmark.presentation.run_entry import RunEntry
    from helm.benchmark.run import run_entries_to_run_specs

    from helm_roboreward.model_tools.catalog import models_in_group

    return run_entries_to_run_specs([RunEntry(description=description, priority=1, groups=None)],
                                    models_to_run=models_in_group(group))


def test_every_model_in_one_entry_with_every_video_mode_resolved() -> None:
    specs = expand_group("roboreward:subset=bridge", "all")
    assert len(specs) > 50
    names = [spec.name for spec in specs]
    assert len(names) == len(set(names)), "two runs would share an output folder"
    modes = {spec.adapter_spec.model: spec.scenario_spec.args["video"] for spec in specs}
    assert set(modes.values()) <= {"frames", "native"}
    for spec in specs:
        assert "video=auto" not in spec.name
        assert f"video={spec.scenario_spec.args['video']}," in spec.name
    assert modes[GEMINI_FLASH] == "native"
    assert modes[GPT5_MINI] == "frames"
    assert modes[CLAUDE] == "frames"
    assert CONSTANT not in modes and RANDOM not in modes  # baselines: a group of their own
    assert {"teetone/roboreward-8b", "qwen/qwen3-vl-8b-instruct"} <= set(modes)
    baselines = expand_group("roboreward:subset=bridge", "baselines")
    assert [spec.adapter_spec.model for spec in baselines] == [CONSTANT, RANDOM]
    for spec in specs:  # every native run goes to a deployment whose client can send the mp4
        if spec.scenario_spec.args["video"] == "native":
            assert routing.model_takes_video(spec.adapter_spec.model), spec.name
            name = spec.adapter_spec.model_deployment or get_default_model_deployment_for_model(
                spec.adapter_spec.model)
            assert name is not None, spec.name
            deployment = get_model_deployment(name)
            assert routing.client_sends_video(deployment.client_spec.class_name), spec.name


def test_explicit_video_modes() -> None:
    assert expand_one(f"roboreward:subset=bridge,video=frames,model={GEMINI_FLASH}").scenario_spec.args[
        "video"] == "frames"
    spec = expand_one(f"roboreward:subset=bridge,video=native,model={GEMINI_ER}")
    assert spec.name == "roboreward:subset=bridge,video=native,model=google_gemini-robotics-er-1.5-preview"


def test_frame_options_leave_the_name_of_a_native_video_run() -> None:
    """They shape frames only: a model given the mp4 runs the same with or without them."""
    options = "fps=2,last_frame=1,max_frames=8,max_side=448"
    native = expand_one(f"roboreward:subset=bridge,{options},failed=skip,model={GEMINI_ER}")
    assert native.name == ("roboreward:subset=bridge,video=native,failed=skip,"
                           "model=google_gemini-robotics-er-1.5-preview")
    frames = expand_one(f"roboreward:subset=bridge,{options},model={CONSTANT}")
    assert frames.name == f"roboreward:subset=bridge,video=frames,{options},model=baseline_constant-3"


@pytest.mark.parametrize("model", [GEMINI_FLASH, GPT5_MINI, CONSTANT])
def test_scenario_accepts_the_expanded_arguments(model: str) -> None:
    """The scenario is built from the run spec's args by HELM; every arg the expanders add must be accepted."""
    spec = expand_one(f"roboreward:subset=sim_kuka,data=sample,last_frame=1,model={model}")
    scenario = create_object(spec.scenario_spec)
    assert isinstance(scenario, RoboRewardScenario)
    assert scenario.video == spec.scenario_spec.args["video"]
    assert scenario.frame_options.include_last_frame is (spec.scenario_spec.args["video"] == "frames")


def test_scenario_rejects_an_unresolved_auto() -> None:
    with pytest.raises(ValueError, match="unresolved"):
        create_object(get_roboreward_spec(subset="bridge").scenario_spec)


@pytest.mark.parametrize("model", [GPT5_MINI, CLAUDE])
def test_native_video_on_a_frames_only_client_fails_before_any_request(model: str) -> None:
    with pytest.raises(ValueError, match="video=frames"):
        expand(f"roboreward:subset=bridge,video=native,model={model}")


def test_deployment_given_after_the_model_keeps_auto_routing() -> None:
    spec = expand_one(f"roboreward:subset=bridge,model={GEMINI_FLASH},model_deployment={GEMINI_FLASH}")
    assert spec.scenario_spec.args["video"] == "native"
    assert spec.adapter_spec.max_tokens == 65000


def test_deployment_given_before_the_model_keeps_auto_routing() -> None:
    # The deployment expander must not resolve auto with an empty model name (-> frames) and overwrite 'auto':
    # the model expander, which runs after it, chooses native.
    spec = expand_one(f"roboreward:subset=bridge,model_deployment={GEMINI_FLASH},model={GEMINI_FLASH}")
    assert spec.scenario_spec.args["video"] == "native"
    assert spec.name.count("video=") == 1 and "video=native" in spec.name
    assert spec.adapter_spec.max_tokens == 65000


# ---------------------------------------------------------------------------------------------
# Models and deployments registered only for these tests
# ---------------------------------------------------------------------------------------------

TEST_GEMINI = "google/gemini-roboreward-routing-test"
TEST_GEMINI_VIA_OPENAI = "roboreward-test/gemini-via-openai-compatible"
TEST_GEMINI_VIA_GENAI = "roboreward-test/gemini-via-genai"
TEST_TAGGED = "acme/tagged-video-vlm"
TEST_TAGGED_DEPLOYMENT = "roboreward-test/tagged-video-vlm"


@pytest.fixture()
def test_models() -> Iterator[None]:
    """A Gemini-named model with two deployments (OpenAI-compatible first, Google GenAI last = default)
    and a model outside the name patterns that carries the native-video tag."""
    metadata = [
        ModelMetadata(name=TEST_GEMINI, creator_organization_name="test", display_name="Test Gemini",
                      description="", access="open", release_date=date(2026, 1, 1)),
        ModelMetadata(name=TEST_TAGGED, creator_organization_name="test", display_name="Tagged",
                      description="", access="open", release_date=date(2026, 1, 1), tags=[NATIVE_VIDEO_TAG]),
    ]
    deployments = [
        ModelDeployment(name=TEST_GEMINI_VIA_OPENAI, model_name=TEST_GEMINI,
                        client_spec=ClientSpec(class_name="helm.clients.openai_client.OpenAIClient")),
        ModelDeployment(name=TEST_GEMINI_VIA_GENAI, model_name=TEST_GEMINI,
                        client_spec=ClientSpec(class_name="helm.clients.google_genai_client.GoogleGenAIClient")),
        ModelDeployment(name=TEST_TAGGED_DEPLOYMENT, model_name=TEST_TAGGED,
                        client_spec=ClientSpec(class_name="helm.clients.google_genai_client.GoogleGenAIClient")),
    ]
    for model in metadata:
        register_model_metadata(model)
    for deployment in deployments:
        register_model_deployment(deployment)
    try:
        yield
    finally:
        for deployment in deployments:
            ALL_MODEL_DEPLOYMENTS.remove(deployment)
            DEPLOYMENT_NAME_TO_MODEL_DEPLOYMENT.pop(deployment.name, None)
        for model in metadata:
            ALL_MODELS_METADATA.remove(model)
            MODEL_NAME_TO_MODEL_METADATA.pop(model.name, None)


@pytest.mark.usefixtures("test_models")
def test_native_video_tag_routes_a_model_outside_the_name_patterns_to_native() -> None:
    spec = expand_one(f"roboreward:subset=bridge,model={TEST_TAGGED}")
    assert spec.scenario_spec.args["video"] == "native"
    assert spec.adapter_spec.max_tokens == 5000


@pytest.mark.usefixtures("test_models")
def test_auto_uses_the_default_deployment_of_the_model() -> None:
    spec = expand_one(f"roboreward:subset=bridge,model={TEST_GEMINI}")
    assert spec.adapter_spec.model_deployment == TEST_GEMINI_VIA_GENAI
    assert spec.scenario_spec.args["video"] == "native"


@pytest.mark.usefixtures("test_models")
def test_native_with_a_deployment_override_that_cannot_send_video_fails() -> None:
    with pytest.raises(ValueError, match="video=frames"):
        expand(f"roboreward:subset=bridge,video=native,model={TEST_GEMINI},model_deployment={TEST_GEMINI_VIA_OPENAI}")


@pytest.mark.usefixtures("test_models")
def test_auto_with_a_deployment_override_that_cannot_send_video_gives_frames() -> None:
    # The model expander must not overwrite 'auto' with native (the default Google deployment's choice): the
    # deployment override to an OpenAI-compatible client would then raise as if native had been asked for.
    spec = expand_one(f"roboreward:subset=bridge,model={TEST_GEMINI},model_deployment={TEST_GEMINI_VIA_OPENAI}")
    assert spec.adapter_spec.model_deployment == TEST_GEMINI_VIA_OPENAI
    assert spec.scenario_spec.args["video"] == "frames"
    assert spec.name.count("video=") == 1 and "video=frames" in spec.name


# ---------------------------------------------------------------------------------------------
# Bad arguments
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments, message",
    [
        ("subset=bridge,video=hybrid", r"video='hybrid' is not one of frames, native, auto"),
        ("subset=bridge,failed=ignore", r"failed='ignore' is not one of max_error, skip"),
        ("subset=bridge,fps=0", r"fps must be a positive number"),
        ("subset=bridge,fps=-2", r"fps must be a positive number"),
        ("subset=bridge,fps=abc", r"fps='abc' is not a valid float"),
        ("subset=bridge,max_frames=-1", r"max_frames must be 0 \(no cap\) or positive"),
        ("subset=bridge,max_frames=2.5", r"max_frames=2.5 must be a whole number"),
        ("subset=bridge,max_frames=lots", r"max_frames='lots' is not a valid int"),
        ("subset=bridge,max_side=8", r"max_side must be 0 \(native size\) or at least 16"),
        ("subset=bridge,last_frame=maybe", r"last_frame='maybe' is not a flag; use last_frame=1 or last_frame=0"),
        ("subset=bridge,last_frame=2", r"last_frame=2 is not a flag"),
        ("subset=brige", r"subset='brige' is not in data=hf\. Valid subsets: all, robo_arena, "),
        ("subset=sim_arena", r"subset='sim_arena' is not in data=hf"),
        ("subset=bridge,data=sample", r"subset='bridge' is not in data=sample\. Valid subsets: all, sim_arena, "),
        ("subset=sim_arena,data=sample,revision=abc123", r"revision= applies to data=hf only; drop it for data=sample"),
    ],
)
def test_bad_arguments_raise_clear_errors(arguments: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        expand(f"roboreward:{arguments},model={CONSTANT}")


def test_unknown_subset_message_lists_every_valid_subset() -> None:
    with pytest.raises(ValueError) as hf_error:
        expand(f"roboreward:subset=nope,model={CONSTANT}")
    assert all(subset in str(hf_error.value) for subset in OFFICIAL_SUBSET_IDS)
    assert not any(subset in str(hf_error.value) for subset in SAMPLE_SUBSET_IDS)
    with pytest.raises(ValueError) as sample_error:
        expand(f"roboreward:subset=nope,data=sample,model={CONSTANT}")
    assert all(subset in str(sample_error.value) for subset in SAMPLE_SUBSET_IDS)
    assert "bridge" not in str(sample_error.value)


@pytest.mark.parametrize("subset", OFFICIAL_SUBSET_IDS)
def test_every_official_subset_is_accepted_for_hf(subset: str) -> None:
    spec = get_roboreward_spec(subset=subset)
    assert spec.groups == [f"roboreward_{subset}"]
    assert spec.name == f"roboreward:subset={subset},video=auto"


def test_a_video_model_routed_to_frames_by_its_client_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    """Qwen2.5-VL officially got the mp4; HELM's own deployment of it cannot send video, so it gets frames, said."""
    model = "qwen/qwen2.5-vl-7b-instruct"
    with caplog.at_level(logging.WARNING, logger="helm"):
        spec = expand_one(f"roboreward:subset=bridge,model={model},"
                          "model_deployment=huggingface/qwen2.5-vl-7b-instruct")
    assert spec.scenario_spec.args["video"] == "frames"
    warned = [record.getMessage() for record in caplog.records if "cannot send video" in record.getMessage()]
    assert len(warned) == 1 and model in warned[0] and "add-model --client vllm" in warned[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="helm"):
        expand_one(f"roboreward:subset=bridge,video=frames,model={model},"
                   "model_deployment=huggingface/qwen2.5-vl-7b-instruct")
    assert not [record for record in caplog.records if "cannot send video" in record.getMessage()]  # asked for
