"""How much of the package a reviewer must read to trust a default run: modules and lines loaded, by package.

Runs README's default ``helm-run`` in a fresh process (the constant baseline on one subset of the bundled sample,
``roboreward:subset=sim_panda,data=sample,model=baseline/constant-3``), then imports the two clients of the
official path (the vLLM video client and the in-process Qwen3-VL client) and lists every module of
``helm_roboreward`` in ``sys.modules``, with its lines (``wc -l``). Prints one table per stage, by package, and
the totals. The goal (issue "The protocol you can read"): at most 2,500 lines with both official clients. It also
prints the integrity modules those clients load with their first request (``FIRST_REQUEST_MODULES``), and the total
with them.

    python benchmarks/official_path_size.py                  # this checkout
    python benchmarks/official_path_size.py --checkout DIR   # another checkout (e.g. a git worktree of main~N)
    python benchmarks/official_path_size.py --modules        # also every module with its lines
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENTRY = "roboreward:subset=sim_panda,data=sample,model=baseline/constant-3"
OFFICIAL_CLIENTS = ("helm_roboreward.helm_frontend.clients.openai_video_client",
                    "helm_roboreward.helm_frontend.clients.transformers_client")
GOAL_LINES = 2500
# Integrity code the official clients import with their first request, not at import: not in the goal's count
# (a default run imports the clients but sends them nothing), printed beside it.
FIRST_REQUEST_MODULES = {
    "helm_roboreward.helm_frontend.clients.chat_replies": "the reply check every vLLM reply passes (fresh or cached)",
    "helm_roboreward.helm_frontend.clients.transformers_client": "what every in-process generation records",
}

# Runs inside the measured process: helm-run as its console script does, then the loaded package modules.
_PROBE = r"""
import json, sys
from helm.benchmark.run import main

def package_modules():
    found = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if (name == "helm_roboreward" or name.startswith("helm_roboreward.")) and path:
            with open(path, "rb") as handle:
                found[name] = handle.read().count(b"\n")
    return found

clients = json.loads(sys.argv[2])
sys.argv = ["helm-run", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit as stop:
    if stop.code not in (None, 0):
        raise
run = package_modules()
for client in clients:
    __import__(client)
with open(OUT, "w") as out:
    json.dump({"run": run, "clients": package_modules()}, out)
"""


def measure(checkout: Path, work: Path) -> dict[str, dict[str, int]]:
    """Modules and lines loaded after the run, and after importing the official clients too."""
    result = work / "modules.json"
    arguments = ["--run-entries", ENTRY, "--suite", "size", "-m", "1000", "--output-path",
                 str(work / "benchmark_output"), "--local-path", str(work / "prod_env")]
    probe = _PROBE.replace("OUT", repr(str(result)))
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                   "PYTHONPATH": os.pathsep.join(filter(None, [str(checkout), os.environ.get("PYTHONPATH", "")]))}
    done = subprocess.run([sys.executable, "-c", probe, json.dumps(arguments), json.dumps(OFFICIAL_CLIENTS)],
                          cwd=work, env=environment, capture_output=True, text=True)
    if done.returncode != 0 or not result.exists():
        sys.exit(f"helm-run failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    loaded: dict[str, dict[str, int]] = json.loads(result.read_text(encoding="utf-8"))
    return loaded


def package_of(module: str) -> str:
    """``helm_roboreward.protocol.video_decoding`` -> ``media``; top-level modules -> ``(top level)``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else "(top level)"


def table(modules: dict[str, int], title: str) -> list[str]:
    by_package: dict[str, list[int]] = defaultdict(list)
    for name, lines in modules.items():
        by_package[package_of(name)].append(lines)
    rows = [f"{title}", f"  {'package':<24}{'modules':>8}{'lines':>8}"]
    for package, counts in sorted(by_package.items(), key=lambda item: -sum(item[1])):
        rows.append(f"  {package:<24}{len(counts):>8}{sum(counts):>8}")
    rows.append(f"  {'total':<24}{len(modules):>8}{sum(modules.values()):>8}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkout", type=Path, default=REPO, help="the checkout to measure (default: this one)")
    parser.add_argument("--modules", action="store_true", help="also list every module with its lines")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="roboreward-size-") as folder:
        loaded = measure(options.checkout.resolve(), Path(folder))
    print(f"checkout: {options.checkout.resolve()}")
    print(f"run entry: {ENTRY}")
    print("\n".join(table(loaded["run"], "default helm-run")))
    print("\n".join(table(loaded["clients"], "default helm-run + both official clients")))
    if options.modules:
        print("modules (with both official clients):")
        for name, lines in sorted(loaded["clients"].items(), key=lambda item: -item[1]):
            print(f"  {lines:>6}  {name}")
    total = sum(loaded["clients"].values())
    print(f"lines with both official clients: {total} (goal at most {GOAL_LINES}: "
          f"{'met' if total <= GOAL_LINES else f'{total / GOAL_LINES:.2f}x the goal'})")
    first_request = {name: (options.checkout.resolve() / (name.replace(".", "/") + ".py"))
                     for name in FIRST_REQUEST_MODULES if name not in loaded["clients"]}
    counted = {name: path.read_bytes().count(b"\n") for name, path in first_request.items() if path.exists()}
    for name, lines in counted.items():
        print(f"  + {lines:>4}  {name}: {FIRST_REQUEST_MODULES[name]}, loaded with the first request")
    if counted:
        print(f"with a first request through each official client: {total + sum(counted.values())} lines")


if __name__ == "__main__":
    main()
