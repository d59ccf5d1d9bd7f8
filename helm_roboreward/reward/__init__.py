"""RoboReward as a reward function: the benchmark's exact protocol as a Python API and an HTTP server.

``from helm_roboreward.reward import RewardModel`` (docs/reward_api.md). Importing this package loads nothing
else: the names below load on first use, :class:`~helm_roboreward.reward.api.RewardModel` loads HELM when built,
and :mod:`~helm_roboreward.reward.server` (``roboreward serve``) loads Starlette and uvicorn.
"""

import importlib
from typing import Any

_EXPORTS = {
    "Frames": "inputs", "RewardInputError": "inputs", "RewardModelError": "inputs",
    "Reward": "api", "RewardItem": "api", "RewardModel": "api",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"helm_roboreward.reward.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
