"""helm-roboreward: RoboRewardBench as a HELM plugin.

The public surface is small and import-light; HELM classes live in their own modules
(:mod:`helm_roboreward.scenario`, :mod:`helm_roboreward.metrics`, :mod:`helm_roboreward.run_specs`)
and are loaded by HELM through the ``helm`` entry point (:mod:`helm_roboreward.plugin`).
"""

from helm_roboreward.benchmark import DATASET_ID, DATASET_REVISION, OFFICIAL_SUBSETS, PROMPT_VERSION
from helm_roboreward.frames import FrameOptions, select_frame_indices
from helm_roboreward.prompt import build_prompt
from helm_roboreward.scoring import parse_progress_score, score_prediction

__version__ = "0.1.0"

__all__ = [
    "DATASET_ID",
    "DATASET_REVISION",
    "OFFICIAL_SUBSETS",
    "PROMPT_VERSION",
    "FrameOptions",
    "build_prompt",
    "parse_progress_score",
    "score_prediction",
    "select_frame_indices",
    "__version__",
]
