"""``roboreward estimate``'s arithmetic (rows, frames, bytes, tokens, limits, cost) and its price file."""

from pathlib import Path

import pytest

from helm_roboreward.model_tools.catalog import csv_text, format_text_table
from helm_roboreward.model_tools.cost_estimate import ALL_SUBSETS, RowMedia, estimate_model, formula_of, limit_message
from helm_roboreward.model_tools.media_plan import FramesPlan, ModelPlan, VideoFacts
from helm_roboreward.model_tools.prices import Price, PriceError, price_of, read_prices
from helm_roboreward.model_tools.token_costs import openai_image_tokens, qwen3vl_video_tokens, text_tokens
from helm_roboreward.protocol.request_limits import RequestLimits
from helm_roboreward.protocol.rules import FrameOptions

OPENAI = "helm.clients.openai_responses_client.OpenAIResponseClient"
ANTHROPIC = "helm.clients.anthropic_client.AnthropicMessagesClient"
GEMINI = "helm.clients.google_genai_client.GoogleGenAIClient"
TRANSFORMERS = "helm_roboreward.helm_frontend.clients.transformers_client.TransformersQwen3VLClient"
VLLM = "helm_roboreward.helm_frontend.clients.openai_video_client.OpenAIVideoClient"
BASELINE = "helm_roboreward.helm_frontend.clients.baselines.ConstantScoreClient"


NO_LIMITS = RequestLimits()


def plan(model: str, client: str, mode: str, limits: RequestLimits = NO_LIMITS) -> ModelPlan:
    return ModelPlan(model, model, client, mode, FrameOptions(), 5000, False, limits)


VIDEO = VideoFacts("a.mp4", num_frames=75, native_fps=10.0, width=640, height=480, duration_seconds=7.5,
                   has_audio=False, num_bytes=50_000)
ROWS = [RowMedia("sim_a", 1, "p" * 400, VIDEO), RowMedia("sim_a", 2, "q" * 404, VIDEO),
        RowMedia("sim_b", 3, "r" * 400, VIDEO)]
FRAMES = FramesPlan(count=8, width=640, height=480, bytes_per_frame=30_000)


def frames_of(video: VideoFacts, model_plan: ModelPlan) -> FramesPlan:
    assert video is VIDEO
    return FRAMES


@pytest.mark.parametrize("client, mode, formula", [
    (OPENAI, "frames", "openai-image"), (ANTHROPIC, "frames", "claude-image"), (GEMINI, "frames", "gemini-image"),
    (GEMINI, "native", "gemini-video"), (TRANSFORMERS, "native", "qwen3vl-video"), (BASELINE, "frames", "offline"),
    (VLLM, "frames", None),
])
def test_the_formula_follows_client_and_media(client: str, mode: str, formula: str | None) -> None:
    model = "teetone/roboreward-8b" if client == TRANSFORMERS else "acme/model"
    assert formula_of(plan(model, client, mode)) == formula


def test_frames_rows_add_up_per_subset_and_overall() -> None:
    lines = estimate_model(plan("openai/x", OPENAI, "frames"), ROWS, frames_of, 200, Price(1.0, 10.0))
    assert [line.subset for line in lines] == ["sim_a", "sim_b", ALL_SUBSETS]
    total = lines[-1]
    per_frame = openai_image_tokens(640, 480)
    assert (total.rows, total.frames, total.media_bytes) == (3, 24, 3 * 8 * 30_000)
    assert total.media_tokens == 3 * 8 * per_frame
    assert total.text_tokens == 3 * text_tokens("p" * 400) + 1
    assert total.output_tokens == 600
    assert total.input_tokens is not None
    assert total.cost_usd == pytest.approx((total.input_tokens * 1.0 + 600 * 10.0) / 1e6)
    assert lines[0].rows + lines[1].rows == total.rows


def test_native_qwen_uses_the_processor_formula_and_video_bytes() -> None:
    (line,) = estimate_model(plan("teetone/roboreward-8b", TRANSFORMERS, "native"), ROWS[:1], frames_of, 200, None)
    assert line.media_tokens == qwen3vl_video_tokens(75, 10.0, 480, 640)
    assert (line.frames, line.media_bytes, line.cost_usd) == (15, 50_000, None)


def test_an_unknown_formula_gives_no_tokens_and_no_cost() -> None:
    (line,) = estimate_model(plan("acme/model", VLLM, "frames"), ROWS[:1], frames_of, 200, Price(1.0, 1.0))
    assert line.media_tokens is None and line.input_tokens is None and line.cost_usd is None
    assert line.cells(grouped=True)[6:9] == ["-", str(text_tokens("p" * 400)), "-"]


def test_rows_over_the_limits_are_counted() -> None:
    lines = estimate_model(plan("anthropic/x", ANTHROPIC, "frames", RequestLimits(max_images=5)), ROWS, frames_of,
                           200, None)
    assert lines[-1].over_limits == 3
    lines = estimate_model(plan("anthropic/x", ANTHROPIC, "frames", RequestLimits(max_images=8)), ROWS, frames_of,
                           200, None)
    assert lines[-1].over_limits == 0


def test_rows_over_the_limits_are_named_with_the_fix() -> None:
    tight = plan("vllm/x", VLLM, "frames", RequestLimits(max_images=5, source="declared by deployment vllm/x"))
    message = limit_message(tight, ROWS, frames_of) or ""
    assert message.startswith("3 of 3 row(s) would exceed the request limits of model deployment 'vllm/x'")
    assert "metadata line 1: 8 images" in message and "max_frames=5" in message
    assert limit_message(plan("vllm/x", VLLM, "frames"), ROWS, frames_of) is None


def test_tables_render_as_text_and_csv() -> None:
    lines = estimate_model(plan("openai/x", OPENAI, "frames"), ROWS, frames_of, 200, None)
    from helm_roboreward.model_tools.cost_estimate import COLUMNS, NUMERIC_COLUMNS

    text = format_text_table(COLUMNS, [line.cells(grouped=True) for line in lines], right_aligned=NUMERIC_COLUMNS)
    assert text.splitlines()[0].split() == list(COLUMNS)
    assert "720,000" in text and f"{24 * openai_image_tokens(640, 480):,}" in text  # thousands grouped
    csv = csv_text(COLUMNS, [line.cells(grouped=False) for line in lines])
    assert csv.splitlines()[0] == ",".join(COLUMNS)
    assert ",(all),3,frames,24,720000," in csv


# --------------------------------------------------------------------------------------------- prices


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "prices.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_prices_read(tmp_path: Path) -> None:
    path = write(tmp_path, "openai/x:\n  input: 0.25\n  output: 2\nanthropic/y: {input: 3, output: 15}\n")
    prices = read_prices(path)
    assert prices == {"openai/x": Price(0.25, 2.0), "anthropic/y": Price(3.0, 15.0)}
    assert Price(1.0, 10.0).cost(1_000_000, 100_000) == pytest.approx(2.0)


@pytest.mark.parametrize("text, match", [
    ("openai/x: [1, 2]\n", r"openai/x: expected exactly 'input' and 'output'"),
    ("openai/x: {input: 1}\n", r"expected exactly 'input' and 'output'"),
    ("openai/x: {input: 1, output: -2}\n", r"output: -2 must be a number >= 0"),
    ("openai/x: {input: cheap, output: 2}\n", r"input: 'cheap' must be a number"),
    ("openai/x: {input: 1" + "0" * 400 + ", output: 2}\n", r"input: 10{400} must be a number >= 0 and at most"),
    ("openai/x: {input: .nan, output: 2}\n", r"input: nan must be a number"),
    ("openai/x: {input: 1, output: .inf}\n", r"output: inf must be a number"),
    ("openai/x: {input: 1, output: 2, cached: 0.1}\n", r"expected exactly"),
    ("[1, 2]\n", r"expected a mapping of model names"),
    ("a: [unclosed\n", r"not valid YAML"),
    ("", r"expected a mapping of model names"),
])
def test_bad_price_files_name_the_file_and_entry(tmp_path: Path, text: str, match: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(PriceError, match=match) as error:
        read_prices(path)
    assert path in str(error.value)


def test_a_missing_file_and_a_missing_model(tmp_path: Path) -> None:
    with pytest.raises(PriceError, match=r"no such file; write one"):
        read_prices(str(tmp_path / "nope.yaml"))
    path = write(tmp_path, "openai/x: {input: 1, output: 2}\n")
    with pytest.raises(PriceError, match=r"no price for anthropic/y; add 'anthropic/y: \{input:"):
        price_of(read_prices(path), "anthropic/y", path)
