"""helm-roboreward: RoboRewardBench as a HELM plugin.

The package reads as the data flow:

- :mod:`helm_roboreward.core`: constants and subsets, the prompt, scoring, the stats catalogue, the instance record;
- :mod:`helm_roboreward.data`: metadata rows and where they come from (hub, local copy, bundled sample);
- :mod:`helm_roboreward.media`: frame selection, decoding, the verified frame cache, video copies, preparation;
- :mod:`helm_roboreward.helm_layer`: the scenario, run spec, routing, metric, summarizer, clients and plugin (the
  only part that imports HELM; loaded through the ``helm`` entry point);
- :mod:`helm_roboreward.presentation`: the schema, project files, terminal leaderboard, media export, the report.

The public surface here is small and import-light (no HELM).
"""

from helm_roboreward.core.benchmark import DATASET_ID, DATASET_REVISION, OFFICIAL_SUBSETS, PROMPT_VERSION
from helm_roboreward.core.prompt import build_prompt
from helm_roboreward.core.scoring import parse_progress_score, score_prediction
from helm_roboreward.media.selection import FrameOptions, select_frame_indices

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
