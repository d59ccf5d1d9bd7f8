"""Fingerprint what a user of helm-roboreward sees, as one deterministic JSON file (for refactors that move modules).

It uses only HELM's public API, the ``helm-run`` / ``helm-summarize`` / ``roboreward`` commands and the files they
write: it never imports a ``helm_roboreward`` module by path (modules move; ``import helm_roboreward`` and HELM's
``helm`` entry-point loading are all it relies on). Sections of the JSON:

- ``run_specs``: the RunSpec HELM builds (``run_entries_to_run_specs``, as ``helm-run`` does) for README's
  ``helm-run`` commands and ``roboreward:`` entries, every ``run_specs/*.conf`` entry, the subsets conf with every
  model ``roboreward models --group all`` names, and this package's models on other benchmarks; each as
  ``dataclasses.asdict`` plus its class. Built in a fresh interpreter loading HELM as ``helm-run`` from the
  checkout does (built-in configs, ``prod_env/``, ``helm`` entry points); errors are recorded as their message.
- ``other_benchmarks``: other benchmarks' run specs (model groups, named models, a named deployment) built
  without the plugin (HELM's built-in configs only, no entry points), and whether they are identical with the plugin
  loaded (without and with ``prod_env/``); ``helm_registries``: the same check for HELM's run expanders, model
  metadata, default deployments, deployments and tokenizers (what changed, field by field), and in full what the
  plugin adds.
- ``roboreward_files``: what ``roboreward files`` writes (YAML parsed, the rest as text) and whether the checkout's
  copies equal it.
- ``demo``: the offline demo cold, in ``OUT`` (``helm-run`` on ``run_specs/roboreward_sample.conf`` with the
  offline baselines, ``-m 1000``; ``helm-summarize`` with the summarizer ``scripts/demo`` names; ``roboreward
  leaderboard``; ``roboreward report``): per run its run_spec, scenario, stats and per-instance stats (floats
  rounded to 1e-9), every request state (prompt text, each media object with the SHA-256 of the file it points to,
  the answer), the display files; the SHA-256 of every file under ``benchmark_output/scenarios`` (frames, mp4 copies,
  data records); the summarized suite (group tables, schema, run specs); the leaderboard text and the macro MAE per
  model; the report's text files and the SHA-256 of its plots.

Dropped because they change from run to run: request timings (``request_time``, ``request_datetime``), the date in
``summary.json``, the logs, and in the media cache's stamps (``verified.json``: name -> [inode, size, mtime_ns,
ctime_ns]) all but the size. Absolute paths are replaced by ``<out>`` (the output folder), ``<repo>`` (the checkout
that ``import helm_roboreward`` resolves to) and ``<venv>``.

``--class-map OLD=NEW[,OLD=NEW...]`` (repeatable) rewrites dotted class/module prefixes OLD into NEW, on name
boundaries, in every string and key (their ``/`` file-path form too, e.g. scenario.json's ``definition_path``), so
that a moved class path compares equal. Usage (from the checkout; the base checkout via PYTHONPATH)::

    PYTHONPATH=/tmp/base .venv/bin/python scripts/output_fingerprint.py /tmp/fp_base --json /tmp/fp_base.json
    .venv/bin/python scripts/output_fingerprint.py /tmp/fp_head --json /tmp/fp_head.json
    .venv/bin/python scripts/output_fingerprint.py --compare /tmp/fp_base.json /tmp/fp_head.json \
        --class-map OLD_MODULE=NEW_MODULE,OLD_MODULE.OldClass=NEW_MODULE.NewClass

``--compare`` applies the class map to both files (once), prints every differing JSON path and exits 1 if any
differ. Given when fingerprinting, the map is applied to that fingerprint before it is written.
``OUT`` must be absent or empty (a cold run: no frame cache, no request cache).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

SUITE = "demo"
SAMPLE_CONF = "run_specs/roboreward_sample.conf"
OTHER_BENCHMARKS = (
    "mmlu:subject=anatomy,model=openai/gpt-4o-2024-05-13",
    "mmlu:subject=anatomy,model=text",
    "mmlu:subject=anatomy,model=all",
    "gsm:model=openai/gpt-4o-2024-05-13",
    "gsm:model=openai/gpt-5-mini-2025-08-07",
    "msr_vtt:model=openai/gpt-4o-2024-05-13",
    "msr_vtt:model=vlm",
    "mmmu:subject=Accounting,question_type=multiple-choice,model=vlm",
    "mmmu:subject=Accounting,question_type=multiple-choice,model=google/gemini-2.5-pro",
    "mmmu:subject=Accounting,question_type=multiple-choice,model=qwen/qwen2.5-vl-7b-instruct",
    "mmmu:subject=Accounting,question_type=multiple-choice,model_deployment=huggingface/qwen2.5-vl-7b-instruct,"
    "model=qwen/qwen2.5-vl-7b-instruct",
    "vqa:model=openai/gpt-4o-2024-05-13",
)
"""Other benchmarks (text, video, image; model groups, named models, a named deployment): HELM builds them offline."""
OUR_MODELS_ELSEWHERE = (
    "mmmu:subject=Accounting,question_type=multiple-choice,model=teetone/roboreward-8b",
    "mmmu:subject=Accounting,question_type=multiple-choice,model_deployment=transformers/roboreward-8b,"
    "model=teetone/roboreward-8b",
    "synthetic_reasoning:mode=pattern_match,model=baseline/constant-3",
)
"""This package's models on other benchmarks (README, "Choosing models"): built with the plugin only."""
DROPPED_KEYS = frozenset({"request_time", "request_datetime"})
"""Keys dropped anywhere in run files: timings that change from run to run."""
ROUND_DIGITS = 9
STAMP_SUFFIX = "verified.json"
"""The media cache's stamps (``verified.json``, ``<copy>.verified.json``): name -> [inode, size, mtime_ns, ctime_ns]."""


# ---------------------------------------------------------------------------------------------------------------
# Normalisation: paths, class maps, floats, canonical JSON
# ---------------------------------------------------------------------------------------------------------------


def parse_class_map(values: Iterable[str]) -> list[tuple[str, str]]:
    """``OLD=NEW`` pairs from comma-separated flag values, longest OLD first."""
    pairs = []
    for value in values:
        for item in filter(None, (part.strip() for part in value.split(","))):
            old, separator, new = item.partition("=")
            if not separator or not old or not new:
                raise SystemExit(f"output_fingerprint: --class-map item {item!r} is not OLD=NEW")
            pairs.append((old, new))
    return sorted(pairs, key=lambda pair: -len(pair[0]))


def class_mapper(pairs: list[tuple[str, str]]) -> Callable[[str], str]:
    """A function rewriting each OLD prefix (dotted, and its ``/`` path form) into NEW, on name boundaries."""
    rules = []
    for old, new in pairs:
        for source, target in ((old, new), (old.replace(".", "/"), new.replace(".", "/"))):
            rules.append((re.compile(r"(?<![\w.])" + re.escape(source) + r"(?![\w])"), target))

    def apply(text: str) -> str:
        for pattern, target in rules:
            text = pattern.sub(target, text)
        return text

    return apply


def normalise(value: Any, text: Callable[[str], str]) -> Any:
    """Apply ``text`` to every string (keys too), round floats, drop timing keys; returns a new structure."""
    if isinstance(value, dict):
        return {text(str(key)): normalise(item, text) for key, item in value.items() if key not in DROPPED_KEYS}
    if isinstance(value, (list, tuple)):
        return [normalise(item, text) for item in value]
    if isinstance(value, str):
        return text(value)
    if isinstance(value, float):
        rounded = round(value, ROUND_DIGITS)
        return 0.0 if rounded == 0 else rounded
    return value


def path_replacer(replacements: dict[str, str]) -> Callable[[str], str]:
    """Replace absolute paths (longest first) by their placeholders."""
    ordered = sorted(((path, name) for path, name in replacements.items() if path), key=lambda item: -len(item[0]))

    def apply(text: str) -> str:
        for path, name in ordered:
            if path in text:
                text = text.replace(path, name)
        return text

    return apply


def stamp_sizes(content: Any) -> Any:
    """A cache stamp without the inode and times it records (new on every cold run): name -> size."""
    if not isinstance(content, dict):
        return content
    return {name: value[1] if isinstance(value, list) and len(value) == 4 else value
            for name, value in content.items()}


def canonical(value: Any) -> str:
    """Sorted-key, ASCII JSON: the form hashed and written."""
    return json.dumps(value, sort_keys=True, ensure_ascii=True, indent=1, default=str)


def sha256_file(path: Path) -> str:
    """SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_text(text: str) -> str:
    """SHA-256 of a text's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_json(path: Path) -> Any:
    """A JSON file's content."""
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


# ---------------------------------------------------------------------------------------------------------------
# Run specs, built in a fresh interpreter (worker mode of this script)
# ---------------------------------------------------------------------------------------------------------------


def _spec_record(spec: Any) -> dict[str, Any]:
    return {"type": f"{type(spec).__module__}.{type(spec).__qualname__}", "spec": dataclasses.asdict(spec)}


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def build_run_specs(job: dict[str, Any]) -> list[dict[str, Any]] | dict[str, str]:
    """One helm-run's run specs (``entries``, ``models_to_run``, ``max_eval_instances``), or its error.

    When the whole set fails (helm-run would stop), each entry (and each model) is built alone, so the record says
    which one fails and why.
    """
    from helm.benchmark.presentation.run_entry import RunEntry  # noqa: TID251
    from helm.benchmark.run import run_entries_to_run_specs  # noqa: TID251

    def build(entries: list[RunEntry], models: list[str] | None) -> list[dict[str, Any]]:
        specs = run_entries_to_run_specs(run_entries=entries, max_eval_instances=job.get("max_eval_instances"),
                                         models_to_run=models)
        return [_spec_record(spec) for spec in specs]

    entries = [RunEntry(description=entry["description"], priority=entry.get("priority", 1),
                        groups=entry.get("groups")) for entry in job["entries"]]
    models = job.get("models_to_run")
    try:
        return build(entries, models)
    except Exception as error:  # recorded: an entry that fails is what a user sees
        whole = _error_text(error)
    parts: list[dict[str, Any]] = []
    for entry in entries:
        for model in models or [None]:
            try:
                parts += build([entry], [model] if model else None)
            except Exception as error:
                parts.append({"entry": entry.description, "model": model, "error": _error_text(error)})
    return [{"error_of_the_whole_set": whole}, *parts]


def _registries() -> dict[str, Any]:
    from helm.benchmark.model_deployment_registry import (  # noqa: TID251
        ALL_MODEL_DEPLOYMENTS,
        get_default_model_deployment_for_model,
    )
    from helm.benchmark.model_metadata_registry import ALL_MODELS_METADATA  # noqa: TID251
    from helm.benchmark.run_expander import RUN_EXPANDERS  # noqa: TID251
    from helm.benchmark.tokenizer_config_registry import ALL_TOKENIZER_CONFIGS  # noqa: TID251

    return {
        "expanders": {key: f"{value.__module__}.{value.__qualname__}" for key, value in RUN_EXPANDERS.items()},
        "models": {model.name: dataclasses.asdict(model) for model in ALL_MODELS_METADATA},
        "default_deployments": {model.name: get_default_model_deployment_for_model(model.name)
                                for model in ALL_MODELS_METADATA},
        "deployments": {deployment.name: dataclasses.asdict(deployment) for deployment in ALL_MODEL_DEPLOYMENTS},
        "tokenizers": {config.name: dataclasses.asdict(config) for config in ALL_TOKENIZER_CONFIGS},
    }


def worker(mode: str, job_path: str, result_path: str) -> None:
    """Load HELM as helm-run does (``stock``: built-ins only; ``plugin``: + entry points; ``checkout``: + the
    checkout's ``prod_env/`` before them, as helm-run from the checkout), build the job's run specs, write JSON."""
    from helm.benchmark.config_registry import (  # noqa: TID251
        register_builtin_configs_from_helm_package,
        register_configs_from_directory,
    )
    from helm.benchmark.run import import_user_plugins, load_entry_point_plugins  # noqa: TID251
    from helm.benchmark.run_spec import get_run_spec_function  # noqa: TID251
    from helm.benchmark.runner import set_benchmark_output_path  # noqa: TID251

    job = read_json(Path(job_path))
    register_builtin_configs_from_helm_package()
    helm_only = _registries()
    plugins: list[str] = []
    if mode == "checkout":
        register_configs_from_directory(job["local_path"])
    if mode in ("plugin", "checkout"):
        modules = load_entry_point_plugins() + import_user_plugins(job["plugins"])  # helm-run's order
        plugins = sorted({getattr(module, "__name__", repr(module)) for module in modules})
    os.makedirs(job["output_path"], exist_ok=True)
    set_benchmark_output_path(job["output_path"])
    package_file = None
    if mode != "stock":  # stock HELM: not even the package's top level is imported
        import helm_roboreward

        package_file = str(Path(helm_roboreward.__file__).resolve())
    result: dict[str, Any] = {
        "package_file": package_file,
        "plugins_loaded": plugins,
        "roboreward_run_spec_function": get_run_spec_function("roboreward") is not None,
        "sets": {name: build_run_specs(one) for name, one in job["sets"].items()},
    }
    after = _registries()
    result["registries_of_helm"] = {
        section: {name: value for name, value in after[section].items() if name in helm_only[section]}
        for section in after}
    result["registries_added"] = {
        section: {name: value for name, value in after[section].items() if name not in helm_only[section]}
        for section in after}
    with open(result_path, "w", encoding="utf-8") as handle:
        handle.write(canonical(result))


def registry_changes(stock: dict[str, Any], loaded: dict[str, Any]) -> dict[str, Any]:
    """Per registry section, the entries HELM ships that loading the plugin changed: field -> [stock, loaded]."""
    changes: dict[str, Any] = {}
    for section, entries in stock.items():
        for name, value in entries.items():
            other = loaded[section].get(name)
            if other == value:
                continue
            if isinstance(value, dict) and isinstance(other, dict):
                fields = {key: [value.get(key), other.get(key)] for key in sorted(set(value) | set(other))
                          if value.get(key) != other.get(key)}
            else:
                fields = {"": [value, other]}
            changes.setdefault(section, {})[name] = fields
    return changes


# ---------------------------------------------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------------------------------------------


class Fingerprinter:
    """Runs everything in ``out`` for the checkout ``repo`` and collects the fingerprint."""

    def __init__(self, out: Path, repo: Path, class_map: list[tuple[str, str]], max_eval_instances: int,
                 summarizer: str | None = None, plugins: list[str] | None = None) -> None:
        self.out, self.repo, self.max_eval_instances, self.summarizer = out, repo, max_eval_instances, summarizer
        self.plugins = plugins or []
        self.bin = Path(sys.executable).parent
        self.logs = out / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        paths = path_replacer({str(out): "<out>", str(repo): "<repo>", sys.prefix: "<venv>",
                               os.path.realpath(sys.prefix): "<venv>"})
        classes = class_mapper(class_map)
        self.text = lambda value: classes(paths(value))
        self.environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        self.timings: dict[str, float] = {}
        self.outputs: dict[str, str] = {}

    def clean(self, value: Any) -> Any:
        """Paths and class map applied, floats rounded, timings dropped."""
        return normalise(value, self.text)

    def command(self, name: str, arguments: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
        """Run a console script of this venv in ``cwd``, its output logged under ``out/logs``; fail loudly."""
        started = time.perf_counter()
        done = subprocess.run([str(self.bin / arguments[0]), *arguments[1:]], cwd=cwd, env=self.environment,
                              capture_output=True, text=True)
        self.timings[name] = round(time.perf_counter() - started, 1)
        (self.logs / f"{name}.log").write_text(f"$ {shlex.join(arguments)}\n{done.stdout}\n{done.stderr}")
        self.outputs[name] = f"$ {shlex.join(arguments)}\n{done.stdout}"
        if done.returncode != 0:
            sys.exit(f"output_fingerprint: {name} failed (exit {done.returncode}), log: {self.logs}/{name}.log\n"
                     f"{done.stderr[-3000:]}")
        return done

    # -- run specs ------------------------------------------------------------------------------------------------

    def readme_jobs(self) -> dict[str, dict[str, Any]]:
        """README's helm-run commands (as a user types them) and its inline ``roboreward:`` entries."""
        readme = (self.repo / "README.md").read_text(encoding="utf-8")
        jobs: dict[str, dict[str, Any]] = {}
        for block in re.findall(r"```bash\n(.*?)```", readme, flags=re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.split("  #")[0].strip()
                if line.startswith("helm-run "):
                    jobs[f"README: {line}"] = self.helm_run_job(line)
        inline = sorted(set(re.findall(r"`(roboreward:[^`\s]*)`", readme)) |
                        set(re.findall(r"--run-entries (roboreward:\S+)", readme)))
        for entry in (entry for entry in inline if "model=" in entry):  # helm-run refuses the others up front
            jobs[f"README inline: {entry}"] = {"entries": [{"description": entry}]}
        return jobs

    def helm_run_job(self, line: str) -> dict[str, Any]:
        """The run entries, models and ``-m`` of a helm-run command line (``$(roboreward models ...)`` evaluated)."""
        for substitution in re.findall(r"\$\(([^)]*)\)", line):
            words = shlex.split(substitution)
            done = self.command("roboreward-models", words, self.out)
            line = line.replace(f"$({substitution})", " ".join(done.stdout.split()))
        words = shlex.split(line)[1:]
        job: dict[str, Any] = {"entries": []}
        flag = None
        for word in words:
            if word.startswith("-"):
                flag = word
                continue
            if flag == "--run-entries":
                job["entries"].append({"description": word})
            elif flag == "--conf-paths":
                job["entries"] += self.conf_entries(self.repo / word)
            elif flag == "--models-to-run":
                job.setdefault("models_to_run", []).append(word)
            elif flag in ("-m", "--max-eval-instances"):
                job["max_eval_instances"] = int(word)
        return job

    def conf_entries(self, path: Path) -> list[dict[str, Any]]:
        """A conf file's entries, read by HELM's own reader."""
        from helm.benchmark.presentation.run_entry import read_run_entries  # noqa: TID251

        return [{"description": entry.description, "priority": entry.priority, "groups": entry.groups}
                for entry in read_run_entries([str(path)]).entries]

    def run_spec_jobs(self) -> dict[str, dict[str, Any]]:
        """Every roboreward run-spec set: README's, each conf file's, the subsets for every model."""
        jobs = self.readme_jobs()
        for conf in sorted((self.repo / "run_specs").glob("*.conf")):
            entries = self.conf_entries(conf)
            if all("model=" in entry["description"] for entry in entries):  # else helm-run needs --models-to-run
                jobs[f"conf: run_specs/{conf.name}"] = {"entries": entries,
                                                        "max_eval_instances": self.max_eval_instances}
        models = self.command("roboreward-models", ["roboreward", "models", "--group", "all", "--names"], self.out)
        jobs["conf: run_specs/roboreward_subsets.conf --models-to-run $(roboreward models --group all --names)"] = {
            "entries": self.conf_entries(self.repo / "run_specs" / "roboreward_subsets.conf"),
            "models_to_run": models.stdout.split(), "max_eval_instances": self.max_eval_instances}
        for entry in OUR_MODELS_ELSEWHERE:
            jobs[f"our model elsewhere: {entry}"] = {"entries": [{"description": entry}]}
        return jobs

    def run_worker(self, mode: str, sets: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """The worker's result for ``mode`` (a fresh interpreter, this script's worker mode)."""
        folder = self.out / "run_spec_builds" / mode
        folder.mkdir(parents=True, exist_ok=True)
        job = {"sets": sets, "local_path": str(self.repo / "prod_env"), "output_path": str(folder / "benchmark_output"),
               "plugins": self.plugins}
        (folder / "job.json").write_text(canonical(job), encoding="utf-8")
        started = time.perf_counter()
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", mode, str(folder / "job.json"),
                   str(folder / "result.json")]
        done = subprocess.run(command, cwd=folder, env=self.environment, capture_output=True, text=True)
        self.timings[f"run specs ({mode})"] = round(time.perf_counter() - started, 1)
        (self.logs / f"run_specs_{mode}.log").write_text(done.stdout + "\n" + done.stderr)
        if done.returncode != 0:
            sys.exit(f"output_fingerprint: run-spec worker {mode} failed:\n{done.stderr[-3000:]}")
        result: dict[str, Any] = read_json(folder / "result.json")
        if mode != "stock" and not Path(result["package_file"]).is_relative_to(self.repo):
            sys.exit(f"output_fingerprint: the worker imported {result['package_file']}, not {self.repo}")
        if mode != "stock" and not result["roboreward_run_spec_function"]:
            sys.exit(f"output_fingerprint: HELM's `helm` entry points did not register the roboreward run spec (log: "
                     f"{self.logs}/run_specs_{mode}.log). Installed from another checkout? Pass --plugins MODULE "
                     f"(the checkout's plugin module, as helm-run --plugins)")
        return result

    def run_specs(self) -> dict[str, Any]:
        """The ``run_specs``, ``other_benchmarks`` and ``helm_registries`` sections."""
        ours = self.run_spec_jobs()
        others = {entry: {"entries": [{"description": entry}]} for entry in OTHER_BENCHMARKS}
        stock = self.run_worker("stock", others)
        plugin = self.run_worker("plugin", {**others, **ours})
        checkout = self.run_worker("checkout", {**others, **ours})
        with_plugin = {"plugin (helm entry points, no prod_env)": plugin,
                       "checkout (prod_env + entry points)": checkout}
        other_section: dict[str, Any] = {"stock": {entry: stock["sets"][entry] for entry in OTHER_BENCHMARKS},
                                         "identical_with_plugin": {}, "differing_with_plugin": {}}
        registries: dict[str, Any] = {"stock_sha256": sha256_text(canonical(stock["registries_of_helm"])),
                                      "identical_with_plugin": {}, "changed_by_plugin": {}, "added_by_plugin": {}}
        for mode, result in with_plugin.items():
            same = {entry: result["sets"][entry] == stock["sets"][entry] for entry in OTHER_BENCHMARKS}
            other_section["identical_with_plugin"][mode] = same
            other_section["differing_with_plugin"][mode] = {entry: result["sets"][entry] for entry, equal in
                                                            same.items() if not equal}
            registries["identical_with_plugin"][mode] = {
                section: result["registries_of_helm"][section] == stock["registries_of_helm"][section]
                for section in stock["registries_of_helm"]}
            registries["changed_by_plugin"][mode] = registry_changes(stock["registries_of_helm"],
                                                                     result["registries_of_helm"])
            registries["added_by_plugin"][mode] = result["registries_added"]
            registries["added_by_plugin"][mode + " plugins loaded"] = result["plugins_loaded"]
            registries["added_by_plugin"][mode + " roboreward run spec registered"] = (
                result["roboreward_run_spec_function"])
        identical = all(all(flags.values()) for flags in other_section["identical_with_plugin"].values())
        registries_identical = all(all(flags.values()) for flags in registries["identical_with_plugin"].values())
        specs = {"checkout (prod_env + entry points)": {name: checkout["sets"][name] for name in ours},
                 "identical without prod_env (entry points only)": {
                     name: plugin["sets"][name] == checkout["sets"][name] for name in ours}}
        counts = {name: len(checkout["sets"][name]) for name in ours}
        print(f"run specs: {sum(counts.values())} roboreward/our-model specs in {len(ours)} sets; other benchmarks' "
              f"run specs {'identical' if identical else 'DIFFER'} with and without the plugin; HELM's registries "
              f"{'identical' if registries_identical else 'changed (helm_registries.changed_by_plugin)'}",
              file=sys.stderr)
        return {"run_specs": specs, "other_benchmarks": other_section, "helm_registries": registries,
                "other_benchmarks_run_specs_identical": identical, "helm_registries_identical": registries_identical}

    # -- roboreward files ---------------------------------------------------------------------------------------------

    def roboreward_files(self) -> dict[str, Any]:
        """What ``roboreward files`` writes, parsed, and whether the checkout's copies are the same bytes."""
        import yaml

        target = self.out / "roboreward_files"
        self.command("roboreward-files", ["roboreward", "files", "--out", str(target)], self.out)
        files: dict[str, Any] = {}
        for path in sorted(p for p in target.rglob("*") if p.is_file()):
            name = path.relative_to(target).as_posix()
            text = path.read_text(encoding="utf-8")
            content = yaml.safe_load(text) if path.suffix in (".yaml", ".yml") else text
            checked_in = self.repo / name
            same = checked_in.is_file() and checked_in.read_bytes() == path.read_bytes()
            files[name] = {"content": content, "checkout_copy_identical": same}
        return files

    # -- the demo -------------------------------------------------------------------------------------------------

    def summarizer_class(self) -> str:
        """The summarizer class given with ``--summarizer-class-name``, else the one ``scripts/demo`` passes."""
        if self.summarizer:
            return self.summarizer
        demo = self.repo / "scripts" / "demo"
        found = re.search(r"--summarizer-class-name\s+(\S+)", demo.read_text()) if demo.is_file() else None
        if not found:
            sys.exit(f"output_fingerprint: {demo} names no --summarizer-class-name; give --summarizer-class-name")
        return found.group(1)

    def run_demo(self) -> None:
        """helm-run, helm-summarize, roboreward leaderboard and report: as scripts/demo, cold, in ``out``."""
        prod_env = self.out / "prod_env"
        prod_env.mkdir()
        for source in sorted((self.repo / "prod_env").glob("*.yaml")):
            shutil.copyfile(source, prod_env / source.name)
        self.command("helm-run", ["helm-run", "--conf-paths", str(self.repo / SAMPLE_CONF), "--suite", SUITE,
                                  "-m", str(self.max_eval_instances), "--local-path", "prod_env",
                                  "--output-path", "benchmark_output",
                                  *(["--plugins", *self.plugins] if self.plugins else [])], self.out)
        self.command("helm-summarize", [
            "helm-summarize", "--suite", SUITE, "--schema-path", str(self.repo / "static" / "schema_roboreward.yaml"),
            "--schema-validation", "error", "--local-path", "prod_env", "--output-path", "benchmark_output",
            "--num-threads", "1", "--summarizer-class-name", self.summarizer_class()], self.out)
        self.command("roboreward-leaderboard", ["roboreward", "leaderboard", "--suite", SUITE,
                                                "--output-path", "benchmark_output"], self.out)
        self.command("roboreward-report", ["roboreward", "report", "--suite", SUITE, "--output-path",
                                           "benchmark_output", "--local-path", "prod_env", "--out", "demo_report"],
                     self.out)

    def media_object(self, media: dict[str, Any]) -> dict[str, Any]:
        """A media object with the SHA-256 of what it points to (a file, resolved as helm-run's cwd did, or text)."""
        record = dict(media)
        location = media.get("location")
        if location:
            path = Path(location) if os.path.isabs(location) else self.out / location
            record["sha256"] = sha256_file(path) if path.is_file() else None
            record["bytes"] = path.stat().st_size if path.is_file() else None
        if media.get("text") is not None:
            record["text_sha256"] = sha256_text(media["text"])
        return record

    def with_media_hashes(self, value: Any) -> Any:
        """Every media object in a structure, hashed (:meth:`media_object`)."""
        if isinstance(value, dict):
            if "content_type" in value and ("location" in value or "text" in value):
                return self.media_object(value)
            return {key: self.with_media_hashes(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.with_media_hashes(item) for item in value]
        return value

    @staticmethod
    def stat_key(name: dict[str, Any]) -> str:
        """``name`` plus its split, sub-split and perturbation: one string per HELM stat."""
        rest = {key: value for key, value in name.items() if key != "name" and value is not None}
        return name["name"] + ("" if not rest else " " + json.dumps(rest, sort_keys=True))

    def stats(self, stats: list[dict[str, Any]]) -> dict[str, Any]:
        """HELM stats keyed by :meth:`stat_key`, every number they carry."""
        return {self.stat_key(stat["name"]): {key: value for key, value in stat.items() if key != "name"}
                for stat in stats}

    def run_record(self, run: Path) -> dict[str, Any]:
        """One run folder: run spec, scenario, stats, per-instance stats, request states, display files."""
        record: dict[str, Any] = {"files": sorted(p.name for p in run.iterdir())}
        record["run_spec"] = read_json(run / "run_spec.json")
        record["scenario"] = read_json(run / "scenario.json")
        if str(self.repo) not in record["scenario"].get("definition_path", str(self.repo)):
            sys.exit(f"output_fingerprint: helm-run loaded the scenario from another checkout: "
                     f"{record['scenario']['definition_path']} (expected {self.repo}; check PYTHONPATH)")
        record["stats"] = self.stats(read_json(run / "stats.json"))
        per_instance = {}
        for item in read_json(run / "per_instance_stats.json"):
            key = f"{item['instance_id']} trial {item['train_trial_index']}"
            if item.get("perturbation"):
                key += " " + json.dumps(item["perturbation"], sort_keys=True)
            per_instance[key] = self.stats(item["stats"])
        record["per_instance_stats"] = per_instance
        state = read_json(run / "scenario_state.json")
        record["adapter_spec"] = state["adapter_spec"]
        record["request_states"] = [self.with_media_hashes(one) for one in state["request_states"]]
        record["display_predictions"] = read_json(run / "display_predictions.json")
        record["display_requests"] = self.with_media_hashes(read_json(run / "display_requests.json"))
        record["instances"] = self.with_media_hashes(read_json(run / "instances.json"))
        return record

    def files_hashed(self, folder: Path) -> dict[str, str]:
        """Relative path -> SHA-256 of every file under ``folder`` (cache stamps: :func:`stamp_sizes`)."""
        return {path.relative_to(folder).as_posix(): sha256_file(path) for path in sorted(folder.rglob("*"))
                if path.is_file() and not path.name.endswith(STAMP_SUFFIX)}

    def scenario_records(self, folder: Path) -> dict[str, Any]:
        """Every JSON file under ``folder``; cache stamps reduced to the sizes they record."""
        records = {}
        for path in sorted(folder.rglob("*.json")):
            content = read_json(path)
            records[path.relative_to(folder).as_posix()] = (
                stamp_sizes(content) if path.name.endswith(STAMP_SUFFIX) else content)
        return records

    def macro_mae(self, suite: Path) -> dict[str, Any]:
        """The leaderboard's mean (macro MAE) per model, from the sample group's first table."""
        tables = read_json(suite / "groups" / "roboreward_sample.json")
        table = tables[0]
        header = [column.get("value") for column in table["header"]]
        return {"table": table.get("title"), "columns": header,
                "rows": {str(row[0].get("value")): [cell.get("value") for cell in row[1:]] for row in table["rows"]}}

    def demo(self) -> dict[str, Any]:
        """The ``demo`` section (runs the demo first)."""
        self.run_demo()
        output = self.out / "benchmark_output"
        suite = output / "runs" / SUITE
        runs = sorted(path for path in suite.iterdir() if path.is_dir() and (path / "run_spec.json").is_file())
        summary = read_json(suite / "summary.json")
        summary.pop("date", None)
        suite_files = {}
        for path in sorted(suite.rglob("*")):
            name = path.relative_to(suite).as_posix()
            if not path.is_file() or name.split("/")[0] in {run.name for run in runs} or name == "summary.json":
                continue
            suite_files[name] = read_json(path) if path.suffix == ".json" else path.read_text(encoding="utf-8")
        suite_files["summary.json"] = summary
        report = self.out / "demo_report"
        report_files = {path.name: (sha256_file(path) if path.suffix in (".png", ".pdf", ".svg")
                                    else path.read_text(encoding="utf-8"))
                        for path in sorted(report.iterdir()) if path.is_file()}
        scenario_files = output / "scenarios"
        return {
            "command_lines": {name: self.outputs[name].split("\n", 1)[0].split(" --plugins ")[0] for name in
                              ("helm-run", "helm-summarize", "roboreward-leaderboard", "roboreward-report")},
            "macro_mae": self.macro_mae(suite),
            "leaderboard_text": self.outputs["roboreward-leaderboard"].split("\n", 1)[1],
            "report_text": self.outputs["roboreward-report"].split("\n", 1)[1],
            "runs": {run.name: self.run_record(run) for run in runs},
            "media_sha256": self.files_hashed(scenario_files),
            "scenario_records": self.scenario_records(scenario_files),
            "scenario_instances_sha256": self.files_hashed(output / "scenario_instances"),
            "suite": suite_files,
            "report": report_files,
        }

    def fingerprint(self, run_specs: bool, demo: bool) -> dict[str, Any]:
        """Every section asked for, normalised."""
        result: dict[str, Any] = {"format": 1}
        if demo:
            started = time.perf_counter()
            result["demo"] = self.demo()
            self.timings["demo (all)"] = round(time.perf_counter() - started, 1)
            result["roboreward_files"] = self.roboreward_files()
        if run_specs:
            result.update(self.run_specs())
        return self.clean(result)


# ---------------------------------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------------------------------


def differences(a: Any, b: Any, where: str = "$") -> Iterable[str]:
    """JSON paths where ``a`` and ``b`` differ (a short description of each)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a:
                yield f"{where}[{key!r}]: only in the second"
            elif key not in b:
                yield f"{where}[{key!r}]: only in the first"
            else:
                yield from differences(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from differences(x, y, f"{where}[{index}]")
    elif a != b:
        shown = [json.dumps(value, sort_keys=True)[:200] for value in (a, b)]
        yield f"{where}: {shown[0]} != {shown[1]}"


def compare(first: Path, second: Path, class_map: list[tuple[str, str]], limit: int) -> int:
    """Print where two fingerprints differ (class map applied to both); 0 when identical."""
    mapper = class_mapper(class_map)
    a, b = (normalise(read_json(path), mapper) for path in (first, second))
    found = list(differences(a, b))
    for line in found[:limit]:
        print(line)
    if len(found) > limit:
        print(f"... and {len(found) - limit} more")
    print(f"{len(found)} difference(s) between {first} and {second}")
    return 1 if found else 0


def main() -> int:
    """Parse the command line and fingerprint, compare or (internally) build run specs."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?", type=Path, help="output folder (absent or empty): the demo runs here")
    parser.add_argument("--json", type=Path, help="the fingerprint file (default: OUT/fingerprint.json)")
    parser.add_argument("--repo", type=Path, help="the checkout (default: where `import helm_roboreward` resolves)")
    parser.add_argument("--class-map", action="append", default=[], metavar="OLD=NEW[,OLD=NEW...]",
                        help="rewrite class/module path prefixes OLD into NEW everywhere (repeatable)")
    parser.add_argument("-m", "--max-eval-instances", type=int, default=1000)
    parser.add_argument("--plugins", nargs="+", default=[], metavar="MODULE",
                        help="also import these plugin modules, as helm-run --plugins (for a checkout other than the "
                        "one the venv's `helm` entry point names); not in the fingerprint's command lines")
    parser.add_argument("--summarizer-class-name", help="helm-summarize's summarizer (default: the one scripts/demo "
                        "of the checkout passes)")
    parser.add_argument("--no-demo", action="store_true", help="skip the demo section (and roboreward files)")
    parser.add_argument("--no-run-specs", action="store_true", help="skip the run-spec sections")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A.json", "B.json"),
                        help="compare two fingerprints instead (class map applied to both)")
    parser.add_argument("--limit", type=int, default=200, help="--compare: differences printed at most")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    options = parser.parse_args()
    class_map = parse_class_map(options.class_map)
    if options.worker:
        worker(*options.worker)
        return 0
    if options.compare:
        return compare(*options.compare, class_map, options.limit)
    if options.out is None:
        parser.error("OUT is required (or --compare A B)")
    import helm_roboreward

    package_root = Path(helm_roboreward.__file__).resolve().parents[1]
    repo = (options.repo or package_root).resolve()
    if package_root != repo:
        parser.error(f"`import helm_roboreward` resolves to {package_root}, not --repo {repo} (set PYTHONPATH)")
    out = options.out.resolve()
    if out.exists() and any(out.iterdir()):
        parser.error(f"{out} is not empty: give a new folder (the demo must run cold)")
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    printer = Fingerprinter(out, repo, class_map, options.max_eval_instances, options.summarizer_class_name,
                            options.plugins)
    print(f"fingerprinting {repo} (helm_roboreward from {helm_roboreward.__file__}) into {out}", file=sys.stderr)
    result = printer.fingerprint(run_specs=not options.no_run_specs, demo=not options.no_demo)
    target = options.json or out / "fingerprint.json"
    target.write_text(canonical(result) + "\n", encoding="utf-8")
    if "demo" in result:
        for model, values in result["demo"]["macro_mae"]["rows"].items():
            print(f"  {model}: macro MAE {values[0]}", file=sys.stderr)
    timings = ", ".join(f"{name} {seconds} s" for name, seconds in printer.timings.items())
    print(f"wrote {target} ({target.stat().st_size:,} bytes) in {time.perf_counter() - started:.1f} s "
          f"({timings})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
