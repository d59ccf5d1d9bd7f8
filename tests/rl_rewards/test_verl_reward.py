"""verl's ``compute_score`` and ``compute_score_async``, called the way verl's reward managers call a custom reward
function, give the API's reward for the same task and video, with byte-identical model requests.

The fast test calls them with the keyword arguments ``NaiveRewardManager.run_single`` passes, ``reward_kwargs``
merged in as ``get_custom_reward_fn`` merges them (verl 0.9.1, ``verl/trainer/ppo/reward.py`` and
``verl/experimental/reward_loop/reward_manager/naive.py``); the slow one runs that loading and that manager
themselves, where ``ROBOREWARD_RL_PYTHON`` names an interpreter with verl (a separate venv). The adapter runs in a
process of its own (tests/helpers/rl_scoring.py says why).
"""

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fakes import FakeModelServer
from tests.helpers.rl_scoring import rl_python, scored


def expected(api: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"score": r["score"], "roboreward_score": r["score"], "roboreward_failed": False} for r in api]


def test_compute_score_sync_and_async_give_the_apis_reward_with_the_same_requests(documented: dict[str, Any]) -> None:
    api = documented["api"]
    assert len(api) == 4 and not any(reward["failed"] for reward in api)
    assert len({reward["score"] for reward in api}) > 1, "the fake's scores must tell the rollouts apart"
    assert documented["verl"] == expected(api)
    assert documented["verl_async"] == expected(api)
    sent = documented["bodies"]
    assert sum(sent["api"].values()) == 4
    assert sent["verl"] == sent["api"] and sent["verl_async"] == sent["api"]


def test_compute_score_mistakes_name_the_extra_info_key(documented: dict[str, Any]) -> None:
    errors = documented["errors"]
    assert errors["verl_no_video"].startswith("ValueError: compute_score: extra_info has no 'video' (keys: ['task'])")
    assert "extra_info must be a dict" in errors["verl_no_extra_info"]
    assert "set custom_reward_function.reward_kwargs.model" in errors["verl_no_model"]
    assert errors["verl_bad_fps"].startswith("RewardInputError: extra_info['fps']: must be a number in (0, 1000]")
    assert errors["verl_undecodable"] == {"score": -1.0, "roboreward_score": "nan", "roboreward_failed": True}


@pytest.mark.slow
@pytest.mark.skipif(rl_python() is None, reason="set ROBOREWARD_RL_PYTHON to a venv with verl")
def test_verls_own_loader_and_reward_manager_give_the_apis_reward(rl_fake: FakeModelServer, tmp_path: Path) -> None:
    python = rl_python()
    assert python is not None
    probe = "import verl.trainer.ppo.reward, verl.experimental.reward_loop.reward_manager.naive"
    if subprocess.run([python, "-c", probe], capture_output=True, timeout=300).returncode != 0:
        pytest.skip(f"verl's reward manager does not import in {python}")
    result, sent = scored(rl_fake, tmp_path, ["api", "verl_manager", "verl_manager_async"], python)
    for phase in ("verl_manager", "verl_manager_async"):
        assert [r["reward_score"] for r in result[phase]] == [r["score"] for r in result["api"]], phase
        assert [r["extra"]["roboreward_failed"] for r in result[phase]] == [False] * 4
        assert sent[phase] == sent["api"], phase
    assert sum(sent["api"].values()) == 4
