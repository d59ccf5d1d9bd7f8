"""``roboreward publish --suite S [--inspect-log PATH]``: the Hub's eval results per model, eval.yaml, pull requests.

It first writes the suite's manifest (:mod:`.manifest`), so that what is published and its fingerprint agree.
A row that is not comparable with the published leaderboard (:mod:`.comparability`) is refused, with its
reasons, unless ``--allow-not-comparable``; then its ``notes`` say why. Runs that later runs of the same row and
settings supersede are named in one line (and in the manifest). Bad input (``--suite`` not a plain folder name,
``--source-url`` not one https address, run files that disagree) prints one line and exits 2; a refused row exits
2 after the others are written; a failed pull request exits 1.
"""

import argparse
import os
import re
import sys
import unicodedata
from urllib.parse import urlsplit

from helm_roboreward.helm_frontend.run_rows import ReportError, Run, Superseded
from helm_roboreward.protocol.safe_files import write_atomically
from helm_roboreward.results.publish.comparability import PUBLISHED_METADATA_SHA256
from helm_roboreward.results.publish.eval_results import (
    DEFAULT_SOURCE_NAME,
    EVAL_RESULTS_FILE,
    EVAL_YAML_FILE,
    check_eval_results,
    eval_results_entries,
    eval_results_yaml,
    eval_yaml_text,
    missing_inspect_ai_fields,
)
from helm_roboreward.results.publish.evidence import SuiteFacts, suite_facts
from helm_roboreward.results.publish.hub_prs import (
    PublishError,
    deployment_repos,
    open_pull_request,
    parse_hub_repos,
    repo_of,
)
from helm_roboreward.results.publish.manifest import MANIFEST_FILE, write_manifest
from helm_roboreward.results.report.model_names import model_display_names
from helm_roboreward.results.report.report_command import LogReader, add_inspect_log_option, read_runs

EXIT_FAILED_PR = 1
EXIT_BAD_INPUT = 2
BASELINE_CLIENTS = "helm_roboreward.helm_frontend.clients.baselines."
"""The module of the offline baselines' clients (they have no weights, so no Hub repo)."""


def add_publish_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``roboreward publish``."""
    parser.add_argument("--suite", help="the helm-run suite to publish (optional with --inspect-log)")
    add_inspect_log_option(parser)
    parser.add_argument("--output-path", default="benchmark_output", help="helm-run's -o (default benchmark_output)")
    parser.add_argument("--out", required=True, help="folder for <model>/.eval_results/roboreward_bench.yaml and "
                                                     "the proposed eval.yaml")
    parser.add_argument("--source-url", required=True,
                        help="where the traces are (e.g. a Hub dataset holding the suite's run folders): each "
                             "result's source.url")
    parser.add_argument("--source-name", default=None, help="the source's display name (default: helm-roboreward "
                                                            "traces)")
    parser.add_argument("--allow-not-comparable", action="store_true",
                        help="also write rows that are not comparable with the published leaderboard (their notes "
                             "say why)")
    parser.add_argument("--open-pr", action="store_true",
                        help="open one pull request per model repo on the Hub (HF_TOKEN; HF_ENDPOINT for another hub)")
    parser.add_argument("--hub-repo", action="append", default=[], metavar="MODEL=REPO",
                        help="the Hub model repo of a model whose deployment names none (repeatable)")
    parser.add_argument("--local-path", default="prod_env",
                        help="HELM's --local-path: display names and deployments (default prod_env)")
    parser.add_argument("--hf-cache", default=None,
                        help="the Hugging Face cache the data=hf runs used (default: HF_HUB_CACHE)")


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name.replace("/", "__")).strip("._") or "model"


def check_source_url(url: str) -> str:
    """``url`` when it is one well-formed https address (no whitespace or control characters), else PublishError."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        host = None
    clean = not any(character.isspace() or unicodedata.category(character).startswith("C") for character in url)
    if not (clean and host and url.startswith("https://")):
        raise PublishError(f"--source-url {url!r}: give one https:// address of the traces (e.g. "
                           "https://huggingface.co/datasets/<org>/<name>), with no spaces or control characters")
    return url


def superseded_line(superseded: list[Superseded]) -> str:
    """One line naming every run that a later run of the same row and settings supersedes."""
    runs = "; ".join(f"{item.run} (by {item.by}: {', '.join(item.subsets)})" for item in superseded)
    return f"{len(superseded)} superseded run{'' if len(superseded) == 1 else 's'}, in no number: {runs}"


def _no_repo_line(facts: SuiteFacts, deployment: str, model: str) -> str:
    client = next((item.client_class for item in facts.deployments if item.name == deployment), None) or ""
    if client.startswith(BASELINE_CLIENTS) or model.startswith("baseline/"):
        return "no Hub model repo (an offline baseline: it has no weights to hold results): listed, not pushed"
    return ("no Hub model repo (an API model, or name its repo with --hub-repo MODEL=REPO): listed, not pushed")


def run_publish(args: argparse.Namespace, published_sha256: str | None = None,
                read_log: LogReader | None = None) -> int:
    """Run ``roboreward publish``; returns the exit status (message on stderr for bad input).

    Args:
        args: The parsed options of :func:`add_publish_options`.
        published_sha256: The published metadata hash the rule compares with (None: the recorded one; tests pass
            their copy's own: a hash cannot be forged, so no option offers this).
        read_log: Reads one ``--inspect-log`` into a run (the command line passes it).
    """
    try:
        check_source_url(str(args.source_url))
        logged = read_runs(args, read_log)
        return _publish(args, published_sha256, logged)
    except (ReportError, PublishError) as error:
        print(f"roboreward publish: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as error:
        print(f"roboreward publish: cannot write: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _publish(args: argparse.Namespace, published_sha256: str | None, logged: list[Run]) -> int:

    named = parse_hub_repos(args.hub_repo)
    facts = suite_facts(args.output_path, args.suite, model_display_names(args.local_path),
                        published_sha256 or PUBLISHED_METADATA_SHA256, args.hf_cache, args.local_path, logged)
    # Inspect logs alone have no suite folder: their manifest goes into --out.
    os.makedirs(args.out, exist_ok=True)
    manifest = write_manifest(facts, None if args.suite is not None else os.path.join(args.out, MANIFEST_FILE))
    print(f"roboreward publish: {'suite ' + args.suite if args.suite else f'{len(logged)} Inspect log(s)'}: "
          f"manifest {manifest}")
    if facts.superseded:
        print(f"roboreward publish: {superseded_line(facts.superseded)}")
    text = eval_yaml_text()
    write_atomically(os.path.join(args.out, EVAL_YAML_FILE), text.encode("utf-8"))
    by_deployment = deployment_repos(args.local_path)
    refused = failed = 0
    folders: set[str] = set()
    for model in facts.models:
        repo = repo_of(model.model, model.deployment, named, by_deployment)
        print(f"  {model.display_name} ({model.deployment}): {model.verdict.line}")
        if not model.verdict.comparable and not args.allow_not_comparable:
            refused += 1
            print("    refused: not comparable (pass --allow-not-comparable to publish it with these reasons)")
            continue
        results = eval_results_yaml(eval_results_entries(model, facts.suite, args.source_url,
                                                         args.source_name or DEFAULT_SOURCE_NAME))
        problems = check_eval_results(results)
        if problems:  # the writer and the checker read the same documented format: this is a bug
            raise PublishError(f"the results of {model.key} do not follow the Hub's format: {'; '.join(problems)}")
        folder = _slug(repo or model.key)
        if folder in folders:  # one model on two deployments: one file each, both named
            folder = f"{folder}@{_slug(model.deployment)}"
        folders.add(folder)
        path = os.path.join(args.out, folder, EVAL_RESULTS_FILE)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_atomically(path, results.encode("utf-8"))
        print(f"    wrote {path}")
        if repo is None:
            print(f"    {_no_repo_line(facts, model.deployment, model.model)}")
        elif args.open_pr:
            pull = open_pull_request(repo, results, model.verdict.line, os.environ.get("HF_ENDPOINT") or None)
            failed += pull.error is not None
            print(f"    pull request on {repo}: {pull.url}" if pull.error is None else f"    {pull.error}")
        else:
            print(f"    Hub model repo {repo}: --open-pr opens a pull request there")
    missing = "" if not missing_inspect_ai_fields(text) else (
        "; without inspect-ai's field_spec, solvers and scorers, which no values of can make run this video "
        "benchmark: its header says what the Hub's specification lacks")
    print(f"  proposed dataset eval.yaml: {os.path.join(args.out, EVAL_YAML_FILE)} (evaluation_framework "
          f"inspect-ai{missing})")
    if refused:
        print(f"roboreward publish: {refused} row(s) refused as not comparable; nothing was written for them",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_FAILED_PR if failed else 0
