"""``roboreward add-model``: HELM-format entries merged into a --local-path, every bad input refused with the fix,
and end to end: a model added for the openai and vllm clients runs under ``helm-run`` against the loopback fake."""

import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from helm.benchmark.config_registry import register_builtin_configs_from_helm_package
from helm.benchmark.model_metadata_registry import MODEL_NAME_TO_MODEL_METADATA

import helm_roboreward.helm_layer.plugin  # noqa: F401  (what helm-run's entry point loading does)
from helm_roboreward.helm_layer.add_model import CLIENTS, AddModelError, NewModel, add_model
from helm_roboreward.helm_layer.model_registry import register_package_models
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
    register_package_models()  # as helm-run: the plugin after the built-ins (twins of HELM's own deployments)


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
    (NewModel(model="acme/x", client="vllm", max_images_per_prompt=-1), r"--max-images-per-prompt -1 must be >= 0"),
    (NewModel(model="google/gemini-robotics-er-1.6-preview", client="google"),
     r"retired by its provider on 2026-08-31; add its successor instead \(google/gemini-robotics-er-2-preview\)"),
    (NewModel(model="openai/gpt-5.5", client="openai"), r"alias of openai/gpt-5.5-2026-04-23"),
    (NewModel(model="openai/gpt-5-mini-2025-08-07", client="openai"), r"already known to HELM"),
    (NewModel(model="acme/x", client="openai", api_id=" "), r"--api-id ' ' must be the provider's model id"),
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
