"""Print a summarized suite's RoboReward leaderboard in the terminal (after ``helm-summarize``).

The suite is first read as ``report`` and ``publish`` read it (one reader): where a run's files disagree, it stops
naming them (exit 2) rather than print helm-summarize's numbers beside another command's.
"""

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from helm_roboreward.helm_frontend.run_rows import ReportError, RunFilesError, check_suite_name
from helm_roboreward.protocol.rules import LEADERBOARD_GROUPS
from helm_roboreward.results.publish.comparability import Comparability
from helm_roboreward.results.publish.evidence import suite_facts

EXIT_BAD_INPUT = 2


def read_group_tables(suite_dir: str, group: str) -> list[dict[str, Any]] | None:
    """The tables helm-summarize wrote for a run group, or None when the group has no runs."""
    path = os.path.join(suite_dir, "groups", f"{group}.json")
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as handle:
        tables = json.load(handle)
    return tables if isinstance(tables, list) else None


def _cell(cell: dict[str, Any]) -> str:
    value = cell.get("value")
    if isinstance(value, float):
        return f"{value:.3f}"
    return "-" if value is None else str(value)


def format_table(table: dict[str, Any]) -> str:
    """A plain-text rendering of one HELM table (title, header, rows)."""
    header = [str(column.get("value", "")).replace(" - MAE", "") for column in table.get("header", [])]
    rows = [[_cell(cell) for cell in row] for row in table.get("rows", [])]
    widths = [max(len(line[i]) for line in [header] + rows) for i in range(len(header))]
    lines = [str(table.get("title", "")), "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the main table of every RoboReward leaderboard group present in the suite."""
    parser = argparse.ArgumentParser(prog="roboreward leaderboard", description=__doc__)
    parser.add_argument("--suite", required=True)
    parser.add_argument("--output-path", default="benchmark_output")
    parser.add_argument("--local-path", default="prod_env",
                        help="helm-run's --local-path: the deployments the rule checks (default prod_env)")
    args = parser.parse_args(argv)
    try:
        check_suite_name(args.suite)
    except ReportError as error:
        print(f"roboreward leaderboard: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    suite_dir = os.path.join(args.output_path, "runs", args.suite)
    if not os.path.isdir(os.path.join(suite_dir, "groups")):
        print(f"roboreward: no summarized suite at {suite_dir}; run helm-summarize --suite {args.suite} first.",
              file=sys.stderr)
        return 1
    verdicts: dict[str, Comparability] | str
    try:  # read as report and publish read it, before any table is shown
        verdicts = suite_facts(args.output_path, args.suite, local_path=args.local_path).verdicts()
    except RunFilesError as error:  # every surface stops on the same files
        print(f"roboreward leaderboard: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ReportError as error:
        verdicts = str(error)  # a suite the report cannot read: the tables stand without the note
    shown = 0
    for group in LEADERBOARD_GROUPS:
        tables = read_group_tables(suite_dir, group)
        if tables:
            print(format_table(tables[0]))
            print()
            shown += 1
    if not shown:
        print(f"roboreward: suite {args.suite} has no RoboReward leaderboard groups.", file=sys.stderr)
        return 1
    _print_comparability(verdicts)
    return 0


def _print_comparability(verdicts: dict[str, Comparability] | str) -> None:
    """Each row's verdict under the tables: comparable with the published leaderboard, or why not (or not judged)."""
    if isinstance(verdicts, str):
        print(f"roboreward: comparability not judged: {verdicts}", file=sys.stderr)
        return
    print("Comparable with the published leaderboard? (docs/publishing.md)")
    for model, verdict in verdicts.items():
        print(f"  {model}: {verdict.line}")


if __name__ == "__main__":
    sys.exit(main())
