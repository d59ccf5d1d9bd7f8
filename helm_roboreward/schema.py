"""The leaderboard schema (``static/schema_roboreward.yaml``), generated from the benchmark constants.

Generating it keeps subset ids, display names, order and robots in one place
(:mod:`helm_roboreward.benchmark`); a test checks that the committed file is up to date.
Regenerate with ``python -m helm_roboreward.schema static/schema_roboreward.yaml``.

A local copy may hold subsets the benchmark does not know. HELM leaves a run whose group the schema does
not define out of every table, so the leaderboard's mean would silently skip them while ``roboreward
report`` counts them: ``roboreward files --data <dir>`` writes a schema with ``extra_subsets`` (each gets a
group after the official ones, in the parent "RoboReward" group, so the mean covers it; display name = id,
robot Unknown).
"""

import sys
from typing import Any, Dict, List, Sequence, Tuple

import yaml

from helm_roboreward.benchmark import (
    ALL_KNOWN_SUBSETS,
    DATASET_URL,
    OFFICIAL_SUBSETS,
    PAPER_URL,
    ROBOTS,
    SAMPLE_SUBSETS,
    UNKNOWN_ROBOT,
    Subset,
    robot_slug,
    subset_info,
)
from helm_roboreward.dataset import KINDS
from helm_roboreward.media_store import write_atomically
from helm_roboreward.metrics import KIND_MAE_PREFIX, ROBOT_MAE_PREFIX, SUBSET_MAE_PREFIX
from helm_roboreward.run_specs import subset_group

PARENT_GROUP = "roboreward"
SAMPLE_GROUP = "roboreward_sample"
ALL_SUBSETS_GROUP = subset_group("all")
CATEGORY = "RoboRewardBench"
HIDDEN_IN_LEADERBOARD = ["failure_modes", "scores", "kind_breakdown"]
"""The leaderboard shows one MAE column per subset; per-subset details live on each subset's page, and the
summarizer (``helm_roboreward.summarizer``) adds the robot, kind, failure-mode and cost tables."""

_KIND_DESCRIPTIONS = {
    "natural": "natural rollouts (RoboArena), successes and failures as they happened",
    "clip": "temporal clips of successful episodes, labelled by the state at the clip's end",
    "counterfactual": "a successful video with a different task whose goal was not reached",
    "original": "original successful episodes",
}


FAILURE_MODE_METRICS = ("invalid_output", "false_success", "missed_success", "signed_error", "exact_match",
                        "failed_request")
"""The failure-mode stats, in table order (HELM's per-subset table and the summarizer's leaderboard table)."""


def metric_definitions() -> Dict[str, Dict[str, Any]]:
    """``stat name -> schema metric fields`` (display_name, description, lower_is_better when set)."""
    return {metric["name"]: metric for metric in _metrics()}


def _metric(name: str, display: str, description: str, lower_is_better: Any = None) -> Dict[str, Any]:
    field: Dict[str, Any] = {"name": name, "display_name": display, "description": description}
    if lower_is_better is not None:
        field["lower_is_better"] = lower_is_better
    return field


def local_subsets(extra_subsets: Sequence[str]) -> Tuple[Subset, ...]:
    """The registry entries of the subsets a schema must cover beyond the known ones, sorted, without duplicates.

    Known subsets (official or sample) already have their group; ``all`` cannot be a subset's own run
    (``subset=all`` means every subset), so neither is added.
    """
    wanted = sorted({subset for subset in extra_subsets if subset not in ALL_KNOWN_SUBSETS and subset != "all"})
    return tuple(subset_info(subset) for subset in wanted)


def _metrics(extra: Sequence[Subset] = ()) -> List[Dict[str, Any]]:
    metrics = [
        _metric("abs_error", "MAE", "Mean absolute error between the parsed score and the human label "
                "(1..5 scale; unparseable answers count 4).", True),
        _metric("macro_mae", "Macro MAE", "Unweighted mean of the per-subset MAEs (the official overall number).",
                True),
        _metric("num_subsets", "# subsets", "Number of subsets the macro MAE averages."),
        _metric("squared_error", "MSE", "Mean squared error of the parsed score.", True),
        _metric("exact_match", "Exact match", "Share of answers equal to the human label.", False),
        _metric("invalid_output", "Invalid output", "Share of answers with no parseable score.", True),
        _metric("false_success", "False success", "Share of rollouts labelled below 5 that got a 5 (over-rewarding a "
                "failure).", True),
        _metric("missed_success", "Missed success", "Share of rollouts labelled 5 that did not get a 5 "
                "(under-rewarding a success; unparseable answers count).", True),
        _metric("signed_error", "Bias", "Mean of predicted minus label over parsed answers "
                "(positive: over-rewarding)."),
        _metric("predicted_score", "Predicted score", "The parsed score (mean over parsed answers; absent when "
                "the answer could not be parsed)."),
        _metric("gold_score", "Gold score", "The human-verified label (mean over answered rows)."),
        _metric("failed_request", "Failed requests", "Share of requests that returned no completion after "
                "retries; by the official rule each costs error 4 in the MAE (failed=skip leaves them out), but "
                "never counts as an invalid output.", True),
        _metric("num_instances", "# eval", "Number of evaluation instances."),
        _metric("eval_coverage", "Rows evaluated", "Share of the run's rows evaluated; below 1 helm-run's -m "
                "sampled them at random and the MAEs are not the official numbers."),
        _metric("num_frames", "# frames", "Frames sent per instance (0 for native video)."),
        _metric("media_bytes", "Media bytes", "Bytes of video or frames sent per instance."),
        _metric("num_prompt_tokens", "# prompt tokens", "Prompt tokens per instance, where the client reports "
                "them (this package's vLLM client does; HELM's API clients do not)."),
    ]
    metrics += [_metric(KIND_MAE_PREFIX + kind, f"MAE ({kind})", f"MAE on {_KIND_DESCRIPTIONS[kind]}.", True)
                for kind in KINDS]
    robots = ROBOTS + ([UNKNOWN_ROBOT] if extra and UNKNOWN_ROBOT not in ROBOTS else [])
    metrics += [_metric(ROBOT_MAE_PREFIX + robot_slug(robot), f"MAE ({robot})", f"MAE on {robot} rollouts.", True)
                for robot in robots]
    metrics += [_metric(SUBSET_MAE_PREFIX + subset.id, f"MAE ({subset.display_name})",
                        f"MAE on the {subset.display_name} subset.", True)
                for subset in OFFICIAL_SUBSETS + tuple(extra) + SAMPLE_SUBSETS]
    return metrics


def _group_of_metrics(name: str, display: str, metrics: Sequence[str], **extra: Any) -> Dict[str, Any]:
    return {"name": name, "display_name": display, **extra,
            "metrics": [{"name": metric, "split": "${main_split}"} for metric in metrics]}


def _metric_groups(extra: Sequence[Subset] = ()) -> List[Dict[str, Any]]:
    return [
        _group_of_metrics("accuracy", "MAE (lower is better)", ["${main_name}"], aggregation_strategies=["mean"]),
        _group_of_metrics("failure_modes", "Failure modes", list(FAILURE_MODE_METRICS), hide_win_rates=True),
        _group_of_metrics("scores", "Scores", ["predicted_score", "gold_score"], hide_win_rates=True),
        _group_of_metrics("kind_breakdown", "MAE by augmentation kind",
                          [KIND_MAE_PREFIX + kind for kind in KINDS], hide_win_rates=True),
        _group_of_metrics("macro", "Macro MAE over subsets",
                          ["macro_mae", "num_subsets"]
                          + [SUBSET_MAE_PREFIX + s.id for s in OFFICIAL_SUBSETS + tuple(extra)],
                          hide_win_rates=True),
        _group_of_metrics("general_information", "General information",
                          ["num_instances", "eval_coverage", "failed_request", "num_frames", "media_bytes",
                           "num_prompt_tokens"],
                          hide_win_rates=True),
    ]


def _subset_group(subset: Subset, origin: str) -> Dict[str, Any]:
    return {
        "name": subset_group(subset.id),
        "display_name": subset.display_name,
        **({"short_display_name": subset.short_display_name} if subset.short_display_name else {}),
        "description": f"{subset.display_name} ({subset.robot}), {origin}; subset id `{subset.id}`.",
        "category": CATEGORY,
        "metric_groups": ["accuracy", "failure_modes", "scores", "kind_breakdown", "general_information"],
        "environment": {"main_name": "abs_error", "main_split": "test"},
        "taxonomy": {"task": "reward modeling (progress score 1..5)", "what": f"{subset.robot} rollout videos",
                     "who": "robot teleoperators and policies; human-verified labels", "when": "2018-2025",
                     "language": "English"},
    }


def build_schema(extra_subsets: Sequence[str] = ()) -> Dict[str, Any]:
    """The schema as a YAML-ready dict.

    Args:
        extra_subsets: Subset ids of a local copy; those the benchmark does not know get a group after the
            official ones, inside the parent "RoboReward" group (see :func:`local_subsets`).
    """
    extra = local_subsets(extra_subsets)
    description = (f"RoboRewardBench: vision-language models score robot rollout videos 1..5 "
                   f"([paper]({PAPER_URL}), [dataset]({DATASET_URL})). Mean absolute error per subset; "
                   "the mean column is the unweighted mean over subsets, the official overall number.")
    run_groups: List[Dict[str, Any]] = [
        {"name": PARENT_GROUP, "display_name": "RoboReward", "description": description, "category": CATEGORY,
         "subgroup_metric_groups_hidden": HIDDEN_IN_LEADERBOARD,
         "subgroups": [subset_group(subset.id) for subset in OFFICIAL_SUBSETS + extra]},
        {"name": SAMPLE_GROUP, "display_name": "RoboReward sample (offline demo)",
         "description": "The bundled simulated sample; not comparable with the benchmark.", "category": CATEGORY,
         "subgroup_metric_groups_hidden": HIDDEN_IN_LEADERBOARD,
         "subgroups": [subset_group(subset.id) for subset in SAMPLE_SUBSETS]},
        {"name": ALL_SUBSETS_GROUP, "display_name": "RoboReward (one run over all subsets)",
         "description": "Runs with subset=all: one run covering every subset, with its macro MAE.",
         "category": CATEGORY, "metric_groups": ["macro", "accuracy", "failure_modes", "scores",
                                                  "kind_breakdown", "general_information"],
         "environment": {"main_name": "abs_error", "main_split": "test"}},
    ]
    run_groups += [_subset_group(subset, "RoboRewardBench test split") for subset in OFFICIAL_SUBSETS]
    run_groups += [_subset_group(subset, "a local copy's subset, not part of RoboRewardBench") for subset in extra]
    run_groups += [_subset_group(subset, "bundled offline sample (simulated)") for subset in SAMPLE_SUBSETS]
    return {"metrics": _metrics(extra), "perturbations": [], "metric_groups": _metric_groups(extra),
            "run_groups": run_groups}


def render_schema(extra_subsets: Sequence[str] = ()) -> str:
    """The schema file's text (see :func:`build_schema`)."""
    header = "# Generated by `python -m helm_roboreward.schema static/schema_roboreward.yaml`; do not edit by hand.\n"
    extra = local_subsets(extra_subsets)
    if extra:
        header = ("# Generated by `roboreward files --data <dir>`; do not edit by hand. Also covers the local "
                  f"subsets: {', '.join(subset.id for subset in extra)}.\n")
    return header + "---\n" + yaml.safe_dump(build_schema(extra_subsets), sort_keys=False, width=120,
                                             allow_unicode=True)


def main(argv: Sequence[str]) -> int:
    """Write the schema to the given path."""
    if len(argv) != 1:
        print("usage: python -m helm_roboreward.schema <output.yaml>", file=sys.stderr)
        return 2
    write_atomically(argv[0], render_schema().encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
