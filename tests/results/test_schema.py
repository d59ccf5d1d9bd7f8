"""The committed leaderboard schema: up to date, valid for HELM, official columns in official order."""


import pytest
import yaml
from helm.benchmark.presentation.schema import RunGroup, Schema, read_schema, validate_schema

from helm_roboreward.results.schema import render_schema
from tests.helpers.sample import REPO

SCHEMA_PATH = REPO / "static" / "schema_roboreward.yaml"

# PROTOCOL section 2, copied by hand: (subset id, display name) in official leaderboard order.
OFFICIAL_COLUMNS = [
    ("robo_arena", "RoboArena"),
    ("austin_sirius_dataset_converted_externally_to_rlds", "Austin Sirius"),
    ("berkeley_autolab_ur5", "Berkeley Autolab UR5"),
    ("berkeley_fanuc_manipulation", "Berkeley Fanuc Manipulation"),
    ("berkeley_mvp_converted_externally_to_rlds", "Berkeley MVP"),
    ("berkeley_rpt_converted_externally_to_rlds", "Berkeley RPT"),
    ("bridge", "Berkeley Bridge"),
    ("cmu_play_fusion", "CMU Play Fusion"),
    ("dlr_edan_shared_control_converted_externally_to_rlds", "DLR Wheelchair Shared Control"),
    ("droid", "DROID"),
    ("fractal20220817_data", "RT-1 Robot Action"),
    ("iamlab_cmu_pickup_insert_converted_externally_to_rlds", "CMU Franka Pick-Insert"),
    ("jaco_play", "USC Jaco Play"),
    ("kaist_nonprehensile_converted_externally_to_rlds", "KAIST Nonprehensile Objects"),
    ("roboturk", "Roboturk"),
    ("stanford_hydra_dataset_converted_externally_to_rlds", "Stanford HYDRA"),
    ("taco_play", "Freiburg Franka Play"),
    ("tokyo_u_lsmo_converted_externally_to_rlds", "LSMO"),
    ("ucsd_kitchen_dataset_converted_externally_to_rlds", "UCSD Kitchen"),
    ("ucsd_pick_and_place_dataset_converted_externally_to_rlds", "UCSD Pick Place"),
    ("utokyo_pr2_tabletop_manipulation_converted_externally_to_rlds", "Tokyo PR2 Tabletop Manipulation"),
    ("utokyo_xarm_bimanual_converted_externally_to_rlds", "UTokyo xArm Bimanual"),
    ("viola", "Austin VIOLA"),
]
SAMPLE_SUBSETS = ["sim_arena", "sim_panda", "sim_kuka"]


@pytest.fixture(scope="module")
def schema() -> Schema:
    return read_schema(str(SCHEMA_PATH))


@pytest.fixture(scope="module")
def groups(schema: Schema) -> dict[str, RunGroup]:
    return {group.name: group for group in schema.run_groups}


def test_committed_schema_is_up_to_date() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == render_schema(), (
        "static/schema_roboreward.yaml is stale; regenerate with "
        "`python -m helm_roboreward.results.schema static/schema_roboreward.yaml`"
    )


def test_schema_passes_helm_validation(schema: Schema) -> None:
    assert validate_schema(schema, schema_path=str(SCHEMA_PATH), strict=True) == []


def test_names_are_unique() -> None:
    raw = yaml.safe_load(SCHEMA_PATH.read_text(encoding="utf-8"))
    for section in ("metrics", "metric_groups", "run_groups"):
        names = [entry["name"] for entry in raw[section]]
        assert len(names) == len(set(names)), section


def test_parent_group_lists_the_official_subsets_in_official_order(groups: dict[str, RunGroup]) -> None:
    parent = groups["roboreward"]
    assert parent.subgroups == [f"roboreward_{subset}" for subset, _ in OFFICIAL_COLUMNS]
    assert len(parent.subgroups) == 23


@pytest.mark.parametrize("subset, display_name", OFFICIAL_COLUMNS)
def test_official_subset_group(groups: dict[str, RunGroup], subset: str, display_name: str) -> None:
    group = groups[f"roboreward_{subset}"]
    assert group.display_name == display_name
    assert group.environment == {"main_name": "abs_error", "main_split": "test"}
    assert "accuracy" in group.metric_groups


def test_sample_subsets_have_their_own_parent(groups: dict[str, RunGroup]) -> None:
    sample_parent = groups["roboreward_sample"]
    assert sample_parent.subgroups == [f"roboreward_{subset}" for subset in SAMPLE_SUBSETS]
    assert not set(sample_parent.subgroups) & set(groups["roboreward"].subgroups)
    for name in sample_parent.subgroups:
        display_name = groups[name].display_name
        assert display_name is not None and display_name.endswith("(sample)")
    parents_of_sample = [g.name for g in groups.values() if set(g.subgroups) & set(sample_parent.subgroups)]
    assert parents_of_sample == ["roboreward_sample"]


def test_all_subsets_group_shows_the_macro_mae(schema: Schema, groups: dict[str, RunGroup]) -> None:
    group = groups["roboreward_all"]
    assert "macro" in group.metric_groups
    macro = {m.name: m for m in schema.metric_groups}["macro"]
    listed = [matcher.name for matcher in macro.metrics]
    assert listed[:2] == ["macro_mae", "num_subsets"]
    assert listed[2:] == [f"mae_subset_{subset}" for subset, _ in OFFICIAL_COLUMNS]


def test_accuracy_group_aggregates_with_the_unweighted_mean(schema: Schema) -> None:
    accuracy = {m.name: m for m in schema.metric_groups}["accuracy"]
    assert accuracy.aggregation_strategies == ["mean"]
    assert [matcher.name for matcher in accuracy.metrics] == ["${main_name}"]


@pytest.mark.parametrize("name", ["abs_error", "macro_mae", "squared_error", "invalid_output", "failed_request"])
def test_error_metrics_are_lower_is_better(schema: Schema, name: str) -> None:
    assert schema.name_to_metric[name].lower_is_better is True


def test_exact_match_is_higher_is_better(schema: Schema) -> None:
    assert schema.name_to_metric["exact_match"].lower_is_better is False


def test_every_breakdown_metric_is_declared_and_lower_is_better(schema: Schema) -> None:
    expected: list[str] = [f"mae_subset_{subset}" for subset, _ in OFFICIAL_COLUMNS]
    expected += [f"mae_subset_{subset}" for subset in SAMPLE_SUBSETS]
    expected += [f"mae_kind_{kind}" for kind in ("natural", "clip", "counterfactual", "original")]
    expected += ["mae_robot_franka", "mae_robot_widowx", "mae_robot_google_robot", "mae_robot_xarm_bimanual",
                 "mae_robot_dlr_edan", "mae_robot_kuka_iiwa_simulated", "mae_robot_franka_simulated"]
    for name in expected:
        assert name in schema.name_to_metric, name
        assert schema.name_to_metric[name].lower_is_better is True, name


def test_metric_groups_only_reference_declared_metrics(schema: Schema) -> None:
    for group in schema.metric_groups:
        for matcher in group.metrics:
            if not matcher.name.startswith("${"):
                assert matcher.name in schema.name_to_metric, (group.name, matcher.name)
