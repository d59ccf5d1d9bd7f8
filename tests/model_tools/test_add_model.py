"""``roboreward add-model``: HELM-format entries merged into a --local-path, every bad input refused with the fix,
and end to end: a model added for the openai and vllm clients runs under ``helm-run`` against the loopback fake."""

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from helm.benchmark.config_registry import register_builtin_configs_from_helm_package
from helm.benchmark.model_metadata_registry import MODEL_NAME_TO_MODEL_METADATA

import helm_roboreward.helm_frontend.plugin  # noqa: F401  (what helm-run's entry point loading does)
from helm_roboreward.helm_frontend.model_registry import register_package_models
from helm_roboreward.model_tools.add_model import CLIENTS, AddModelError, NewModel, add_model
from tests.helpers.fakes import CHAT, RESPONSES, FakeModelServer, media_parts
from tests.helpers.harness import (
    OPENAI_KEY,
    PROD_ENV,
    TIMEOUT,
    VLLM_KEY,
    check_completed,
    cli,
    helm_environment,
    helm_run_command,
    request_states,
)
from tests.helpers.sample import rows_of

SUBSET = "sim_kuka"


@pytest.fixture(scope="module", autouse=True)
def _helm_builtins() -> None:
    if "openai/gpt-5-mini-2025-08-07" not in MODEL_NAME_TO_MODEL_METADATA:
        register_builtin_configs_from_helm_package()
    register_package_models()  # as helm-run: the plugin after the built-ins (option deployments of HELM's own)


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def deployment_of(folder: Path, name: str) -> dict[str, Any]:
    (entry,) = [d for d in load(folder / "model_deployments.yaml")["model_deployments"] if d["name"] == name]
    return dict(entry)


# --------------------------------------------------------------------------------------------- entries per client


@pytest.mark.parametrize("client, api_id, expected_args", [
    ("openai", "gpt-x-2027-01-01", {"openai_model_name": "gpt-x-2027-01-01"}),
    ("anthropic", "claude-x-2027", {"anthropic_model_name": "claude-x-2027"}),
    ("google", "gemini-x-exp", {"genai_use_vertexai": False, "genai_model": "gemini-x-exp"}),
    ("vllm", "Acme/X-VL-8B", {"served_model_name": "Acme/X-VL-8B"}),
    ("transformers", "Acme/X-VL-8B", {"checkpoint": "Acme/X-VL-8B"}),
])
def test_each_client_gets_its_class_and_arguments(tmp_path: Path, client: str, api_id: str,
                                                  expected_args: dict[str, Any]) -> None:
    model = f"acme/x-{client}-entry"
    add_model(NewModel(model=model, client=client, api_id=api_id), str(tmp_path))
    deployment = deployment_of(tmp_path, f"{client}/x-{client}-entry")
    assert deployment["model_name"] == model
    assert deployment["client_spec"] == {"class_name": CLIENTS[client], "args": expected_args}
    assert "tokenizer_name" not in deployment
    (metadata,) = load(tmp_path / "model_metadata.yaml")["models"]
    assert metadata["name"] == model and "VISION_LANGUAGE_MODEL_TAG" in metadata["tags"]
    assert metadata["access"] == ("open" if client in ("vllm", "transformers") else "limited")


def test_defaults_native_tag_limits_and_the_summary(tmp_path: Path) -> None:
    lines = add_model(NewModel(model="acme/native-defaults", client="vllm", video="native", display_name="Acme NV",
                               base_url="http://gpu-box:8000/v1", max_images_per_prompt=64,
                               max_videos_per_prompt=1), str(tmp_path))
    deployment = deployment_of(tmp_path, "vllm/native-defaults")
    assert deployment["client_spec"]["args"] == {"served_model_name": "acme/native-defaults",
                                                 "base_url": "http://gpu-box:8000/v1", "max_images_per_prompt": 64,
                                                 "max_videos_per_prompt": 1}
    (metadata,) = load(tmp_path / "model_metadata.yaml")["models"]
    assert metadata["display_name"] == "Acme NV"
    assert "ROBOREWARD_NATIVE_VIDEO_TAG" in metadata["tags"]
    text = "\n".join(lines)
    assert "video=auto sends: native" in text and "max_tokens: 5,000" in text
    assert "credentials.conf: none (base_url in args)" in text
    assert "helm-run --run-entries roboreward:subset=all,model=acme/native-defaults" in text


def test_an_openai_model_gets_the_reasoning_allowance_and_its_effort(tmp_path: Path) -> None:
    lines = add_model(NewModel(model="openai/gpt-x-entry-test", client="openai", reasoning_effort="xhigh"),
                      str(tmp_path))
    assert deployment_of(tmp_path, "openai/gpt-x-entry-test")["client_spec"]["args"] == {
        "openai_model_name": "gpt-x-entry-test", "reasoning_effort": "xhigh"}
    assert any("video=auto sends: frames; max_tokens: 65,000; credentials.conf: openaiApiKey" in line
               for line in lines)


def test_timeout_and_retries_become_the_video_clients_arguments(tmp_path: Path) -> None:
    add_model(NewModel(model="acme/slow-server", client="vllm", timeout_seconds=1800.0, max_retries=0), str(tmp_path))
    args = deployment_of(tmp_path, "vllm/slow-server")["client_spec"]["args"]
    assert args == {"served_model_name": "acme/slow-server", "timeout_seconds": 1800.0, "max_retries": 0}


QWEN3_VL_VLLM_ARGS = {"decoding": "checkpoint", "video_fps": 2, "video_min_frames": 4, "video_max_frames": 768}
"""What the package's own vLLM Qwen3-VL and RoboReward deployments carry (helm_roboreward/config)."""


@pytest.mark.parametrize("new, args, native_tag", [
    (NewModel(model="acme/reward-ft-8b", client="vllm", api_id="acme/Reward-FT-8B", family="qwen3-vl"),
     {"served_model_name": "acme/Reward-FT-8B", **QWEN3_VL_VLLM_ARGS}, True),
    (NewModel(model="acme/reward-ft-8b", client="vllm", api_id="acme/RoboReward-FT-8B"),  # inferred: the checkpoint
     {"served_model_name": "acme/RoboReward-FT-8B", **QWEN3_VL_VLLM_ARGS}, True),
    (NewModel(model="acme/qwen3-vl-8b-ft", client="transformers", api_id="/ckpt/step-900"),  # inferred: the name
     {"checkpoint": "/ckpt/step-900", "decoding": "checkpoint"}, False),  # the name rule already sends the mp4
    (NewModel(model="acme/roboreward-ft", client="vllm", family="none"), {"served_model_name": "acme/roboreward-ft"},
     False),
    (NewModel(model="acme/reward-ft-8b", client="vllm", family="qwen3-vl", video="frames"),
     {"served_model_name": "acme/reward-ft-8b", **QWEN3_VL_VLLM_ARGS}, False),
])
def test_a_qwen3_vl_fine_tune_gets_the_familys_decoding_and_frame_rule(tmp_path: Path, new: NewModel,
                                                                       args: dict[str, Any], native_tag: bool) -> None:
    lines = add_model(new, str(tmp_path))
    deployment = deployment_of(tmp_path, new.deployment_name)
    assert deployment["client_spec"]["args"] == args
    (metadata,) = load(tmp_path / "model_metadata.yaml")["models"]
    assert ("ROBOREWARD_NATIVE_VIDEO_TAG" in metadata["tags"]) == native_tag
    family = "none" if new.family == "none" else "qwen3-vl"
    assert any(line.startswith(f"  family: {family}") for line in lines), lines
    if new.family is None:
        assert any("inferred from" in line and "--family none" in line for line in lines), lines


def test_a_fine_tune_added_with_its_family_gets_the_greedy_option_deployment_in_a_run_entry(tmp_path: Path) -> None:
    """The run entry as helm-run expands it (a fresh process: registries from the --local-path, then the plugin)."""
    local = tmp_path / "env"
    add_model(NewModel(model="acme/reward-ft-4b", client="vllm", api_id="acme/Reward-FT-4B", family="qwen3-vl"),
              str(local))
    script = textwrap.dedent(f"""\
        from helm.benchmark.model_deployment_registry import get_model_deployment
        from helm.benchmark.run_spec_factory import construct_run_specs
        from helm.common.object_spec import parse_object_spec
        from helm_roboreward.helm_frontend.plugin import load_registries
        load_registries({str(local)!r})
        for options in ("", "decoding=greedy,"):
            entry = "roboreward:subset={SUBSET},data=sample," + options + "model=acme/reward-ft-4b"
            (spec,) = construct_run_specs(parse_object_spec(entry))
            deployment = get_model_deployment(spec.adapter_spec.model_deployment)
            print(spec.name, deployment.name, sorted(deployment.client_spec.args.items()), sep="|")
        """)
    process = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=helm_environment(),
                             capture_output=True, text=True, timeout=TIMEOUT)
    assert process.returncode == 0, process.stderr[-3000:]
    official, greedy = [line.split("|") for line in process.stdout.strip().splitlines()[-2:]]
    assert official[:2] == [f"roboreward:subset={SUBSET},data=sample,video=native,model=acme_reward-ft-4b",
                            "vllm/reward-ft-4b"]
    assert "('decoding', 'checkpoint')" in official[2] and "('video_fps', 2)" in official[2]
    assert greedy[:2] == [f"roboreward:subset={SUBSET},data=sample,video=native,decoding=greedy,"
                          "model=acme_reward-ft-4b", "vllm/reward-ft-4b-greedy"]
    assert "('decoding', 'greedy')" in greedy[2] and "('video_max_frames', 768)" in greedy[2]


# --------------------------------------------------------------------------------------------- merging


EXISTING = textwrap.dedent("""\
    # my own models
    models:
      - name: mine/kept-model
        display_name: Kept
        description: kept
        creator_organization_name: mine
        access: open
        release_date: 2026-01-02
        tags: [VISION_LANGUAGE_MODEL_TAG]
    """)


def test_other_entries_are_kept_and_lost_comments_are_reported(tmp_path: Path) -> None:
    (tmp_path / "model_metadata.yaml").write_text(EXISTING, encoding="utf-8")
    lines = add_model(NewModel(model="acme/merged-model", client="google"), str(tmp_path))
    names = [m["name"] for m in load(tmp_path / "model_metadata.yaml")["models"]]
    assert names == ["mine/kept-model", "acme/merged-model"]
    assert str(load(tmp_path / "model_metadata.yaml")["models"][0]["release_date"]) == "2026-01-02"
    assert any("comments in" in line and "were not kept" in line for line in lines)


def test_an_existing_entry_needs_force(tmp_path: Path) -> None:
    add_model(NewModel(model="acme/forced-model", client="anthropic"), str(tmp_path))
    with pytest.raises(AddModelError, match=r"already has an entry named acme/forced-model; pass --force"):
        add_model(NewModel(model="acme/forced-model", client="anthropic", display_name="New"), str(tmp_path))
    add_model(NewModel(model="acme/forced-model", client="anthropic", display_name="New"), str(tmp_path), force=True)
    (metadata,) = load(tmp_path / "model_metadata.yaml")["models"]
    assert metadata["display_name"] == "New"
    assert len(load(tmp_path / "model_deployments.yaml")["model_deployments"]) == 1


def test_force_to_another_client_and_back_replaces_the_deployment(tmp_path: Path) -> None:
    """--force replaces the model's deployment, whatever its name: never a second one that helm-run would use."""
    add_model(NewModel(model="acme/switching", client="openai"), str(tmp_path))
    lines = add_model(NewModel(model="acme/switching", client="vllm"), str(tmp_path), force=True)
    deployments = load(tmp_path / "model_deployments.yaml")["model_deployments"]
    assert [d["name"] for d in deployments] == ["vllm/switching"]
    assert any("replaced deployment openai/switching" in line for line in lines), lines
    add_model(NewModel(model="acme/switching", client="openai"), str(tmp_path), force=True)
    deployments = load(tmp_path / "model_deployments.yaml")["model_deployments"]
    assert [(d["name"], d["model_name"]) for d in deployments] == [("openai/switching", "acme/switching")]
    assert [m["name"] for m in load(tmp_path / "model_metadata.yaml")["models"]] == ["acme/switching"]


def test_a_hand_written_deployment_of_the_model_needs_force(tmp_path: Path) -> None:
    (tmp_path / "model_deployments.yaml").write_text(
        "model_deployments:\n  - name: mine/handmade\n    model_name: acme/handmade\n    client_spec:\n"
        "      class_name: helm_roboreward.helm_frontend.clients.openai_video_client.OpenAIVideoClient\n",
        encoding="utf-8")
    with pytest.raises(AddModelError, match=r"already has a deployment of acme/handmade \(mine/handmade\); pass "
                                            r"--force to replace it"):
        add_model(NewModel(model="acme/handmade", client="vllm"), str(tmp_path))
    add_model(NewModel(model="acme/handmade", client="vllm"), str(tmp_path), force=True)
    assert [d["name"] for d in load(tmp_path / "model_deployments.yaml")["model_deployments"]] == ["vllm/handmade"]


def test_a_deployment_name_of_another_model_is_taken_only_when_asked(tmp_path: Path) -> None:
    add_model(NewModel(model="acme/clash-9b", client="vllm"), str(tmp_path))
    before = {name: (tmp_path / name).read_bytes() for name in ("model_metadata.yaml", "model_deployments.yaml")}
    for force in (False, True):  # --force replaces this model's entries, never another model's deployment
        with pytest.raises(AddModelError, match=r"deployment vllm/clash-9b already belongs to acme/clash-9b .*"
                                                r"--take-deployment"):
            add_model(NewModel(model="other/clash-9b", client="vllm"), str(tmp_path), force=force)
        assert {name: (tmp_path / name).read_bytes() for name in before} == before
    lines = add_model(NewModel(model="other/clash-9b", client="vllm"), str(tmp_path), take_deployment=True)
    deployments = load(tmp_path / "model_deployments.yaml")["model_deployments"]
    assert [(d["name"], d["model_name"]) for d in deployments] == [("vllm/clash-9b", "other/clash-9b")]
    assert any("acme/clash-9b has no deployment in" in line for line in lines), lines


RACE = textwrap.dedent("""\
    import multiprocessing, sys, time
    from helm_roboreward import cli
    from helm_roboreward.model_tools import add_model

    checked = add_model.check_helm_reads

    def slow_check(*args, **kwargs):  # widens the window between reading the files and writing them
        time.sleep(0.3)
        return checked(*args, **kwargs)

    def add(index, barrier):
        add_model.check_helm_reads = slow_check
        barrier.wait()
        sys.exit(cli.main(["add-model", f"acme/racer-{index}", "--client", "vllm", "--local-path", sys.argv[1]]))

    if __name__ == "__main__":
        context = multiprocessing.get_context("fork")
        barrier = context.Barrier(6)
        workers = [context.Process(target=add, args=(index, barrier)) for index in range(6)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        sys.exit(max(worker.exitcode or 0 for worker in workers))
    """)


def test_six_concurrent_add_models_into_one_folder_keep_every_entry(tmp_path: Path) -> None:
    """Six add-model processes at once (released together, each slowed between reading and writing): every one
    reads, merges and writes both files under a lock, so none loses another's entries."""
    local = tmp_path / "env"
    (tmp_path / "race.py").write_text(RACE, encoding="utf-8")
    process = subprocess.run([sys.executable, str(tmp_path / "race.py"), str(local)], cwd=tmp_path,
                             env=helm_environment(), capture_output=True, text=True, timeout=TIMEOUT)
    assert process.returncode == 0, process.stderr[-3000:]
    assert process.stdout.count("written into") == 6, process.stdout
    models = [m["name"] for m in load(local / "model_metadata.yaml")["models"]]
    deployments = [d["name"] for d in load(local / "model_deployments.yaml")["model_deployments"]]
    assert sorted(models) == [f"acme/racer-{index}" for index in range(6)]
    assert sorted(deployments) == [f"vllm/racer-{index}" for index in range(6)]
    assert not [path.name for path in local.iterdir() if path.name.startswith(".tmp-")]


def test_links_into_the_package_configuration_are_refused(tmp_path: Path) -> None:
    local = tmp_path / "prod_env_like"
    local.mkdir()
    for name in ("model_metadata.yaml", "model_deployments.yaml"):
        (local / name).symlink_to(PROD_ENV / name)
    before = (PROD_ENV / "model_metadata.yaml").read_text(encoding="utf-8")
    with pytest.raises(AddModelError) as error:
        add_model(NewModel(model="acme/linked-model", client="openai"), str(local))
    message = str(error.value)
    assert "the package's own configuration" in message and "--local-path DIR" in message
    assert "cp --remove-destination" in message
    assert (PROD_ENV / "model_metadata.yaml").read_text(encoding="utf-8") == before


# --------------------------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize("new, match", [
    (NewModel(model="acme/x", client="cohere"), r"--client 'cohere' is not one of openai, anthropic, google"),
    (NewModel(model="no-slash", client="openai"), r"model name 'no-slash' must be org/name"),
    (NewModel(model="acme/a,b", client="openai"), r"must be org/name"),
    (NewModel(model="acme/x", client="openai", video="native"), r"--video native: the openai client .* cannot send"),
    (NewModel(model="acme/x", client="anthropic", base_url="http://x/v1"), r"--base-url applies to --client openai"),
    (NewModel(model="acme/x", client="vllm", base_url="gpu-box:8000"), r"must be an http\(s\) URL"),
    (NewModel(model="acme/x", client="google", reasoning_effort="high"), r"--reasoning-effort applies to --client"),
    (NewModel(model="acme/x", client="vllm", max_images_per_prompt=-1), r"--max-images-per-prompt -1 must be >= 1"),
    (NewModel(model="acme/x", client="vllm", max_images_per_prompt=0), r"vLLM reads 0 as 'none allowed'"),
    (NewModel(model="google/gemini-robotics-er-1.6-preview", client="google"),
     r"retired by its provider on 2026-08-31; add its successor instead \(google/gemini-robotics-er-2-preview\)"),
    (NewModel(model="openai/gpt-5.5", client="openai"), r"alias of openai/gpt-5.5-2026-04-23"),
    (NewModel(model="openai/gpt-5-mini-2025-08-07", client="openai"), r"already known to HELM"),
    (NewModel(model="acme/x", client="openai", api_id=" "), r"--api-id ' ' must be the provider's model id"),
    (NewModel(model="acme/x", client="openai", timeout_seconds=60.0), r"--timeout applies to --client vllm"),
    (NewModel(model="acme/x", client="anthropic", max_retries=2), r"--max-retries applies to --client vllm"),
    (NewModel(model="acme/x", client="openai", max_images_per_prompt=5),
     r"--max-images-per-prompt applies to --client vllm"),
    (NewModel(model="acme/x", client="google", max_videos_per_prompt=1),
     r"--max-videos-per-prompt applies to --client vllm"),
    (NewModel(model="acme/x", client="vllm", timeout_seconds=0.0), r"--timeout 0.0 must be a number of seconds > 0"),
    (NewModel(model="acme/x", client="vllm", timeout_seconds=float("nan")), r"--timeout nan must be a number"),
    (NewModel(model="acme/x", client="vllm", max_retries=-1), r"--max-retries -1 must be >= 0"),
    (NewModel(model="acme/x", client="openai", family="qwen3-vl"),
     r"--family qwen3-vl applies to --client vllm or transformers"),
    (NewModel(model="acme/x", client="vllm", family="llava"), r"--family 'llava' is not one of qwen3-vl, "),
])
def test_bad_requests_name_the_input_and_the_fix(tmp_path: Path, new: NewModel, match: str) -> None:
    with pytest.raises(AddModelError, match=match):
        add_model(new, str(tmp_path))
    assert not (tmp_path / "model_metadata.yaml").exists()


@pytest.mark.parametrize("text, match", [
    ("models: [unclosed\n", r"not valid YAML"),
    ("models: {a: 1}\n", r"expected a mapping with a 'models:' list"),
    ("- just\n- a list\n", r"expected a mapping with a 'models:' list"),
])
def test_unreadable_files_are_named(tmp_path: Path, text: str, match: str) -> None:
    (tmp_path / "model_metadata.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(AddModelError, match=match) as error:
        add_model(NewModel(model="acme/unreadable", client="openai"), str(tmp_path))
    assert str(tmp_path / "model_metadata.yaml") in str(error.value)
    assert (tmp_path / "model_metadata.yaml").read_text(encoding="utf-8") == text


def test_a_file_as_local_path_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(AddModelError, match=r"is a file, not a folder"):
        add_model(NewModel(model="acme/y", client="openai"), str(tmp_path / "file"))


def test_the_command_exits_2_with_one_line(tmp_path: Path) -> None:
    process = subprocess.run([cli("roboreward"), "add-model", "acme/x", "--client", "cohere", "--local-path",
                              str(tmp_path / "env")], capture_output=True, text=True, timeout=TIMEOUT)
    assert process.returncode == 2
    assert process.stderr.strip().startswith("roboreward add-model: --client 'cohere' is not one of")
    assert "Traceback" not in process.stderr


def test_the_command_takes_the_new_options(tmp_path: Path) -> None:
    local = tmp_path / "env"
    process = subprocess.run([cli("roboreward"), "add-model", "acme/reward-cli-ft", "--client", "vllm", "--family",
                              "qwen3-vl", "--timeout", "900", "--max-retries", "1", "--local-path", str(local)],
                             capture_output=True, text=True, timeout=TIMEOUT)
    check_completed(process, "roboreward add-model")
    args = deployment_of(local, "vllm/reward-cli-ft")["client_spec"]["args"]
    assert args == {"served_model_name": "acme/reward-cli-ft", "decoding": "checkpoint", "video_fps": 2,
                    "video_min_frames": 4, "video_max_frames": 768, "timeout_seconds": 900.0, "max_retries": 1}
    process = subprocess.run([cli("roboreward"), "add-model", "other/reward-cli-ft", "--client", "vllm", "--force",
                              "--local-path", str(local)], capture_output=True, text=True, timeout=TIMEOUT)
    assert process.returncode == 2 and "Traceback" not in process.stderr
    assert "already belongs to acme/reward-cli-ft" in process.stderr and "--take-deployment" in process.stderr
    process = subprocess.run([cli("roboreward"), "add-model", "other/reward-cli-ft", "--client", "vllm",
                              "--take-deployment", "--local-path", str(local)],
                             capture_output=True, text=True, timeout=TIMEOUT)
    check_completed(process, "roboreward add-model --take-deployment")
    assert deployment_of(local, "vllm/reward-cli-ft")["model_name"] == "other/reward-cli-ft"


# --------------------------------------------------------------------------------------------- end to end


OPENAI_MODEL = "openai/gpt-x-2027-02-02"
VLLM_MODEL = "acme/newvlm-9b"


def test_added_models_run_under_helm_run(tmp_path: Path) -> None:
    """A model released tomorrow runs with one command: add-model, then helm-run with that --local-path."""
    with FakeModelServer() as fake:
        local = tmp_path / "my_env"
        local.mkdir()
        (local / "credentials.conf").write_text(
            f'openaiBaseUrl: "{fake.base_url}"\nopenaiApiKey: "{OPENAI_KEY}"\n'
            f'vllmBaseUrl: "{fake.base_url}"\nvllmApiKey: "{VLLM_KEY}"\n', encoding="utf-8")
        env = helm_environment(fake)
        for arguments in (
            [OPENAI_MODEL, "--client", "openai", "--api-id", "gpt-x-snapshot", "--display-name", "GPT-X"],
            [VLLM_MODEL, "--client", "vllm", "--api-id", "Acme/NewVLM-9B", "--video", "native",
             "--max-videos-per-prompt", "1"],
        ):
            added = subprocess.run([cli("roboreward"), "add-model", *arguments, "--local-path", str(local)],
                                   cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT)
            check_completed(added, "roboreward add-model")
        entries = [f"roboreward:subset={SUBSET},data=sample,model={OPENAI_MODEL}",
                   f"roboreward:subset={SUBSET},data=sample,model={VLLM_MODEL}"]
        process = subprocess.run(helm_run_command(entries, "added", local), cwd=tmp_path, env=env,
                                 capture_output=True, text=True, timeout=TIMEOUT)
        check_completed(process, "helm-run")
        openai_requests = fake.requests_to(RESPONSES, "gpt-x-snapshot")
        vllm_requests = fake.requests_to(CHAT, "Acme/NewVLM-9B")
    assert len(openai_requests) == len(vllm_requests) == len(rows_of(SUBSET))
    assert len(fake.requests) == 2 * len(rows_of(SUBSET))
    assert all({p.kind for p in media_parts(r)[1:]} == {"image"} for r in openai_requests)
    assert all([p.kind for p in media_parts(r)] == ["text", "video"] for r in vllm_requests)
    assert all(r.body["max_output_tokens"] == 65000 for r in openai_requests)
    assert all(r.body["max_tokens"] == 5000 for r in vllm_requests)
    runs = tmp_path / "benchmark_output" / "runs" / "added"
    for model, mode in ((OPENAI_MODEL, "frames"), (VLLM_MODEL, "native")):
        run_dir = runs / f"roboreward:subset={SUBSET},data=sample,video={mode},model={model.replace('/', '_')}"
        states = request_states(run_dir)
        assert len(states) == len(rows_of(SUBSET)) and all(s["result"]["success"] for s in states)
