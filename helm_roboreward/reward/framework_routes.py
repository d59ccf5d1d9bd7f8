"""The request and answer shapes of two frameworks' reward servers, turned into ``/v1/score_batch`` items.

Each route reads its framework's body into the server's own items (``{task, video[, fps]}``, read by the one
:class:`~helm_roboreward.reward.server.ItemReader` and scored by ``RewardModel.score``), and writes the rewards
back in the framework's answer shape. Nothing here reads a video or an answer (docs/rl_rewards.md).

- OpenRLHF's ``--remote_rm_url`` (OpenRLHF 3c3be6234e0cb353e76bb8019947db9dfe99fca7,
  ``openrlhf/utils/agent.py``, ``SingleTurnAgentExecutor._fetch_rewards_via_http``): ``POST {"query": [...],
  "prompts": [...], "labels": [...]}``, answered by ``{"rewards": [...], "scores": [...], "extra_logs": {...}}``.
  Each label carries the item: an object ``{task, video, fps}`` or a string of that JSON.
- Robometer's eval server (robometer c7f38e266e1c00ec1203f4f8dbfa64de36590a0c,
  ``robometer/evals/baseline_eval_server.py``, ``/evaluate_batch``): ``{"samples": [{"sample_type": "progress",
  "trajectory": {"frames", "task", ...}}]}`` answered by ``{"outputs_progress": {"progress_pred": [[...], ...]}}``.
"""

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from helm_roboreward.reward.api import REWARD_VALUES, Reward, reward_value
from helm_roboreward.reward.inputs import RewardInputError

VALUES = REWARD_VALUES
"""What ``?value=`` picks as OpenRLHF's ``rewards`` (the same names as the TRL and verl adapters)."""


@dataclass(frozen=True)
class Translated:
    """A framework's body as server items: each an item dict, or the error of that entry (its field named)."""

    items: list[object]
    rename: tuple[tuple[str, str], ...]
    """Item fields as the framework names them (``video.images_base64`` -> ``trajectory.frames``), longest first."""
    prefix: str
    """The list the entries are in (``labels``, ``samples``)."""

    def field(self, index: int, item_field: str) -> str:
        """``labels[2].video.path`` for the item field ``video.path`` of entry 2 (``body``: the entry itself)."""
        if item_field == "body":
            return f"{self.prefix}[{index}]"
        for ours, theirs in self.rename:
            if item_field == ours or item_field.startswith((ours + ".", ours + "[")):
                item_field = theirs + item_field[len(ours):]
                break
        return f"{self.prefix}[{index}].{item_field}"


def openrlhf_items(body: object) -> Translated:
    """OpenRLHF's ``{"query", "prompts", "labels"}``: one item per label (an empty list is an empty batch)."""
    if not isinstance(body, dict) or not isinstance(body.get("labels"), list):
        raise RewardInputError("labels", "must be a list, one item per query: {\"task\": ..., \"video\": {...}} or "
                                         "that object as a JSON string (OpenRLHF's --label_key column)")
    labels: list[Any] = body["labels"]
    for name in ("query", "prompts"):
        if name in body and not (isinstance(body[name], list) and len(body[name]) == len(labels)):
            raise RewardInputError(name, f"must be a list as long as labels ({len(labels)})")
    unknown = sorted(set(body) - {"query", "prompts", "labels"})
    if unknown:
        raise RewardInputError(unknown[0], "is not a field; OpenRLHF sends query, prompts and labels")
    items: list[object] = []
    for index, label in enumerate(labels):
        if isinstance(label, str):
            try:
                label = json.loads(label)
            except ValueError as error:
                label = RewardInputError(f"labels[{index}]", f"is not a JSON item ({error}); give "
                                                            "{\"task\": ..., \"video\": {...}}")
        items.append(label)
    return Translated(items, (), "labels")


def check_value(value: str) -> str:
    """``?value=``: one of :data:`VALUES`."""
    if value not in VALUES:
        raise RewardInputError("value", f"{value!r} is not one of {', '.join(VALUES)} (the query parameter ?value=)")
    return value


def check_on_failure(text: str) -> float:
    """``?on_failure=``: a finite number."""
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise RewardInputError("on_failure", f"{text!r} must be a finite number (the query parameter ?on_failure=)")
    return number


def openrlhf_answer(rewards: list[Reward], value: str, on_failure: float) -> dict[str, Any]:
    """OpenRLHF's answer: ``rewards`` (the chosen number), ``scores`` (0..1, for its dynamic filtering).

    A failed reward or one without that number gets ``on_failure``; ``extra_logs.roboreward_failed`` marks it, and
    ``errors`` and ``results`` (the ``/v1/score`` rewards) say why.
    """
    chosen = [reward_value(reward, value) for reward in rewards]
    progress = [reward_value(reward, "expected_progress" if value.startswith("expected") else "progress")
                for reward in rewards]
    return {
        "rewards": [on_failure if number is None else number for number in chosen],
        "scores": [on_failure if number is None else number for number in progress],
        "extra_logs": {"roboreward_failed": [float(reward.failed or number is None)
                                             for reward, number in zip(rewards, chosen, strict=True)]},
        "errors": [reward.error if reward.failed else None for reward in rewards],
        "results": [reward.to_json() for reward in rewards],
    }


ROBOMETER_RENAME = (("video.images_base64", "trajectory.frames"), ("video.frames_base64", "trajectory.frames"),
                    ("video.shape", "trajectory.frames_shape"), ("video", "trajectory.frames"),
                    ("task", "trajectory.task"), ("fps", "trajectory.metadata.fps"))


def robometer_items(body: object) -> Translated:
    """Robometer's ``{"samples": [...]}`` (or a bare list, or one sample, as its server takes) as items.

    Progress samples only, each ``trajectory`` with ``task``, ``frames`` (base64 PNG or JPEG images, or base64
    uint8 bytes with ``frames_shape``) and ``metadata.fps``.
    """
    samples = body if isinstance(body, list) else body.get("samples", [body]) if isinstance(body, dict) else None
    if not isinstance(samples, list):
        raise RewardInputError("samples", "must be a list of {\"sample_type\": \"progress\", \"trajectory\": ...}")
    if isinstance(body, dict) and body.get("use_frame_steps"):
        raise RewardInputError("use_frame_steps", "is not supported: a RoboReward score is of the whole clip; for "
                                                  "a score per prefix use roboreward label --mode prefix")
    items: list[object] = []
    for index, sample in enumerate(samples):
        if not isinstance(sample, dict) or sample.get("sample_type", "progress") != "progress":
            kind = sample.get("sample_type") if isinstance(sample, dict) else type(sample).__name__
            raise RewardInputError(f"samples[{index}].sample_type", f"is {kind!r}: RoboReward scores progress "
                                                                    "samples only (no preference)")
        items.append(_robometer_item(index, sample.get("trajectory")))
    return Translated(items, ROBOMETER_RENAME, "samples")


def _robometer_item(index: int, trajectory: object) -> object:
    if not isinstance(trajectory, Mapping):
        return RewardInputError(f"samples[{index}].trajectory", "must be an object with task, frames and "
                                                                "metadata.fps")
    frames = trajectory.get("frames")
    metadata = trajectory.get("metadata")
    fps = metadata.get("fps") if isinstance(metadata, Mapping) else None
    if isinstance(frames, str):
        video: dict[str, Any] = {"frames_base64": frames, "shape": trajectory.get("frames_shape")}
    else:
        video = {"images_base64": frames}
    return {"task": trajectory.get("task"), "video": video, "fps": fps}


def robometer_answer(rewards: list[Reward], frame_counts: list[int]) -> dict[str, Any]:
    """Robometer's answer: per sample, its progress on every frame.

    That is its RoboReward baseline's shape: one clip score as ``(score - 1) / 4``, repeated; ``[]`` for a sample
    without a score (``roboreward.results`` says why).
    """
    predictions = [[reward.progress] * count if reward.progress is not None else []
                   for reward, count in zip(rewards, frame_counts, strict=True)]
    return {"outputs_preference": None, "outputs_progress": {"progress_pred": predictions},
            "roboreward": {"results": [reward.to_json() for reward in rewards]}}


def frame_count(item: object) -> int:
    """Frames in a Robometer item (the length of its progress list)."""
    if not isinstance(item, dict):
        return 0
    video = item.get("video") or {}
    if isinstance(video.get("images_base64"), list):
        return len(video["images_base64"])
    shape = video.get("shape")
    return int(shape[0]) if isinstance(shape, list) and shape and isinstance(shape[0], int) else 0

