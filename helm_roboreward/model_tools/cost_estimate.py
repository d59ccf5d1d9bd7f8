"""``roboreward estimate``: rows, frames, media bytes, input tokens and cost per model and subset, before any run.

Input: the models' :class:`~helm_roboreward.model_tools.media_plan.ModelPlan` (as routing resolved them), the
rows with their probed videos, and optionally prices. The media tokens follow each provider's documented formula
(:mod:`helm_roboreward.model_tools.token_costs`); the prompt's by characters / 4. Output tokens are an
assumption (``--output-tokens``, ``--reasoning-output-tokens`` for OpenAI and Gemini models, which bill their
reasoning as output). A formula this package does not know gives no token count (``-``), never a guess.
"""

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from helm.benchmark.model_deployment_registry import get_model_deployment
from helm.benchmark.model_metadata_registry import MODEL_NAME_TO_MODEL_METADATA
from helm.benchmark.presentation.run_entry import RunEntry
from helm.benchmark.run import run_entries_to_run_specs

from helm_roboreward.helm_frontend.routing import needs_reasoning_allowance
from helm_roboreward.helm_frontend.run_specs import RoboRewardRunSpec
from helm_roboreward.model_tools import token_costs
from helm_roboreward.model_tools.media_plan import FRAMES, FramesPlan, ModelPlan, VideoFacts
from helm_roboreward.model_tools.prices import Price
from helm_roboreward.protocol.request_limits import PlannedRequest, deployment_limits, limit_problems, limit_report
from helm_roboreward.protocol.rules import DATASET_REVISION, FrameOptions, exact_number

COLUMNS = ("model", "subset", "rows", "media", "frames", "media_bytes", "media_tokens", "text_tokens",
           "input_tokens", "output_tokens", "over_limits", "cost_usd")
NUMERIC_COLUMNS = COLUMNS[2:3] + COLUMNS[4:]
ALL_SUBSETS = "(all)"

_OPENAI = ("helm.clients.openai_responses_client.", "helm.clients.openai_client.")
_ANTHROPIC = ("helm.clients.anthropic_client.",)
_GEMINI = ("helm.clients.google_genai_client.", "helm_roboreward.helm_frontend.clients.gemini_client.",
           "helm.clients.vertexai_client.")
_OFFLINE = ("helm_roboreward.helm_frontend.clients.baselines.",)


@dataclass(frozen=True)
class RowMedia:
    """One dataset row as the estimate sees it."""

    subset: str
    line: int
    prompt: str
    video: VideoFacts


@dataclass(frozen=True)
class EstimateRow:
    """One line of the estimate: a model on a subset (or on every subset, :data:`ALL_SUBSETS`)."""

    model: str
    subset: str
    rows: int
    media: str
    frames: int
    media_bytes: int
    media_tokens: int | None
    text_tokens: int
    output_tokens: int
    over_limits: int
    cost_usd: float | None

    @property
    def input_tokens(self) -> int | None:
        """Media plus text tokens (None when the media formula is unknown)."""
        return None if self.media_tokens is None else self.media_tokens + self.text_tokens

    def cells(self, grouped: bool) -> list[str]:
        """The row's cells in :data:`COLUMNS` order (``grouped``: thousands separators, for the terminal)."""
        def number(value: int | None) -> str:
            return "-" if value is None else (f"{value:,}" if grouped else str(value))

        cost = "-" if self.cost_usd is None else (f"{self.cost_usd:,.4f}" if grouped else f"{self.cost_usd:.6f}")
        return [self.model, self.subset, number(self.rows), self.media, number(self.frames), number(self.media_bytes),
                number(self.media_tokens), number(self.text_tokens), number(self.input_tokens),
                number(self.output_tokens), number(self.over_limits), cost]


def formula_of(plan: ModelPlan) -> str | None:
    """Which documented formula prices this model's media (None: none this package knows)."""
    client, model = plan.client, plan.model.lower()
    if client.startswith(_OFFLINE):
        return "offline"
    if plan.video_mode == FRAMES:
        if client.startswith(_OPENAI):
            return "openai-image"
        if client.startswith(_ANTHROPIC):
            return "claude-image"
        if client.startswith(_GEMINI):
            return "gemini-image"
        return None
    if client.startswith(_GEMINI):
        return "gemini-video"
    if "qwen3-vl" in model or "roboreward" in model:
        return "qwen3vl-video"
    return None


_IMAGE_FORMULAS: dict[str, Callable[[int, int], int]] = {
    "openai-image": token_costs.openai_image_tokens,
    "claude-image": token_costs.claude_image_tokens,
    "gemini-image": token_costs.gemini_image_tokens,
}


def _native_frames(formula: str | None, video: VideoFacts) -> int:
    if formula == "gemini-video":
        return math.ceil(video.duration_seconds)  # Gemini samples 1 frame per second
    if formula == "qwen3vl-video":
        return token_costs.qwen3vl_sampled_frames(video.num_frames, video.native_fps)
    return 0


def _media_tokens(formula: str | None, video: VideoFacts, frames: FramesPlan | None) -> int | None:
    if formula is None:
        return None
    if formula == "offline":
        return 0
    if formula in _IMAGE_FORMULAS:
        assert frames is not None
        return frames.count * _IMAGE_FORMULAS[formula](frames.width, frames.height)
    if formula == "gemini-video":
        return token_costs.gemini_video_tokens(video.duration_seconds, video.has_audio)
    return token_costs.qwen3vl_video_tokens(video.num_frames, video.native_fps, video.height, video.width)


def _request(row: RowMedia, frames: FramesPlan | None) -> PlannedRequest:
    if frames is None:
        return PlannedRequest(f"metadata line {row.line}", 0, 1, (row.video.num_bytes,), len(row.prompt.encode()))
    return PlannedRequest(f"metadata line {row.line}", frames.count, 0, (frames.bytes_per_frame,) * frames.count,
                          len(row.prompt.encode()))


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def estimate_model(plan: ModelPlan, rows: Sequence[RowMedia], frames_of: Callable[[VideoFacts, ModelPlan], FramesPlan],
                   output_tokens: int, price: Price | None) -> list[EstimateRow]:
    """One line per subset and one for all of them (:data:`ALL_SUBSETS`).

    Args:
        plan: What routing resolved for the model.
        rows: The rows of the estimate, with their videos' facts.
        frames_of: The frames a frames model gets from a video (cached by the caller: models share them).
        output_tokens: Assumed output tokens per request.
        price: The model's price, or None for no cost column.
    """
    formula = formula_of(plan)
    totals: dict[str, EstimateRow] = {}
    for row in rows:
        frames = frames_of(row.video, plan) if plan.video_mode == FRAMES else None
        media_tokens = _media_tokens(formula, row.video, frames)
        over = 1 if limit_problems(_request(row, frames), plan.request_limits) else 0
        line = EstimateRow(
            model=plan.model, subset=row.subset, rows=1, media=plan.video_mode,
            frames=frames.count if frames is not None else _native_frames(formula, row.video),
            media_bytes=frames.total_bytes if frames is not None else row.video.num_bytes,
            media_tokens=media_tokens, text_tokens=token_costs.text_tokens(row.prompt),
            output_tokens=output_tokens, over_limits=over, cost_usd=None)
        for key in (row.subset, ALL_SUBSETS):
            current = totals.get(key)
            totals[key] = line if current is None else EstimateRow(
                plan.model, key, current.rows + 1, plan.video_mode, current.frames + line.frames,
                current.media_bytes + line.media_bytes, _add(current.media_tokens, line.media_tokens),
                current.text_tokens + line.text_tokens, current.output_tokens + line.output_tokens,
                current.over_limits + over, None)
    lines = [totals[key] for key in sorted(key for key in totals if key != ALL_SUBSETS)]
    if len(lines) > 1:
        lines.append(totals[ALL_SUBSETS])
    return [_priced(line, price) for line in lines]


def limit_message(plan: ModelPlan, rows: Sequence[RowMedia],
                  frames_of: Callable[[VideoFacts, ModelPlan], FramesPlan]) -> str | None:
    """The rows of ``plan`` over its deployment's request limits, the limit and the fix (None: every row fits)."""
    requests = [_request(row, frames_of(row.video, plan) if plan.video_mode == FRAMES else None) for row in rows]
    return limit_report(requests, plan.request_limits, plan.deployment)


def _priced(line: EstimateRow, price: Price | None) -> EstimateRow:
    if price is None or line.input_tokens is None:
        return line
    return EstimateRow(line.model, line.subset, line.rows, line.media, line.frames, line.media_bytes,
                       line.media_tokens, line.text_tokens, line.output_tokens, line.over_limits,
                       price.cost(line.input_tokens, line.output_tokens))


NOTES = (
    "media_tokens: providers' documented formulas (OpenAI high-detail tiles; Claude w*h/750; Gemini 258 per image "
    "tile, 263/s of video; Qwen3-VL processor); '-': no formula known for this model and client.",
    "text_tokens: prompt characters / 4 (approximate). output_tokens: an assumption (--output-tokens, "
    "--reasoning-output-tokens), not a measurement.",
    "media_bytes: native: the video files; frames: estimated from one decoded frame per video (JPEG q95).",
    "over_limits: rows whose request would exceed the deployment's limits (documented, or declared for this "
    "package's vLLM client, which never sends such a request: the row fails alone); the lines below name them "
    "and the fix.",
)


def run_entry(model: str, subset: str, data: str, revision: str, video: str, options: FrameOptions) -> str:
    """The ``roboreward`` run entry ``helm-run`` would get for these settings."""
    parts = [f"subset={subset}", f"data={data}"]
    if revision != DATASET_REVISION:
        parts.append(f"revision={revision}")
    parts.append(f"video={video}")
    parts += [f"fps={exact_number(options.frames_per_second)}", f"last_frame={int(options.include_last_frame)}",
              f"max_frames={options.max_frames}", f"max_side={options.max_side}", f"model={model}"]
    return "roboreward:" + ",".join(parts)


def plan_models(models: Sequence[str], subset: str, data: str, revision: str, video: str,
                options: FrameOptions) -> list[ModelPlan]:
    """One plan per model (load the registries first: :func:`helm_roboreward.helm_frontend.plugin.load_registries`).

    Raises:
        ValueError: An unknown model (the fix: ``roboreward models`` / ``add-model``), a retired one (its
            successor), a value a run entry cannot hold, or any error the run would stop with.
    """
    plans = []
    for model in models:
        if model not in MODEL_NAME_TO_MODEL_METADATA:
            raise ValueError(f"model {model!r} is not known to HELM with this --local-path; see `roboreward models` "
                             "for the known ones, or add it with `roboreward add-model`")
        commas = [value for value in (subset, data, revision) if "," in value]
        if commas:
            raise ValueError(f"{commas[0]!r}: run-entry values cannot contain commas (HELM's run-entry syntax)")
        description = run_entry(model, subset, data, revision, video, options)
        for spec in run_entries_to_run_specs([RunEntry(description=description, priority=1, groups=None)]):
            assert isinstance(spec, RoboRewardRunSpec) and spec.routing is not None
            deployment = spec.adapter_spec.model_deployment
            client = get_model_deployment(deployment)
            plans.append(ModelPlan(
                model=spec.adapter_spec.model,
                deployment=deployment,
                client=client.client_spec.class_name,
                video_mode=str(spec.scenario_spec.args["video"]),
                frame_options=spec.routing.frame_options,
                max_tokens=spec.adapter_spec.max_tokens,
                reasoning=needs_reasoning_allowance(spec.adapter_spec.model),
                request_limits=deployment_limits(deployment, client.client_spec.class_name, client.client_spec.args,
                                                 client.max_sequence_length),
            ))
    return plans
