"""``roboreward report``: statistics, tables and plots of a suite's runs and Inspect logs, in one folder.

Bad input (no such suite, no usable run, matplotlib missing, bad options, a summarized leaderboard that
leaves out a subset the report would count, an output path leading out of ``--out``) prints one line and
exits non-zero; the heavy modules are imported only when the command runs.
"""

import argparse
import dataclasses
import os
import sys
from collections.abc import Callable

from helm_roboreward.helm_frontend.run_rows import ReportError, Run, check_suite_name, load_suite, suite_directory
from helm_roboreward.protocol.safe_files import UnsafePathError, write_inside
from helm_roboreward.results.publish.evidence import gather
from helm_roboreward.results.publish.latex import LEADERBOARD_TEX, leaderboard_tex
from helm_roboreward.results.report.analysis import Settings, analyse
from helm_roboreward.results.report.coverage import check_leaderboard_coverage
from helm_roboreward.results.report.model_names import model_display_names
from helm_roboreward.results.report.plots import OUT_FIX, require_matplotlib, write_plots
from helm_roboreward.results.report.writer import REPORT_FILE, write_report

EXIT_BAD_INPUT = 2


def add_report_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``roboreward report``."""
    parser.add_argument("--suite", help="the helm-run suite to report on (optional with --inspect-log)")
    add_inspect_log_option(parser)
    parser.add_argument("--output-path", default="benchmark_output", help="helm-run's -o (default benchmark_output)")
    parser.add_argument("--out", required=True, help="folder for report.md, the CSV tables and the PNG plots")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap replicates (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--confidence", type=float, default=0.95, help="interval level (default 0.95)")
    parser.add_argument("--local-path", default="prod_env",
                        help="HELM's --local-path, for model display names (default prod_env)")
    parser.add_argument("--no-published", action="store_true",
                        help="leave out the published leaderboard's rows (shown by default on the public split)")


LogReader = Callable[[str], Run]
"""Reads one Inspect log into a run (``inspect_frontend.log_rows.read_inspect_log``; the command line passes it)."""


def add_inspect_log_option(parser: argparse.ArgumentParser) -> None:
    """``--inspect-log PATH`` (repeatable): a finished roboreward_bench log of Inspect, beside or instead of a suite."""
    parser.add_argument("--inspect-log", action="append", default=[], metavar="PATH",
                        help="a finished `inspect eval helm_roboreward/roboreward_bench` log (.eval or .json), read as "
                        "one run beside the suite's (repeatable; docs/inspect.md)")


def read_runs(args: argparse.Namespace, read_log: LogReader | None) -> list[Run]:
    """The runs of ``--inspect-log``; ReportError when neither a suite nor a log is given, or a log is unusable."""
    if args.suite is None and not args.inspect_log:
        raise ReportError("give --suite (a helm-run suite) or --inspect-log PATH (an Inspect log), or both")
    if args.suite is not None:
        check_suite_name(args.suite)
    if args.inspect_log and read_log is None:
        raise ReportError("--inspect-log needs the roboreward command line (it reads the logs)")
    return [read_log(path) for path in args.inspect_log] if read_log else []


def _check_options(args: argparse.Namespace) -> None:

    if args.resamples < 1:
        raise ReportError(f"--resamples must be at least 1, not {args.resamples}")
    if not 0.0 < args.confidence < 1.0:
        raise ReportError(f"--confidence must be between 0 and 1 (e.g. 0.95), not {args.confidence}")
    if args.seed < 0:
        raise ReportError(f"--seed must be a non-negative integer, not {args.seed}")


def run_report(args: argparse.Namespace, read_log: LogReader | None = None) -> int:
    """Run ``roboreward report``; returns the exit status.

    Args:
        args: The parsed options of :func:`add_report_options`.
        read_log: Reads one ``--inspect-log`` into a run (this layer imports no front-end of Inspect).

    Returns:
        0 on success, :data:`EXIT_BAD_INPUT` on bad input (message on stderr).
    """
    try:
        _check_options(args)
        return _report(args, read_runs(args, read_log))
    except ReportError as error:
        print(f"roboreward report: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except UnsafePathError as error:
        print(f"roboreward report: cannot write the report: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as error:
        print(f"roboreward report: cannot write the report: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _report(args: argparse.Namespace, logged: list[Run]) -> int:

    require_matplotlib()  # before any work: fail fast when the plots cannot be drawn
    suite = load_suite(args.output_path, args.suite, model_display_names(args.local_path), logged)
    # Before anything is written: a leaderboard that leaves out a subset the report counts stops the report (the
    # suite's own rows: HELM's leaderboard holds no Inspect log).
    logs = {run.name for run in logged}
    helm_rows = dataclasses.replace(suite, models=[model for model in suite.models
                                                   if not set(model.run_of_subset.values()) <= logs])
    coverage_notes = check_leaderboard_coverage(helm_rows, suite_directory(args.output_path, args.suite)) \
        if args.suite is not None else []
    suite.notes.extend(coverage_notes)
    for note in coverage_notes:
        print(f"roboreward report: note: {note}", file=sys.stderr)
    data = analyse(suite, Settings(resamples=args.resamples, seed=args.seed, confidence=args.confidence,
                                   published=not args.no_published))
    # The comparability rule, once per model (docs/publishing.md), with the deployments helm-run used.
    facts = gather(suite, args.output_path, local_path=args.local_path)
    data.comparability = {key: (verdict.comparable, verdict.line) for key, verdict in facts.verdicts().items()}
    files = write_report(data, args.out) + write_plots(data, args.out)
    write_inside(args.out, LEADERBOARD_TEX, leaderboard_tex(facts, not args.no_published).encode("utf-8"), OUT_FIX)
    files.append(LEADERBOARD_TEX)
    for warning in data.warnings:
        print(f"roboreward report: warning: {warning}", file=sys.stderr)
    parts = ([f"suite {args.suite}"] if args.suite is not None else []) + ([f"{len(logs)} Inspect log(s)"] if logs
                                                                            else [])
    source = " and ".join(parts)
    print(f"roboreward report: {source}: {len(data.models)} model(s), {len(data.subsets)} subset(s) -> "
          f"{os.path.join(args.out, REPORT_FILE)} ({len(files)} files)")
    for model in data.models:
        macro = "-" if model.macro is None else f"{model.macro.estimate:.3f} [{model.macro.low:.3f}, " \
            f"{model.macro.high:.3f}]"
        print(f"  {model.display_name}: macro MAE {macro}")
    return 0
