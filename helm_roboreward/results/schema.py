"""The leaderboard schema (``static/schema_roboreward.yaml``), generated from the benchmark constants.

Generating it keeps subset ids, display names, order and robots in one place
(:mod:`helm_roboreward.protocol.rules`); a test checks that the committed file is up to date.
Regenerate with ``python -m helm_roboreward.results.schema static/schema_roboreward.yaml``.

A local copy may hold subsets the benchmark does not know. HELM leaves a run whose group the schema does
not define out of every table, so the leaderboard's mean would silently skip them while ``roboreward
report`` counts them: ``roboreward files --data <dir>`` writes a schema with ``extra_subsets`` (each gets a
group after the official ones, in the parent "RoboReward" group, so the mean covers it; display name = id,
robot Unknown).
"""

import sys
from collections.abc import Sequence
from typing import Any

import yaml

from helm_roboreward.protocol.rows import KINDS
from helm_roboreward.protocol.rules import (
    ALL_KNOWN_SUBSETS,
    ALL_SUBSETS_GROUP,
    DATASET_URL,
    OFFICIAL_SUBSETS,
    PAPER_URL,
    PARENT_GROUP,
    ROBOTS,
    SAMPLE_GROUP,
    SAMPLE_SUBSETS,
    UNKNOWN_ROBOT,
    Subset,
    subset_group,
    subset_info,
)
from helm_roboreward.protocol.safe_files import write_atomically
from helm_roboreward.protocol.stat_catalogue import (
    ACCURACY,
    EXPECTED,
    FAILURE_MODES,
    GENERAL,
    MACRO,
    METRIC_GROUPS,
    PEER,
    REWARD_MODEL,
    SCORES,
    STATS,
    StatDefinition,
    breakdown_stats,
    kind_mae,
    subset_mae,
)

CATEGORY = "RoboRewardBench"
HIDDEN_IN_LEADERBOARD = ["failure_modes", "scores", "kind_breakdown", REWARD_MODEL, EXPECTED, PEER]
"""The leaderboard shows one MAE column per subset; per-subset details live on each subset's page, and the
summarizer (``helm_roboreward.helm_frontend.summarizer``) adds the robot, kind, failure-mode and cost tables."""


def _metric(definition: StatDefinition) -> dict[str, Any]:
    field: dict[str, Any] = {"name": definition.name, "display_name": definition.display_name,
                             "description": definition.description}
    if definition.lower_is_better is not None:
        field["lower_is_better"] = definition.lower_is_better
    return field


def local_subsets(extra_subsets: Sequence[str]) -> tuple[Subset, ...]:
    """The registry entries of the subsets a schema must cover beyond the known ones, sorted, without duplicates.

    Known subsets (official or sample) already have their group; ``all`` cannot be a subset's own run
    (``subset=all`` means every subset), so neither is added.
    """
    wanted = sorted({subset for subset in extra_subsets if subset not in ALL_KNOWN_SUBSETS and subset != "all"})
    return tuple(subset_info(subset) for subset in wanted)


def _metrics(extra: Sequence[Subset] = ()) -> list[dict[str, Any]]:
    """Every stat of the catalogue, then the breakdowns by kind, robot and subset."""
    robots = ROBOTS + ([UNKNOWN_ROBOT] if extra and UNKNOWN_ROBOT not in ROBOTS else [])
    breakdowns = breakdown_stats(KINDS, robots, OFFICIAL_SUBSETS + tuple(extra) + SAMPLE_SUBSETS)
    return [_metric(definition) for definition in STATS + breakdowns]


def _group_of_metrics(name: str, display: str, metrics: Sequence[str], **extra: Any) -> dict[str, Any]:
    return {"name": name, "display_name": display, **extra,
            "metrics": [{"name": metric, "split": "${main_split}"} for metric in metrics]}


def _metric_groups(extra: Sequence[Subset] = ()) -> list[dict[str, Any]]:
    return [
        _group_of_metrics(ACCURACY, "MAE (lower is better)", ["${main_name}"], aggregation_strategies=["mean"]),
        _group_of_metrics(FAILURE_MODES, "Failure modes", list(METRIC_GROUPS[FAILURE_MODES]), hide_win_rates=True),
        _group_of_metrics(SCORES, "Scores", list(METRIC_GROUPS[SCORES]), hide_win_rates=True),
        _group_of_metrics("kind_breakdown", "MAE by augmentation kind", [kind_mae(kind) for kind in KINDS],
                          hide_win_rates=True),
        _group_of_metrics(MACRO, "Macro MAE over subsets",
                          list(METRIC_GROUPS[MACRO]) + [subset_mae(s.id) for s in OFFICIAL_SUBSETS + tuple(extra)],
                          hide_win_rates=True),
        _group_of_metrics(GENERAL, "General information", list(METRIC_GROUPS[GENERAL]), hide_win_rates=True),
        _group_of_metrics(REWARD_MODEL, "Reward-model metrics (ordering and success detection)",
                          list(METRIC_GROUPS[REWARD_MODEL]), hide_win_rates=True),
        _group_of_metrics(EXPECTED, "Expected-score rewards (score=expected)", list(METRIC_GROUPS[EXPECTED]),
                          hide_win_rates=True),
        _group_of_metrics(PEER, "Peer metrics (exact, within 1, mean prediction per gold score)",
                          list(METRIC_GROUPS[PEER]), hide_win_rates=True),
    ]


def _subset_group(subset: Subset, origin: str) -> dict[str, Any]:
    return {
        "name": subset_group(subset.id),
        "display_name": subset.display_name,
        **({"short_display_name": subset.short_display_name} if subset.short_display_name else {}),
        "description": f"{subset.display_name} ({subset.robot}), {origin}; subset id `{subset.id}`.",
        "category": CATEGORY,
        "metric_groups": ["accuracy", PEER, REWARD_MODEL, EXPECTED, "failure_modes", "scores", "kind_breakdown",
                          "general_information"],
        "environment": {"main_name": "abs_error", "main_split": "test"},
        "taxonomy": {"task": "reward modeling (progress score 1..5)", "what": f"{subset.robot} rollout videos",
                     "who": "robot teleoperators and policies; human-verified gold scores", "when": "2018-2025",
                     "language": "English"},
    }


def build_schema(extra_subsets: Sequence[str] = ()) -> dict[str, Any]:
    """The schema as a YAML-ready dict.

    Args:
        extra_subsets: Subset ids of a local copy; those the benchmark does not know get a group after the
            official ones, inside the parent "RoboReward" group (see :func:`local_subsets`).
    """
    extra = local_subsets(extra_subsets)
    description = (f"RoboRewardBench: vision-language models score robot rollout videos 1..5 "
                   f"([paper]({PAPER_URL}), [dataset]({DATASET_URL})). Mean absolute error per subset; "
                   "the mean column is the unweighted mean over subsets, the official overall number.")
    run_groups: list[dict[str, Any]] = [
        {"name": PARENT_GROUP, "display_name": "RoboReward", "description": description, "category": CATEGORY,
         "subgroup_metric_groups_hidden": HIDDEN_IN_LEADERBOARD,
         "subgroups": [subset_group(subset.id) for subset in OFFICIAL_SUBSETS + extra]},
        {"name": SAMPLE_GROUP, "display_name": "RoboReward sample (offline demo)",
         "description": "The bundled simulated sample; not comparable with the benchmark.", "category": CATEGORY,
         "subgroup_metric_groups_hidden": HIDDEN_IN_LEADERBOARD,
         "subgroups": [subset_group(subset.id) for subset in SAMPLE_SUBSETS]},
        {"name": ALL_SUBSETS_GROUP, "display_name": "RoboReward (one run over all subsets)",
         "description": "Runs with subset=all: one run covering every subset, with its macro MAE.",
         "category": CATEGORY, "metric_groups": ["macro", "accuracy", PEER, REWARD_MODEL, EXPECTED, "failure_modes",
                                                  "scores", "kind_breakdown", "general_information"],
         "environment": {"main_name": "abs_error", "main_split": "test"}},
    ]
    run_groups += [_subset_group(subset, "RoboRewardBench test split") for subset in OFFICIAL_SUBSETS]
    run_groups += [_subset_group(subset, "a local copy's subset, not part of RoboRewardBench") for subset in extra]
    run_groups += [_subset_group(subset, "bundled offline sample (simulated)") for subset in SAMPLE_SUBSETS]
    return {"metrics": _metrics(extra), "perturbations": [], "metric_groups": _metric_groups(extra),
            "run_groups": run_groups}


def render_schema(extra_subsets: Sequence[str] = ()) -> str:
    """The schema file's text (see :func:`build_schema`)."""
    header = ("# Generated by `python -m helm_roboreward.results.schema static/schema_roboreward.yaml`; "
              "do not edit by hand.\n")
    extra = local_subsets(extra_subsets)
    if extra:
        header = ("# Generated by `roboreward files --data <dir>`; do not edit by hand. Also covers the local "
                  f"subsets: {', '.join(subset.id for subset in extra)}.\n")
    return header + "---\n" + yaml.safe_dump(build_schema(extra_subsets), sort_keys=False, width=120,
                                             allow_unicode=True)


def main(argv: Sequence[str]) -> int:
    """Write the schema to the given path."""
    if len(argv) != 1:
        print("usage: python -m helm_roboreward.results.schema <output.yaml>", file=sys.stderr)
        return 2
    write_atomically(argv[0], render_schema().encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
