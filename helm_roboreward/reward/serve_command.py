"""``roboreward serve``: its arguments (argparse only, so building the CLI's parser stays cheap) and its handler."""

import argparse
import os
import sys

from helm_roboreward.reward.api import RewardModel

SERVE_EXTRA = "pip install 'helm-roboreward[serve]'"
DEFAULT_CONCURRENCY = 8


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``serve`` subcommand's arguments and handler."""
    parser.add_argument("--model", required=True, help="a model a run entry accepts (model=<org/name>)")
    parser.add_argument("--deployment", help="its model deployment (default: the one helm-run would pick)")
    parser.add_argument("--local-path", default="prod_env",
                        help="helm-run's --local-path: model files, credentials.conf, the request cache")
    parser.add_argument("--options", default="", help="run-entry options that change the official defaults, "
                        "e.g. 'video=frames,max_frames=16' (video, fps, last_frame, max_frames, max_side, layout, "
                        "decoding, score)")
    parser.add_argument("--media-dir", help="where prepared media live (default <local-path>/roboreward_media)")
    parser.add_argument("--no-cache", action="store_true", help="do not use HELM's request cache")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; any other "
                        "needs --token-file)")
    parser.add_argument("--port", type=int, default=8100, help="port (default 8100)")
    parser.add_argument("--token-file", help="file holding a bearer token (mode 600); requests then need "
                        "'Authorization: Bearer <token>'")
    parser.add_argument("--allowed-root", help="accept video paths under this folder (default: no paths)")
    parser.add_argument("--max-concurrency", type=int, default=DEFAULT_CONCURRENCY,
                        help=f"model requests in flight (default {DEFAULT_CONCURRENCY})")
    parser.add_argument("--max-queue", type=int, default=64,
                        help="items waiting beyond those; more get 503 with Retry-After (default 64)")
    parser.add_argument("--max-body-mb", type=float, default=256.0, help="request body limit in MiB (default 256)")
    parser.set_defaults(handler=run_serve, interrupted="stopped (answers already given stay in HELM's cache)")


def run_serve(args: argparse.Namespace) -> int:
    """Check the bind and token, build the model (a missing credential fails here), then serve."""
    try:
        from helm_roboreward.reward import server
    except ImportError as error:
        print(f"roboreward serve: {error.name or error} is not installed: {SERVE_EXTRA}", file=sys.stderr)
        return 2

    limits = server.ServerLimits(max_concurrency=args.max_concurrency, max_queue=args.max_queue,
                                 max_body_bytes=int(args.max_body_mb * server.MEBIBYTE))
    token = server.read_token_file(args.token_file) if args.token_file else None
    server.check_bind(args.host, token)
    if args.allowed_root is not None and not os.path.isdir(args.allowed_root):
        raise ValueError(f"--allowed-root {args.allowed_root} is not a folder")
    model = RewardModel(args.model, args.deployment, args.local_path, args.options, args.media_dir,
                        cache=not args.no_cache)
    print(f"roboreward serve: {model.model} via {model.deployment} ({model.settings['video']}) on "
          f"http://{args.host}:{args.port}", file=sys.stderr)
    server.serve(model, args.host, args.port, limits, args.allowed_root, token)
    return 0
