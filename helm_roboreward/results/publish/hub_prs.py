"""Which Hub model repo holds a deployment's weights, and one pull request per repo with its eval results.

A deployment's repo is the Hub id its client loads or serves (``checkpoint`` of the in-process transformers
client, ``served_model_name`` of the vLLM client) in the package's or ``--local-path``'s
``model_deployments.yaml``; ``--hub-repo MODEL=REPO`` names it for any other model. API models (OpenAI, Gemini,
Claude) and the baselines have none: they are listed, never pushed. Pull requests go through huggingface_hub's
``create_commit(create_pr=True)``, the Hub's own way to contribute results ("Community Contributions"); every
request has the limit of every hub request (``ROBOREWARD_HUB_TIMEOUT``), and huggingface_hub retries one that timed
out 5 times.
"""

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

import yaml
from huggingface_hub import CommitOperationAdd, HfApi
from huggingface_hub.utils import HfHubHTTPError, RepositoryNotFoundError

from helm_roboreward.config import MODEL_DEPLOYMENTS_FILE, config_dir
from helm_roboreward.protocol.data_sources import (
    HUB_TIMEOUT_VARIABLE,
    hub_timeout_error_types,
    limit_hub_requests,
    network_error_types,
)
from helm_roboreward.results.publish.eval_results import EVAL_RESULTS_FILE

_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+\Z")
_REPO_ARGS = ("checkpoint", "served_model_name")
PR_TITLE = "Add RoboRewardBench evaluation results"


class PublishError(Exception):
    """A bad option or a failed Hub request; the message says what to do."""


def _deployments(path: str) -> dict[str, dict[str, object]]:
    try:
        with open(path, encoding="utf-8") as handle:
            content = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError):
        return {}
    entries = content.get("model_deployments") if isinstance(content, dict) else None
    return {str(entry["name"]): entry for entry in entries or [] if isinstance(entry, dict) and entry.get("name")}


def deployment_repos(local_path: str) -> dict[str, str]:
    """Deployment name -> the Hub repo its client loads, from the package's and the local path's deployments."""
    entries = {**_deployments(os.path.join(config_dir(), MODEL_DEPLOYMENTS_FILE)),
               **_deployments(os.path.join(local_path, MODEL_DEPLOYMENTS_FILE))}
    repos = {}
    for name, entry in entries.items():
        client = entry.get("client_spec")
        args = client.get("args") if isinstance(client, dict) else None
        for key in _REPO_ARGS:
            value = args.get(key) if isinstance(args, dict) else None
            # A local checkpoint folder is no Hub repo, even when its path looks like org/name.
            if isinstance(value, str) and _REPO_ID.match(value) and not os.path.exists(value):
                repos[name] = value
                break
    return repos


def parse_hub_repos(pairs: list[str]) -> dict[str, str]:
    """``--hub-repo MODEL=REPO`` options -> ``{model: repo}``; a malformed one is a :class:`PublishError`."""
    repos = {}
    for pair in pairs:
        model, _, repo = pair.partition("=")
        if not model or not _REPO_ID.match(repo):
            raise PublishError(f"--hub-repo {pair!r}: give MODEL=ORG/NAME, e.g. "
                               "--hub-repo teetone/roboreward-8b=teetone/RoboReward-8B")
        repos[model] = repo
    return repos


@dataclass(frozen=True)
class PullRequest:
    """What opening one pull request gave."""

    repo: str
    url: str | None
    error: str | None = None


def open_pull_request(repo: str, content: str, description: str, endpoint: str | None = None,
                      token: str | None = None) -> PullRequest:
    """Open a pull request adding :data:`EVAL_RESULTS_FILE` to model repo ``repo``; a failure is reported, not raised.

    Args:
        repo: The model repo id.
        content: The YAML file's text.
        description: The pull request's description (the verdict and the notes).
        endpoint: The Hub's URL (None: huggingface_hub's, ``HF_ENDPOINT``).
        token: A Hub token (None: huggingface_hub's own, ``HF_TOKEN`` or the login); never printed.

    Raises:
        PublishError: ``ROBOREWARD_HUB_TIMEOUT`` is not a number of seconds > 0.
    """
    try:
        seconds = limit_hub_requests()  # a silent hub must not hold publish forever
    except ValueError as error:
        raise PublishError(str(error)) from None
    api = HfApi(endpoint=endpoint, token=token)
    try:
        info = api.create_commit(repo, [CommitOperationAdd(EVAL_RESULTS_FILE, content.encode("utf-8"))],
                                 commit_message=PR_TITLE, commit_description=description, repo_type="model",
                                 create_pr=True)
    except RepositoryNotFoundError:
        return PullRequest(repo, None, f"no model repo {repo} on {api.endpoint} (or no access to it): check "
                                       "--hub-repo and your token (HF_TOKEN)")
    except hub_timeout_error_types():
        return PullRequest(repo, None, f"pull request on {repo} failed: no answer from {api.endpoint} within "
                                       f"{seconds:g} s ({HUB_TIMEOUT_VARIABLE}, per request, after huggingface_hub's "
                                       "retries): check the connection and HF_ENDPOINT, then rerun with --open-pr")
    except (HfHubHTTPError, OSError) + network_error_types() as error:
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        return PullRequest(repo, None, f"the Hub refused the pull request on {repo}: {first_line}")
    return PullRequest(repo, info.pr_url)


def repo_of(model: str, deployment: str, named: Mapping[str, str], by_deployment: Mapping[str, str]) -> str | None:
    """The Hub repo of a row: ``--hub-repo`` for its model, else its deployment's (None: an API model)."""
    return named.get(model) or by_deployment.get(deployment)
