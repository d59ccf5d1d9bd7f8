"""helm-roboreward: RoboRewardBench as a HELM plugin.

The official path sits at the class paths HELM records (``run_spec.json``, deployments, the ``helm`` entry
point): :mod:`~helm_roboreward.plugin`, :mod:`~helm_roboreward.run_specs` with :mod:`~helm_roboreward.routing`,
:mod:`~helm_roboreward.scenario`, :mod:`~helm_roboreward.metrics`, :mod:`~helm_roboreward.summarizer` and
:mod:`~helm_roboreward.clients`. Beneath them, HELM-free: :mod:`~helm_roboreward.core` (benchmark constants,
prompt, parse rule, stats), :mod:`~helm_roboreward.data` (rows and where they come from) and
:mod:`~helm_roboreward.media` (frames and video copies). Extras load only when used: ``models`` (model files,
add-model, estimate), ``presentation`` (schema, report, export), ``robot_data`` (LeRobot import and labelling).

The public surface here is small and import-light (no HELM).
"""

from helm_roboreward.protocol import (
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
    "Reward",
    "RewardModel",
]


def __getattr__(name: str) -> object:
    """``RewardModel`` and ``Reward`` load on first use: importing the package stays free of HELM."""
    if name in ("Reward", "RewardModel"):
        from helm_roboreward.reward import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
