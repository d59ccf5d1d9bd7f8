"""RoboRewardBench constants: the dataset, its revision, the subsets and the prompt version.

Sources: the RoboReward paper (arXiv 2601.00675), the Hugging Face dataset card
``teetone/RoboReward`` and the public RoboRewardBench leaderboard (HELM project
``robo-reward-bench`` v0.0.1). Everything that identifies the benchmark lives here,
so one edit changes it everywhere.
"""

from collections.abc import Iterable
from dataclasses import dataclass

DATASET_ID = "teetone/RoboReward"
"""Hugging Face dataset repository holding the benchmark (CC BY 4.0)."""

DATASET_REVISION = "main"
"""Default dataset revision (branch, tag or commit). The resolved commit is recorded with every run.

It is a branch rather than a pinned commit because no commit could be verified from the
machines this package was built on; pin one with ``revision=<sha>`` for archival runs.
"""

DATASET_URL = "https://huggingface.co/datasets/teetone/RoboReward"
PAPER_URL = "https://arxiv.org/abs/2601.00675"
LEADERBOARD_URL = "https://crfm.stanford.edu/helm/robo-reward-bench/v0.0.1/#/leaderboard"

SCENARIO_CLASS = "helm_roboreward.scenario.RoboRewardScenario"
"""The scenario's class name as HELM records it in ``run_spec.json`` (how RoboReward runs are told apart)."""

TEST_SPLIT = "test"
"""The benchmark split (human-verified). Its folder holds ``metadata.jsonl`` and one folder per subset."""

METADATA_FILE = "metadata.jsonl"
IMPORT_RECORD = "roboreward_import.json"
"""A local copy written by ``roboreward import-lerobot`` records its source and label source here, at its root."""

PROMPT_VERSION = "1"
"""Changes whenever the prompt text, the frame rule defaults or the scoring rule changes."""

MIN_SCORE = 1
MAX_SCORE = 5


@dataclass(frozen=True)
class Subset:
    """One source dataset of the benchmark: a leaderboard column."""

    id: str
    """Folder name in the dataset and the first path component of ``file_name``."""

    display_name: str
    """Column header on the leaderboard."""

    robot: str
    """Robot embodiment (Open X-Embodiment robot type), for the per-robot breakdown."""

    natural: bool = False
    """True when every row is a natural rollout (no clips or counterfactual relabels)."""

    num_rows: int = 0
    """Number of test rows in the published split (0 when not published)."""

    short_display_name: str = ""
    """Column header when ``display_name`` is longer than the HELM viewer shows uncut (it cuts titles of about 25+
    characters with "..."; tests/integration/test_browser.py checks every header); the full name stays in the
    description."""


# The 23 test subsets in official leaderboard order (docs/protocol.md, section 1).
OFFICIAL_SUBSETS: tuple[Subset, ...] = (
    Subset("robo_arena", "RoboArena", "Franka", natural=True, num_rows=1000),
    Subset("austin_sirius_dataset_converted_externally_to_rlds", "Austin Sirius", "Franka", num_rows=87),
    Subset("berkeley_autolab_ur5", "Berkeley Autolab UR5", "UR5", num_rows=100),
    Subset(
        "berkeley_fanuc_manipulation", "Berkeley Fanuc Manipulation", "Fanuc Mate", num_rows=91,
        short_display_name="Berkeley Fanuc",
    ),
    Subset("berkeley_mvp_converted_externally_to_rlds", "Berkeley MVP", "xArm", num_rows=71),
    Subset("berkeley_rpt_converted_externally_to_rlds", "Berkeley RPT", "Franka", num_rows=86),
    Subset("bridge", "Berkeley Bridge", "WidowX", num_rows=100),
    Subset("cmu_play_fusion", "CMU Play Fusion", "Franka", num_rows=92),
    Subset(
        "dlr_edan_shared_control_converted_externally_to_rlds",
        "DLR Wheelchair Shared Control",
        "DLR EDAN",
        num_rows=19,
        short_display_name="DLR Wheelchair",
    ),
    Subset("droid", "DROID", "Franka", num_rows=100),
    Subset("fractal20220817_data", "RT-1 Robot Action", "Google Robot", num_rows=100),
    Subset("iamlab_cmu_pickup_insert_converted_externally_to_rlds", "CMU Franka Pick-Insert", "Franka", num_rows=83),
    Subset("jaco_play", "USC Jaco Play", "Jaco 2", num_rows=100),
    Subset("kaist_nonprehensile_converted_externally_to_rlds", "KAIST Nonprehensile Objects", "Franka", num_rows=53,
           short_display_name="KAIST Nonprehensile"),
    Subset("roboturk", "Roboturk", "Sawyer", num_rows=97),
    Subset("stanford_hydra_dataset_converted_externally_to_rlds", "Stanford HYDRA", "Franka", num_rows=91),
    Subset("taco_play", "Freiburg Franka Play", "Franka", num_rows=91),
    Subset("tokyo_u_lsmo_converted_externally_to_rlds", "LSMO", "Cobotta", num_rows=71),
    Subset("ucsd_kitchen_dataset_converted_externally_to_rlds", "UCSD Kitchen", "xArm", num_rows=95),
    Subset("ucsd_pick_and_place_dataset_converted_externally_to_rlds", "UCSD Pick Place", "xArm", num_rows=100),
    Subset(
        "utokyo_pr2_tabletop_manipulation_converted_externally_to_rlds",
        "Tokyo PR2 Tabletop Manipulation",
        "PR2",
        num_rows=73,
        short_display_name="Tokyo PR2 Tabletop",
    ),
    Subset("utokyo_xarm_bimanual_converted_externally_to_rlds", "UTokyo xArm Bimanual", "xArm Bimanual", num_rows=71),
    Subset("viola", "Austin VIOLA", "Franka", num_rows=60),
)

# The published test split, for checking a copy before spending money on it (``roboreward audit``). Counted by an
# independent public evaluation harness whose authors had the data: GitHub ``dddais/Robo-dopamine``, folder
# ``roborewardbench/`` (``exp_record.md``, ``relabeling_data_analys.md``, ``data.py``), read 2026-12-01; its row
# counts agree with ``num_rows`` above for all 23 subsets.

PUBLISHED_METADATA_SHA256 = "3901cea9a7981d2e2d9fde4225a4b2ff0ebf2f4af69fc96972a2cfbe557db0cd"
"""SHA-256 of the ``test/metadata.jsonl`` that harness used (its copy of July 2026)."""

PUBLISHED_KIND_ROWS: dict[str, tuple[int, int, int]] = {
    "austin_sirius_dataset_converted_externally_to_rlds": (44, 23, 20),
    "berkeley_autolab_ur5": (49, 31, 20),
    "berkeley_fanuc_manipulation": (44, 27, 20),
    "berkeley_mvp_converted_externally_to_rlds": (31, 20, 20),
    "berkeley_rpt_converted_externally_to_rlds": (43, 23, 20),
    "bridge": (36, 44, 20),
    "cmu_play_fusion": (41, 31, 20),
    "dlr_edan_shared_control_converted_externally_to_rlds": (4, 11, 4),
    "droid": (45, 35, 20),
    "fractal20220817_data": (34, 46, 20),
    "iamlab_cmu_pickup_insert_converted_externally_to_rlds": (14, 49, 20),
    "jaco_play": (33, 47, 20),
    "kaist_nonprehensile_converted_externally_to_rlds": (27, 14, 12),
    "roboturk": (39, 38, 20),
    "stanford_hydra_dataset_converted_externally_to_rlds": (66, 14, 11),
    "taco_play": (28, 43, 20),
    "tokyo_u_lsmo_converted_externally_to_rlds": (38, 13, 20),
    "ucsd_kitchen_dataset_converted_externally_to_rlds": (47, 28, 20),
    "ucsd_pick_and_place_dataset_converted_externally_to_rlds": (38, 42, 20),
    "utokyo_pr2_tabletop_manipulation_converted_externally_to_rlds": (12, 41, 20),
    "utokyo_xarm_bimanual_converted_externally_to_rlds": (39, 28, 4),
    "viola": (39, 21, 0),
}
"""Rows of each Open X-Embodiment subset by kind: (temporal clips, counterfactual relabels, original successes).
``robo_arena`` holds only its 1,000 natural rollouts. Totals: 791 clips, 669 relabels, 371 originals."""

PUBLISHED_LABELS_BY_KIND: dict[str, tuple[int, int, int, int, int]] = {
    "natural": (266, 263, 174, 141, 156),
    "clip": (195, 266, 170, 160, 0),
    "counterfactual": (228, 112, 212, 117, 0),
    "original": (0, 0, 0, 0, 371),
}
"""Rows with label 1, 2, 3, 4, 5 per augmentation kind (overall 689 / 641 / 556 / 418 / 527)."""

PUBLISHED_OXE_VIDEOS = 760
"""Distinct videos (by bytes) among the 1,040 Open X-Embodiment rows that are not clips."""

PUBLISHED_LADDERS: dict[int, int] = {1: 104, 2: 28, 3: 9, 4: 1}
"""Videos carrying a 5 and n relabels (the same bytes with other tasks), by n: 142 such videos."""

PUBLISHED_RELABELS_WITHOUT_ORIGINAL = 478
"""Relabels whose bytes carry no 5 in the test split (their original success is not in it)."""

PUBLISHED_CLIP_NAME_MISMATCHES = 0
"""Clips whose name's ``score_<k>`` differs from their label: none of the 791."""

# Subsets of the bundled offline sample (``data=sample``). They never mix with official columns.
SAMPLE_SUBSETS: tuple[Subset, ...] = (
    Subset("sim_arena", "Sim Arena (sample)", "Franka (simulated)", natural=True),
    Subset("sim_panda", "Sim Panda (sample)", "Franka (simulated)"),
    Subset("sim_kuka", "Sim KUKA (sample)", "KUKA iiwa (simulated)"),
)

ALL_KNOWN_SUBSETS: dict[str, Subset] = {subset.id: subset for subset in OFFICIAL_SUBSETS + SAMPLE_SUBSETS}

OFFICIAL_SUBSET_IDS: list[str] = [subset.id for subset in OFFICIAL_SUBSETS]
SAMPLE_SUBSET_IDS: list[str] = [subset.id for subset in SAMPLE_SUBSETS]


def subset_order(subsets: Iterable[str]) -> list[str]:
    """Official leaderboard order, then the sample's order, then any other subset alphabetically."""
    known = OFFICIAL_SUBSET_IDS + SAMPLE_SUBSET_IDS
    rank = {subset: index for index, subset in enumerate(known)}
    return sorted(set(subsets), key=lambda subset: (rank.get(subset, len(known)), subset))

ROBOTS: list[str] = sorted({subset.robot for subset in OFFICIAL_SUBSETS + SAMPLE_SUBSETS})

UNKNOWN_ROBOT = "Unknown"


def subset_info(subset_id: str) -> Subset:
    """The registry entry of a subset; subsets of a local copy that are not registered get a neutral entry."""
    known = ALL_KNOWN_SUBSETS.get(subset_id)
    if known is not None:
        return known
    return Subset(subset_id, subset_id, UNKNOWN_ROBOT)


def robot_slug(robot: str) -> str:
    """A name-safe form of a robot name, used in metric names (``Google Robot`` -> ``google_robot``)."""
    slug = "".join(ch.lower() if ch.isalnum() else "_" for ch in robot)
    while "__" in slug:
        slug = slug.replace("__", "_")
    return slug.strip("_")


def subset_group(subset: str) -> str:
    """The HELM run group of one subset (a leaderboard column): ``roboreward_<id>``."""
    return f"roboreward_{subset}"
