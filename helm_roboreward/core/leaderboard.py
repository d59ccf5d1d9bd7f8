"""The published RoboRewardBench leaderboard: which models it ranks and their macro MAE (docs/protocol.md, section 8).

Source: the benchmark's leaderboard (HELM project ``robo-reward-bench``, release v0.0.1,
https://crfm.stanford.edu/helm/robo-reward-bench/v0.0.1/#/leaderboard), read 2026-11-12. Names are HELM model
names (this package registers the ones HELM 0.5.16 does not ship). ``roboreward models --group leaderboard
--names`` prints these models for HELM's ``--models-to-run`` (minus retired ones, see
:mod:`helm_roboreward.models.lifecycle`); ``run_specs/roboreward.conf`` lists them per subset.
"""

from dataclasses import dataclass

from helm_roboreward.protocol import OFFICIAL_SUBSET_IDS


@dataclass(frozen=True)
class PublishedEntry:
    """One row of the published leaderboard."""

    model: str
    """HELM model name."""

    display_name: str
    macro_mae: float
    """Published overall MAE (unweighted mean over the 23 subsets; lower is better)."""


PUBLISHED_LEADERBOARD: tuple[PublishedEntry, ...] = (
    PublishedEntry("openai/gpt-5.5-2026-04-23-xhigh-reasoning-effort", "GPT-5.5 (xhigh reasoning)", 0.63),
    PublishedEntry("openai/gpt-5.5-2026-04-23", "GPT-5.5", 0.66),
    PublishedEntry("teetone/roboreward-8b", "RoboReward 8B", 0.665),
    PublishedEntry("openai/gpt-5-mini-2025-08-07", "GPT-5 mini", 0.69),
    PublishedEntry("openai/gpt-5-2025-08-07", "GPT-5", 0.81),
    PublishedEntry("teetone/roboreward-4b", "RoboReward 4B", 0.845),
    PublishedEntry("google/gemini-3-pro-preview", "Gemini 3 Pro (Preview)", 0.85),
    PublishedEntry("openai/gpt-5.2-2025-12-11", "GPT-5.2", 0.89),
    PublishedEntry("qwen/qwen3-vl-8b-instruct", "Qwen3-VL Instruct (8B)", 0.892),
    PublishedEntry("openai/gpt-5.1-2025-11-13", "GPT-5.1", 0.90),
    PublishedEntry("google/gemini-2.5-pro", "Gemini 2.5 Pro", 0.90),
    PublishedEntry("qwen/qwen3-vl-30b-a3b-instruct", "Qwen3-VL Instruct (30B-A3B)", 0.90),
    PublishedEntry("google/gemini-robotics-er-1.5-preview", "Gemini Robotics-ER 1.5 (Preview)", 0.906),
    PublishedEntry("google/gemini-3-flash-preview", "Gemini 3 Flash (Preview)", 0.92),
    PublishedEntry("google/gemini-robotics-er-1.6-preview", "Gemini Robotics-ER 1.6", 0.93),
    PublishedEntry("google/gemini-2.5-flash", "Gemini 2.5 Flash", 0.94),
    PublishedEntry("google/gemini-2.5-flash-lite", "Gemini 2.5 Flash-Lite", 0.99),
    PublishedEntry("qwen/qwen2.5-vl-72b-instruct", "Qwen2.5-VL Instruct (72B)", 0.99),
    PublishedEntry("qwen/qwen3-vl-4b-instruct", "Qwen3-VL Instruct (4B)", 1.032),
    PublishedEntry("qwen/qwen2.5-vl-32b-instruct", "Qwen2.5-VL Instruct (32B)", 1.14),
    PublishedEntry("qwen/qwen2.5-vl-7b-instruct", "Qwen2.5-VL Instruct (7B)", 1.17),
    PublishedEntry("meta/llama-4-maverick-17b-128e-instruct-fp8", "Llama 4 Maverick (17Bx128E) Instruct FP8", 1.27),
    PublishedEntry("openai/gpt-5-nano-2025-08-07", "GPT-5 nano", 1.30),
    PublishedEntry("meta/llama-4-scout-17b-16e-instruct", "Llama 4 Scout (17Bx16E) Instruct", 1.49),
    PublishedEntry("qwen/qwen2.5-vl-3b-instruct", "Qwen2.5-VL Instruct (3B)", 1.61),
)
"""The 25 published rows, best first."""

LEADERBOARD_MODELS: tuple[str, ...] = tuple(entry.model for entry in PUBLISHED_LEADERBOARD)

PUBLISHED_SUBSET_MAE: dict[str, dict[str, float]] = {
    "teetone/roboreward-8b": dict(zip(OFFICIAL_SUBSET_IDS, (
        0.768, 0.701, 0.340, 0.538, 0.577, 0.674, 0.770, 0.587, 0.474, 0.670, 0.830, 0.807, 0.720, 0.396, 0.485,
        0.890, 0.473, 0.493, 0.947, 0.100, 0.452, 1.394, 1.200), strict=True)),
}
"""Published per-subset MAEs where we have them: RoboReward 8B's subset columns on the same leaderboard (the source
above, read 2026-11-12), in official column order; copied in the project protocol, section 7, and docs/protocol.md,
section 8. Their unweighted mean is its published 0.665 (instance-weighted it would be 0.696)."""


def published_entry(model: str) -> PublishedEntry | None:
    """The published row of a HELM model name, or None when the leaderboard does not rank it."""
    return next((entry for entry in PUBLISHED_LEADERBOARD if entry.model == model), None)
