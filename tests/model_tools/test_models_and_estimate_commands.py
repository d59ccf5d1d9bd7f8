"""``roboreward models`` and ``roboreward estimate`` as a user runs them (fresh processes: they load HELM's
registries as helm-run does, built-ins, then --local-path, then the plugin)."""

import csv
import io
import subprocess
from pathlib import Path

import pytest

from tests.helpers.harness import TIMEOUT, cli, helm_environment
from tests.helpers.sample import REPO, rows_of, sample_rows

pytestmark = pytest.mark.slow  # each case is a roboreward process

MODELS = ["openai/gpt-5-mini-2025-08-07", "anthropic/claude-sonnet-4-5-20250929", "google/gemini-2.5-pro",
          "teetone/roboreward-8b"]


def roboreward(*arguments: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([cli("roboreward"), *arguments], cwd=cwd, env=helm_environment(), capture_output=True,
                          text=True, timeout=TIMEOUT)


def table(text: str) -> dict[str, dict[str, str]]:
    rows = list(csv.DictReader(io.StringIO(text)))
    return {row["model"]: row for row in rows}


@pytest.fixture(scope="module")
def models_csv() -> dict[str, dict[str, str]]:
    process = roboreward("models", "--csv")
    assert process.returncode == 0, process.stderr[-3000:]
    return table(process.stdout)


@pytest.mark.parametrize("model, deployment, client, media, max_tokens, status, credentials", [
    ("google/gemini-robotics-er-2-preview", "google/gemini-robotics-er-2-preview",
     "helm.clients.google_genai_client.GoogleGenAIClient", "native", "65000", "current", "googleApiKey"),
    ("google/gemini-3.1-pro-preview", "google/gemini-3.1-pro-preview",
     "helm.clients.google_genai_client.GoogleGenAIClient", "native", "65000", "current", "googleApiKey"),
    ("openai/gpt-5.5-2026-04-23-xhigh-reasoning-effort", "openai/gpt-5.5-2026-04-23-xhigh-reasoning-effort",
     "helm.clients.openai_responses_client.OpenAIResponseClient", "frames", "65000", "current", "openaiApiKey"),
    ("openai/gpt-5.5", "openai/gpt-5.5", "helm.clients.openai_responses_client.OpenAIResponseClient", "frames",
     "65000", "alias of openai/gpt-5.5-2026-04-23", "openaiApiKey"),
    ("google/gemini-robotics-er-1.6-preview", "google/gemini-robotics-er-1.6-preview",
     "helm.clients.google_genai_client.GoogleGenAIClient", "native", "65000",
     "retired on 2026-08-31 -> google/gemini-robotics-er-2-preview", "googleApiKey"),
    ("google/gemini-3-pro-preview", "google/gemini-3-pro-preview", "helm.clients.google_genai_client.GoogleGenAIClient",
     "native", "65000", "retired on 2026-03-09 -> google/gemini-3.1-pro-preview", "googleApiKey"),
    ("anthropic/claude-sonnet-4-5-20250929", "anthropic/claude-sonnet-4-5-20250929",
     "helm.clients.anthropic_client.AnthropicMessagesClient", "frames", "5000", "current", "anthropicApiKey"),
    ("teetone/roboreward-8b", "transformers/roboreward-8b",
     "helm_roboreward.helm_frontend.clients.transformers_client.TransformersQwen3VLClient", "native", "5000",
     "current", "none"),
    ("qwen/qwen2.5-vl-7b-instruct", "vllm/qwen2.5-vl-7b-instruct",
     "helm_roboreward.helm_frontend.clients.openai_video_client.OpenAIVideoClient", "native", "5000", "current",
     "vllmBaseUrl"),
    ("baseline/constant-3", "baseline/constant-3",
     "helm_roboreward.helm_frontend.clients.baselines.ConstantScoreClient", "frames",
     "5000", "current", "none"),
])
def test_models_lists_each_models_run_facts(models_csv: dict[str, dict[str, str]], model: str, deployment: str,
                                           client: str, media: str, max_tokens: str, status: str,
                                           credentials: str) -> None:
    row = models_csv[model]
    assert (row["deployment"], row["client"], row["media"], row["max_tokens"], row["status"]) == (
        deployment, client, media, max_tokens, status)
    assert row["credentials"].startswith(credentials)


def test_models_text_table_and_all(models_csv: dict[str, dict[str, str]]) -> None:
    process = roboreward("models")
    assert process.returncode == 0, process.stderr[-2000:]
    header = process.stdout.splitlines()[0].split()
    assert header == ["model", "family", "deployment", "client", "media", "max_tokens", "status", "credentials"]
    assert "GoogleGenAIClient" in process.stdout and "helm.clients." not in process.stdout
    everything = roboreward("models", "--all", "--csv")
    assert everything.returncode == 0, everything.stderr[-2000:]
    all_rows = table(everything.stdout)
    assert set(models_csv) < set(all_rows) and len(all_rows) > 100
    assert "openai/gpt-4o-2024-08-06" in all_rows and "openai/gpt-4o-2024-08-06" not in models_csv


def test_models_shows_the_local_paths_models_and_names_a_broken_file(tmp_path: Path) -> None:
    added = roboreward("add-model", "acme/listed-vlm", "--client", "vllm", "--video", "native", "--local-path",
                       str(tmp_path / "env"))
    assert added.returncode == 0, added.stderr[-2000:]
    process = roboreward("models", "--csv", "--local-path", str(tmp_path / "env"))
    assert process.returncode == 0, process.stderr[-2000:]
    row = table(process.stdout)["acme/listed-vlm"]
    assert (row["deployment"], row["media"], row["credentials"]) == ("vllm/listed-vlm", "native", "vllmBaseUrl")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "model_deployments.yaml").write_text("model_deployments:\n  - name: x\n    client_spec: 3\n")
    process = roboreward("models", "--local-path", str(broken))
    assert process.returncode == 2
    assert f"--local-path {broken}: HELM cannot load" in process.stderr and "Traceback" not in process.stderr


# --------------------------------------------------------------------------------------------- estimate


def test_estimate_on_the_sample_with_prices_and_csv(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("".join(f"{model}: {{input: 1.0, output: 10.0}}\n" for model in MODELS), encoding="utf-8")
    arguments = ["estimate", "--data", "sample", "--prices", str(prices), "--csv", str(tmp_path / "estimate.csv")]
    for model in MODELS:
        arguments += ["--model", model]
    process = roboreward(*arguments)
    assert process.returncode == 0, process.stderr[-3000:]
    assert "nothing sent" in process.stdout
    rows = list(csv.DictReader(io.StringIO((tmp_path / "estimate.csv").read_text(encoding="utf-8"))))
    totals = {row["model"]: row for row in rows if row["subset"] == "(all)"}
    assert set(totals) == set(MODELS)
    for model, row in totals.items():
        assert int(row["rows"]) == len(sample_rows()), model
        assert int(row["media_tokens"]) > 0 and float(row["cost_usd"]) > 0, model
        assert int(row["over_limits"]) == 0, model  # default runs stay within every provider's limits
        assert int(row["input_tokens"]) == int(row["media_tokens"]) + int(row["text_tokens"])
    assert totals["openai/gpt-5-mini-2025-08-07"]["media"] == "frames"
    assert totals["google/gemini-2.5-pro"]["media"] == "native"
    assert int(totals["openai/gpt-5-mini-2025-08-07"]["output_tokens"]) == 2000 * len(sample_rows())
    assert int(totals["anthropic/claude-sonnet-4-5-20250929"]["output_tokens"]) == 200 * len(sample_rows())
    kuka = [row for row in rows if row["subset"] == "sim_kuka" and row["model"] == MODELS[0]]
    assert int(kuka[0]["rows"]) == len(rows_of("sim_kuka"))


def test_estimate_follows_frame_options_and_subset() -> None:
    base = roboreward("estimate", "--data", "sample", "--subset", "sim_kuka", "--model", MODELS[0])
    capped = roboreward("estimate", "--data", "sample", "--subset", "sim_kuka", "--model", MODELS[0],
                        "--max-frames", "2")
    assert base.returncode == capped.returncode == 0, base.stderr[-2000:] + capped.stderr[-2000:]
    frames = [int(line.split()[4].replace(",", "")) for line in (base.stdout, capped.stdout)
              for line in line.splitlines() if line.startswith(MODELS[0])]
    assert frames[1] == 2 * len(rows_of("sim_kuka")) < frames[0]


@pytest.mark.parametrize("arguments, message", [
    (["--model", "acme/unknown"], "model 'acme/unknown' is not known to HELM"),
    (["--model", "google/gemini-robotics-er-1.6-preview"], "model=google/gemini-robotics-er-2-preview"),
    (["--model", MODELS[0], "--subset", "nope"], "subset='nope' is not in data=sample"),
    (["--model", MODELS[0], "--output-tokens", "-1"], "--output-tokens and --reasoning-output-tokens must be >= 0"),
    (["--model", MODELS[0], "--prices", "missing.yaml"], "--prices missing.yaml: no such file"),
    (["--model", "openai/gpt-5-mini-2025-08-07", "--video", "native"], "video=native"),
])
def test_estimate_refuses_bad_inputs(tmp_path: Path, arguments: list[str], message: str) -> None:
    process = roboreward("estimate", "--data", "sample", *arguments, cwd=tmp_path)
    assert process.returncode == 2, process.stdout[-2000:]
    assert message in process.stderr and "Traceback" not in process.stderr


def test_estimate_names_a_model_the_price_file_lacks(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(f"{MODELS[0]}: {{input: 1, output: 2}}\n", encoding="utf-8")
    process = roboreward("estimate", "--data", "sample", "--model", MODELS[0], "--model", MODELS[1], "--prices",
                         str(prices))
    assert process.returncode == 2
    assert f"no price for {MODELS[1]}" in process.stderr


# --------------------------------------------------------------------------------------------- price files


def write_prices(tmp_path: Path, text: str) -> str:
    path = tmp_path / "prices.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_price_file_with_a_model_twice_is_refused(tmp_path: Path) -> None:
    from helm_roboreward.model_tools.prices import PriceError, read_prices

    path = write_prices(tmp_path, "acme/a: {input: 1, output: 2}\nacme/b: {input: 1, output: 2}\n"
                                  "acme/a: {input: 9, output: 9}\n")
    with pytest.raises(PriceError, match=r"'acme/a' appears twice \(lines 1 and 3\)"):
        read_prices(path)
    with pytest.raises(PriceError, match=r"'input' appears twice \(on line 1\)"):
        read_prices(write_prices(tmp_path, "acme/a: {input: 1, input: 2, output: 2}\n"))


@pytest.mark.parametrize("written, value", [("1e3", 1000.0), ("2.5E-1", 0.25), ("1e+2", 100.0), ("3", 3.0),
                                            ("0.25", 0.25), ("1_000", 1000.0)])
def test_prices_in_exponent_notation_are_numbers(tmp_path: Path, written: str, value: float) -> None:
    from helm_roboreward.model_tools.prices import read_prices

    prices = read_prices(write_prices(tmp_path, f"acme/a: {{input: {written}, output: 1}}\n"))
    assert prices["acme/a"].input_per_million == value


@pytest.mark.parametrize("written", ["1.7e+308", "1e7", ".inf", "'1e3'", "abc", "-1"])
def test_a_price_that_is_no_plausible_number_is_refused(tmp_path: Path, written: str) -> None:
    from helm_roboreward.model_tools.prices import PriceError, read_prices

    with pytest.raises(PriceError, match=r"acme/a: input: .* must be a number >= 0 and at most 1,000,000 \(USD per "
                                         r"million tokens\)"):
        read_prices(write_prices(tmp_path, f"acme/a: {{input: {written}, output: 1}}\n"))


@pytest.mark.parametrize("kind", ["file", "dangling link", "link to a file"])
def test_models_refuses_a_local_path_that_is_not_a_folder(tmp_path: Path, kind: str) -> None:
    local = tmp_path / "env"
    if kind == "file":
        local.write_text("not a folder\n", encoding="utf-8")
        expected = f"--local-path {local} is a file, not a folder"
    elif kind == "dangling link":
        local.symlink_to(tmp_path / "gone")
        expected = f"--local-path {local} is a link to {tmp_path / 'gone'}, which does not exist"
    else:
        (tmp_path / "file").write_text("x", encoding="utf-8")
        local.symlink_to(tmp_path / "file")
        expected = f"--local-path {local} is a link to {tmp_path / 'file'}, a file, not a folder"
    process = roboreward("models", "--local-path", str(local))
    assert process.returncode == 2, process.stdout[-2000:]
    assert expected in process.stderr and "Traceback" not in process.stderr
