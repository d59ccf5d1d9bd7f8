"""The RL adapters scored in a process of their own, the way each framework calls them (tests/rl_rewards).

HELM's registries load once per process from one ``--local-path``, and the reward tests' process already holds
theirs, so the adapters run here, in a subprocess: ``python -m tests.helpers.rl_scoring ARGS`` builds one
:class:`~helm_roboreward.reward.RewardModel` on the test's loopback fake, scores the same rollouts through the
API and then through each adapter named in ``phases``, and prints the results as one JSON line. Between phases it
sends ``GET /marker/<phase>`` to the fake, so the test can split the request bodies the fake recorded by phase.

Phases: ``api`` (``RewardModel.score``), ``trl`` (:class:`TRLReward` called with TRL's keyword arguments),
``verl`` and ``verl_async`` (``compute_score`` with verl's keyword arguments and ``reward_kwargs``), and, where the
interpreter has the framework (:func:`rl_python`), ``trl_trainer`` (trl's own ``GRPOTrainer._calculate_rewards``)
and ``verl_manager`` (verl's ``get_custom_reward_fn`` and ``NaiveRewardManager.run_single``).
"""

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import urllib.request
from collections import Counter, defaultdict
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from tests.helpers.fakes import FakeModelServer, Recorded, Reply
from tests.helpers.harness import TIMEOUT, helm_environment, private_local_path
from tests.helpers.sample import SAMPLE, sample_rows

REPO = Path(__file__).resolve().parents[2]
MODEL, DEPLOYMENT = "teetone/roboreward-8b", "vllm/roboreward-8b"
"""The vLLM client sending the mp4 (the fake answers as vLLM)."""
RL_PYTHON_VARIABLE = "ROBOREWARD_RL_PYTHON"
FRAMES_TASK = "stack the blocks"
FRAMES_FPS = 10.0
TRL_COLUMNS = {"task": "instruction", "video": "rollout", "fps": "fps"}
"""The dataset columns the TRL phases name (not the defaults, so the naming is exercised)."""


def rl_python() -> str | None:
    """The interpreter of a venv where trl and/or verl import (``ROBOREWARD_RL_PYTHON``), else None."""
    python = os.environ.get(RL_PYTHON_VARIABLE)
    return python if python and os.path.isfile(python) else None


def frames() -> np.ndarray:
    return np.random.default_rng(7).integers(0, 256, (20, 64, 96, 3), dtype=np.uint8)


def rollouts(paths: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The rollouts of a run: mp4 paths, and one video given as frames."""
    return [{"task": task, "video": video, "fps": None} for task, video in paths] + [
        {"task": FRAMES_TASK, "video": frames(), "fps": FRAMES_FPS}]


def by_phase(fake: FakeModelServer) -> dict[str, list[Recorded]]:
    """The model requests the fake recorded, split at each ``/marker/<phase>``."""
    phases: dict[str, list[Recorded]] = {}
    current = "api"
    for recorded in sorted(fake.requests, key=lambda r: r.index):
        if recorded.path.startswith("/marker/"):
            current = recorded.path.removeprefix("/marker/")
        elif recorded.api != "models":
            phases.setdefault(current, []).append(recorded)
    return phases


def score_of_body(recorded: Recorded) -> Reply:
    """The fake's answer: a score that depends on the request's bytes, so one rollout's reward read for another's
    would show."""
    return Reply(text=f"ANSWER: {1 + int(hashlib.sha256(recorded.raw).hexdigest(), 16) % 5}")


def scored(fake: FakeModelServer, folder: Path, phases: list[str],
           python: str = sys.executable) -> tuple[dict[str, Any], dict[str, Counter[bytes]]]:
    """Score three sample rows and one frames video in each phase, in ``python``, on ``fake`` (cleared first);
    the printed results and the bodies the fake received per phase."""
    fake.clear()
    args = {"model": MODEL, "deployment": DEPLOYMENT, "local_path": str(private_local_path(folder / "local", fake)),
            "paths": [[row["task"], str(SAMPLE / row["file_name"])] for row in sample_rows()[:3]],
            "phases": phases, "marker": fake.root_url}
    done = subprocess.run([python, "-m", "tests.helpers.rl_scoring", json.dumps(args)], cwd=REPO,
                          env=helm_environment(fake), capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-4000:]
    result = dict(json.loads(done.stdout.strip().splitlines()[-1]))
    return result, {phase: Counter(r.raw for r in records) for phase, records in by_phase(fake).items()}


# --------------------------------------------------------------------------- in the subprocess


def _trl_columns(items: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {TRL_COLUMNS[key]: [item[key] for item in items] for key in ("task", "video", "fps")}


def _trl(model: Any, items: list[dict[str, Any]], value: str) -> dict[str, Any]:
    from helm_roboreward.rl_rewards.trl_reward import TRLReward

    reward = TRLReward(model, task_column="instruction", video_column="rollout", fps_column="fps", value=value)
    metrics: dict[str, list[float]] = defaultdict(list)
    extra: dict[str, list[Any]] = defaultdict(list)
    values = reward(prompts=["p"] * len(items), completions=["c"] * len(items), completion_ids=[[1]] * len(items),
                    trainer_state=SimpleNamespace(global_step=0), log_extra=lambda k, v: extra[k].extend(v),
                    log_metric=lambda k, v: metrics[k].append(v), **_trl_columns(items))
    return {"values": values, "metrics": dict(metrics), "extra": dict(extra)}


def _trl_trainer(model: Any, items: list[dict[str, Any]]) -> dict[str, Any]:
    """trl's own ``GRPOTrainer._calculate_rewards`` on a stand-in trainer holding what that method reads."""
    import accelerate
    from transformers import TrainerState
    from trl import GRPOTrainer
    from trl.trainer.utils import get_callable_name

    from helm_roboreward.rl_rewards.trl_reward import TRLReward

    reward = TRLReward(model, task_column="instruction", video_column="rollout", fps_column="fps")
    trainer = SimpleNamespace(accelerator=accelerate.Accelerator(cpu=True), state=TrainerState(),
                              args=SimpleNamespace(report_to=[]), reward_funcs=[reward],
                              reward_processing_classes=[None], reward_func_names=[get_callable_name(reward)],
                              environments=None, _pending_metrics=defaultdict(list),
                              _pending_extra_logs=defaultdict(list))
    trainer._log_completion_extra = partial(GRPOTrainer._log_completion_extra, trainer)
    trainer._log_metric = partial(GRPOTrainer._log_metric, trainer)
    columns = _trl_columns(items)
    inputs = [{"prompt": f"prompt {index}", **{name: values[index] for name, values in columns.items()}}
              for index in range(len(items))]
    rewards = GRPOTrainer._calculate_rewards(trainer, inputs, [row["prompt"] for row in inputs],
                                             [f"completion {i}" for i in range(len(items))], [[1, 2]] * len(items))
    return {"values": rewards[:, 0].tolist(), "names": trainer.reward_func_names,
            "metrics": {k: list(v) for k, v in trainer._pending_metrics.items()}}


def _extra_info(item: dict[str, Any]) -> dict[str, Any]:
    return {"task": item["task"], "video": item["video"], **({"fps": item["fps"]} if item["fps"] else {})}


def _verl(kwargs: dict[str, Any], items: list[dict[str, Any]], asynchronous: bool) -> list[dict[str, Any]]:
    from helm_roboreward.rl_rewards.verl_reward import compute_score, compute_score_async

    calls = [dict(data_source="robot", solution_str="move left", ground_truth=None, extra_info=_extra_info(item),
                  **kwargs) for item in items]
    if not asynchronous:
        return [compute_score(**call) for call in calls]

    async def all_of() -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(compute_score_async(**call) for call in calls)))

    return asyncio.run(all_of())


def _verl_manager(kwargs: dict[str, Any], items: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """verl's own loading (``get_custom_reward_fn``) and reward manager (``NaiveRewardManager.run_single``)."""
    import torch
    from omegaconf import OmegaConf
    from verl import DataProto
    from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager
    from verl.trainer.ppo.reward import get_custom_reward_fn

    config = OmegaConf.create({"reward": {"custom_reward_function": {
        "path": "pkg://helm_roboreward.rl_rewards.verl_reward", "name": name, "reward_kwargs": kwargs}}})
    tokenizer = SimpleNamespace(decode=lambda ids, skip_special_tokens=True: "move left")
    manager = NaiveRewardManager(config, tokenizer, get_custom_reward_fn(config))
    results = []
    for item in items:
        data = DataProto.from_dict(
            tensors={"responses": torch.tensor([[5, 6, 7]]), "attention_mask": torch.ones(1, 6, dtype=torch.long)},
            non_tensors={"data_source": np.array(["robot"], dtype=object),
                         "reward_model": np.array([{"ground_truth": None}], dtype=object),
                         "extra_info": np.array([_extra_info(item)], dtype=object)})
        out = manager.loop.run_until_complete(manager.run_single(data))
        results.append({"reward_score": out["reward_score"], "extra": out["reward_extra_info"]})
    return results


def _error_of(call: Any) -> str:
    try:
        call()
    except Exception as error:  # the message is what the test reads
        return f"{type(error).__name__}: {error}"
    return "no error"


def _errors(model: Any, verl_kwargs: dict[str, Any], items: list[dict[str, Any]]) -> dict[str, Any]:
    """What a user sees for each mistake (nothing is sent for any of them)."""
    from helm_roboreward.rl_rewards.trl_reward import TRLReward
    from helm_roboreward.rl_rewards.verl_reward import compute_score

    reward = TRLReward(model, task_column="instruction", video_column="rollout", fps_column="fps")
    columns = _trl_columns(items)
    empty_task = {**columns, "instruction": [columns["instruction"][0], " ", *columns["instruction"][2:]]}
    no_fps = {**columns, "fps": [None] * len(items)}
    frames_item = items[-1]
    return {
        "trl_missing_column": _error_of(lambda: reward(completions=["c"], instruction=["t"], video=["v.mp4"])),
        "trl_empty_task": _error_of(lambda: reward(completions=["c"] * len(items), **empty_task)),
        "trl_frames_without_fps": _error_of(lambda: reward(completions=["c"] * len(items), **no_fps)),
        "trl_expected_without_option": _error_of(lambda: TRLReward(model, value="expected_score")),
        "trl_unknown_value": _error_of(lambda: TRLReward(model, value="reward")),
        "verl_no_video": _error_of(lambda: compute_score("robot", "s", None, {"task": "t"}, **verl_kwargs)),
        "verl_no_extra_info": _error_of(lambda: compute_score("robot", "s", None, None, **verl_kwargs)),
        "verl_no_model": _error_of(lambda: compute_score("robot", "s", None, _extra_info(frames_item))),
        "trl_undecodable": TRLReward(model, on_failure=-1.0)(completions=["c"], task=["t"], video=[b"no mp4"]),
        "verl_undecodable": compute_score("robot", "s", None, {"task": "t", "video": b"no mp4"}, on_failure=-1.0,
                                          **verl_kwargs),
        "verl_bad_fps": _error_of(lambda: compute_score("robot", "s", None, {**_extra_info(frames_item), "fps": 0},
                                                        **verl_kwargs)),
    }


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and value != value:
        return "nan"
    return value.item() if isinstance(value, np.generic) else value


def main(args: dict[str, Any]) -> dict[str, Any]:
    from helm_roboreward.reward import RewardModel

    model_kwargs = {"deployment": args["deployment"], "local_path": args["local_path"], "cache": False}
    model = RewardModel(args["model"], verbose=False, **model_kwargs)
    items = rollouts([tuple(pair) for pair in args["paths"]])
    verl_kwargs = {"model": args["model"], **model_kwargs}
    out: dict[str, Any] = {}
    for phase in args["phases"]:
        try:  # the fake records the marker (and answers 404)
            urllib.request.urlopen(f"{args['marker']}/marker/{phase}", timeout=10)
        except OSError:
            pass
        if phase == "api":
            out[phase] = [model.score(i["task"], i["video"], i["fps"]).to_json() for i in items]
        elif phase in ("trl", "trl_progress"):
            out[phase] = _trl(model, items, "progress" if phase == "trl_progress" else "score")
        elif phase == "trl_trainer":
            out[phase] = _trl_trainer(model, items)
        elif phase in ("verl", "verl_async"):
            out[phase] = _verl(verl_kwargs, items, phase == "verl_async")
        elif phase in ("verl_manager", "verl_manager_async"):
            name = "compute_score_async" if phase.endswith("async") else "compute_score"
            out[phase] = _verl_manager(verl_kwargs, items, name)
        elif phase == "errors":
            out[phase] = _errors(model, verl_kwargs, items)
        else:
            raise ValueError(f"unknown phase {phase}")
    return dict(_jsonable(out))


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
