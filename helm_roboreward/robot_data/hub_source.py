"""A LeRobot dataset on the Hugging Face hub: its ``meta/`` folder first, then only the files an import reads.

``huggingface_hub.snapshot_download`` fetches into its own cache (a second import downloads nothing). The
revision is resolved to a commit by the first download and every later file comes from that commit, so one import
never mixes two versions; the commit is recorded in the copy's provenance. Every request has a time limit
(:mod:`~helm_roboreward.protocol.data_sources`).

The snapshot's files are links into the repository's ``blobs/`` folder; the import follows such links only inside
that repository's cache folder (:func:`~helm_roboreward.robot_data.lerobot_format.link_root`).
"""

import os
from dataclasses import dataclass, field

from huggingface_hub import snapshot_download
from huggingface_hub.utils import (
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from helm_roboreward.protocol.data_sources import describe_error, hub_http_error_types, limit_hub_requests
from helm_roboreward.protocol.rows import DataError

REPO_TYPE = "dataset"
META_PATTERN = "meta/*"


class HubDatasetError(DataError):
    """A hub dataset that cannot be fetched; the message says why and what to do."""


@dataclass
class HubDataset:
    """A hub dataset's local snapshot, pinned to one commit."""

    repo_id: str
    revision: str
    root: str
    commit: str
    endpoint: str | None = None
    cache_dir: str | None = None
    token: str | None = field(default=None, repr=False)

    @property
    def source(self) -> dict[str, str]:
        """The provenance record of the source."""
        return {"kind": "hub", "repo_id": self.repo_id, "revision": self.revision, "resolved_revision": self.commit}

    def ensure(self, paths: list[str]) -> None:
        """Download ``paths`` (dataset-relative) of the pinned commit, if not cached yet."""
        missing = [path for path in paths if not os.path.isfile(os.path.join(self.root, *path.split("/")))]
        if missing:
            _download(self.repo_id, self.commit, missing, self.endpoint, self.token, self.cache_dir)


def fetch_hub_dataset(repo_id: str, revision: str = "main", endpoint: str | None = None,
                      token: str | None = None, cache_dir: str | None = None) -> HubDataset:
    """Download a dataset's ``meta/`` folder and pin its revision to the commit served.

    Raises:
        HubDatasetError: Unknown repository or revision, no access, or the hub cannot be reached.
    """
    endpoint = endpoint or os.environ.get("HF_ENDPOINT") or None
    limit_hub_requests()
    root = _download(repo_id, revision, [META_PATTERN], endpoint, token, cache_dir)
    commit = os.path.basename(os.path.normpath(root))
    if not os.path.isfile(os.path.join(root, "meta", "info.json")):
        raise HubDatasetError(f"--repo-id {repo_id} (revision {revision}, commit {commit}): the dataset has no "
                              "meta/info.json; is it a LeRobot dataset?")
    return HubDataset(repo_id, revision, root, commit, endpoint, cache_dir, token)


def _download(repo_id: str, revision: str, patterns: list[str], endpoint: str | None, token: str | None,
              cache_dir: str | None) -> str:
    where = f"--repo-id {repo_id} (revision {revision})"
    try:
        return str(snapshot_download(repo_id, repo_type=REPO_TYPE, revision=revision, allow_patterns=patterns,
                                     endpoint=endpoint, token=token, cache_dir=cache_dir))
    except RevisionNotFoundError:
        raise HubDatasetError(f"{where}: the revision does not exist; give a branch, tag or commit with "
                              "--revision") from None
    except GatedRepoError:
        raise HubDatasetError(f"{where}: the dataset is gated; request access on its page, then log in "
                              "(`hf auth login`) or set HF_TOKEN") from None
    except RepositoryNotFoundError:
        raise HubDatasetError(f"{where}: no such dataset, or it is private and this request is not authorized "
                              "(log in with `hf auth login` or set HF_TOKEN)") from None
    except LocalEntryNotFoundError as error:
        raise HubDatasetError(f"{where}: the hub cannot be reached and the cache does not hold the files "
                              f"({type(error).__name__}); go online, set HF_ENDPOINT to a mirror, or download the "
                              "dataset elsewhere and import its folder") from None
    except (HfHubHTTPError, OSError) + hub_http_error_types() as error:
        raise HubDatasetError(f"{where}: the download failed ({describe_error(error, token)}); retry, or import a "
                              "local copy of the dataset") from None
