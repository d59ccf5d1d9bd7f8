"""Fixtures of the RL adapter tests: one loopback fake, and one run of the adapters the way their frameworks call
them (tests/helpers/rl_scoring.py), shared by the TRL and verl tests: building the model costs a HELM import."""

from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers.fakes import FakeModelServer
from tests.helpers.rl_scoring import score_of_body, scored


@pytest.fixture(scope="session")
def rl_fake() -> Iterator[FakeModelServer]:
    with FakeModelServer() as server:
        server.behaviour = score_of_body
        yield server


@pytest.fixture(scope="session")
def documented(rl_fake: FakeModelServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """API, TRL (score and progress), verl (sync and async) and the mistakes, in one process."""
    result, sent = scored(rl_fake, tmp_path_factory.mktemp("rl"),
                          ["api", "trl", "trl_progress", "verl", "verl_async", "errors"])
    result["bodies"] = sent
    return result
