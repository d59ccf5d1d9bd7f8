"""What the RL adapters share: the number of a reward they return, and one model per settings per process.

Which number of a :class:`~helm_roboreward.reward.Reward` becomes the reward (:data:`VALUES`), and one
:class:`~helm_roboreward.reward.RewardModel` per settings per process (:func:`shared_model`).

Every adapter scores through ``RewardModel.score`` / ``score_many`` (the benchmark's prompt, media, decoding and
parse): nothing here builds a request or reads an answer. A reward that failed, or an answer the official rule
cannot parse, has no value: the adapter returns its ``on_failure`` value instead (docs/rl_rewards.md).
"""

import threading
from collections.abc import Mapping
from typing import Any

from helm_roboreward.reward.api import REWARD_VALUES, RewardModel, option_dict, reward_value

VALUES = REWARD_VALUES
"""``score``: the parsed score (1..5 for a well-behaved model); ``progress``: ``(score - 1) / 4`` clipped to 0..1;
``expected_score``: the probability-weighted mean of 1..5 over the answer token; ``expected_progress``: that mean
on the 0..1 scale. The two expected values need ``options={"score": "expected"}`` on a deployment that returns
log-probabilities (docs/reward_metrics.md)."""

_MODELS: dict[tuple[Any, ...], RewardModel] = {}
_MODELS_LOCK = threading.Lock()


def check_value(value: object, options: Mapping[str, str]) -> str:
    """``value`` if it is one of :data:`VALUES` the model's options allow.

    Raises:
        ValueError: Another value, or an expected value without ``score=expected``.
    """
    if value not in VALUES:
        raise ValueError(f"value={value!r}: use one of {', '.join(VALUES)}")
    if str(value).startswith("expected") and options.get("score") != "expected":
        raise ValueError(f"value={value!r} needs the option score=expected on a deployment that returns "
                         "log-probabilities (a -logprobs deployment); without it no expected score exists")
    return str(value)


value_of = reward_value
"""The number ``value`` of a reward (:func:`helm_roboreward.reward.api.reward_value`)."""


def shared_model(model: str, deployment: str | None = None, local_path: str = "prod_env",
                 options: Mapping[str, object] | str | None = None, media_dir: str | None = None,
                 cache: bool = True) -> RewardModel:
    """The process's :class:`RewardModel` for these settings, built on first use.

    A framework's worker calls the reward function many times; the model, its client and HELM's registries load
    once.

    Raises:
        RewardModelError: As ``RewardModel(...)``: an unknown model, a bad option, a missing credential.
    """
    key = (model, deployment, local_path, tuple(sorted(option_dict(options).items())), media_dir, cache)
    with _MODELS_LOCK:
        found = _MODELS.get(key)
        if found is None:
            found = RewardModel(model, deployment, local_path=local_path, options=options, media_dir=media_dir,
                                cache=cache)
            _MODELS[key] = found
        return found
