"""The one comparability rule: whether a model's row may stand beside the published leaderboard.

Decided once per model and deployment from what its runs recorded (:mod:`.evidence` gathers it), and shown
wherever its numbers go (report, leaderboard note, exports, the Hub's eval results, the LaTeX table). A row is
comparable when all of these hold, otherwise it is "not comparable" with every reason:

1. the runs read the public split (``data=hf``) at one recorded revision whose ``test/metadata.jsonl`` has the
   published SHA-256 (:data:`PUBLISHED_METADATA_SHA256`; where it comes from: docs/publishing.md);
2. every one of the 23 official subsets ran, each with every row of that metadata evaluated (no ``-m``
   subsampling);
3. only official defaults were used (frame rule, media routing, generation settings, scoring, failed requests);
4. its deployment is the package's definition of that name (client class and arguments: a redefined one may ask
   a server for another checkpoint or other frames), and a published model runs on a deployment the package
   defines for it.

The run files must also agree with one another (``per_instance_stats.json`` with ``stats.json``, one record per
instance); where they do not, the suite reader stops every command before any rule is applied.

Pure: no I/O. The published hash is an argument, so a test can hand the rule the hash of its own copy.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from helm_roboreward.protocol import published as published_split
from helm_roboreward.protocol.data_sources import HUB, SAMPLE
from helm_roboreward.protocol.rules import OFFICIAL_SUBSET_IDS

PUBLISHED_METADATA_SHA256 = published_split.PUBLISHED_METADATA_SHA256  # the one record, shared with `audit`
"""SHA-256 of the public ``test/metadata.jsonl`` (2,831 rows), as an independent harness recorded it for the copy
it downloaded at :data:`PUBLISHED_METADATA_REVISION` (GitHub ``dddais/Robo-dopamine``; docs/publishing.md). Our
machines cannot reach the Hub, so it is not re-derived here: ``hf download teetone/RoboReward test/metadata.jsonl
--repo-type dataset --revision <commit>`` and ``sha256sum`` (or ``roboreward audit``) check it."""

PUBLISHED_METADATA_REVISION = "469b9af76e8539e8d2ac553b081307738fd92ca5"
"""The dataset commit that harness recorded with that hash."""

MAX_LISTED = 5
COMPARABLE_LINE = "comparable with the published leaderboard"


@dataclass(frozen=True)
class DataRead:
    """One dataset revision a model's runs read."""

    data: str
    """The scenario's ``data`` argument: ``hf``, ``sample`` or a local copy's folder."""

    revision: str
    """The revision the instances record: a hub commit, or ``sample-<digest>`` / ``local-<digest>``."""

    metadata_sha256: str | None
    """SHA-256 of that revision's ``test/metadata.jsonl`` (None: not known here)."""

    metadata_problem: str = ""
    """Why the hash is not known (empty when it is)."""

    subset_rows: Mapping[str, int] | None = None
    """Rows per subset in that metadata (None: the file was not read)."""


@dataclass(frozen=True)
class SubsetCoverage:
    """One subset of a model's row: rows evaluated against the rows the data holds."""

    subset: str
    evaluated: int
    expected: int | None
    """Rows of the subset in the metadata the run read, else its recorded ``rows_in_run`` (None: unknown)."""


@dataclass(frozen=True)
class ModelEvidence:
    """What the rule needs to know of one model and deployment (one leaderboard row)."""

    key: str
    """The report's model key (``<model>@<deployment>`` when the suite runs a model on several deployments)."""

    data: tuple[DataRead, ...]
    coverage: tuple[SubsetCoverage, ...]
    non_default_settings: tuple[str, ...] = ()
    """Every setting that is not the official default, as ``name=value (official: ...)``."""

    deployment_problems: tuple[str, ...] = ()
    """How its deployment differs from the package's definition, or why the package defines none for the model."""


@dataclass(frozen=True)
class Comparability:
    """The verdict for one row."""

    comparable: bool
    reasons: tuple[str, ...] = ()

    @property
    def line(self) -> str:
        """One line for a report, a table note or a YAML ``notes`` field."""
        if self.comparable:
            return COMPARABLE_LINE
        return "not comparable with the published leaderboard: " + "; ".join(self.reasons)

    def to_json(self) -> dict[str, object]:
        """The verdict as the manifest records it."""
        return {"comparable": self.comparable, "reasons": list(self.reasons)}


def _listing(names: Sequence[str]) -> str:
    shown = ", ".join(names[:MAX_LISTED])
    return shown + (f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else "")


def _describe(data: str) -> str:
    if data == SAMPLE:
        return "the bundled sample (data=sample)"
    return f"a local copy (data={data})"


def _data_reasons(reads: Sequence[DataRead], published_sha256: str) -> list[str]:
    if not reads:
        return ["its runs record no dataset revision"]
    reasons = []
    off = sorted({_describe(read.data) for read in reads if read.data != HUB})
    if off:
        reasons.append(f"its runs read {' and '.join(off)}, not the public split (data=hf)")
    revisions = sorted({read.revision for read in reads})
    if len(revisions) > 1:
        reasons.append(f"its runs read {len(revisions)} revisions ({_listing(revisions)}), not one")
    for read in reads:
        if read.data != HUB:
            continue
        if read.metadata_sha256 is None:
            reasons.append(f"the SHA-256 of test/metadata.jsonl at revision {read.revision} is unknown "
                           f"({read.metadata_problem or 'not found'})")
        elif read.metadata_sha256 != published_sha256:
            reasons.append(f"test/metadata.jsonl at revision {read.revision} has SHA-256 "
                           f"{read.metadata_sha256[:12]}..., not the published {published_sha256[:12]}...")
    return reasons


def _coverage_reasons(coverage: Sequence[SubsetCoverage]) -> list[str]:
    ran = {item.subset for item in coverage}
    reasons = []
    missing = [subset for subset in OFFICIAL_SUBSET_IDS if subset not in ran]
    if len(missing) == len(OFFICIAL_SUBSET_IDS):
        reasons.append(f"none of the {len(OFFICIAL_SUBSET_IDS)} official subsets ran")
    elif missing:
        reasons.append(f"{len(OFFICIAL_SUBSET_IDS) - len(missing)} of the {len(OFFICIAL_SUBSET_IDS)} official "
                       f"subsets ran (missing: {_listing(missing)})")
    others = sorted(ran - set(OFFICIAL_SUBSET_IDS))
    if others:
        reasons.append(f"it includes subsets outside the benchmark ({_listing(others)})")
    partial = [f"{item.subset} {item.evaluated} of {item.expected}" for item in coverage
               if item.expected is not None and item.evaluated != item.expected]
    if partial:
        reasons.append(f"not every row was evaluated (rows evaluated of rows in the data: {_listing(partial)}; "
                       "helm-run's -m subsamples)")
    return reasons


def judge(evidence: ModelEvidence, published_sha256: str = PUBLISHED_METADATA_SHA256) -> Comparability:
    """The comparability of one model and deployment.

    Args:
        evidence: What its runs recorded.
        published_sha256: The SHA-256 the public ``test/metadata.jsonl`` must have.

    Returns:
        Comparable, or not comparable with every reason (data, then coverage, then settings, then deployment).
    """
    reasons = _data_reasons(evidence.data, published_sha256) + _coverage_reasons(evidence.coverage)
    if evidence.non_default_settings:
        reasons.append(f"non-default settings: {', '.join(evidence.non_default_settings)}")
    reasons += evidence.deployment_problems
    return Comparability(not reasons, tuple(reasons))
