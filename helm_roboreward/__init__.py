"""helm-roboreward: RoboRewardBench as a HELM plugin (the map of the package: docs/development.md).

Importing the package loads no HELM: the protocol's pure functions, and the reward API on first use.
"""

from helm_roboreward.protocol import __version__
from helm_roboreward.protocol.rules import (
    DATASET_ID,
    DATASET_REVISION,
    OFFICIAL_SUBSETS,
    PROMPT_VERSION,
    FrameOptions,
    build_prompt,
    parse_progress_score,
    score_prediction,
    select_frame_indices,
)

__all__ = ["DATASET_ID", "DATASET_REVISION", "OFFICIAL_SUBSETS", "PROMPT_VERSION", "FrameOptions", "build_prompt",
           "parse_progress_score", "score_prediction", "select_frame_indices", "__version__", "Reward", "RewardModel"]


def __getattr__(name: str) -> object:
    """``RewardModel`` and ``Reward`` load on first use: importing the package stays free of HELM."""
    if name in ("Reward", "RewardModel"):
        from helm_roboreward.reward import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
