"""Fixtures of the reward tests: one loopback fake, one silent backend and one ``--local-path`` per session
(tests/helpers/reward.py says why one). A test changes what the fake answers through ``fake.behaviour`` (reset
after each test).
"""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import reward
from tests.helpers.fakes import FakeModelServer
from tests.helpers.fakes.exchange import constant
from tests.helpers.fakes.silent import SilentServer


@pytest.fixture(scope="session")
def reward_fake() -> Iterator[FakeModelServer]:
    with FakeModelServer() as fake:
        yield fake


@pytest.fixture
def fake(reward_fake: FakeModelServer) -> Iterator[FakeModelServer]:
    """The session's fake, cleared, answering ``ANSWER: 3`` unless the test says otherwise."""
    reward_fake.clear()
    reward_fake.behaviour = constant()
    yield reward_fake
    reward_fake.behaviour = constant()


@pytest.fixture(scope="session")
def silent_backend() -> Iterator[SilentServer]:
    backend = SilentServer()
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def reward_local_path(tmp_path_factory: pytest.TempPathFactory, reward_fake: FakeModelServer,
                      silent_backend: SilentServer, tiny_qwen3vl: Path) -> Path:
    return reward.reward_local_path(tmp_path_factory.mktemp("reward") / "local", reward_fake, silent_backend,
                                    tiny_qwen3vl)
