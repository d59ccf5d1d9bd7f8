"""A HELM Summarizer that makes the RoboReward leaderboard readable: direction, ranking, breakdowns.

Use it with ``helm-summarize --summarizer-class-name helm_roboreward.helm_frontend.summarizer.RoboRewardSummarizer``.
Over HELM 0.5.16's summarizer it:

- gives the "Mean" column of the leaderboard its direction (lower is better), bolds the best
  value and ranks the rows by it (HELM copies the direction from the model-name column, so the
  mean has none);
- adds, to each leaderboard parent group, tables that the schema alone cannot express because
  they aggregate across subset runs: MAE by robot, MAE by augmentation kind, failure modes,
  cost per instance, reward-model metrics and the peer metrics (micro and macro MAE, exact and
  within-1 accuracy, mean prediction per gold score);
- lists a leaderboard group that has runs first in ``schema.json``, so the landing page
  (``helm-server --project robo-reward-bench``) shows the demo suite as well as a full suite;
- still writes the leaderboard when media files a run points to are gone (a copy of ``runs/`` alone, a
  deleted cached frame): HELM rebuilds every request's ``MediaObject`` for the predictions pages, which
  asserts that its local file exists, and one missing frame would stop helm-summarize before any table
  is written. Such a run's predictions page is skipped, with one log line naming a missing file and the fix;
- says what it does as soon as HELM hands it the suite (HELM's own first line waits for its imports, and it then
  reads every run in silence), logs the predictions pages' progress, and leaves the objects alive at its start
  and end to no further garbage collection, so that the process ends soon after HELM's "Done."
  (:meth:`RoboRewardSummarizer.run_pipeline`).

Aggregation in the added tables: the MAE tables are macro means over the subsets that have the
group (the official overall rule applied within a robot or kind); rates are macro means over
subsets; cost columns are per-instance means pooled over all instances; the peer table has both (micro:
pooled over all rows).
"""

import dataclasses
import gc
import hashlib
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from helm.benchmark.adaptation.adapter_spec import AdapterSpec
from helm.benchmark.metrics.metric_name import MetricName
from helm.benchmark.metrics.statistic import Stat
from helm.benchmark.presentation.schema import MetricNameMatcher, RunGroup
from helm.benchmark.presentation.summarize import (
    Run,
    Summarizer,
    get_coarse_adapter_spec,
    get_model_metadata_for_adapter_spec,
    get_scenario_name,
    get_unique_stat_by_matcher,
)
from helm.benchmark.presentation.table import Cell, HeaderCell, Table
from helm.common.hierarchical_logger import hlog, hwarn

from helm_roboreward.helm_frontend.predictions_pages import (  # noqa: F401 (missing_media*: this module's names too)
    missing_media,
    missing_media_message,
    model_mismatch_warning,
    run_pages,
)
from helm_roboreward.helm_frontend.routing import run_name_data, run_name_revision
from helm_roboreward.protocol.rows import KINDS
from helm_roboreward.protocol.rules import (
    FRAME_FIELDS,
    LEADERBOARD_GROUPS,
    RUBRIC_SCORES,
    SUBSET_PARENT_GROUPS,
    FrameOptions,
    subset_info,
)
from helm_roboreward.protocol.stat_catalogue import (
    COST,
    EXPECTED,
    FAILURE_MODES,
    PREDICTED_SCORE_GOLD_STATS,
    REWARD_MODEL,
    StatDefinition,
    in_group,
    kind_mae,
    may_be_absent,
    predicted_score_gold_rows,
    stat,
)

MEAN_HEADER = "Mean score"
MEAN_DISPLAY = "Mean MAE (macro)"

FAILURE_COLUMNS: tuple[StatDefinition, ...] = in_group(FAILURE_MODES)
"""The failure-mode table's columns (the stats catalogue's titles, descriptions and directions)."""
COST_COLUMNS: tuple[StatDefinition, ...] = in_group(COST)
"""The cost table's columns."""
REWARD_COLUMNS: tuple[StatDefinition, ...] = in_group(REWARD_MODEL)
"""The reward-model table's columns: statistics (macro over subsets) and pair counts (summed)."""
_REWARD_AGGREGATION = {False: " Macro over subsets.", True: " Summed over subsets."}
EXPECTED_COLUMNS: tuple[StatDefinition, ...] = in_group(EXPECTED)
"""The expected-score table's columns (empty cells for runs without score=expected)."""
PEER_RATES: tuple[StatDefinition, ...] = tuple(stat(name) for name in ("abs_error", "exact_match", "within_one"))
"""The peer table's per-row stats, each macro over subsets and micro over rows (protocol/reward_statistics.py)."""
PEER_PREDICTIONS: tuple[StatDefinition, ...] = tuple(stat(name) for name in PREDICTED_SCORE_GOLD_STATS)
"""The peer table's mean prediction per gold score, pooled over the runs' parsed answers."""


PROGRESS_SECONDS = 10.0
"""The predictions-page phase logs its progress at most this often, and once at its end."""
HEAVY_IMPORTS = ("torch", "spacy", "nltk", "sklearn")
"""Packages HELM's summarize imports before it logs anything (crfm-helm 0.5.16: 5 s on a quiet machine)."""

MAX_FOLDER_IN_NAME = 24
"""Characters of a local copy's folder name kept in table names (the hash of its path keeps them apart)."""
MAX_FILE_NAME_BYTES = 255
"""HELM writes ``groups/json/<group>_<table>.json``; most file systems take 255 bytes per name."""


def table_name(group: str, subgroup: str, args: Mapping[str, Any]) -> str:
    """A RoboReward scenario table's name, as readable as a run name: ``bridge_video=frames,fps=0.5``.

    HELM names a table ``<subgroup>_<every scenario argument>`` and writes ``groups/json/<group>_<table>.json``;
    spelled HELM's way (``frames_per_second=0.5,include_last_frame=True``, a full local path) the file name can
    pass the file system's 255 bytes. Here the settings are spelled as in run names (a local copy as
    ``<folder>-<hash of its path>``, its folder name cut to :data:`MAX_FOLDER_IN_NAME`), after the subset, which a
    subset's own page leaves out (all its tables share it). Every realistic name fits (the longest subset id, a
    local copy or a commit, every frame option); only a pathological value is cut and given a digest.
    """
    parts = []
    if "data" in args:
        spelled = run_name_data(str(args["data"]))
        folder, _, digest = spelled.rpartition("-")
        parts.append(f"data={folder[:MAX_FOLDER_IN_NAME]}-{digest}" if folder else f"data={spelled}")
    if "revision" in args:
        parts.append(f"revision={run_name_revision(str(args['revision']))}")
    parts.append(f"video={args.get('video', '')}")
    defaults = FrameOptions()
    options = FrameOptions(**{field: args.get(field, getattr(defaults, field)) for field in FRAME_FIELDS})
    parts += options.run_name_options()
    settings = ",".join(parts)
    name = settings if group == subgroup else f"{subgroup.removeprefix('roboreward_')}_{settings}"
    budget = MAX_FILE_NAME_BYTES - len(f"{group}_.json".encode())
    if len(name.encode("utf-8")) <= budget:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:12]
    return name.encode("utf-8")[:budget - 13].decode("utf-8", "ignore") + "_" + digest


def _stat(run: Run, name: str) -> tuple[float, int] | None:
    """``(sum, count)`` of a test-split stat of a run, or None."""
    stat = get_unique_stat_by_matcher(run.stats, MetricNameMatcher(name=name, split="test"))
    if stat is None or not stat.count:
        return None
    return stat.sum, stat.count


def _macro(values: Sequence[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return sum(present) / len(present) if present else None


def _subset_of(run: Run) -> str:
    return str(run.run_spec.scenario_spec.args.get("subset", ""))


def seconds_since_start() -> float | None:
    """Wall-clock seconds since this process started (Linux's ``/proc``); None where that cannot be read."""
    try:
        with open("/proc/self/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()  # field 3 onwards: the name may hold spaces
        with open("/proc/uptime", encoding="ascii") as handle:
            uptime = float(handle.read().split()[0])
        return max(0.0, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))  # field 22: start, in ticks
    except (OSError, IndexError, ValueError):
        return None


def page_workers(num_threads: int) -> int:
    """Worker processes for the predictions pages: ``--num-threads``, at most one per CPU this process may use."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(num_threads, cpus)


def _run_folder_count(suite_path: str) -> int | None:
    """Run folders in a suite as HELM reads them (``run_spec.json`` and ``stats.json``); None: no such folder."""
    try:
        names = os.listdir(suite_path)
    except OSError:
        return None
    return sum(1 for name in names if all(os.path.isfile(os.path.join(suite_path, name, file))
                                          for file in ("run_spec.json", "stats.json")))


class RoboRewardSummarizer(Summarizer):
    """HELM's summarizer plus the RoboReward leaderboard fixes and breakdown tables."""

    def run_pipeline(self, skip_completed: bool) -> None:
        """HELM's pipeline, after a line that says what it does; objects alive at its start and end are frozen.

        HELM logs its first line (``summarize {``) only once it has imported torch, spacy and nltk (5 s on a quiet
        machine, 10-20 s on a busy one, more while the disk cache is cold), and from here it reads every run's
        files with no line (a progress bar on a terminal only). The first line here names the suite, its runs,
        how the predictions pages are written, and how long HELM took to start.

        ``gc.freeze()`` at the start (HELM's modules and registries: about 400,000 objects) and at the end (the
        runs and tables): these live until the process ends, so the garbage collector need not traverse them
        again, and the collections Python makes while it exits no longer walk them all. At 575 runs on a shared
        2-core machine the exit after HELM's "Done." went from 1.2-5.1 s to 0.3-0.4 s (docs/benchmarks.md). A
        caller that runs the pipeline inside a longer-lived process can call ``gc.unfreeze()`` after it.
        """
        line = self._start_line()
        if line:
            hlog(line)
        gc.freeze()
        super().run_pipeline(skip_completed)
        gc.freeze()

    def _start_line(self) -> str | None:
        """What the summarize is about to do; None when a suite folder is missing (HELM says so next)."""
        counts = [_run_folder_count(path) for path in self.run_suite_paths]
        if any(count is None for count in counts):
            return None
        workers = page_workers(self.num_threads)
        how = (f"up to {workers} worker processes" if workers > 1 and sys.platform.startswith("linux")
               else "in this process")
        suites = ("suite " if len(self.suites) == 1 else "suites ") + ", ".join(self.suites)
        started = seconds_since_start()
        heavy = ", ".join(name for name in HEAVY_IMPORTS if name in sys.modules)
        loaded = "" if started is None else f"; HELM took {started:.1f} s to start" + (
            f" (it imports {heavy})" if heavy else "")
        return (f"RoboReward summarizer: {sum(count or 0 for count in counts)} runs in {suites} "
                f"({', '.join(self.run_suite_paths)}); reading them, then writing their predictions pages ({how}) "
                f"and the leaderboard tables{loaded}")

    def write_schema(self) -> None:
        """Write schema.json with a leaderboard group that has runs first (the landing page shows the first)."""
        with_runs = [name for name in LEADERBOARD_GROUPS if self._group_runs(name)]
        if with_runs:
            first = with_runs[0]
            groups = sorted(self.schema.run_groups, key=lambda group: group.name != first)
            self.schema = dataclasses.replace(self.schema, run_groups=groups)
        super().write_schema()

    def write_run_display_json(self, skip_completed: bool) -> None:
        """HELM's predictions pages, skipping runs whose media files are gone; the reward-model statistics.

        HELM writes these pages from ``--num-threads`` threads, and each page compiles the schema's metric names
        as mako templates; concurrent ``compile()`` calls corrupt CPython's AST recursion counter on some
        versions (Python 3.11.7 here: "SystemError: AST constructor recursion depth mismatch", every try at the
        leaderboard's full size of 575 runs), and the work is CPU-bound under the GIL. Here a RoboReward run's
        page is written by :mod:`.predictions_pages` (the same files; metric names rendered once,
        the per-instance stats decoded once and reused for the reward-model statistics), in up to
        ``--num-threads`` forked processes, at most one per CPU; other benchmarks' runs by HELM's function, in
        this process. The other phases keep HELM's own behaviour (benchmarks/summarize_full_size.py gives the
        time).

        A run fails here only because HELM rebuilds its requests' media objects, which assert that every local
        file exists; any other failure is re-raised. Display files of a skipped run that are older than its
        scenario state are removed (they would show an earlier run's answers). The phase logs its progress every
        :data:`PROGRESS_SECONDS` and a line at its end.
        """
        skipped: list[tuple[str, list[str]]] = []
        outcomes = run_pages(self.runs, self.schema, skip_completed, page_workers(self.num_threads))
        started = logged = time.monotonic()
        for done, (run, outcome) in enumerate(zip(self.runs, outcomes, strict=True), start=1):
            if outcome.missing:
                skipped.append((run.run_spec.name, outcome.missing))
            if outcome.warning:
                hwarn(outcome.warning)
            if outcome.values:
                run.stats.extend(Stat(MetricName(name, split="test")).add(value)
                                 for name, value in outcome.values.items())
            mismatch = model_mismatch_warning(run)
            if mismatch:
                hwarn(mismatch)
            if time.monotonic() - logged >= PROGRESS_SECONDS and done < len(self.runs):
                logged = time.monotonic()
                hlog(f"RoboReward summarizer: predictions pages of {done} of {len(self.runs)} runs written "
                     f"({100 * done // len(self.runs)}%, {logged - started:.0f} s)")
        hlog(f"RoboReward summarizer: predictions pages of {len(self.runs)} runs written in "
             f"{time.monotonic() - started:.1f} s; next: runs.json and the leaderboard tables")
        if skipped:
            hwarn(missing_media_message(skipped))

    def create_cell(self, runs: list[Run], matcher: MetricNameMatcher, additional_info: str | None,
                    hide_value: bool = False, is_scenario_table: bool = False) -> Cell:
        """HELM's cell, without its warning for a stat a run may legitimately lack (:func:`may_be_absent`).

        Only runs that report the stat are aggregated, as HELM does after warning; a cell no run reports stays
        empty. A missing stat that every correct run has still warns.
        """
        if may_be_absent(matcher.name):
            reporting = [run for run in runs if get_unique_stat_by_matcher(run.stats, matcher) is not None]
            if not reporting:
                return Cell(value=None, description=f"{len(runs)} matching runs; none reports {matcher.name}")
            runs = reporting
        return super().create_cell(runs, matcher, additional_info, hide_value=hide_value,
                                   is_scenario_table=is_scenario_table)

    def create_group_table(self, *args, **kwargs) -> Table:  # type: ignore[no-untyped-def]
        """HELM's table, with the mean column's direction fixed, bolded and ranked."""
        table = super().create_group_table(*args, **kwargs)
        return _fix_mean_column(table)

    def create_group_tables_by_subgroup(self, group: RunGroup) -> list[Table]:
        """HELM's per-scenario tables, RoboReward's named by :func:`table_name` (readable, and file-name safe)."""
        names = {}
        for subgroup in self.expand_subgroups(group):
            for scenario_spec in self.group_scenario_adapter_to_runs[subgroup.name]:
                if scenario_spec.class_name.endswith(".RoboRewardScenario"):
                    names[get_scenario_name(subgroup, scenario_spec)] = table_name(
                        group.name, subgroup.name, dict(scenario_spec.args))
        tables = super().create_group_tables_by_subgroup(group)
        return [dataclasses.replace(table, name=names.get(table.name or "", table.name)) for table in tables]

    def create_group_tables_by_metric_group(self, group: RunGroup) -> list[Table]:
        """HELM's tables, plus the breakdown tables for the leaderboard groups."""
        tables = super().create_group_tables_by_metric_group(group)
        if group.name in SUBSET_PARENT_GROUPS:
            runs_by_model = self._group_runs(group.name)
            if runs_by_model:
                tables += self._breakdown_tables(runs_by_model)
        return tables

    def _group_runs(self, group_name: str) -> dict[str, list[Run]]:
        """Runs of a parent group's subgroups, by model display name."""
        group = next((g for g in self.schema.run_groups if g.name == group_name), None)
        if group is None:
            return {}
        runs_by_model: dict[str, list[Run]] = defaultdict(list)
        for subgroup in self.expand_subgroups(group):
            for adapter_spec, runs in self.group_adapter_to_runs[subgroup.name].items():
                coarse: AdapterSpec = get_coarse_adapter_spec(adapter_spec, adapter_keys_shown=group.adapter_keys_shown)
                name = get_model_metadata_for_adapter_spec(coarse).display_name
                runs_by_model[name].extend(self.filter_runs_by_visibility(runs, group))
        return {model: runs for model, runs in runs_by_model.items() if runs}

    def _breakdown_tables(self, runs_by_model: dict[str, list[Run]]) -> list[Table]:
        robots = sorted({subset_info(_subset_of(run)).robot for runs in runs_by_model.values() for run in runs})
        robot_columns = [
            (robot, f"MAE on {robot} subsets (macro over them).", _macro_over_subsets("abs_error", robot=robot))
            for robot in robots
        ]
        kind_columns = [
            (kind, f"MAE on {kind} rows (macro over subsets that have them).",
             _macro_over_subsets(kind_mae(kind)))
            for kind in KINDS
        ]
        failure_columns = [(column.display_name, column.description, _macro_over_subsets(column.name))
                           for column in FAILURE_COLUMNS]
        cost_columns = [(column.table_title or column.display_name, column.description, _pooled(column.name))
                        for column in COST_COLUMNS]
        reward_columns = [(column.display_name,
                           column.description + _REWARD_AGGREGATION[column.lower_is_better is None],
                           _summed(column.name) if column.lower_is_better is None else _macro_over_subsets(column.name))
                          for column in REWARD_COLUMNS]
        return [
            _table("robot_breakdown", "MAE by robot (lower is better)", runs_by_model, robot_columns, True),
            _table("kind_breakdown_all", "MAE by augmentation kind (lower is better)", runs_by_model, kind_columns,
                   True),
            _table("failure_modes_all", "Failure modes (macro over subsets)", runs_by_model, failure_columns,
                   [column.lower_is_better for column in FAILURE_COLUMNS]),
            _table("cost_all", "Cost per instance", runs_by_model, cost_columns, None),
            _table("reward_model_all", "Reward-model metrics (higher is better)", runs_by_model, reward_columns,
                   [column.lower_is_better for column in REWARD_COLUMNS]),
            _table("expected_score_all", "Expected-score rewards (score=expected runs; macro over subsets)",
                   runs_by_model, [(column.display_name, column.description, _macro_over_subsets(column.name))
                                   for column in EXPECTED_COLUMNS],
                   [column.lower_is_better for column in EXPECTED_COLUMNS]),
            _peer_table(runs_by_model),
        ]


Aggregator = Callable[[list[Run]], float | None]


def _peer_table(runs_by_model: dict[str, list[Run]]) -> Table:
    """What peer evaluations report: MAE, exact and within-1 accuracy (macro, micro), mean prediction per gold score."""
    columns = [(f"{column.display_name} ({kind})", f"{column.description} {how}", aggregate)
               for column in PEER_RATES for kind, how, aggregate in (
                   ("macro", "Macro over subsets.", _macro_over_subsets(column.name)),
                   ("micro", "Pooled over all rows.", _pooled(column.name, "error_rows")))]
    columns += [(column.display_name, column.description + " Pooled over subsets.",
                 _pooled(column.name, predicted_score_gold_rows(gold_score)))
                for gold_score, column in zip(RUBRIC_SCORES, PEER_PREDICTIONS, strict=True)]
    directions = [column.lower_is_better for column in PEER_RATES for _ in range(2)] + [None] * len(PEER_PREDICTIONS)
    return _table("peer_metrics_all", "Peer metrics (macro over subsets, micro over rows)", runs_by_model, columns,
                  directions)


def _macro_over_subsets(stat_name: str, robot: str | None = None) -> Aggregator:
    def aggregate(runs: list[Run]) -> float | None:
        values = []
        for run in runs:
            if robot is not None and subset_info(_subset_of(run)).robot != robot:
                continue
            found = _stat(run, stat_name)
            values.append(found[0] / found[1] if found else None)
        return _macro(values)

    return aggregate


def _summed(stat_name: str) -> Aggregator:
    def aggregate(runs: list[Run]) -> float | None:
        found = [pair[0] for pair in (_stat(run, stat_name) for run in runs) if pair is not None]
        return sum(found) if found else None

    return aggregate


def _pooled(stat_name: str, weight_name: str = "num_instances") -> Aggregator:
    """The per-row mean over runs: each run's mean weighted by its row count ``weight_name`` (HELM keeps means)."""
    def aggregate(runs: list[Run]) -> float | None:
        total = weighted = 0.0
        for run in runs:
            value, weight = _stat(run, stat_name), _stat(run, weight_name)
            if value is None or weight is None:
                continue
            rows = weight[0] / weight[1]
            total += rows
            weighted += rows * value[0] / value[1]
        return weighted / total if total else None

    return aggregate


def _table(
    name: str,
    title: str,
    runs_by_model: dict[str, list[Run]],
    columns: list[tuple[str, str, Aggregator]],
    lower_is_better: object,
) -> Table:
    directions = lower_is_better if isinstance(lower_is_better, list) else [lower_is_better] * len(columns)
    header = [HeaderCell("Model")] + [
        HeaderCell(title_, description=description, lower_is_better=direction)
        for (title_, description, _), direction in zip(columns, directions, strict=True)
    ]
    rows = [
        [Cell(model)] + [_value_cell(aggregate(runs)) for _, _, aggregate in columns]
        for model, runs in sorted(runs_by_model.items())
    ]
    return _bold_best(Table(title=title, header=header, rows=rows, name=name))


def _value_cell(value: float | None) -> Cell:
    return Cell(value, display_value=None if value is None else f"{value:.3f}")


def _bold_best(table: Table) -> Table:
    for column, header in enumerate(table.header):
        if header.lower_is_better is None:
            continue
        values = [row[column].value for row in table.rows if row[column].value is not None]
        if not values:
            continue
        best = min(values) if header.lower_is_better else max(values)
        for row in table.rows:
            if row[column].value == best:
                style = {**(row[column].style or {}), "font-weight": "bold"}
                row[column] = dataclasses.replace(row[column], style=style)
    return table


def _fix_mean_column(table: Table) -> Table:
    """Give HELM's mean column the direction of the columns it averages, bold its best, rank by it."""
    position = next((i for i, cell in enumerate(table.header) if cell.value == MEAN_HEADER), None)
    if position is None:
        return table
    directions = {cell.lower_is_better for i, cell in enumerate(table.header) if i not in (0, position)}
    if len(directions) != 1 or None in directions:
        return table
    lower_is_better = directions.pop()
    table.header[position] = dataclasses.replace(
        table.header[position], value=MEAN_DISPLAY, lower_is_better=lower_is_better,
        description="Unweighted mean of the subset columns (the official overall number); missing subsets skipped.",
    )
    table = _bold_best(table)

    def rank(row: list[Cell]) -> tuple[bool, float]:
        value = row[position].value
        if value is None:
            return True, 0.0
        return False, float(value) if lower_is_better else -float(value)

    table.rows.sort(key=rank)
    return table
