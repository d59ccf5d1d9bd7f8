"""What a ``roboreward`` run of each model would send, resolved as ``helm-run`` resolves it (``roboreward estimate``).

The run entry goes through HELM's run-spec expansion with this plugin's routing, so the deployment, video mode,
frame options, max_tokens and request limits are the run's own. Nothing is sent.
"""

from collections.abc import Sequence

from helm.benchmark.model_deployment_registry import get_model_deployment
from helm.benchmark.model_metadata_registry import MODEL_NAME_TO_MODEL_METADATA
from helm.benchmark.presentation.run_entry import RunEntry
from helm.benchmark.run import run_entries_to_run_specs

from helm_roboreward.core.request_limits import deployment_limits
from helm_roboreward.presentation.estimate_media import ModelPlan
from helm_roboreward.protocol import DATASET_REVISION, FrameOptions, exact_number
from helm_roboreward.routing import needs_reasoning_allowance
from helm_roboreward.run_specs import RoboRewardRunSpec


def run_entry(model: str, subset: str, data: str, revision: str, video: str, options: FrameOptions) -> str:
    """The ``roboreward`` run entry ``helm-run`` would get for these settings."""
    parts = [f"subset={subset}", f"data={data}"]
    if revision != DATASET_REVISION:
        parts.append(f"revision={revision}")
    parts.append(f"video={video}")
    parts += [f"fps={exact_number(options.frames_per_second)}", f"last_frame={int(options.include_last_frame)}",
              f"max_frames={options.max_frames}", f"max_side={options.max_side}", f"model={model}"]
    return "roboreward:" + ",".join(parts)


def plan_models(models: Sequence[str], subset: str, data: str, revision: str, video: str,
                options: FrameOptions) -> list[ModelPlan]:
    """One plan per model (load the registries first: :func:`helm_roboreward.models.helm_registries.load_registries`).

    Raises:
        ValueError: An unknown model (the fix: ``roboreward models`` / ``add-model``), a retired one (its
            successor), a value a run entry cannot hold, or any error the run would stop with.
    """
    plans = []
    for model in models:
        if model not in MODEL_NAME_TO_MODEL_METADATA:
            raise ValueError(f"model {model!r} is not known to HELM with this --local-path; see `roboreward models` "
                             "for the known ones, or add it with `roboreward add-model`")
        commas = [value for value in (subset, data, revision) if "," in value]
        if commas:
            raise ValueError(f"{commas[0]!r}: run-entry values cannot contain commas (HELM's run-entry syntax)")
        description = run_entry(model, subset, data, revision, video, options)
        for spec in run_entries_to_run_specs([RunEntry(description=description, priority=1, groups=None)]):
            assert isinstance(spec, RoboRewardRunSpec) and spec.routing is not None
            deployment = spec.adapter_spec.model_deployment
            client = get_model_deployment(deployment)
            plans.append(ModelPlan(
                model=spec.adapter_spec.model,
                deployment=deployment,
                client=client.client_spec.class_name,
                video_mode=str(spec.scenario_spec.args["video"]),
                frame_options=spec.routing.frame_options,
                max_tokens=spec.adapter_spec.max_tokens,
                reasoning=needs_reasoning_allowance(spec.adapter_spec.model),
                request_limits=deployment_limits(deployment, client.client_spec.class_name, client.client_spec.args,
                                                 client.max_sequence_length),
            ))
    return plans
