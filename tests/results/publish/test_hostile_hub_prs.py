"""``roboreward publish --open-pr`` against a hub that accepts and never answers, and a bad time limit (issue 36).

Every pull-request request has the limit of every hub request (``ROBOREWARD_HUB_TIMEOUT``); huggingface_hub retries
a request that timed out 5 times (1, 2, 4, 8, 8 s apart), so a silent hub fails the repo after about 23 s plus six
limits.
"""

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from helm_roboreward.results.publish.eval_results import EVAL_RESULTS_FILE
from helm_roboreward.results.publish.hub_prs import PublishError, open_pull_request
from tests.helpers.fakes.silent import SilentServer, refused_url
from tests.helpers.harness import cli, helm_environment
from tests.helpers.suite import SUITE, SuiteCopy

REPO = "lab/constant-3-weights"


@pytest.mark.slow  # huggingface_hub's retries wait 23 s whatever the limit
def test_a_silent_hub_fails_the_repo_within_the_limit_and_exits_1(copy_suite: Callable[..., SuiteCopy],
                                                                   silent_hub: SilentServer, tmp_path: Path) -> None:
    copy = copy_suite(summarized=False, media="none")
    env = {**helm_environment(), "HF_ENDPOINT": silent_hub.url, "HF_TOKEN": "hf_faketoken1234567890",
           "HF_HUB_OFFLINE": "0", "ROBOREWARD_HUB_TIMEOUT": "1"}
    # Before: no limit on the pull-request calls; still waiting after 200 s (here: killed at 55 s, a failure).
    done = subprocess.run([cli("roboreward"), "publish", "--suite", SUITE, "--output-path", str(copy.output), "--out",
                           str(tmp_path / "out"), "--source-url", "https://huggingface.co/datasets/lab/traces",
                           "--allow-not-comparable", "--open-pr", "--hub-repo", f"baseline/constant-3={REPO}"],
                          cwd=copy.workdir, env=env, capture_output=True, text=True, timeout=55)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "hf_faketoken" not in done.stdout + done.stderr
    assert (f"    pull request on {REPO} failed: no answer from {silent_hub.url} within 1 s (ROBOREWARD_HUB_TIMEOUT, "
            "per request, after huggingface_hub's retries): check the connection and HF_ENDPOINT, then rerun with "
            "--open-pr") in done.stdout
    assert silent_hub.accepted
    assert (tmp_path / "out" / "lab__constant-3-weights" / EVAL_RESULTS_FILE).is_file()  # the results are kept


def test_a_bad_time_limit_is_named_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROBOREWARD_HUB_TIMEOUT", "soon")
    # Before: the variable was never read; the pull request went out with no limit.
    with pytest.raises(PublishError, match=r"^ROBOREWARD_HUB_TIMEOUT='soon': give a number of seconds > 0 "
                                           r"\(default 60\)$"):
        open_pull_request(REPO, "- {}\n", "x", endpoint=refused_url(), token="hf_faketoken1234567890")

