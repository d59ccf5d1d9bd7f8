"""The naming rules (data/rows.py): episodes, clusters and clip scores from the real split's file names."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helm_roboreward.protocol.rows import clip_name_score, cluster_of, episode_of
from helm_roboreward.protocol.split_audit import FALLBACK, OXE_CLIP, OXE_EPISODE, ROBOARENA, name_pattern

UUID = "31e1e892-96b7-42f0-9c0e-c06f70e8f585"


def test_roboarena_views_are_one_episode_and_a_session_is_one_cluster() -> None:
    left, right, other = f"{UUID}_B_left", f"{UUID}_B_right", f"{UUID}_D_left"
    assert episode_of(left, natural=True) == episode_of(right, natural=True) == f"{UUID}_B"
    assert episode_of(other, natural=True) == f"{UUID}_D"
    assert cluster_of(left, natural=True) == cluster_of(other, natural=True) == UUID
    assert name_pattern(left, natural=True) == ROBOARENA


@pytest.mark.parametrize(
    ("stem", "episode"),
    [
        ("bridge_originalsplit_train_index_1156", "bridge_originalsplit_train_index_1156"),
        ("bridge_originalsplit_train_index_118_1", "bridge_originalsplit_train_index_118"),
        ("fractal20220817_data_originalsplit_train_index_13603_3",
         "fractal20220817_data_originalsplit_train_index_13603"),
        ("jaco_play_originalsplit_test_index_26", "jaco_play_originalsplit_test_index_26"),
        ("bridge_originalsplit_train_index_1811_attempt_1_score_3", "bridge_originalsplit_train_index_1811"),
        ("bridge_originalsplit_train_index_1811_2_attempt_2_score_1", "bridge_originalsplit_train_index_1811"),
    ],
)
def test_oxe_episode_drops_duplicate_and_clip_suffixes(stem: str, episode: str) -> None:
    assert episode_of(stem, natural=False) == cluster_of(stem, natural=False) == episode


def test_a_clip_joins_its_original_with_or_without_a_duplicate_suffix() -> None:
    clip = episode_of("bridge_originalsplit_train_index_1811_attempt_1_score_3", natural=False)
    assert clip == episode_of("bridge_originalsplit_train_index_1811", natural=False)
    assert clip == episode_of("bridge_originalsplit_train_index_1811_2", natural=False)
    assert clip != episode_of("bridge_originalsplit_train_index_18112", natural=False)


@given(subset=st.sampled_from(["bridge", "droid", "fractal20220817_data", "viola"]),
       split=st.sampled_from(["train", "test"]), index=st.integers(0, 10**6), duplicate=st.integers(1, 9),
       attempt=st.integers(1, 20), score=st.integers(1, 4))
def test_every_duplicate_and_clip_of_an_episode_shares_its_key(subset: str, split: str, index: int, duplicate: int,
                                                              attempt: int, score: int) -> None:
    base = f"{subset}_originalsplit_{split}_index_{index}"
    names = [base, f"{base}_{duplicate}", f"{base}_attempt_{attempt}_score_{score}"]
    assert {episode_of(name, natural=False) for name in names} == {base}
    assert name_pattern(names[2], natural=False) == OXE_CLIP
    assert {name_pattern(name, natural=False) for name in names[:2]} == {OXE_EPISODE}
    assert clip_name_score(names[2]) == score and clip_name_score(names[1]) is None


@pytest.mark.parametrize(
    ("stem", "natural", "episode", "cluster"),
    [
        (f"{UUID}_2_left", True, f"{UUID}_2", f"{UUID}_2"),  # a digit slot: camera removed, its own cluster
        ("my_rollout_right", True, "my_rollout", "my_rollout"),
        ("my_rollout", True, "my_rollout", "my_rollout"),
        ("ep7", False, "ep7", "ep7"),
        ("ep7_1", False, "ep7_1", "ep7_1"),  # a trailing number is a duplicate suffix only in the real pattern
        ("ep7_attempt_0_score_3", False, "ep7", "ep7"),
        ("cam_2_left", False, "cam_2_left", "cam_2_left"),  # cameras mean nothing outside natural subsets
    ],
)
def test_names_outside_the_real_patterns_fall_back(stem: str, natural: bool, episode: str, cluster: str) -> None:
    assert (episode_of(stem, natural), cluster_of(stem, natural)) == (episode, cluster)
    assert name_pattern(stem, natural) == FALLBACK


def test_natural_subsets_have_no_clips() -> None:
    stem = f"{UUID}_A_left"
    assert name_pattern("x_attempt_1_score_2", natural=True) == FALLBACK
    assert episode_of("x_attempt_1_score_2", natural=True) == "x_attempt_1_score_2"
    assert clip_name_score(stem) is None
