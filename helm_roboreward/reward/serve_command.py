"""``roboreward serve``: its arguments (argparse only, so building the CLI's parser stays cheap) and its handler."""

import argparse
import math
import os
import sys

from helm_roboreward.reward.api import RewardModel
from helm_roboreward.reward.worker_processes import machine_cores

SERVE_EXTRA = "pip install '.[serve]' from a checkout of helm-roboreward"
DEFAULT_CONCURRENCY = 8
NUMBERS = {  # option: (whole number, lowest, highest, lowest allowed itself, what it counts, default)
    "--port": (True, 0, 65535, True, "0: any free port", "8100"),
    "--max-concurrency": (True, 1, 1024, True, "model requests in flight", str(DEFAULT_CONCURRENCY)),
    "--max-queue": (True, 0, 100_000, True, "items waiting", "64"),
    "--max-body-mb": (False, 0, 65536, False, "MiB", "256"),
    "--body-timeout": (False, 0, 3600, False, "seconds", "30"),
    "--workers": (True, 1, 256, True, "worker processes", str(machine_cores())),
}
"""Every numeric option's range, checked in one place (:func:`checked_numbers`) before anything is loaded."""


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
    _add_number(parser, "--port", "port (0: any free port, shown when it listens)")
    parser.add_argument("--token-file", help="file holding a bearer token (mode 600); requests then need "
                        "'Authorization: Bearer <token>'")
    parser.add_argument("--allowed-root", help="accept video paths under this folder (default: no paths)")
    _add_number(parser, "--max-concurrency", "model requests in flight")
    _add_number(parser, "--max-queue", "items waiting beyond those; more get 503 with Retry-After")
    _add_number(parser, "--max-body-mb", "request body limit in MiB; a larger body gets 413")
    _add_number(parser, "--body-timeout", "seconds a request body may pause; then the request gets 408")
    _add_number(parser, "--workers", "processes serving the port, forked once the model is built (default: this "
                "machine's cores); --max-concurrency applies to each, --max-queue and the 503 to all together")
    parser.set_defaults(handler=run_serve, interrupted="stopped (answers already given stay in HELM's cache)")


def _add_number(parser: argparse.ArgumentParser, option: str, meaning: str) -> None:
    parser.add_argument(option, default=NUMBERS[option][5], help=f"{meaning}: {_allowed(option)} (default "
                        f"{NUMBERS[option][5]})")


def _allowed(option: str) -> str:
    """``a whole number in [1, 1024]``: what the option takes."""
    whole, lowest, highest, closed, _, _ = NUMBERS[option]
    return f"{'a whole number' if whole else 'a number'} in {'[' if closed else '('}{lowest}, {highest}]"


def checked_numbers(args: argparse.Namespace) -> dict[str, float]:
    """Each numeric option as a number (keyed by its ``args`` name); ValueError, one line, for one out of range."""
    numbers: dict[str, float] = {}
    for option, (whole, lowest, highest, closed, meaning, default) in NUMBERS.items():
        name = option[2:].replace("-", "_")
        text = str(getattr(args, name)).strip()
        try:
            value = int(text) if whole else float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and (lowest <= value if closed else lowest < value) and value <= highest):
            raise ValueError(f"{option} {text}: must be {_allowed(option)} ({meaning}), e.g. {option} {default}")
        numbers[name] = value
    return numbers


def say(line: str) -> None:
    """A progress line on stderr, at once."""
    print(f"roboreward serve: {line}", file=sys.stderr, flush=True)


def run_serve(args: argparse.Namespace) -> int:
    """Check the options, bind and token, build the model (a missing credential fails here), then serve."""
    numbers = checked_numbers(args)
    say(f"loading {args.model} ({args.deployment or 'its default deployment'}): the server, HELM's registries, "
        "the model's client")
    try:
        from helm_roboreward.reward import server
    except ImportError as error:
        print(f"roboreward serve: {error.name or error} is not installed: {SERVE_EXTRA}", file=sys.stderr)
        return 2

    limits = server.ServerLimits(max_concurrency=int(numbers["max_concurrency"]), max_queue=int(numbers["max_queue"]),
                                 max_body_bytes=max(1, int(numbers["max_body_mb"] * server.MEBIBYTE)),
                                 body_timeout_seconds=numbers["body_timeout"])
    token = server.read_token_file(args.token_file) if args.token_file else None
    server.check_bind(args.host, token)
    if args.allowed_root is not None and not os.path.isdir(args.allowed_root):
        raise ValueError(f"--allowed-root {args.allowed_root} is not a folder")
    model = RewardModel(args.model, args.deployment, args.local_path, args.options, args.media_dir,
                        cache=not args.no_cache)
    server.serve(model, args.host, int(numbers["port"]), limits, args.allowed_root, token,
                 workers=int(numbers["workers"]))
    return 0
