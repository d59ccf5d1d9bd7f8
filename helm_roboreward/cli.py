"""The ``roboreward`` command: ``prepare``, ``leaderboard``, ``report``, ``files``, ``export-media``, ``models``, ...

``prepare`` downloads, validates and extracts frames once; ``models``, ``add-model`` and ``estimate`` list, add and
cost models as ``roboreward`` runs use them.

User errors (bad data, bad options, unwritable folders) print one clear message and exit with a
non-zero status, never a traceback.
"""

import argparse
import os
import sys
from collections.abc import Sequence

from helm_roboreward.helm_frontend.run_rows import ReportError
from helm_roboreward.inspect_frontend.log_rows import read_inspect_log
from helm_roboreward.model_tools.token_costs import DEFAULT_OUTPUT_TOKENS, DEFAULT_REASONING_OUTPUT_TOKENS
from helm_roboreward.protocol.data_sources import resolve_data_source
from helm_roboreward.protocol.media_preparation import failures_by_row, prepare_media, rebuilt_summary
from helm_roboreward.protocol.rows import DataError, collect_rollouts, load_rollouts
from helm_roboreward.protocol.rules import DATASET_REVISION, OFFICIAL_FRAMES_PER_SECOND, FrameOptions, build_prompt
from helm_roboreward.protocol.safe_files import require_inside, write_atomically
from helm_roboreward.protocol.split_audit import KIND_COLUMNS, LEGEND, NUMERIC_COLUMNS, SUBSET_COLUMNS, audit_copy
from helm_roboreward.protocol.video_decoding import VideoError
from helm_roboreward.results.media_export import export_media
from helm_roboreward.results.project_files import ExistingFilesError, subsets_of_local_copy, write_project_files
from helm_roboreward.results.publish.publish_command import add_publish_options, run_publish
from helm_roboreward.results.report.report_command import add_report_options, run_report
from helm_roboreward.results.schema import local_subsets
from helm_roboreward.results.terminal_leaderboard import main as leaderboard_main
from helm_roboreward.reward.serve_command import add_serve_arguments
from helm_roboreward.robot_data.lerobot_commands import add_robot_data_commands

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
                        help="frames (default): JPEG frames; native: native mp4s (metadata-clean, content-addressed)")
    parser.add_argument("--fps", type=float, default=OFFICIAL_FRAMES_PER_SECOND, help="frames kept per second")
    parser.add_argument("--last-frame", action="store_true", help="also keep the final frame")
    parser.add_argument("--max-frames", type=int, default=0, help="cap on frames per video (0: none)")
    parser.add_argument("--max-side", type=int, default=0, help="longest side in pixels (0: native)")


def _prepare(args: argparse.Namespace) -> int:

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
    distinct = report.distinct()  # each video content counted once
    num_bytes = sum(media.num_bytes for media in distinct)
    print(f"  rows: {len(rollouts) + len(problems)}   distinct videos ready: {len(distinct)}"
          f"   cache hits: {report.cache_hits}   failed rows: {len(failures)}")
    if args.video == "frames":
        print(f"  frames: {sum(len(media.frame_indices) for media in distinct)}   bytes: {num_bytes:,}")
    else:
        print(f"  video bytes: {num_bytes:,}")
    print(f"  seconds: {report.seconds:.1f}   jobs: {jobs}   workers started: {report.workers}")
    for line in rebuilt_summary(report):
        print(f"  {line}")
    if failures:
        print(f"  FAILED rows: {len(failures)} (the other videos are prepared and cached)", file=sys.stderr)
        for line in failures:
            print(f"    {line}", file=sys.stderr)
        return EXIT_FAILURES
    return 0


def _audit(args: argparse.Namespace) -> int:
    import textwrap

    from helm_roboreward.model_tools.catalog import format_text_table

    subsets = None if args.subset == "all" else [args.subset]
    source = resolve_data_source(args.data, args.revision, subsets)
    audit = audit_copy(source.root, subsets, source.description, source.trusted_root)
    print(f"roboreward audit: {source.description} (revision {source.revision}), {len(audit.rows)} rows in "
          f"{len(audit.subsets)} subsets; videos hashed, nothing decoded or sent")
    print(format_text_table(KIND_COLUMNS, [counts.cells() for counts in audit.kinds], NUMERIC_COLUMNS))
    print()
    print(format_text_table(SUBSET_COLUMNS, [counts.cells() for counts in audit.subsets], NUMERIC_COLUMNS))
    print("\n" + textwrap.fill(LEGEND, 118) + f"\nmetadata.jsonl SHA-256: {audit.metadata_sha256}")
    if not audit.compared:
        print("No subset of the published split here: nothing to compare with it.")
    elif not audit.differences:
        print("Matches the published split wherever compared.")
    if audit.differences:
        print(f"{len(audit.differences)} difference(s) from the published split or problem(s) to fix:")
        for line in audit.differences:
            print(f"  - {line}")
    return EXIT_FAILURES if audit.differences else 0


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
    audit = commands.add_parser("audit", help="check a local copy of the test split against the published counts",
                                description="Count a local copy's rows, gold scores, videos, shared videos, links and "
                                "clusters per subset and kind (videos are hashed, never decoded; nothing is sent to a "
                                "model) and say where it differs from the published split. --data hf downloads what "
                                "the cache lacks first (the metadata and the requested subsets' videos, as a run "
                                "would).")
    add_data_options(audit)
    audit.set_defaults(handler=_audit)
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
    report.set_defaults(handler=lambda args: run_report(args, read_log=read_inspect_log))

    publish = commands.add_parser("publish", help="the Hub's eval results per model (refused when not comparable), "
                                  "the dataset's eval.yaml, pull requests (docs/publishing.md)")
    add_publish_options(publish)
    publish.set_defaults(handler=lambda args: run_publish(args, read_log=read_inspect_log))
    files = commands.add_parser("files", help="write the schema, run-entry confs and prod_env/ model files",
                                description="Write static/schema_roboreward.yaml, run_specs/*.conf and "
                                "prod_env/model_*.yaml into a folder (after a pip install there is no checkout).")
    files.add_argument("--out", default=".", help="the folder helm-run will run from (default: here)")
    files.add_argument("--force", action="store_true", help="overwrite files that differ")
    files.add_argument("--data", action="append", default=[], metavar="DIR",
                       help="a local copy whose subsets the schema must also cover (repeatable): subsets the "
                       "benchmark does not know join the RoboReward leaderboard and its mean")
    files.set_defaults(handler=_files)
    add_model_commands(commands)

    add_robot_data_commands(commands)  # import-lerobot, label, export-predictions (docs/own_robot_data.md)

    serve = commands.add_parser("serve", help="serve a model as a reward over HTTP, with the benchmark's exact "
                                "protocol (docs/reward_api.md; pip install '.[serve]' from a checkout)")
    add_serve_arguments(serve)
    return parser


def add_model_commands(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """The ``models``, ``add-model`` and ``estimate`` subcommands (they load HELM's registries as helm-run does)."""
    models = commands.add_parser(
        "models", help="every model the plugin knows: deployment, client, media, max_tokens, status, credentials",
        description="List the models roboreward runs know (the package's, the leaderboard's and --local-path's; "
        "--all: every vision-language model HELM knows), as a roboreward run without model_deployment= uses them.")
    models.add_argument("--all", action="store_true", help="also every vision-language model HELM knows")
    models.add_argument("--group", choices=["leaderboard", "all", "baselines"],
                        help="only a group: the published leaderboard's models (still served), every model that takes "
                        "images or video (HELM's vision-language group and this package's), or the offline baselines")
    models.add_argument("--names", action="store_true",
                        help="print only the names, space-separated, for helm-run --models-to-run $(...)")
    models.add_argument("--csv", action="store_true", help="CSV on stdout (full client class names)")
    models.add_argument("--local-path", default="prod_env", help="helm-run's --local-path (default prod_env)")
    models.set_defaults(handler=_models)
    add = commands.add_parser(
        "add-model", help="add a model (metadata + deployment) to --local-path for any provider's API id",
        description="Write a model's metadata and deployment into <local-path>/model_metadata.yaml and "
        "model_deployments.yaml (HELM's format, merged with what is there), so `helm-run --local-path <it>` "
        "runs it with the right client, routing and token allowance.")
    add.add_argument("model", help="the model name, org/name (e.g. openai/gpt-6-2027-01-01)")
    add.add_argument("--client", required=True, help="openai, anthropic, google, vllm or transformers")
    add.add_argument("--api-id", help="the provider's model id (default: the part of the name after '/'); vllm: "
                     "the served model name, transformers: the checkpoint, hub id or folder (default for both: "
                     "the whole model name)")
    add.add_argument("--base-url", help="openai / vllm: the server's .../v1 URL (default: <host>BaseUrl in "
                     "credentials.conf)")
    add.add_argument("--display-name", help="the name leaderboards show (default: from the model name)")
    add.add_argument("--video", choices=["native", "frames"], help="native: the model takes the mp4 under "
                     "video=auto (adds ROBOREWARD_NATIVE_VIDEO_TAG; the client must send video)")
    add.add_argument("--reasoning-effort", help="openai: the reasoning effort to send (e.g. xhigh)")
    add.add_argument("--max-images-per-prompt", type=int, help="the server's per-request image limit (vLLM "
                     "--limit-mm-per-prompt), checked before any request")
    add.add_argument("--max-videos-per-prompt", type=int, help="the server's per-request video limit")
    add.add_argument("--max-sequence-length", type=int, help="the context window in tokens (optional)")
    add.add_argument("--timeout", type=float, metavar="SECONDS", help="vllm: seconds to wait for one response "
                     "(OpenAIVideoClient's timeout_seconds; default: the client's)")
    add.add_argument("--max-retries", type=int, metavar="N", help="vllm: the client's retries of a failed request "
                     "(OpenAIVideoClient's max_retries; default: the client's)")
    add.add_argument("--family", help="qwen3-vl (RoboReward fine-tunes too), qwen2.5-vl or none: the family's "
                     "decoding and frame rule for a vllm / transformers checkpoint (default: from the model name or "
                     "--api-id)")
    add.add_argument("--force", action="store_true", help="replace the model's existing entries (its metadata and "
                     "its deployment, whatever the client)")
    add.add_argument("--take-deployment", action="store_true", help="take a deployment name that belongs to "
                     "another model in the file")
    add.add_argument("--local-path", default="prod_env", help="the folder to write into (default prod_env)")
    add.set_defaults(handler=_add_model)
    estimate = commands.add_parser(
        "estimate", help="rows, frames, media bytes, input tokens and cost per model and subset, before any run",
        description="Estimate what roboreward runs of the given models would send, without sending anything: the "
        "run's own routing and frame selection on probed videos, each provider's documented token formula, "
        "prompt text at characters/4, and cost from a price file you write (no built-in prices).")
    estimate.add_argument("--model", action="append", required=True, metavar="MODEL",
                          help="a model name (repeatable), as in model= of a run entry")
    add_data_options(estimate)
    estimate.add_argument("--video", choices=["auto", "frames", "native"], default="auto",
                          help="as the run entry's video= (default auto: each model's official routing)")
    estimate.add_argument("--fps", type=float, default=OFFICIAL_FRAMES_PER_SECOND, help="frames kept per second")
    estimate.add_argument("--last-frame", action="store_true", help="also keep the final frame")
    estimate.add_argument("--max-frames", type=int, default=0, help="cap on frames per video (0: none)")
    estimate.add_argument("--max-side", type=int, default=0, help="longest side in pixels (0: native)")
    estimate.add_argument("--prices", metavar="FILE", help="YAML: per model, USD per million input and output "
                          "tokens, e.g. 'openai/gpt-5-mini-2025-08-07: {input: 0.25, output: 2.0}'")
    estimate.add_argument("--output-tokens", type=int, default=DEFAULT_OUTPUT_TOKENS,
                          help=f"assumed output tokens per request (default {DEFAULT_OUTPUT_TOKENS})")
    estimate.add_argument("--reasoning-output-tokens", type=int, default=DEFAULT_REASONING_OUTPUT_TOKENS,
                          help="assumed output tokens per request of OpenAI and Gemini models, which bill reasoning "
                          f"as output (default {DEFAULT_REASONING_OUTPUT_TOKENS})")
    estimate.add_argument("--csv", metavar="FILE", help="also write the table as CSV")
    estimate.add_argument("--local-path", default="prod_env", help="helm-run's --local-path (default prod_env)")
    estimate.set_defaults(handler=_estimate)


def _estimate(args: argparse.Namespace) -> int:
    from helm_roboreward.helm_frontend.plugin import load_registries
    from helm_roboreward.model_tools.catalog import csv_text, format_text_table
    from helm_roboreward.model_tools.cost_estimate import (
        COLUMNS,
        NOTES,
        NUMERIC_COLUMNS,
        RowMedia,
        estimate_model,
        limit_message,
        plan_models,
    )
    from helm_roboreward.model_tools.media_plan import FramesPlan, ModelPlan, VideoFacts, frames_plan, video_facts
    from helm_roboreward.model_tools.prices import price_of, read_prices

    if args.output_tokens < 0 or args.reasoning_output_tokens < 0:
        raise ValueError("--output-tokens and --reasoning-output-tokens must be >= 0")
    options = FrameOptions(frames_per_second=args.fps, include_last_frame=args.last_frame,
                           max_frames=args.max_frames, max_side=args.max_side)
    prices = read_prices(args.prices) if args.prices else None
    load_registries(args.local_path)
    plans = plan_models(args.model, args.subset, args.data, args.revision, args.video, options)
    if prices is not None:
        for plan in plans:
            price_of(prices, plan.model, args.prices)
    subsets = None if args.subset == "all" else [args.subset]
    source = resolve_data_source(args.data, args.revision, subsets)
    rollouts = load_rollouts(source.root, subsets, source.description, source.trusted_root)
    facts = {path: video_facts(path, os.path.getsize(path)) for path in dict.fromkeys(r.video_path for r in rollouts)}
    rows = [RowMedia(r.row.subset, r.row.line, build_prompt(r.row.task), facts[r.video_path]) for r in rollouts]
    frames: dict[tuple[str, FrameOptions], FramesPlan] = {}

    def frames_of(video: VideoFacts, plan: ModelPlan) -> FramesPlan:
        key = (video.path, plan.frame_options)
        if key not in frames:
            frames[key] = frames_plan(video, plan.frame_options)
        return frames[key]

    lines = []
    for plan in plans:
        output = args.reasoning_output_tokens if plan.reasoning else args.output_tokens
        price = price_of(prices, plan.model, args.prices) if prices is not None else None
        lines += estimate_model(plan, rows, frames_of, output, price)
    print(f"roboreward estimate: {source.description} (revision {source.revision}), {len(rows)} rows; nothing sent")
    print(format_text_table(COLUMNS, [line.cells(grouped=True) for line in lines], right_aligned=NUMERIC_COLUMNS))
    for plan in plans:
        print(f"  {plan.model}: {plan.deployment} ({plan.client.rsplit('.', 1)[-1]}), video={plan.video_mode}, "
              f"max_tokens {plan.max_tokens:,}; limits: {plan.request_limits.describe()}")
        over = limit_message(plan, rows, frames_of)
        if over:
            print(f"    over the limits: {over}")
    for note in NOTES:
        print(f"  {note}")
    if not prices:
        print("  cost_usd: give --prices FILE (USD per million tokens per model) for costs.")
    if args.csv:
        write_atomically(args.csv, csv_text(COLUMNS, [line.cells(grouped=False) for line in lines]).encode("utf-8"))
        print(f"  wrote {args.csv}")
    return 0


def _models(args: argparse.Namespace) -> int:
    from helm_roboreward.helm_frontend.plugin import load_registries
    from helm_roboreward.model_tools.catalog import COLUMNS, catalog, csv_text, format_text_table

    load_registries(args.local_path)
    if args.group:
        from helm_roboreward.model_tools.catalog import entry_for, models_in_group

        names = models_in_group(args.group)
        if args.names:
            print(" ".join(names))
            return 0
        entries = [entry_for(name) for name in names]
    elif args.names:
        raise ValueError("--names needs --group (leaderboard, all or baselines)")
    else:
        entries = catalog(args.local_path, include_all=args.all)
    if args.csv:
        sys.stdout.write(csv_text(COLUMNS, [entry.cells(short_client=False) for entry in entries]))
        return 0
    print(format_text_table(COLUMNS, [entry.cells() for entry in entries], right_aligned=("max_tokens",)))
    print(f"\n{len(entries)} models (--local-path {args.local_path}). media: what video=auto sends; "
          "credentials: the credentials.conf key the client needs.")
    return 0


def _add_model(args: argparse.Namespace) -> int:
    from helm_roboreward.helm_frontend.plugin import load_registries
    from helm_roboreward.model_tools.add_model import NewModel, add_model

    new = NewModel(model=args.model, client=args.client, api_id=args.api_id, base_url=args.base_url,
                   display_name=args.display_name, video=args.video, reasoning_effort=args.reasoning_effort,
                   max_images_per_prompt=args.max_images_per_prompt,
                   max_videos_per_prompt=args.max_videos_per_prompt, max_sequence_length=args.max_sequence_length,
                   timeout_seconds=args.timeout, max_retries=args.max_retries, family=args.family)
    load_registries(args.local_path)
    for line in add_model(new, args.local_path, force=args.force, take_deployment=args.take_deployment):
        print(line)
    return 0


def _files(args: argparse.Namespace) -> int:

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
    try:
        copied, size, problems = export_media(args.output_path, args.suite, args.export_path)
    except ReportError as error:  # --suite given as a path
        print(f"roboreward export-media: {error}", file=sys.stderr)
        return EXIT_USAGE
    print(f"roboreward export-media: {copied} files ({size:,} bytes) copied into {args.export_path}/benchmark_output")
    for problem in problems:
        print(f"  {problem}", file=sys.stderr)
    return EXIT_FAILURES if problems else 0


def _leaderboard(args: argparse.Namespace) -> int:

    return leaderboard_main(["--suite", args.suite, "--output-path", args.output_path])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``roboreward`` command; returns the exit status."""
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
        # A command that keeps nothing of an interrupted run says so with its parser's interrupted= default.
        said = getattr(args, "interrupted", "interrupted; finished videos stay cached, rerun to continue.")
        print(f"roboreward {args.command}: {said}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
