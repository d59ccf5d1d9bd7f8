"""TRLReward, called the way TRL's GRPOTrainer calls a reward function, gives the API's reward for the same task
and video, with byte-identical model requests.

The fast test calls it with the keyword arguments ``GRPOTrainer._calculate_rewards`` passes (trl 1.16.0,
``trl/trainer/grpo_trainer.py``); the slow one runs that method itself, where ``ROBOREWARD_RL_PYTHON`` names an
interpreter with trl (a separate venv: ``pip install trl`` beside this package). The adapter runs in a process of
its own (tests/helpers/rl_scoring.py says why).
"""

import subprocess
from pathlib import Path
from typing import Any

import pytest

from helm_roboreward.reward.api import Reward
from helm_roboreward.rl_rewards.reward_values import check_value, value_of
from tests.helpers.fakes import FakeModelServer
from tests.helpers.rl_scoring import rl_python, scored


def test_trl_call_gives_the_apis_reward_with_the_same_requests(documented: dict[str, Any]) -> None:
    api = documented["api"]
    assert len(api) == 4 and not any(reward["failed"] for reward in api)  # 3 mp4s of the sample, 1 frames video
    assert len({reward["score"] for reward in api}) > 1, "the fake's scores must tell the rollouts apart"
    assert documented["trl"]["values"] == [reward["score"] for reward in api]
    assert documented["trl_progress"]["values"] == [reward["progress"] for reward in api]
    sent = documented["bodies"]
    assert sum(sent["api"].values()) == 4
    assert sent["trl"] == sent["api"] and sent["trl_progress"] == sent["api"]


def test_trl_logs_the_answers_and_the_share_without_a_value(documented: dict[str, Any]) -> None:
    logged = documented["trl"]
    assert logged["metrics"] == {"roboreward/without_value": [0.0]}
    assert logged["extra"]["roboreward_answer"] == [reward["output"] for reward in documented["api"]]


def test_trl_mistakes_name_the_column_and_row(documented: dict[str, Any]) -> None:
    errors = documented["errors"]
    assert errors["trl_missing_column"].startswith("ValueError: TRLReward: the batch has no dataset column 'rollout'")
    assert "video_column=" in errors["trl_missing_column"]
    assert errors["trl_empty_task"].startswith("RewardInputError: instruction[1]: is empty")
    assert errors["trl_frames_without_fps"].startswith("RewardInputError: fps[3]:")
    assert "needs the option score=expected" in errors["trl_expected_without_option"]
    assert errors["trl_unknown_value"].startswith("ValueError: value='reward': use one of score, progress")
    assert errors["trl_undecodable"] == [-1.0]  # a video that does not decode: on_failure, the batch goes on


def test_values_of_a_reward() -> None:
    reward = Reward(4.0, 0.75, False, 3.5, "ANSWER: 4")
    assert [value_of(reward, v) for v in ("score", "progress", "expected_score", "expected_progress")] == [
        4.0, 0.75, 3.5, 0.625]
    unparsed = Reward(None, None, False, None, "no idea")
    assert value_of(unparsed, "score") is None and value_of(unparsed, "expected_score") is None
    failed = Reward(None, None, False, None, "", failed=True, error="timeout")
    assert value_of(failed, "progress") is None
    assert value_of(Reward(9.0, 1.0, False, 9.0, "ANSWER: 9"), "expected_progress") == 1.0
    assert check_value("expected_progress", {"score": "expected"}) == "expected_progress"
    with pytest.raises(ValueError, match="needs the option score=expected"):
        check_value("expected_score", {})


@pytest.mark.slow
@pytest.mark.skipif(rl_python() is None, reason="set ROBOREWARD_RL_PYTHON to a venv with trl")
def test_trls_own_calculate_rewards_gives_the_apis_reward(rl_fake: FakeModelServer, tmp_path: Path) -> None:
    python = rl_python()
    assert python is not None
    if subprocess.run([python, "-c", "import trl"], capture_output=True, timeout=300).returncode != 0:
        pytest.skip(f"trl does not import in {python}")
    result, sent = scored(rl_fake, tmp_path, ["api", "trl_trainer"], python)
    assert result["trl_trainer"]["values"] == [reward["score"] for reward in result["api"]]
    assert result["trl_trainer"]["names"] == ["roboreward"]
    assert result["trl_trainer"]["metrics"] == {"roboreward/without_value": [0.0]}
    assert sum(sent["api"].values()) == 4 and sent["trl_trainer"] == sent["api"]
