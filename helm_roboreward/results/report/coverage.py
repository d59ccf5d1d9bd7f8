"""Whether a suite's leaderboard covers the runs the report counts: the two must never disagree silently.

HELM leaves a run whose group the schema does not define out of every table (a local copy's own subset,
summarized with the standard schema), and a run added after the last ``helm-summarize`` is in no table yet.
The leaderboard's mean then skips that subset while the report's macro MAE counts it.

What the leaderboard covers is read from what ``helm-summarize`` wrote into ``runs/<suite>/``:

- ``schema.json``: the schema it used; its groups with ``subgroups`` are the leaderboards (the parent
  "RoboReward" group, the sample's), whose mean column averages those subgroups' columns;
- ``groups/<parent>.json``: each leaderboard's tables; every cell of the MAE table names the runs it was
  computed from (``run_spec_names``), so a run that feeds a leaderboard mean appears there by name.
  ``subset=all`` runs feed their own page (``groups/roboreward_all.json``), whose macro MAE covers every
  subset they hold.

No ``groups/`` folder means the suite was never summarized: there is no leaderboard to disagree with. A run the
leaderboard names whose folder is gone (deleted or moved since the last ``helm-summarize``) still counts in the
leaderboard's means and not in the report's: the report stops and names it. A model's subset where every request
failed under ``failed=skip`` has no error on either side (the leaderboard's cell is empty and names no run): it
is not checked, and the report's row says so.
"""

import json
import os
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from helm_roboreward.helm_frontend.run_rows import ReportError, SuiteRows, all_failed_subsets

LEADERBOARD_TABLE = "accuracy"
"""The metric group whose table carries the mean column (``aggregation_strategies: [mean]`` in the schema)."""

ALL_SUBSETS_GROUP = "roboreward_all"
"""The group of ``subset=all`` runs (``helm_roboreward.results.schema.ALL_SUBSETS_GROUP``)."""

SUBSET_GROUP_PREFIX = "roboreward_"
MAX_LISTED = 5


@dataclass
class Leaderboard:
    """What a suite's last ``helm-summarize`` put on its leaderboards."""

    table_of_run: dict[str, str] = field(default_factory=dict)
    """Run name -> the leaderboard group whose mean it feeds."""

    grouped_subsets: set[str] = field(default_factory=set)
    """Subset groups the summarized schema lists under a leaderboard (``roboreward_<subset>``)."""


def _read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as error:
        raise ReportError(f"{path} is unreadable ({error}); run helm-summarize again") from None


def _run_names(tables: Any, only: str | None) -> set[str]:
    names: set[str] = set()
    for table in tables if isinstance(tables, list) else []:
        if not isinstance(table, dict) or (only is not None and table.get("name") != only):
            continue
        for row in table.get("rows") or []:
            for cell in row if isinstance(row, list) else []:
                if isinstance(cell, dict):
                    names.update(str(name) for name in cell.get("run_spec_names") or [])
    return names


def read_leaderboard(suite_dir: str) -> Leaderboard | None:
    """The suite's leaderboards as its last ``helm-summarize`` wrote them, or None if it was never summarized.

    Raises:
        ReportError: ``schema.json`` or a leaderboard file exists but cannot be read.
    """
    groups_dir = os.path.join(suite_dir, "groups")
    schema_path = os.path.join(suite_dir, "schema.json")
    if not os.path.isdir(groups_dir) or not os.path.isfile(schema_path):
        return None
    schema = _read_json(schema_path)
    run_groups = schema.get("run_groups", []) if isinstance(schema, dict) else []
    leaderboard = Leaderboard()
    for group in run_groups:
        subgroups = group.get("subgroups") if isinstance(group, dict) else None
        if not subgroups:
            continue
        leaderboard.grouped_subsets.update(str(name) for name in subgroups)
        path = os.path.join(groups_dir, f"{group['name']}.json")
        if os.path.isfile(path):
            for run in _run_names(_read_json(path), LEADERBOARD_TABLE):
                leaderboard.table_of_run.setdefault(run, str(group["name"]))
    all_path = os.path.join(groups_dir, f"{ALL_SUBSETS_GROUP}.json")
    if os.path.isfile(all_path):
        for run in _run_names(_read_json(all_path), None):
            leaderboard.table_of_run.setdefault(run, ALL_SUBSETS_GROUP)
    return leaderboard


def _listing(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_LISTED])
    return shown + (f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else "")


def _check_counted_runs_readable(suite: SuiteRows, suite_dir: str, leaderboard: Leaderboard) -> None:
    """Stop when a run the leaderboard counts could not be read here (a damaged file), as for a deleted folder."""
    damaged = sorted(run for run in suite.skipped if run in leaderboard.table_of_run)
    if not damaged:
        return
    listed = _listing([f"{os.path.join(suite_dir, run)}: {suite.skipped[run]}" for run in damaged])
    raise ReportError(
        f"suite {suite.suite!r}: the leaderboard ({os.path.join(suite_dir, 'groups')}) counts run(s) this report "
        f"cannot read, so their means would differ: {listed}. Fix: rerun helm-run for each such run entry into this "
        "suite (it rewrites the run's files), or move the run folder out of the suite folder and helm-summarize "
        "again (the leaderboard then leaves it out too). Nothing was written.")


def check_leaderboard_coverage(suite: SuiteRows, suite_dir: str) -> list[str]:
    """Stop when the leaderboard leaves out a subset the report would count; otherwise notes for the report.

    Args:
        suite: The rows the report is computed from (per model, the run used for each subset).
        suite_dir: ``<output-path>/runs/<suite>``.

    Returns:
        Notes: the suite was never summarized, or a model's subsets sit on different leaderboards (each
        leaderboard mean covers only its own, the report's macro MAE all of them).

    Raises:
        ReportError: Some subset's run feeds no leaderboard mean, or the leaderboard counts a run the report could
            not read (:attr:`SuiteRows.skipped`); the message names the runs (and files) and the fix.
    """
    leaderboard = read_leaderboard(suite_dir)
    if leaderboard is None:
        return [f"suite {suite.suite!r} has not been summarized (no {os.path.join(suite_dir, 'groups')}): there is "
                "no leaderboard to compare with; the means here are over every subset the runs hold"]
    _check_counted_runs_readable(suite, suite_dir, leaderboard)
    unknown: dict[str, set[str]] = defaultdict(set)
    stale: dict[str, set[str]] = defaultdict(set)
    notes: list[str] = []
    for model in suite.models:
        tables: dict[str, list[str]] = defaultdict(list)
        all_failed = all_failed_subsets(model.rows)
        for subset, run in sorted(model.run_of_subset.items()):
            if subset in all_failed:  # every request failed (failed=skip): no value on either side
                continue
            table = leaderboard.table_of_run.get(run)
            if table is not None:
                tables[table].append(subset)
            elif ("subset=all," not in run and SUBSET_GROUP_PREFIX + subset not in leaderboard.grouped_subsets):
                unknown[subset].add(run)
            else:
                stale[subset].add(run)
        if len(tables) > 1:
            parts = "; ".join(f"{table}: {_listing(subsets)}" for table, subsets in sorted(tables.items()))
            notes.append(f"{model.display_name}: its subsets are on {len(tables)} different leaderboards ({parts}); "
                         "each leaderboard's mean covers only its own subsets, the macro MAE here all of them. Put "
                         "them in separate suites to compare like with like")
    gone = sorted(run for run in leaderboard.table_of_run if suite.run_names and run not in suite.run_names)
    if not unknown and not stale and not gone:
        return notes
    problems = []
    if gone:
        problems.append(f"run(s) {_listing(gone)} are on the leaderboard but their folders are gone from {suite_dir} "
                        "(deleted or moved since the last helm-summarize), so the leaderboard's means count them and "
                        "this report cannot. Fix: helm-summarize again (the leaderboard then leaves them out too), "
                        "or put the run folders back")
    if unknown:
        runs = sorted({run for runs in unknown.values() for run in runs})
        problems.append(f"the schema helm-summarize used has no leaderboard group for subset(s) "
                        f"{_listing(sorted(unknown))} (runs {_listing(runs)}), so the leaderboard's mean leaves them "
                        "out while this report would count them. Fix: roboreward files --data <the local copy's "
                        "folder> --force (writes a schema covering them), then helm-summarize again with "
                        "--schema-path static/schema_roboreward.yaml")
    if stale:
        runs = sorted({run for runs in stale.values() for run in runs})
        problems.append(f"subset(s) {_listing(sorted(stale))} come from runs the leaderboard does not hold yet "
                        f"(runs {_listing(runs)}: finished after the last helm-summarize?). Fix: helm-summarize again")
    raise ReportError(f"suite {suite.suite!r}: the leaderboard ({os.path.join(suite_dir, 'groups')}) and this report "
                      "would disagree: " + "; and ".join(problems) + ". Nothing was written.")
