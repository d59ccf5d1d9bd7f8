"""The published leaderboard beside the suite's models: reference rows, published and not rerun.

The 25 published macro MAEs and RoboReward 8B's published per-subset MAEs (:mod:`helm_roboreward.protocol.published`)
are on the public test split. They are shown only when every run the report uses read it: the scenario's ``data``
argument is ``hf`` (the default) and no instance records a sample's or a local copy's revision
(``sample-<digest>`` / ``local-<digest>``, :mod:`~helm_roboreward.protocol.data_sources`). On the bundled sample or a
local copy they are left out, with one line saying why. A model is placed among them ("would rank k") only when its mean
covers all 23 official subsets, as the published means do; ``roboreward report --no-published`` leaves them out.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from helm_roboreward.helm_frontend.run_rows import RunData
from helm_roboreward.protocol.data_sources import HUB, LOCAL_REVISION_PREFIX, SAMPLE, SAMPLE_REVISION_PREFIX
from helm_roboreward.protocol.published import PUBLISHED_LEADERBOARD, PUBLISHED_SUBSET_MAE, published_entry
from helm_roboreward.protocol.rules import OFFICIAL_SUBSET_IDS

PUBLISHED_MARK = "published, not rerun"
COPY_REVISIONS = (SAMPLE_REVISION_PREFIX, LOCAL_REVISION_PREFIX)
"""The revision a sample or local copy records (``data/sources.py``); a hub run records a commit."""


@dataclass(frozen=True)
class ModelScore:
    """What places one of the suite's models among the published rows."""

    model: str
    """The report's model key (``<model>@<deployment>`` when a model ran on several deployments)."""

    display_name: str
    macro_mae: float | None
    official_subsets: int
    """Official subsets its mean covers."""


@dataclass(frozen=True)
class Placement:
    """One of the suite's models among the published rows."""

    score: ModelScore
    rank: int | None
    """Where its macro MAE would rank among the 25 published (1 + those strictly better); None when its mean does
    not cover all 23 subsets (not comparable)."""

    published_mae: float | None
    """The published macro MAE of the same model, when the leaderboard ranks it."""


@dataclass(frozen=True)
class PublishedReference:
    """What the report shows of the published leaderboard."""

    left_out: str | None
    """Why the published rows are not shown (None: shown)."""

    placements: list[Placement] = field(default_factory=list)
    subset_mae: dict[str, dict[str, float]] = field(default_factory=dict)
    """Published model (display name) -> subset -> its published MAE, for the suite's subsets."""


def _describe(data: str) -> str:
    if data == SAMPLE:
        return "the bundled sample (data=sample)"
    return "the public split (data=hf)" if data == HUB else f"a local copy (data={data})"


def split_problem(sources: Mapping[str, RunData], runs: Iterable[str]) -> str | None:
    """Why the given runs are not all on the public test split, or None when they are.

    Args:
        sources: Run name -> where its rows came from (:attr:`SuiteRows.sources`).
        runs: The runs the report uses.
    """
    used = {run: sources[run] for run in runs if run in sources}
    if not used:
        return "no run records where its rows came from"
    off = sorted({_describe(source.data) for source in used.values() if source.data != HUB})
    if off:
        return f"the runs read {' and '.join(off)}, not the public test split the published numbers are on"
    copies = sorted(run for run, source in used.items() if any(revision.startswith(COPY_REVISIONS)
                                                               for revision in source.revisions))
    if copies:
        return (f"run {copies[0]} says data=hf but its instances record a copy's revision "
                f"({used[copies[0]].revisions[0]}), not the hub's")
    return None


def would_rank(macro_mae: float) -> int:
    """Where a macro MAE would rank among the published rows (ties share the better rank)."""
    return 1 + sum(entry.macro_mae < macro_mae for entry in PUBLISHED_LEADERBOARD)


def published_reference(scores: Sequence[ModelScore], sources: Mapping[str, RunData], runs: Iterable[str],
                        subsets: Sequence[str]) -> PublishedReference:
    """The published rows to show beside ``scores`` (or why not), the suite's ``subsets`` of the per-subset rows."""
    problem = split_problem(sources, runs)
    if problem is not None:
        return PublishedReference(problem)
    placements = []
    for score in scores:
        comparable = score.macro_mae is not None and score.official_subsets == len(OFFICIAL_SUBSET_IDS)
        entry = published_entry(score.model.split("@", 1)[0])
        placements.append(Placement(score, would_rank(score.macro_mae) if comparable and score.macro_mae is not None
                                    else None, entry.macro_mae if entry else None))
    subset_mae = {}
    for model, maes in PUBLISHED_SUBSET_MAE.items():
        entry = published_entry(model)
        subset_mae[entry.display_name if entry else model] = {subset: maes[subset] for subset in subsets
                                                              if subset in maes}
    return PublishedReference(None, placements, subset_mae)
