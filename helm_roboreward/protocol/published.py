"""The published RoboRewardBench leaderboard: which models it ranks and their macro MAE (docs/protocol.md, section 8).

Also the published test split's counts (for ``roboreward audit``) and the models their providers retired, with
their successors.

Source: the benchmark's leaderboard (HELM project ``robo-reward-bench``, release v0.0.1,
https://crfm.stanford.edu/helm/robo-reward-bench/v0.0.1/#/leaderboard), read 2026-11-12. Names are HELM model
names (this package registers the ones HELM 0.5.16 does not ship). ``roboreward models --group leaderboard
--names`` prints these models for HELM's ``--models-to-run`` (minus retired ones, below);
``run_specs/roboreward.conf`` lists them per subset.
"""

import datetime
from dataclasses import dataclass
from typing import NamedTuple

from helm_roboreward.protocol.rules import OFFICIAL_SUBSET_IDS


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


IMPORT_RECORD = "roboreward_import.json"
"""A local copy written by ``roboreward import-lerobot`` records here, at its root, its source and where its gold
scores (labels) came from."""

PUBLISHED_METADATA_SHA256 = "3901cea9a7981d2e2d9fde4225a4b2ff0ebf2f4af69fc96972a2cfbe557db0cd"
"""SHA-256 of the ``test/metadata.jsonl`` that harness used (its copy of July 2026)."""

PUBLISHED_KIND_ROWS: dict[str, tuple[int, int, int]] = {
    "austin_sirius_dataset_converted_externally_to_rlds": (44, 23, 20),
    "berkeley_autolab_ur5": (49, 31, 20),
    "berkeley_fanuc_manipulation": (44, 27, 20),
    "berkeley_mvp_converted_externally_to_rlds": (31, 20, 20),
    "berkeley_rpt_converted_externally_to_rlds": (43, 23, 20),
    "bridge": (36, 44, 20),
    "cmu_play_fusion": (41, 31, 20),
    "dlr_edan_shared_control_converted_externally_to_rlds": (4, 11, 4),
    "droid": (45, 35, 20),
    "fractal20220817_data": (34, 46, 20),
    "iamlab_cmu_pickup_insert_converted_externally_to_rlds": (14, 49, 20),
    "jaco_play": (33, 47, 20),
    "kaist_nonprehensile_converted_externally_to_rlds": (27, 14, 12),
    "roboturk": (39, 38, 20),
    "stanford_hydra_dataset_converted_externally_to_rlds": (66, 14, 11),
    "taco_play": (28, 43, 20),
    "tokyo_u_lsmo_converted_externally_to_rlds": (38, 13, 20),
    "ucsd_kitchen_dataset_converted_externally_to_rlds": (47, 28, 20),
    "ucsd_pick_and_place_dataset_converted_externally_to_rlds": (38, 42, 20),
    "utokyo_pr2_tabletop_manipulation_converted_externally_to_rlds": (12, 41, 20),
    "utokyo_xarm_bimanual_converted_externally_to_rlds": (39, 28, 4),
    "viola": (39, 21, 0),
}
"""Rows of each Open X-Embodiment subset by kind: (temporal clips, counterfactual relabels, original successes).
``robo_arena`` holds only its 1,000 natural rollouts. Totals: 791 clips, 669 relabels, 371 originals."""

PUBLISHED_GOLD_SCORE_COUNTS_BY_KIND: dict[str, tuple[int, int, int, int, int]] = {
    "natural": (266, 263, 174, 141, 156),
    "clip": (195, 266, 170, 160, 0),
    "counterfactual": (228, 112, 212, 117, 0),
    "original": (0, 0, 0, 0, 371),
}
"""Rows with gold score 1, 2, 3, 4, 5 per augmentation kind (overall 689 / 641 / 556 / 418 / 527)."""

PUBLISHED_OXE_VIDEOS = 760
"""Distinct videos (by bytes) among the 1,040 Open X-Embodiment rows that are not clips."""

PUBLISHED_LADDERS: dict[int, int] = {1: 104, 2: 28, 3: 9, 4: 1}
"""Videos carrying a 5 and n relabels (the same bytes with other tasks), by n: 142 such videos."""

PUBLISHED_RELABELS_WITHOUT_ORIGINAL = 478
"""Relabels whose bytes carry no 5 in the test split (their original success is not in it)."""

PUBLISHED_CLIP_NAME_MISMATCHES = 0
"""Clips whose name's ``score_<k>`` differs from their gold score: none of the 791."""


ALLOW_RETIRED_VARIABLE = "ROBOREWARD_ALLOW_RETIRED"


class Retirement(NamedTuple):
    """A model its provider turned off: when, the model (``org/name``) to run instead, and the provider's page."""

    date: datetime.date
    successor: str
    source: str


RETIRED_MODELS: dict[str, Retirement] = {
    "google/gemini-robotics-er-1.6-preview": Retirement(
        datetime.date(2026, 8, 31), "google/gemini-robotics-er-2-preview",
        "https://ai.google.dev/gemini-api/docs/robotics-overview"),
    "google/gemini-3-pro-preview": Retirement(
        datetime.date(2026, 3, 9), "google/gemini-3.1-pro-preview",
        "https://ai.google.dev/gemini-api/docs/deprecations"),
}


ALIASES: dict[str, str] = {  # old name -> the model it now runs (same API id and settings)
    "openai/gpt-5.5": "openai/gpt-5.5-2026-04-23",
    "openai/gpt-5.5-xhigh": "openai/gpt-5.5-2026-04-23-xhigh-reasoning-effort",
}
