"""The ``roboreward`` run spec and the model-aware video routing hooked into HELM's model expander.

Run entry: ``roboreward:subset=<id|all>,data=<hf|sample|path>,revision=<rev>,video=<auto|frames|native>,
fps=<float>,last_frame=<0|1>,max_frames=<int>,max_side=<int>,layout=<official|one_message>,
decoding=<official|greedy>,failed=<max_error|skip>,jobs=<int>,model=<...>``.
Every argument but ``jobs`` (which changes no result) appears in the run name when it is not the default and
changes what runs (frame options for frames only; ``layout``/``decoding`` where the deployment serves them), and
it appears exactly: numbers by :func:`helm_roboreward.media.selection.exact_number`, the revision percent-encoded
(:func:`revision_label`), a local data folder as its name and a hash of its absolute path (:func:`data_label`).
"""

import hashlib
import os
import re
import urllib.parse
from typing import Any

from helm.benchmark.adaptation.adapter_spec import ADAPT_GENERATION_MULTIMODAL, AdapterSpec
from helm.benchmark.metrics.metric import MetricSpec
from helm.benchmark.run_expander import RUN_EXPANDERS, ModelDeploymentRunExpander, ModelRunExpander
from helm.benchmark.run_spec import RunSpec, run_spec_function
from helm.benchmark.scenarios.scenario import ScenarioSpec

from helm_roboreward.core.benchmark import ALL_KNOWN_SUBSETS, DATASET_REVISION, SAMPLE_SUBSET_IDS, subset_group
from helm_roboreward.helm_layer.metrics import DEFAULT_FAILED_POLICY, FAILED_POLICIES, PARSED_SCORE, SCORE_MODES
from helm_roboreward.helm_layer.model_registry import DECODINGS, LAYOUTS, OFFICIAL
from helm_roboreward.helm_layer.routing import (
    AUTO,
    SCENARIO_CLASS,
    VIDEO_MODES,
    resolve_video_routing,
    without_retired,
)
from helm_roboreward.media.selection import OFFICIAL_FRAMES_PER_SECOND, FrameOptions

RUN_SPEC_NAME = "roboreward"
DEFAULT_MAX_TOKENS = 5000
"""docs/protocol.md, section 5; OpenAI and Gemini models get 60,000 more (see routing)."""

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def parse_flag(name: str, value: str | int | float | bool) -> bool:
    """Run entries have no booleans: accept 0/1, true/false, yes/no, on/off."""
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"roboreward: {name}={value!r} is not a flag; use {name}=1 or {name}=0")


def _number(name: str, value: str | int | float, kind: type) -> Any:
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"roboreward: {name}={value!r} is not a valid {kind.__name__}") from None
    if kind is int and float(value) != number:
        raise ValueError(f"roboreward: {name}={value!r} must be a whole number")
    return number


def data_label(data: str) -> str:
    """The ``data`` value as it appears in a run name: local paths become ``<folder>-<hash>`` (no slashes)."""
    if data in ("hf", "sample"):
        return data
    absolute = os.path.abspath(os.path.expanduser(data))
    folder = re.sub(r"[^A-Za-z0-9_.-]+", "_", os.path.basename(absolute.rstrip(os.sep)) or "root")
    return f"{folder}-{hashlib.sha256(absolute.encode('utf-8')).hexdigest()[:8]}"


def revision_label(revision: str) -> str:
    """The ``revision`` value as it appears in a run name: percent-encoded, so it stays one folder and exact.

    Hub revisions may hold slashes (``refs/pr/1``), which would split the run folder; letters, digits and
    ``_.-~`` are kept, so branch, tag and commit names read as given (``v1.0``, ``main``, a sha). The
    encoding is one-to-one (``%`` itself is encoded), so two revisions never share a name.
    """
    return urllib.parse.quote(revision, safe="")


def _check_subset_name(subset: str) -> None:
    """A subset id is a folder name under ``test/``; anything else would move the run folder (its name holds it)."""
    if subset in ("", ".", "..") or any(character in subset for character in "/\\\x00"):
        raise ValueError(
            f"roboreward: subset={subset!r} is not a subset id: give the name of a folder under the data's test/ "
            "folder (no '/', '\\', '.' or '..'), or subset=all"
        )


def _check_subset(subset: str, data: str) -> None:
    if subset == "all" or data not in ("hf", "sample"):
        return  # a local copy may hold other subsets; the scenario checks them against its metadata
    known = SAMPLE_SUBSET_IDS if data == "sample" else [s for s in ALL_KNOWN_SUBSETS if s not in SAMPLE_SUBSET_IDS]
    if subset not in known:
        raise ValueError(
            f"roboreward: subset={subset!r} is not in data={data}. Valid subsets: all, {', '.join(known)}"
        )


@run_spec_function(RUN_SPEC_NAME)
def get_roboreward_spec(
    subset: str = "all",
    data: str = "hf",
    revision: str = DATASET_REVISION,
    video: str = AUTO,
    fps: int | float = OFFICIAL_FRAMES_PER_SECOND,
    last_frame: int | str = 0,
    max_frames: int = 0,
    max_side: int = 0,
    layout: str = OFFICIAL,
    decoding: str = OFFICIAL,
    failed: str = DEFAULT_FAILED_POLICY,
    score: str = PARSED_SCORE,
    jobs: int = 0,
) -> RunSpec:
    """RoboRewardBench: progress score 1..5 for a robot rollout video; mean absolute error per subset."""
    subset, data, revision, video, failed = str(subset), str(data), str(revision), str(video), str(failed)
    if video not in VIDEO_MODES:
        raise ValueError(f"roboreward: video={video!r} is not one of {', '.join(VIDEO_MODES)}")
    if failed not in FAILED_POLICIES:
        raise ValueError(f"roboreward: failed={failed!r} is not one of {', '.join(FAILED_POLICIES)}")
    layout, decoding, score = str(layout), str(decoding), str(score)
    if score not in SCORE_MODES:
        raise ValueError(f"roboreward: score={score!r} is not one of {', '.join(SCORE_MODES)} (official: parsed; "
                         "expected: expected-score rewards from the answer token's probabilities)")
    if layout not in LAYOUTS:
        raise ValueError(f"roboreward: layout={layout!r} is not one of {', '.join(LAYOUTS)} (official: the "
                         "message layout of each model's official client)")
    if decoding not in DECODINGS:
        raise ValueError(f"roboreward: decoding={decoding!r} is not one of {', '.join(DECODINGS)} (official: "
                         "checkpoint sampling for Qwen-VL and RoboReward, temperature 0 for the rest)")
    if data != "hf" and revision != DATASET_REVISION:
        raise ValueError(f"roboreward: revision= applies to data=hf only; drop it for data={data}")
    _check_subset_name(subset)
    _check_subset(subset, data)
    try:
        options = FrameOptions(
            frames_per_second=_number("fps", fps, float),
            include_last_frame=parse_flag("last_frame", last_frame),
            max_frames=_number("max_frames", max_frames, int),
            max_side=_number("max_side", max_side, int),
        )
    except ValueError as error:
        message = str(error)
        raise ValueError(message if message.startswith("roboreward:") else f"roboreward: {message}") from None
    scenario_args: dict[str, Any] = {
        "subset": subset,
        "data": data,
        "revision": revision,
        "video": video,
        "frames_per_second": options.frames_per_second,
        "include_last_frame": options.include_last_frame,
        "max_frames": options.max_frames,
        "max_side": options.max_side,
        "layout": layout,
        "decoding": decoding,
        "jobs": _number("jobs", jobs, int),
        **({"score": score} if score != PARSED_SCORE else {}),  # the routing picks a log-probabilities twin
    }
    return RunSpec(
        name=_run_name(subset, data, revision, video, options, failed, score),
        scenario_spec=ScenarioSpec(class_name=SCENARIO_CLASS, args=scenario_args),
        adapter_spec=_adapter_spec(),
        metric_specs=metric_specs(failed, score),
        groups=[subset_group(subset)],
    )


def _run_name(subset: str, data: str, revision: str, video: str, options: FrameOptions, failed: str,
              score: str = PARSED_SCORE) -> str:
    parts = [f"subset={subset}"]
    if data != "hf":
        parts.append(f"data={data_label(data)}")
    if revision != DATASET_REVISION:
        parts.append(f"revision={revision_label(revision)}")
    parts.append(f"video={video}")
    parts += options.run_name_options()
    if score != PARSED_SCORE:
        parts.append(f"score={score}")
    if failed != DEFAULT_FAILED_POLICY:
        parts.append(f"failed={failed}")
    return f"{RUN_SPEC_NAME}:{','.join(parts)}"


def _adapter_spec() -> AdapterSpec:
    """Every field set on purpose: HELM's defaults (5 outputs, temperature 1, "Input:" prefixes) are wrong here."""
    return AdapterSpec(
        method=ADAPT_GENERATION_MULTIMODAL,
        global_prefix="",
        global_suffix="",
        instructions="",
        input_prefix="",
        input_suffix="",
        output_prefix="",
        output_suffix="",
        instance_prefix="",
        max_train_instances=0,
        num_outputs=1,
        num_train_trials=1,
        num_trials=1,
        temperature=0.0,
        max_tokens=DEFAULT_MAX_TOKENS,
        stop_sequences=[],
        random=None,
    )


def metric_specs(failed: str = DEFAULT_FAILED_POLICY, score: str = PARSED_SCORE) -> list[MetricSpec]:
    """The RoboReward metric plus HELM's instance counter."""
    args: dict[str, Any] = {"failed": failed, **({"score": score} if score != PARSED_SCORE else {})}
    return [
        MetricSpec(class_name="helm_roboreward.metrics.RoboRewardMetric", args=args),
        MetricSpec(class_name="helm.benchmark.metrics.basic_metrics.InstancesPerSplitMetric", args={}),
    ]


class RoboRewardModelRunExpander(ModelRunExpander):
    """HELM's model expander, then the per-model video routing and token allowance for roboreward runs."""

    def expand(self, run_spec: RunSpec) -> list[RunSpec]:
        """Expand models as HELM does (retired models left out of groups) and resolve ``video=auto`` for each."""
        expanded = without_retired(super().expand(run_spec), str(self.value))
        return [resolve_video_routing(spec, apply_token_allowance=True) for spec in expanded]


class RoboRewardModelDeploymentRunExpander(ModelDeploymentRunExpander):
    """HELM's deployment override, then a re-check that the deployment can take the chosen media."""

    def expand(self, run_spec: RunSpec) -> list[RunSpec]:
        """Override the deployment as HELM does and re-check the routing."""
        return [resolve_video_routing(spec, apply_token_allowance=False) for spec in super().expand(run_spec)]


def install_expanders() -> None:
    """Put the routing-aware expanders in HELM's expander registry (idempotent; a plugin registration)."""
    RUN_EXPANDERS[RoboRewardModelRunExpander.name] = RoboRewardModelRunExpander
    RUN_EXPANDERS[RoboRewardModelDeploymentRunExpander.name] = RoboRewardModelDeploymentRunExpander
