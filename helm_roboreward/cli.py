"""The ``roboreward`` command: ``prepare`` (download, validate, extract frames once), ``leaderboard``, ``report``.

User errors (bad data, bad options, unwritable folders) print one clear message and exit with a
non-zero status, never a traceback.
"""

import argparse
import os
import sys
from collections.abc import Sequence

from helm_roboreward.core.benchmark import DATASET_REVISION
from helm_roboreward.media.selection import OFFICIAL_FRAMES_PER_SECOND, FrameOptions
from helm_roboreward.presentation.report.command import add_report_options, run_report

SCENARIO_NAME = "roboreward"
EXIT_FAILURES = 1
EXIT_USAGE = 2


def scenario_media_dir(output_path: str) -> str:
    """Where helm-run keeps the scenario's media for ``-o output_path`` (shared with ``prepare``)."""
    return os.path.join(output_path, "scenarios", SCENARIO_NAME)


def add_data_options(parser: argparse.ArgumentParser) -> None:
    """The options that choose the data, mirroring the run-entry arguments."""
    parser.add_argument("--data", default="hf", help="hf (default), sample, or a local copy's folder")
    parser.add_argument("--subset", default="all", help="a subset id or all (default)")
    parser.add_argument("--revision", default=DATASET_REVISION, help="hub revision for --data hf")


def add_frame_options(parser: argparse.ArgumentParser) -> None:
    """The media options, mirroring the run-entry arguments (defaults: the official frame rule)."""
    parser.add_argument("--video", choices=["frames", "native"], default="frames",
                        help="frames (default): JPEG frames; native: content-addressed mp4 copies")
    parser.add_argument("--fps", type=float, default=OFFICIAL_FRAMES_PER_SECOND, help="frames kept per second")
    parser.add_argument("--last-frame", action="store_true", help="also keep the final frame")
    parser.add_argument("--max-frames", type=int, default=0, help="cap on frames per video (0: none)")
    parser.add_argument("--max-side", type=int, default=0, help="longest side in pixels (0: native)")


def _prepare(args: argparse.Namespace) -> int:
    from helm_roboreward.data.rows import collect_rollouts
    from helm_roboreward.data.sources import resolve_data_source
    from helm_roboreward.media.paths import require_inside
    from helm_roboreward.media.preparation import failures_by_row, prepare_media, rebuilt_summary

    options = FrameOptions(frames_per_second=args.fps, include_last_frame=args.last_frame,
                           max_frames=args.max_frames, max_side=args.max_side)
    media_dir = scenario_media_dir(args.output_path)
    # Before any work: the media folder must lie inside --output-path (a link planted at scenarios/ or
    # scenarios/roboreward would send every frame elsewhere).
    require_inside(media_dir, args.output_path, "media folder",
                   "remove the link, or pass the folder it leads to as --output-path (helm-run -o)")
    subsets = None if args.subset == "all" else [args.subset]
    source = resolve_data_source(args.data, args.revision, subsets)
    rollouts, problems = collect_rollouts(source.root, subsets, source.description, source.trusted_root)
    jobs = args.jobs or os.cpu_count() or 1
    # prepare checks every cached entry in full (digests, a probe per video): the command to run for certainty.
    report = prepare_media(rollouts, media_dir, args.video == "native", options, jobs=jobs,
                           progress=not args.quiet, full_check=True)
    failures: list[str] = problems + failures_by_row(rollouts, report)
    print(f"roboreward prepare: {source.description} (revision {source.revision}) -> {media_dir}")
    print(f"  rows: {len(rollouts) + len(problems)}   distinct videos ready: {report.num_videos}"
          f"   cache hits: {report.cache_hits}   failed rows: {len(failures)}")
    if args.video == "frames":
        print(f"  frames: {report.num_frames}   bytes: {report.num_bytes:,}")
    else:
        print(f"  video bytes: {report.num_bytes:,}")
    print(f"  seconds: {report.seconds:.1f}   jobs: {jobs}   workers started: {report.workers}")
    for line in rebuilt_summary(report):
        print(f"  {line}")
    if failures:
        print(f"  FAILED rows: {len(failures)} (the other videos are prepared and cached)", file=sys.stderr)
        for line in failures:
            print(f"    {line}", file=sys.stderr)
        return EXIT_FAILURES
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``roboreward`` argument parser."""
    parser = argparse.ArgumentParser(prog="roboreward", description="RoboRewardBench tools for HELM.")
    commands = parser.add_subparsers(dest="command", required=True)
    prepare = commands.add_parser("prepare", help="download, validate and extract frames once, for every later run",
                                  description="Download what is missing, validate every row and prepare the media "
                                  "helm-run will use (same cache), in parallel.")
    add_data_options(prepare)
    add_frame_options(prepare)
    prepare.add_argument("--output-path", default="benchmark_output", help="helm-run's -o (default benchmark_output)")
    prepare.add_argument("--jobs", type=int, default=0, help="worker processes (default: CPU count)")
    prepare.add_argument("--quiet", action="store_true", help="no progress bar")
    prepare.set_defaults(handler=_prepare)
    export = commands.add_parser("export-media", help="copy a suite's frames and videos into a helm-server export",
                                 description="helm-server --export-path copies runs/ but not the media the runs "
                                 "point to; this copies them where the exported viewer looks for them.")
    export.add_argument("--suite", required=True)
    export.add_argument("--output-path", default="benchmark_output")
    export.add_argument("--export-path", required=True, help="the folder given to helm-server --export-path")
    export.set_defaults(handler=_export_media)
    leaderboard = commands.add_parser("leaderboard", help="print a summarized suite's leaderboard")
    leaderboard.add_argument("--suite", required=True)
    leaderboard.add_argument("--output-path", default="benchmark_output")
    leaderboard.set_defaults(handler=_leaderboard)
    report = commands.add_parser("report", help="macro MAE with bootstrap CIs, pairwise tests, tables and plots")
    add_report_options(report)
    report.set_defaults(handler=run_report)
    files = commands.add_parser("files", help="write the schema, run-entry confs and prod_env/ model files",
                                description="Write static/schema_roboreward.yaml, run_specs/*.conf and "
                                "prod_env/model_*.yaml into a folder (after a pip install there is no checkout).")
    files.add_argument("--out", default=".", help="the folder helm-run will run from (default: here)")
    files.add_argument("--force", action="store_true", help="overwrite files that differ")
    files.add_argument("--data", action="append", default=[], metavar="DIR",
                       help="a local copy whose subsets the schema must also cover (repeatable): subsets the "
                       "benchmark does not know join the RoboReward leaderboard and its mean")
    files.set_defaults(handler=_files)
    return parser


def _files(args: argparse.Namespace) -> int:
    from helm_roboreward.presentation.project_files import (
        ExistingFilesError,
        subsets_of_local_copy,
        write_project_files,
    )
    from helm_roboreward.presentation.schema import local_subsets

    subsets = [subset for data in args.data for subset in subsets_of_local_copy(data)]
    try:
        written, unchanged = write_project_files(args.out, force=args.force, extra_subsets=subsets)
    except ExistingFilesError as error:
        raise ValueError(str(error)) from None
    for path in written:
        print(f"  wrote {path}")
    extra = [subset.id for subset in local_subsets(subsets)]
    if extra:
        print(f"  the schema also covers {len(extra)} subset(s) of the local copy: {', '.join(extra)} (in the "
              "RoboReward leaderboard and its mean)")
    elif args.data:
        print("  the local copy holds only known subsets: the schema is the standard one")
    print(f"roboreward files: {len(written)} written, {unchanged} already up to date, in {os.path.abspath(args.out)}")
    return 0


def _export_media(args: argparse.Namespace) -> int:
    from helm_roboreward.presentation.export import export_media

    copied, size, problems = export_media(args.output_path, args.suite, args.export_path)
    print(f"roboreward export-media: {copied} files ({size:,} bytes) copied into {args.export_path}/benchmark_output")
    for problem in problems:
        print(f"  {problem}", file=sys.stderr)
    return EXIT_FAILURES if problems else 0


def _leaderboard(args: argparse.Namespace) -> int:
    from helm_roboreward.presentation.leaderboard import main as leaderboard_main

    return leaderboard_main(["--suite", args.suite, "--output-path", args.output_path])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``roboreward`` command; returns the exit status."""
    from helm_roboreward.data.rows import DataError
    from helm_roboreward.media.decoding import VideoError

    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except (DataError, VideoError, ValueError) as error:
        print(f"roboreward {args.command}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as error:
        print(f"roboreward {args.command}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"roboreward {args.command}: interrupted; finished videos stay cached, rerun to continue.",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
