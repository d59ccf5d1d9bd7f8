"""The run manifest ``roboreward_manifest.json``: one file beside a suite's runs that fingerprints the claim.

It holds what a reader needs to redo or audit the suite: the dataset revisions read and their
``test/metadata.jsonl`` SHA-256, the package version and git commit, HELM's and the key dependencies' versions,
every model and deployment with each run's settings, the SHA-256 of its run files and its comparability, the
deployments' client classes and arguments, the runs superseded by later ones, and the SHA-256 of every video a
run read (as its instances record them; a video two runs record with different hashes keeps each run's hash
under ``video_conflicts``). Written to ``<output-path>/runs/<suite>/roboreward_manifest.json``;
fields: docs/publishing.md.
"""

import json
import os
import platform
import subprocess
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from helm_roboreward.protocol.rules import DATASET_ID, PROMPT_VERSION, TEST_SPLIT
from helm_roboreward.protocol.safe_files import write_atomically
from helm_roboreward.results.publish.evidence import ModelFacts, SuiteFacts

MANIFEST_FILE = "roboreward_manifest.json"
MANIFEST_VERSION = 1
PACKAGE = "helm-roboreward"
KEY_DEPENDENCIES = ("crfm-helm", "huggingface_hub", "transformers", "torch", "torchcodec", "av", "numpy",
                    "opencv-python-headless", "pillow", "openai", "anthropic", "google-genai", "pyyaml")
"""Distributions whose versions can change what a run sends or how it scores (absent ones are recorded as null)."""
_GIT_TIMEOUT_S = 10


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _git(folder: str, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", folder, *args], capture_output=True, text=True, timeout=_GIT_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def package_source() -> dict[str, Any]:
    """The package's version, and its git commit when it runs from a checkout (an editable install)."""
    root = str(Path(__file__).resolve().parents[3])  # the checkout holding helm_roboreward/, if it is one
    commit = _git(root, "rev-parse", "HEAD") if os.path.exists(os.path.join(root, ".git")) else None
    status = _git(root, "status", "--porcelain", "--untracked-files=no") if commit else None
    return {"name": PACKAGE, "version": _version(PACKAGE), "git_commit": commit,
            "git_dirty": None if status is None else bool(status)}


def environment() -> dict[str, Any]:
    """Python, the platform and the key dependencies' versions."""
    return {"python": platform.python_version(), "platform": platform.platform(),
            "packages": {name: _version(name) for name in KEY_DEPENDENCIES}}


def _model_entry(model: ModelFacts) -> dict[str, Any]:
    return {
        "key": model.key, "model": model.model, "deployment": model.deployment, "display_name": model.display_name,
        **model.verdict.to_json(),
        "failed_requests": model.failed_requests,
        "macro_mae": model.macro_mae, "subset_mae": model.subset_mae,
        "runs": [{"name": run.name, "subset": run.subset, "data": run.data,
                  "requested_revision": run.requested_revision, "revisions": list(run.revisions),
                  "rows_in_run": run.rows_in_run, "rows_evaluated": run.evaluated, "finished": run.finished,
                  "files_sha256": dict(sorted(run.files_sha256.items())),
                  "non_default_settings": list(run.non_default_settings), **run.spec} for run in model.runs],
    }


def _videos(facts: SuiteFacts) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, dict[str, str]]]]:
    """Revision -> video -> its SHA-256; and, for a video whose runs recorded different hashes, run -> hash."""
    seen: dict[str, dict[str, dict[str, str]]] = {}
    for model in facts.models:
        for run in model.runs:
            revision = run.revisions[0] if len(run.revisions) == 1 else "+".join(run.revisions) or "unrecorded"
            for video, digest in run.videos.items():
                seen.setdefault(revision, {}).setdefault(video, {})[run.name] = digest
    videos: dict[str, dict[str, str]] = {}
    conflicts: dict[str, dict[str, dict[str, str]]] = {}
    for revision, files in sorted(seen.items()):
        for video, by_run in sorted(files.items()):
            if len(set(by_run.values())) == 1:
                videos.setdefault(revision, {})[video] = next(iter(by_run.values()))
            else:
                conflicts.setdefault(revision, {})[video] = dict(sorted(by_run.items()))
    return videos, conflicts


def build_manifest(facts: SuiteFacts, written: datetime | None = None) -> dict[str, Any]:
    """The manifest of a suite as a JSON-ready dict (``written``: when; default now, UTC)."""
    videos, conflicts = _videos(facts)
    return {
        "manifest_version": MANIFEST_VERSION,
        "suite": facts.suite,
        "written": (written or datetime.now(timezone.utc)).isoformat(timespec="seconds"),
        "benchmark": {"dataset_id": DATASET_ID, "split": TEST_SPLIT, "prompt_version": PROMPT_VERSION,
                      "published_metadata_sha256": facts.published_sha256},
        "data": [{"data": read.data, "revision": read.revision, "metadata_sha256": read.metadata_sha256,
                  "metadata_problem": read.metadata_problem or None,
                  "rows": None if read.subset_rows is None else sum(read.subset_rows.values())}
                 for read in facts.reads.values()],
        "package": package_source(),
        "environment": environment(),
        "models": [_model_entry(model) for model in facts.models],
        "deployments": [deployment.to_json() for deployment in facts.deployments],
        "superseded_runs": [{"run": item.run, "by": item.by, "row": item.row, "subsets": list(item.subsets)}
                            for item in facts.superseded],
        "videos": videos,
        "video_conflicts": conflicts,
    }


def manifest_path(output_path: str, suite: str) -> str:
    """Where a suite's manifest lives: beside its runs."""
    return os.path.join(output_path, "runs", suite, MANIFEST_FILE)


def write_manifest(facts: SuiteFacts, path: str | None = None) -> str:
    """Write the suite's manifest atomically (``path``: elsewhere than beside its runs); returns its path."""
    path = path or manifest_path(facts.output_path, facts.suite)
    write_atomically(path, (json.dumps(build_manifest(facts), indent=1, sort_keys=False) + "\n").encode("utf-8"))
    return path
