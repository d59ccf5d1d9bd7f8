"""Importing the package, the reward API and the CLI's ``serve`` arguments loads neither HELM nor the web stack."""

import json
import subprocess
import sys

import pytest

PROBE = """
import importlib, json, sys
module = importlib.import_module(sys.argv[1])
for name in sys.argv[2:]:
    getattr(module, name)
heavy = ("helm", "starlette", "uvicorn", "fastapi", "torch")  # PyAV (0.05 s) is the media code's own
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules if name.split(".")[0] in heavy})))
"""


@pytest.mark.parametrize(("module", "names"), [
    ("helm_roboreward", ["RewardModel", "Reward"]),
    ("helm_roboreward.reward", ["RewardModel", "Reward", "RewardItem", "Frames", "RewardInputError"]),
    ("helm_roboreward.reward.serve_command", []),
])
def test_import_is_light(module: str, names: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", PROBE, module, *names], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_serve_without_the_extra_names_it() -> None:
    """The message a user without starlette/uvicorn gets (simulated by hiding them)."""
    code = ("import sys; sys.modules['starlette'] = None; "
            "from helm_roboreward.cli import main; sys.exit(main(['serve', '--model', 'x/y']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "pip install '.[serve]'" in done.stderr
