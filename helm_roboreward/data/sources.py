"""Where the benchmark data comes from: the Hugging Face hub, a local copy, or the bundled sample.

The run-entry argument ``data`` picks one:

- ``hf`` (default): ``teetone/RoboReward`` on the hub, only ``test/metadata.jsonl`` and the
  videos of the requested subsets, at ``revision``; the resolved commit is recorded.
- ``sample``: the small sample shipped inside this package (offline demo and tests).
- any other value: a folder holding a local copy in the same layout
  (``<dir>/test/metadata.jsonl`` and ``<dir>/test/<subset>/*.mp4``).
"""

import os
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from helm_roboreward.core.files import file_digest
from helm_roboreward.data.rows import DataError, metadata_path
from helm_roboreward.protocol import DATASET_ID, DATASET_REVISION, TEST_SPLIT

HUB = "hf"
SAMPLE = "sample"
SAMPLE_REVISION_PREFIX = "sample-"
LOCAL_REVISION_PREFIX = "local-"
"""The revision a run of the sample or of a local copy records: the prefix, then a digest of its metadata."""


@dataclass(frozen=True)
class DataSource:
    """A resolved data source: a local folder in the dataset layout and its provenance."""

    data: str
    """The ``data`` argument as given."""

    root: str
    """Absolute folder holding ``test/metadata.jsonl``."""

    revision: str
    """What identifies the data: the resolved hub commit, or a hash of the local metadata file."""

    trusted_root: str
    """Folder that video files (after following links) must stay in."""

    @property
    def description(self) -> str:
        """A short label for messages."""
        return f"data={self.data}"


def sample_root() -> str:
    """The folder of the sample bundled with the package."""
    return str(resources.files("helm_roboreward") / "sample")


def resolve_data_source(
    data: str, revision: str = DATASET_REVISION, subsets: Sequence[str] | None = None
) -> DataSource:
    """Turn the ``data`` argument into a local folder, downloading from the hub when asked.

    Args:
        data: ``hf``, ``sample`` or a folder path.
        revision: Hub revision (only for ``hf``).
        subsets: Subsets to download (only for ``hf``); None downloads the whole test split.

    Raises:
        DataError: The value names no folder, the folder lacks the layout, or the download failed.
    """
    if data == HUB:
        return _hub_source(revision, subsets)
    if data == SAMPLE:
        root = sample_root()
        return DataSource(data, root, f"{SAMPLE_REVISION_PREFIX}{_metadata_digest(root)}",
                          os.path.join(root, TEST_SPLIT))
    root = os.path.abspath(os.path.expanduser(data))
    if not os.path.isdir(root):
        raise DataError(
            f"data={data!r}: not 'hf', 'sample' or an existing folder. Give the folder of a local copy "
            f"holding {TEST_SPLIT}/metadata.jsonl and {TEST_SPLIT}/<subset>/*.mp4."
        )
    if not os.path.isfile(metadata_path(root)):
        raise DataError(
            f"data={data!r}: {metadata_path(root)} not found. A local copy must use the dataset layout: "
            f"{TEST_SPLIT}/metadata.jsonl and {TEST_SPLIT}/<subset>/*.mp4."
        )
    return DataSource(data, root, f"{LOCAL_REVISION_PREFIX}{_metadata_digest(root)}", os.path.join(root, TEST_SPLIT))


def _hub_source(revision: str, subsets: Sequence[str] | None) -> DataSource:
    from helm_roboreward.data.hub import HubDownloadError, download_test_split

    try:
        split = download_test_split(subsets, repo_id=DATASET_ID, revision=revision)
    except HubDownloadError as error:
        raise DataError(str(error)) from None
    # Snapshot files link to blobs two folders up (<repo cache>/snapshots/<sha>/ -> <repo cache>/blobs/).
    repo_cache = os.path.dirname(os.path.dirname(os.path.realpath(split.root)))
    return DataSource(HUB, split.root, split.commit, repo_cache)


def _metadata_digest(root: str) -> str:
    return file_digest(metadata_path(root))[:16]
