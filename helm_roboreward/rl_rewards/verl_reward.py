"""RoboReward as verl's custom reward function: ``compute_score`` (sync) and ``compute_score_async``.

verl loads the function named by ``custom_reward_function.name`` from ``custom_reward_function.path`` (a file, or
``pkg://helm_roboreward.rl_rewards.verl_reward``), merges ``custom_reward_function.reward_kwargs`` into every call,
and its reward manager calls it once per response with ``data_source``, ``solution_str``, ``ground_truth`` and
``extra_info`` (the row's ``extra_info``, plus the tool fields an agent loop returned), awaiting it when it is a
coroutine function, else running it in a thread. A float or a dict with ``"score"`` comes back; the other keys of
the dict are logged as reward extra info and must be the same for every response (verl 0.9.1,
``verl/trainer/ppo/reward.py``, ``get_custom_reward_fn``; ``verl/experimental/reward_loop/reward_manager/naive.py``,
``NaiveRewardManager.run_single``).

Here the task and the video come from ``extra_info`` (keys ``task``, ``video``, and ``fps`` for frames; renamed with
``task_key=`` and the like); ``solution_str`` and ``ground_truth`` are not read: the reward is what the model says
of the video. The model comes from ``reward_kwargs`` (``model``, ``deployment``, ``local_path``, ``options``,
``value``, ``on_failure``) and is built once per process (docs/rl_rewards.md).
"""

import asyncio
import math
import os
from collections.abc import Mapping
from typing import Any

from helm_roboreward.reward.api import RewardItem
from helm_roboreward.reward.inputs import RewardInputError
from helm_roboreward.rl_rewards.reward_values import check_value, shared_model, value_of


def _item(extra_info: Mapping[str, Any] | None, task_key: str, video_key: str, fps_key: str) -> RewardItem:
    if not isinstance(extra_info, Mapping):
        raise ValueError(f"compute_score: extra_info must be a dict holding {task_key!r} and {video_key!r}, got "
                         f"{type(extra_info).__name__}; put each rollout's task and video in the row's extra_info")
    missing = [key for key in (task_key, video_key) if key not in extra_info]
    if missing:
        raise ValueError(f"compute_score: extra_info has no {missing[0]!r} (keys: {sorted(map(str, extra_info))}); "
                         f"put the rollout's task and video (an mp4 path) there, or name other keys with "
                         "reward_kwargs task_key= / video_key=")
    video = extra_info[video_key]
    mp4 = isinstance(video, str | bytes | os.PathLike)
    return RewardItem(extra_info[task_key], video, None if mp4 else extra_info.get(fps_key))


def compute_score(data_source: Any = None, solution_str: Any = None, ground_truth: Any = None,
                  extra_info: Mapping[str, Any] | None = None, *, model: str | None = None,
                  deployment: str | None = None, local_path: str = "prod_env",
                  options: Mapping[str, object] | str | None = None, media_dir: str | None = None,
                  cache: bool = True, value: str = "score", on_failure: float = 0.0, task_key: str = "task",
                  video_key: str = "video", fps_key: str = "fps", **verl_extras: Any) -> dict[str, Any]:
    """The reward of one response's rollout, as verl's reward managers read it.

    Returns:
        ``{"score": <value>, "roboreward_score": <the parsed score, NaN without one>, "roboreward_failed": bool}``;
        ``score`` is ``on_failure`` when the request failed or the answer has no score.

    Raises:
        ValueError: No ``model`` in reward_kwargs, an unknown ``value``, or extra_info without the task or video.
        RewardInputError: A bad task, fps or frames (the extra_info key named); RewardModelError: the model
            cannot be built. A video that does not decode is a failed reward, not an error.
    """
    if not model:
        raise ValueError("compute_score: no model; set custom_reward_function.reward_kwargs.model (and deployment, "
                         "local_path as needed), e.g. "
                         "+custom_reward_function.reward_kwargs.model=teetone/roboreward-8b")
    reward_model = shared_model(model, deployment, local_path, options, media_dir, cache)
    chosen = check_value(value, reward_model.options)
    item = _item(extra_info, task_key, video_key, fps_key)
    try:
        (reward,) = reward_model.score_many([item], max_workers=1)
    except RewardInputError as error:
        part = error.field.partition(".")[2]
        key = {"task": task_key, "video": video_key, "fps": fps_key}.get(part, part)
        raise RewardInputError(f"extra_info[{key!r}]", error.message) from None
    number = value_of(reward, chosen)
    return {"score": float(on_failure) if number is None else number,
            "roboreward_score": math.nan if reward.score is None else float(reward.score),
            "roboreward_failed": reward.failed}


async def compute_score_async(data_source: Any = None, solution_str: Any = None, ground_truth: Any = None,
                              extra_info: Mapping[str, Any] | None = None, **reward_kwargs: Any) -> dict[str, Any]:
    """:func:`compute_score` as a coroutine, which verl awaits on its event loop.

    The request runs in a thread, so many responses are scored at once.
    """
    return await asyncio.to_thread(compute_score, data_source, solution_str, ground_truth, extra_info,
                                   **reward_kwargs)
