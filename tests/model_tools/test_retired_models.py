"""Models their provider retired: a run naming one stops before any request and names the successor; old suites
still summarize with the display name; ``model=vlm`` leaves them out; ``ROBOREWARD_ALLOW_RETIRED=1`` lets a run
replay one. One table marks them (``helm_roboreward/helm_frontend/model_registry.py``)."""

import datetime
import json
import subprocess
from pathlib import Path

import pytest
from helm.benchmark.config_registry import register_builtin_configs_from_helm_package
from helm.benchmark.model_metadata_registry import MODEL_NAME_TO_MODEL_METADATA
from helm.benchmark.run_spec_factory import construct_run_specs
from helm.common.object_spec import parse_object_spec

import helm_roboreward.helm_frontend.plugin  # noqa: F401  (what helm-run's entry point loading does)
from helm_roboreward.helm_frontend.model_registry import register_package_models
from helm_roboreward.helm_frontend.refusals import retired
from helm_roboreward.helm_frontend.routing import check_not_retired
from helm_roboreward.model_tools.catalog import status_of
from helm_roboreward.protocol.published import ALLOW_RETIRED_VARIABLE, RETIRED_MODELS
from tests.helpers.fakes import GEMINI, FakeModelServer
from tests.helpers.harness import (
    TIMEOUT,
    check_completed,
    helm_environment,
    helm_run_command,
    helm_summarize_command,
    private_local_path,
    read_json,
)
from tests.helpers.sample import rows_of

ER_16 = "google/gemini-robotics-er-1.6-preview"
GEMINI_3_PRO = "google/gemini-3-pro-preview"
SUBSET = "sim_kuka"


@pytest.fixture(scope="module", autouse=True)
def _helm_builtins() -> None:
    if "openai/gpt-5-mini-2025-08-07" not in MODEL_NAME_TO_MODEL_METADATA:
        register_builtin_configs_from_helm_package()
    register_package_models()  # as helm-run: the plugin after the built-ins (option deployments of HELM's own)


def test_the_table_holds_both_retirements_with_successors_and_sources() -> None:
    assert RETIRED_MODELS[ER_16].date == datetime.date(2026, 8, 31)
    assert RETIRED_MODELS[ER_16].successor == "google/gemini-robotics-er-2-preview"
    assert RETIRED_MODELS[GEMINI_3_PRO].date == datetime.date(2026, 3, 9)
    assert RETIRED_MODELS[GEMINI_3_PRO].successor == "google/gemini-3.1-pro-preview"
    for model, retirement in RETIRED_MODELS.items():
        assert retirement.source.startswith("https://ai.google.dev/"), model
        assert retirement.successor in MODEL_NAME_TO_MODEL_METADATA, "the successor must be runnable"
        assert model in MODEL_NAME_TO_MODEL_METADATA, "a retired model keeps its metadata (old suites)"


def test_status_texts() -> None:
    assert status_of(ER_16) == "retired on 2026-08-31 -> google/gemini-robotics-er-2-preview"
    assert status_of("openai/gpt-5.5") == "alias of openai/gpt-5.5-2026-04-23"
    assert status_of("google/gemini-2.5-pro") == "current"


def test_the_message_names_the_date_the_successor_and_how_to_run_it() -> None:
    message = str(retired(ER_16, RETIRED_MODELS[ER_16]))
    for expected in ("retired by its provider on 2026-08-31", "model=google/gemini-robotics-er-2-preview",
                     "--models-to-run google/gemini-robotics-er-2-preview", "helm-run --run-entries",
                     ALLOW_RETIRED_VARIABLE, "https://ai.google.dev/gemini-api/docs/robotics-overview"):
        assert expected in message


@pytest.mark.parametrize("model", [ER_16, GEMINI_3_PRO])
def test_expansion_stops_for_a_retired_model(model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ALLOW_RETIRED_VARIABLE, raising=False)
    with pytest.raises(ValueError, match=f"model {model} was retired") as error:
        construct_run_specs(parse_object_spec(f"roboreward:subset={SUBSET},data=sample,model={model}"))
    assert f"model={RETIRED_MODELS[model].successor}" in str(error.value)


def test_naming_a_retired_models_deployment_stops_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ALLOW_RETIRED_VARIABLE, raising=False)
    entry = f"roboreward:subset={SUBSET},data=sample,model={ER_16},model_deployment={ER_16}-one-message"
    with pytest.raises(ValueError, match="was retired"):
        construct_run_specs(parse_object_spec(entry))


@pytest.mark.parametrize("group", ["all", "leaderboard"])
def test_model_groups_leave_retired_models_out(monkeypatch: pytest.MonkeyPatch, group: str) -> None:
    monkeypatch.delenv(ALLOW_RETIRED_VARIABLE, raising=False)
    from helm.benchmark.presentation.run_entry import RunEntry
    from helm.benchmark.run import run_entries_to_run_specs

    from helm_roboreward.model_tools.catalog import models_in_group

    entry = RunEntry(description=f"roboreward:subset={SUBSET},data=sample", priority=1, groups=None)
    specs = run_entries_to_run_specs([entry], models_to_run=models_in_group(group))
    models = {spec.adapter_spec.model for spec in specs}
    assert not models & set(RETIRED_MODELS)
    if group == "all":
        assert {"google/gemini-robotics-er-2-preview", "google/gemini-3.1-pro-preview"} <= models
    else:  # the published models still served (their successors are other models: named, not substituted)
        assert len(models) == 23 and "teetone/roboreward-8b" in models


def test_other_benchmarks_are_not_affected() -> None:
    check_not_retired("google/gemini-2.5-pro")  # nothing raised for a current model
    (spec,) = construct_run_specs(parse_object_spec(f"mmmu:subject=Art,question_type=multiple-choice,model={ER_16}"))
    assert spec.adapter_spec.model == ER_16


def test_the_escape_hatch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOW_RETIRED_VARIABLE, "1")
    check_not_retired(ER_16)  # nothing raised
    (spec,) = construct_run_specs(parse_object_spec(f"roboreward:subset={SUBSET},data=sample,model={ER_16}"))
    assert spec.adapter_spec.model_deployment == ER_16


# --------------------------------------------------------------------------------------------- helm-run


@pytest.mark.parametrize("model", [ER_16, GEMINI_3_PRO])
def test_helm_run_stops_before_any_request(tmp_path: Path, model: str) -> None:
    with FakeModelServer() as fake:
        local = private_local_path(tmp_path / "local", fake)
        env = helm_environment(fake)
        env.pop(ALLOW_RETIRED_VARIABLE, None)
        process = subprocess.run(helm_run_command([f"roboreward:subset={SUBSET},data=sample,model={model}"],
                                                  "retired", local), cwd=tmp_path, env=env, capture_output=True,
                                 text=True, timeout=TIMEOUT)
        requests = fake.requests
    output = process.stdout + process.stderr
    assert process.returncode != 0, output[-3000:]
    assert f"model {model} was retired" in output
    assert f"model={RETIRED_MODELS[model].successor}" in output
    assert requests == []
    runs = tmp_path / "benchmark_output" / "runs" / "retired"
    assert not runs.exists() or not any(p.name.startswith("roboreward:") for p in runs.iterdir())


@pytest.mark.slow
def test_an_old_suite_of_a_retired_model_still_summarizes_with_its_display_name(tmp_path: Path) -> None:
    """The suite is made with the escape hatch (as an old suite was made before the retirement)."""
    with FakeModelServer() as fake:
        local = private_local_path(tmp_path / "local", fake)
        env = {**helm_environment(fake), ALLOW_RETIRED_VARIABLE: "1"}
        process = subprocess.run(helm_run_command([f"roboreward:subset={SUBSET},data=sample,model={ER_16}"], "old",
                                                  local), cwd=tmp_path, env=env, capture_output=True, text=True,
                                 timeout=TIMEOUT)
        check_completed(process, "helm-run (ROBOREWARD_ALLOW_RETIRED=1)")
        assert len(fake.requests_to(GEMINI, "gemini-robotics-er-1.6-preview")) == len(rows_of(SUBSET))
    env.pop(ALLOW_RETIRED_VARIABLE)
    process = subprocess.run(helm_summarize_command("old", local_path=local), cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=TIMEOUT)
    check_completed(process, "helm-summarize")
    groups = tmp_path / "benchmark_output" / "runs" / "old" / "groups"
    shown = json.dumps([read_json(path) for path in groups.glob("*.json")])
    assert "Gemini Robotics-ER 1.6" in shown
