"""The ``roboreward`` run spec (options: README's run-entry table), routed per model by :mod:`~.routing`.

It routes itself when HELM's expanders set its model or deployment, and only then: a copy HELM makes of a routed
run spec (``dataclasses.replace``) is left as it is.
"""

import dataclasses
from typing import Any

from helm.benchmark.adaptation.adapter_spec import ADAPT_GENERATION_MULTIMODAL, AdapterSpec
from helm.benchmark.metrics.metric import MetricSpec
from helm.benchmark.run_spec import RunSpec, run_spec_function
from helm.benchmark.scenarios.scenario import ScenarioSpec

from helm_roboreward.helm_frontend import routing as router
from helm_roboreward.helm_frontend.refusals import not_a_subset_id, not_one_of, unknown_arguments
from helm_roboreward.helm_frontend.routing import RoutingRequest
from helm_roboreward.protocol import rules as protocol
from helm_roboreward.protocol.rules import AUTO, DATASET_REVISION, MAX_ERROR, OFFICIAL, PARSED, FrameOptions

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


def _check_subset(subset: str, data: str) -> None:
    """A subset id is a folder name under ``test/``: anything else would move the run folder (its name holds it)."""
    if subset in ("", ".", "..") or any(character in subset for character in "/\\\x00"):
        raise not_a_subset_id(subset)
    if subset == "all" or data not in ("hf", "sample"):
        return  # a local copy may hold other subsets; the scenario checks them against its metadata
    known = protocol.SAMPLE_SUBSET_IDS if data == "sample" else protocol.OFFICIAL_SUBSET_IDS
    if subset not in known:
        raise ValueError(
            f"roboreward: subset={subset!r} is not in data={data}. Valid subsets: all, {', '.join(known)}"
        )


@dataclasses.dataclass(frozen=True)
class RoboRewardRunSpec(RunSpec):
    """A ``roboreward`` run spec: routed officially once HELM has set (or changed) its model or deployment."""

    routing: RoutingRequest | None = None  # None: route nothing

    def __post_init__(self) -> None:
        super().__post_init__()
        adapter = self.adapter_spec
        if self.routing is None or not adapter.model or (
                (self.routing.model, self.routing.deployment) == (adapter.model, adapter.model_deployment)):
            return
        # HELM's own RunSpec normalizes its name here too: a frozen dataclass can only be settled in __post_init__.
        for name, value in router.route(self, self.routing).items():
            object.__setattr__(self, name, value)


@run_spec_function(router.RUN_SPEC_NAME)
def get_roboreward_spec(
    subset: str = "all",
    data: str = "hf",
    revision: str = DATASET_REVISION,
    video: str = AUTO,
    fps: int | float = protocol.OFFICIAL_FRAMES_PER_SECOND,
    last_frame: int | str = 0,
    max_frames: int = 0,
    max_side: int = 0,
    layout: str = OFFICIAL,
    decoding: str = OFFICIAL,
    failed: str = MAX_ERROR,
    score: str = PARSED,
    **unknown: Any,
) -> RunSpec:
    """RoboRewardBench: progress score 1..5 for a robot rollout video; mean absolute error per subset."""
    if unknown:
        raise unknown_arguments(list(unknown))
    subset, data, revision, video, failed = str(subset), str(data), str(revision), str(video), str(failed)
    layout, decoding, score = str(layout), str(decoding), str(score)
    for name, value, allowed in (("video", video, protocol.VIDEO_MODES), ("failed", failed, protocol.FAILED_POLICIES),
                                 ("score", score, protocol.SCORE_MODES), ("layout", layout, protocol.LAYOUTS),
                                 ("decoding", decoding, protocol.DECODINGS)):
        if value not in allowed:
            raise not_one_of(name, value, allowed)
    if data != "hf" and revision != DATASET_REVISION:
        raise ValueError(f"roboreward: revision= applies to data=hf only; drop it for data={data}")
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
    base: dict[str, Any] = {"subset": subset}
    if data != "hf":
        base["data"] = data
    if revision != DATASET_REVISION:
        base["revision"] = revision
    request = RoutingRequest(video=video, frame_options=options, failed=failed, score=score, layout=layout,
                          decoding=decoding)
    prefix = router.run_name_prefix(base, request, video, None)
    return RoboRewardRunSpec(
        name=prefix,
        scenario_spec=ScenarioSpec(protocol.SCENARIO_CLASS, args=router.scenario_args(base, video, options)),
        adapter_spec=_adapter_spec(),
        metric_specs=metric_specs(failed, score),
        groups=[protocol.subset_group(subset)],
        routing=dataclasses.replace(request, name_prefix=prefix),
    )


def _adapter_spec() -> AdapterSpec:
    """Every field set on purpose: HELM's defaults (5 outputs, temperature 1, "Input:" prefixes) are wrong here."""
    return AdapterSpec(method=ADAPT_GENERATION_MULTIMODAL, global_prefix="", global_suffix="", instructions="",
                       input_prefix="", input_suffix="", output_prefix="", output_suffix="", instance_prefix="",
                       max_train_instances=0, num_outputs=1, num_train_trials=1, num_trials=1, temperature=0.0,
                       max_tokens=protocol.DEFAULT_MAX_TOKENS, stop_sequences=[], random=None)


def metric_specs(failed: str = MAX_ERROR, score: str = PARSED) -> list[MetricSpec]:
    """The RoboReward metric; it counts ``num_instances`` itself (HELM's counter's module imports in 2.7 s)."""
    args: dict[str, Any] = {"failed": failed, **({"score": score} if score != PARSED else {})}
    return [MetricSpec(class_name="helm_roboreward.helm_frontend.metrics.RoboRewardMetric", args=args)]
