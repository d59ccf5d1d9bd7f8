"""The ``roboreward import-lerobot``, ``label`` and ``export-predictions`` subcommands (docs/own_robot_data.md)."""

import argparse
import os
import sys
from collections.abc import Callable

from helm_roboreward.robot_data.episode_clips import DEFAULT_CRF
from helm_roboreward.robot_data.hub_source import fetch_hub_dataset
from helm_roboreward.robot_data.importing import ImportRequest, describe_source, import_lerobot
from helm_roboreward.robot_data.labelling import FORMATS, RABC_FORMAT, LabelRequest, label_episodes
from helm_roboreward.robot_data.labels import LABEL_SOURCES
from helm_roboreward.robot_data.lerobot_format import metadata_fingerprint, read_info
from helm_roboreward.robot_data.predictions_export import export_predictions

EnsureFiles = Callable[[list[str]], None]
INTERRUPTED = {
    "import-lerobot": "interrupted; nothing was written (the partly built copy was removed), rerun to import",
    "label": "interrupted; the requests not yet answered were abandoned. What finished is kept: the working copy "
             "once imported, and every answer received, in HELM's request cache (--local-path); rerun to continue "
             "(the outputs are written once every episode is scored)",
    "export-predictions": "interrupted; --out is written whole or not at all, and the hub dataset changes only "
                          "when its one commit completes; rerun to export",
}
"""What ``roboreward`` says on Ctrl-C for each command (``interrupted=`` of its parser, read by ``cli.main``)."""


def _add_source_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", nargs="?", metavar="SRC", help="a local LeRobot dataset root (holding meta/)")
    parser.add_argument("--repo-id", help="a LeRobot dataset on the Hugging Face hub, org/name (instead of SRC)")
    parser.add_argument("--revision", default="main", help="hub revision for --repo-id (default main)")
    parser.add_argument("--camera", help="the video key (default: the only one)")
    parser.add_argument("--subset", help="the subset name of the copy (default: from the dataset name)")
    parser.add_argument("--episodes", help="episodes to take, e.g. 0:200,305 (ranges are half-open)")
    parser.add_argument("--crf", type=int, default=DEFAULT_CRF, help=f"x264 quality (default {DEFAULT_CRF})")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def add_robot_data_commands(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Register the three subcommands."""
    imports = commands.add_parser(
        "import-lerobot", help="import a LeRobot dataset (v2.1 / v3.0) as a labelled local copy",
        description="Write a LeRobot dataset's episodes as a local copy in the benchmark layout (DIR/test/...), one "
        "H.264 mp4 per episode, with labels from a file or next.success; run it with data=DIR.")
    _add_source_options(imports)
    imports.add_argument("--out", required=True, help="the copy's folder (new or empty)")
    imports.add_argument("--labels", help="JSON Lines or CSV: episode_index, reward 1..5[, task]")
    imports.add_argument("--labels-from", choices=LABEL_SOURCES,
                         help="5 when the episode's last frame succeeded, else 1 (coarse)")
    imports.set_defaults(handler=_import, interrupted=INTERRUPTED["import-lerobot"])
    label = commands.add_parser(
        "label", help="score every episode of a LeRobot dataset with any model, through the reward API",
        description="Score episodes with a model, each by the request helm-run would send for it (HELM's clients, "
        "request cache and retries, -n at a time, in this process), and write episode_rewards.parquet (and, with "
        "--mode prefix, LeRobot's per-frame progress parquet; with --format frame-signals, LeRobot's frame-signal "
        "parquet).")
    _add_source_options(label)
    label.add_argument("--model", required=True, help="a model name, as in model= of a run entry")
    label.add_argument("--model-deployment", help="a deployment, as in model_deployment= of a run entry")
    label.add_argument("--out", required=True, help="the folder for the outputs")
    label.add_argument("--mode", choices=["episode", "prefix"], default="episode",
                       help="episode: one score per episode; prefix: also K prefix clips for per-frame progress")
    label.add_argument("--anchors", type=int, default=0, help="prefix mode: clips [0, t_k] at K end times")
    label.add_argument("--format", choices=FORMATS, default=RABC_FORMAT,
                       help="per-frame file: rabc (LeRobot 0.4's RA-BC progress parquet, prefix mode), frame-signals "
                       "(LeRobot's frame-signal parquet, schema v1, either mode) or both (default rabc)")
    label.add_argument("--low-score", type=float, help="list episodes scored at or below this")
    label.add_argument("-n", "--threads", type=int, default=4, help="requests at a time, as helm-run -n (default 4)")
    label.add_argument("--local-path", default="prod_env",
                       help="helm-run's --local-path: credentials, model files, request cache (default prod_env)")
    label.add_argument("--work", help="working folder: the copy and the media (default OUT/work)")
    label.add_argument("--entry-options", default="",
                       help="run-entry options that change the official defaults, e.g. video=frames,max_frames=16")
    label.set_defaults(handler=_label, interrupted=INTERRUPTED["label"])
    export = commands.add_parser(
        "export-predictions", help="write a suite's predictions as a datasets dataset (parquet, disk or hub)",
        description="Every prediction of a suite's RoboReward runs (model, subset, row key, task, gold, raw answer, "
        "parsed score, error, run settings) as a Hugging Face datasets dataset.")
    export.add_argument("--suite", required=True)
    export.add_argument("--output-path", default="benchmark_output", help="helm-run's -o (default benchmark_output)")
    export.add_argument("--out", help="a parquet file, or a folder with --format disk")
    export.add_argument("--format", choices=["parquet", "disk"], default="parquet")
    export.add_argument("--push-to-hub", metavar="ORG/NAME", help="also push to this hub dataset (HF_TOKEN)")
    export.add_argument("--private", action="store_true", help="create the hub dataset private")
    export.add_argument("--include-media", action="store_true", help="embed the frames/videos sent (large)")
    export.set_defaults(handler=_export, interrupted=INTERRUPTED["export-predictions"])


def _source(args: argparse.Namespace) -> tuple[str, dict[str, str], EnsureFiles | None]:
    if bool(args.source) == bool(args.repo_id):
        raise ValueError("give either SRC (a local LeRobot dataset folder) or --repo-id ORG/NAME")
    if args.repo_id:
        hub = fetch_hub_dataset(args.repo_id, args.revision)
        return hub.root, hub.source, hub.ensure
    root = os.path.abspath(args.source)
    fingerprint = metadata_fingerprint(read_info(root))
    return root, {"kind": "local", "path": root, "resolved_revision": f"local-{fingerprint}"}, None


def _request(args: argparse.Namespace, out: str, root: str, source: dict[str, str]) -> ImportRequest:
    return ImportRequest(root=root, out=out, source=source, camera=args.camera, subset=args.subset,
                         episodes=args.episodes, labels_file=getattr(args, "labels", None),
                         labels_from=getattr(args, "labels_from", None), crf=args.crf)


def _import(args: argparse.Namespace) -> int:

    root, source, ensure = _source(args)
    result = import_lerobot(_request(args, args.out, root, source), ensure, progress=not args.quiet)
    labels = result.provenance.get("labels", {})
    state = "already up to date" if result.reused else f"written in {result.seconds:.1f} s"
    print(f"roboreward import-lerobot: {describe_source(source)} -> {result.out} ({state})")
    print(f"  subset {result.subset}: {len(result.rows)} episodes, camera {result.provenance['camera']['key']}, "
          f"labels from {labels.get('source')}")
    if labels.get("coarse"):
        print(f"  COARSE LABELS: {labels.get('note')}")
    print("  next: helm-run -r roboreward:data=" + result.out + f",subset={result.subset},model=<model> --suite <s> "
          f"-m {len(result.rows)}")
    print(f"        roboreward files --data {result.out} --force   (a schema that covers subset {result.subset})")
    return 0


def _label(args: argparse.Namespace) -> int:

    root, source, ensure = _source(args)
    request = LabelRequest(dataset=_request(args, "", root, source), out=args.out, model=args.model,
                           deployment=args.model_deployment, mode=args.mode, anchors=args.anchors,
                           low_score=args.low_score, threads=args.threads, local_path=args.local_path,
                           work=args.work, entry_options=args.entry_options, format=args.format,
                           progress=not args.quiet)
    result = label_episodes(request, ensure)
    scored = [item for item in result.scores if item.reward.score is not None]
    print(f"roboreward label: {len(result.scores)} episodes of {describe_source(source)} scored by {args.model} "
          f"({len(scored)} parsed, {len(result.scores) - len(scored)} without a score); {result.requests} requests, "
          f"{result.cached} answered from the request cache")
    if result.failed:
        print(f"roboreward label: warning: {result.failed} of {result.requests} requests failed (first: "
              f"{result.first_error}); their rows have no score (request_failed in episode_rewards.parquet). Rerun "
              "the same command to send them again: the answered ones come from the cache", file=sys.stderr)
    print("  seconds: " + ", ".join(f"{part} {value:.1f}" for part, value in result.seconds.items()))
    for path in result.files:
        print(f"  wrote {path}")
    for path in result.removed:
        print(f"  removed {path} (an earlier run's; this run does not write it)")
    if args.low_score is not None:
        print(f"  {len(result.low_score_episodes)} episode(s) scored <= {args.low_score:g}")
    return 0


def _export(args: argparse.Namespace) -> int:

    result = export_predictions(args.output_path, args.suite, args.out, args.format, args.push_to_hub,
                                args.private, args.include_media)
    print(f"roboreward export-predictions: {result.count} predictions of suite {args.suite} -> "
          f"{'; '.join(result.where)}")
    for folder in result.unfinished:
        print(f"roboreward export-predictions: warning: run {os.path.basename(folder)} is not in the export: it has "
              "no scenario_state.json (helm-run failed on it, or is still running it); rerun it, then export again",
              file=sys.stderr)
    return 0
