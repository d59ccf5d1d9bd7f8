"""HELM's Slurm runner on a real (one-node, localhost) Slurm cluster: the same numbers as the local runner.

``scripts/slurm_local_cluster.sh start`` starts munged, slurmctld and slurmd on this machine (CI does it in
``.ci/run``; the test starts it itself when it is not running, and stops it again afterwards). Then, as the README's
cluster recipe says: ``roboreward prepare --data sample`` into the shared ``-o`` folder, and
``helm-run --conf-paths run_specs/roboreward_sample.conf --runner-class-name helm.benchmark.slurm_runner.SlurmRunner``:
one sbatch job per run spec (``python -m helm.benchmark.slurm_runner``), HELM's ``slurm_args`` and monitor interval
from ``<local-path>/runner_config.yaml``. The same conf through the default (local) runner in another folder gives
the reference.

Compared per run: ``stats.json`` and ``per_instance_stats.json`` equal, HELM's timing stats aside
(``inference_runtime``, ``inference_denoised_runtime``, ``inference_idealized_runtime``, ``batch_size``: wall-clock
measurements of HELM's efficiency metric; the RoboReward run specs do not use that metric, so today nothing is
ignored there); ``run_spec.json`` equal but for the ``routing`` record the local runner keeps (what the entry asked
before routing: a field of the package's run spec class, which HELM's Slurm worker reads back as its own
``RunSpec`` and so writes without it) and ``scenario.json`` equal; ``scenario_state.json`` equal but for each result's
``request_time`` (seconds the client took) and ``request_datetime`` (when it answered), the only fields that
differ. The jobs read the prepared frame cache and write no media.

Skipped, with the reason, when ``sbatch`` or HELM's ``simple-slurm`` dependency is missing or the cluster does not
start; with ``ROBOREWARD_REQUIRE_SLURM=1`` (CI) those are failures instead.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.harness import (
    PROD_ENV,
    REPO,
    SAMPLE_CONF,
    check_completed,
    cli,
    helm_environment,
    private_local_path,
    read_json,
)

pytestmark = pytest.mark.slow

SCRIPT = REPO / "scripts" / "slurm_local_cluster.sh"
SLURM_RUNNER = "helm.benchmark.slurm_runner.SlurmRunner"
SUITE = "sample"
TIMING_STATS = frozenset({"inference_runtime", "inference_denoised_runtime", "inference_idealized_runtime",
                          "batch_size"})
TIMING_FIELDS = ("request_time", "request_datetime")
"""The fields of a request's result that measure time: the only ones that differ between the two runners."""
NOT_MEDIA = re.compile(r"(^|/)(verified\.json|[^/]*\.verified\.json)$|^roboreward-data-[^/]*\.json$")
"""Verification stamps, and the dataset provenance files every run writes: not media."""
SLURM_TIMEOUT = 900
REQUIRED = os.environ.get("ROBOREWARD_REQUIRE_SLURM") == "1"


def unavailable(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"{reason} (ROBOREWARD_REQUIRE_SLURM=1: this run must test Slurm)")
    pytest.skip(reason)


def sample_entries() -> list[str]:
    return re.findall(r'description:\s*"([^"]+)"', SAMPLE_CONF.read_text(encoding="utf-8"))


def run_folder_name(entry: str) -> str:
    """The run folder of a sample entry (frames for the baselines, ``/`` in the model written ``_``)."""
    args, model = entry.split(",model=")
    return f"{args},video=frames,model={model.replace('/', '_')}"


def cluster_command(*args: str, timeout: float = 120) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def slurm_conf() -> Any:
    """The running local cluster's slurm.conf (started here, and stopped afterwards, if it was not running)."""
    if shutil.which("sbatch") is None or shutil.which("slurmctld") is None:
        unavailable("Slurm is not installed (no sbatch/slurmctld on PATH): "
                    "apt-get install slurmctld slurmd slurm-client munge")
    try:
        import simple_slurm  # noqa: F401  (HELM's SlurmRunner submits through it: crfm-helm[slurm])
    except ImportError:
        unavailable("HELM's Slurm extra is not installed: pip install 'crfm-helm[slurm]' (simple-slurm)")
    started_here = False
    if cluster_command("status").returncode != 0:
        start = cluster_command("start")
        if start.returncode != 0:
            unavailable(f"the local Slurm cluster did not start:\n{start.stdout[-2000:]}{start.stderr[-4000:]}")
        started_here = True
    exported = cluster_command("env").stdout.strip()
    assert exported.startswith("export SLURM_CONF="), exported
    conf = Path(exported.split("=", 1)[1])
    assert conf.is_file(), conf
    yield conf
    if started_here:
        cluster_command("stop")


@dataclass
class Runs:
    slurm: Path
    """The Slurm run's working folder (benchmark_output/, slurm/, its --local-path local/)."""
    local: Path
    slurm_seconds: float
    local_seconds: float
    media_before: dict[str, tuple[int, int]] = field(default_factory=dict)
    media_after: dict[str, tuple[int, int]] = field(default_factory=dict)

    def runs(self, which: str) -> Path:
        workdir: Path = self.slurm if which == "slurm" else self.local
        return workdir / "benchmark_output" / "runs" / SUITE


def media_state(output: Path) -> dict[str, tuple[int, int]]:
    """Every media file (frames, manifests, native mp4s) and its (size, mtime_ns)."""
    root = output / "scenarios" / "roboreward"
    states = {}
    for path in root.rglob("*"):
        relative = path.relative_to(root).as_posix()
        if path.is_file() and not NOT_MEDIA.search(relative):
            info = path.stat()
            states[relative] = (info.st_size, info.st_mtime_ns)
    return states


@pytest.fixture(scope="module")
def runs(slurm_conf: Path, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tmp_path_factory.mktemp("slurm")
    env = helm_environment()
    env["SLURM_CONF"] = str(slurm_conf)
    conf = ["--conf-paths", str(SAMPLE_CONF), "--suite", SUITE, "-m", "100", "-o", "benchmark_output"]

    local = root / "local-runner"
    local.mkdir()
    started = time.monotonic()
    process = subprocess.run([cli("helm-run"), *conf, "--local-path", str(private_local_path(local / "local"))],
                             cwd=local, env=env, capture_output=True, text=True, timeout=SLURM_TIMEOUT)
    check_completed(process, "helm-run (local runner)")
    local_seconds = time.monotonic() - started

    slurm = root / "slurm-runner"
    slurm.mkdir()
    local_path = private_local_path(slurm / "local")
    shutil.copy(slurm_conf.parent / "runner_config.yaml", local_path / "runner_config.yaml")
    prepare = subprocess.run([cli("roboreward"), "prepare", "--data", "sample", "--output-path", "benchmark_output",
                              "--quiet"], cwd=slurm, env=env, capture_output=True, text=True, timeout=SLURM_TIMEOUT)
    check_completed(prepare, "roboreward prepare")
    before = media_state(slurm / "benchmark_output")
    started = time.monotonic()
    process = subprocess.run([cli("helm-run"), *conf, "--local-path", str(local_path), "--runner-class-name",
                              SLURM_RUNNER], cwd=slurm, env=env, capture_output=True, text=True, timeout=SLURM_TIMEOUT)
    check_completed(process, "helm-run --runner-class-name SlurmRunner")
    slurm_seconds = time.monotonic() - started
    print(f"\n[slurm] local runner {local_seconds:.1f} s, Slurm runner {slurm_seconds:.1f} s")
    after = media_state(slurm / "benchmark_output")
    return Runs(slurm=slurm, local=local, slurm_seconds=slurm_seconds, local_seconds=local_seconds,
                media_before=before, media_after=after)


def worker_jobs(runs: Runs) -> dict[str, Any]:
    [base] = (runs.slurm / "slurm").iterdir()  # HELM's slurm/<start time>/
    return dict(read_json(base / "worker_slurm_jobs.json"))


def without_timing_stats(stats: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [stat for stat in stats if stat["name"]["name"] not in TIMING_STATS]


def without_timing_fields(state: dict[str, Any]) -> dict[str, Any]:
    state = json.loads(json.dumps(state))
    for request_state in state["request_states"]:
        for name in TIMING_FIELDS:
            request_state["result"].pop(name, None)
    return state


def test_every_run_is_one_completed_slurm_job(runs: Runs, slurm_conf: Path) -> None:
    jobs = worker_jobs(runs)
    assert sorted(jobs) == sorted(run_folder_name(entry) for entry in sample_entries())
    assert {job["state"] for job in jobs.values()} == {"COMPLETED"}
    assert len({job["id"] for job in jobs.values()}) == len(jobs)
    [base] = (runs.slurm / "slurm").iterdir()
    for name, job in jobs.items():
        log = (base / "logs" / f"{name}.log").read_text(errors="replace")
        assert "Generated" in log and "stats." in log, f"job {job['id']} ({name}) log:\n{log[-3000:]}"
        # The job ran on the cluster: Slurm still knows it (MinJobAge keeps finished jobs for 10 minutes).
        shown = subprocess.run(["scontrol", "show", "job", str(job["id"])], capture_output=True, text=True,
                               env={**os.environ, "SLURM_CONF": str(slurm_conf)}, timeout=30)
        assert "JobState=COMPLETED" in shown.stdout, shown.stdout + shown.stderr


def test_both_runners_wrote_the_same_runs(runs: Runs) -> None:
    expected = sorted(run_folder_name(entry) for entry in sample_entries())
    assert len(expected) == 6
    for which in ("slurm", "local"):
        folders = sorted(p.name for p in runs.runs(which).iterdir() if (p / "run_spec.json").exists())
        assert folders == expected, which


@pytest.mark.parametrize("run", sorted(run_folder_name(entry) for entry in sample_entries()))
def test_stats_equal_the_local_runners(runs: Runs, run: str) -> None:
    slurm, local = runs.runs("slurm") / run, runs.runs("local") / run
    for name in ("stats.json", "per_instance_stats.json"):
        ours, theirs = read_json(slurm / name), read_json(local / name)
        if name == "stats.json":
            assert ours, "no stats"
            ours, theirs = without_timing_stats(ours), without_timing_stats(theirs)
        else:
            ours = [{**item, "stats": without_timing_stats(item["stats"])} for item in ours]
            theirs = [{**item, "stats": without_timing_stats(item["stats"])} for item in theirs]
        assert ours == theirs, f"{run}: {name} differs between the Slurm and the local runner"
    local_spec = read_json(local / "run_spec.json")
    assert local_spec.pop("routing")["video"] == "auto"  # provenance the Slurm worker does not write back
    assert read_json(slurm / "run_spec.json") == local_spec, f"{run}: run_spec.json"
    assert read_json(slurm / "scenario.json") == read_json(local / "scenario.json"), f"{run}: scenario.json"
    ours_state, theirs_state = read_json(slurm / "scenario_state.json"), read_json(local / "scenario_state.json")
    assert without_timing_fields(ours_state) == without_timing_fields(theirs_state), run


def test_jobs_read_the_prepared_frame_cache(runs: Runs) -> None:
    """``roboreward prepare`` filled the shared cache; the six jobs found every file there and wrote none."""
    assert runs.media_before, "roboreward prepare wrote no media"
    assert runs.media_after == runs.media_before


def test_slurm_part_stays_fast(runs: Runs) -> None:
    """Six jobs on two cores: HELM's start-up (about 5 s of imports) per job dominates; CI budget a few minutes."""
    assert runs.slurm_seconds < 300, f"the Slurm run took {runs.slurm_seconds:.0f} s"


# --- What a Slurm worker knows ------------------------------------------------------------------------------------
# A worker job runs `python -m helm.benchmark.slurm_runner`, which registers HELM's configuration and the
# --local-path YAML but never loads plugins (helm-run's load_entry_point_plugins). What the plugin registers in
# code, the option deployments (`<deployment>-greedy`, `google/<model>-one-message`), reaches the job only because
# the scenario registers it when it is created (run_one creates it before any client); without that (measured on
# the local cluster) a `decoding=greedy` run fails with ModelDeploymentNotFoundError and a `layout=one_message`
# Gemini run goes through HELM's generic Google deployment generator. These tests run the worker's own setup
# without Slurm.

WORKER_PROBE = r"""
import json, sys
from helm.benchmark.config_registry import register_builtin_configs_from_helm_package, register_configs_from_directory
from helm.benchmark.model_deployment_registry import get_model_deployment
register_builtin_configs_from_helm_package()   # what helm.benchmark.slurm_runner.main does, in this order
register_configs_from_directory(sys.argv[1])
from helm.benchmark.scenarios.scenario import ScenarioSpec, create_scenario
create_scenario(ScenarioSpec(class_name="helm_roboreward.helm_frontend.scenario.RoboRewardScenario",
                             args={"subset": "sim_kuka", "data": "sample"}))   # run_one creates the scenario first
names = ["google/gemini-2.5-pro-one-message", "vllm/qwen3-vl-8b-instruct-greedy", "baseline/constant-3"]
found = {}
for name in names:
    try:
        spec = get_model_deployment(name).client_spec
        found[name] = [spec.class_name, sorted(spec.args)]
    except Exception as error:
        found[name] = [type(error).__name__, []]
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def worker_view(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Any]]:
    """What a worker's registry holds, with the package's --local-path."""
    local = tmp_path_factory.mktemp("worker") / "local"
    local.mkdir()
    (local / "model_metadata.yaml").symlink_to(PROD_ENV / "model_metadata.yaml")
    (local / "model_deployments.yaml").symlink_to(PROD_ENV / "model_deployments.yaml")
    probe = subprocess.run([sys.executable, "-c", WORKER_PROBE, str(local)], capture_output=True, text=True,
                           env=helm_environment(), timeout=300)
    check_completed(probe, "worker probe")
    return dict(json.loads(probe.stdout.strip().splitlines()[-1]))


def test_worker_knows_the_option_deployments(worker_view: dict[str, list[Any]]) -> None:
    assert worker_view["google/gemini-2.5-pro-one-message"][0] == (
        "helm_roboreward.helm_frontend.clients.gemini_client.OneMessageGoogleGenAIClient")
    assert worker_view["vllm/qwen3-vl-8b-instruct-greedy"][0].endswith("OpenAIVideoClient")
