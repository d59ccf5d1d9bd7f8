"""Where the data comes from: the hub (``data=hf``), the bundled sample or a local copy (docs/data.md)."""

import os
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from helm_roboreward.core.files import file_digest
from helm_roboreward.data.rows import DataError, metadata_path
from helm_roboreward.protocol import DATASET_REVISION, TEST_SPLIT

HUB = "hf"
SAMPLE = "sample"
# The revision of the sample or of a local copy: the prefix, then a digest of its metadata.
SAMPLE_REVISION_PREFIX = "sample-"
LOCAL_REVISION_PREFIX = "local-"


@dataclass(frozen=True)
class DataSource:
    """A resolved data source: a local folder in the dataset layout and its provenance."""

    data: str  # the argument as given
    root: str  # absolute folder holding test/metadata.jsonl
    revision: str  # the resolved hub commit, or a digest of the local metadata
    trusted_root: str  # folder that videos (links followed) must stay in

    @property
    def description(self) -> str:
        """A short label for messages."""
        return f"data={self.data}"


def sample_root() -> str:
    """The folder of the sample bundled with the package."""
    return str(resources.files("helm_roboreward") / "sample")


def resolve_data_source(data: str, revision: str = DATASET_REVISION,
                        subsets: Sequence[str] | None = None) -> DataSource:
    """``data`` (``hf``, ``sample`` or a folder) as a local folder; ``hf`` downloads ``subsets`` (None: all)."""
    if data == HUB:
        from helm_roboreward.data.hub import hub_source

        return hub_source(revision, subsets)
    if data == SAMPLE:
        root, prefix = sample_root(), SAMPLE_REVISION_PREFIX
    else:
        root, prefix = os.path.abspath(os.path.expanduser(data)), LOCAL_REVISION_PREFIX
        if not os.path.isfile(metadata_path(root)):
            from helm_roboreward.data.problems import not_a_local_copy

            raise DataError(not_a_local_copy(data, root))
    return DataSource(data, root, prefix + file_digest(metadata_path(root))[:16], os.path.join(root, TEST_SPLIT))
