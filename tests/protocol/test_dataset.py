"""``protocol.rows`` and ``protocol.data_sources`` on tiny data folders in the real layout."""

import json
import os
import re
from collections import Counter
from pathlib import Path

import av
import pytest

from helm_roboreward.helm_frontend.scenario import instance_id
from helm_roboreward.protocol.data_sources import DataSource, resolve_data_source, sample_root
from helm_roboreward.protocol.rows import (
    CLIP,
    COUNTERFACTUAL,
    NATURAL,
    ORIGINAL,
    DataError,
    MetadataRow,
    cluster_key,
    episode_key,
    infer_kind,
    load_rollouts,
    metadata_path,
    read_metadata,
    select_rows,
)
from helm_roboreward.protocol.rules import SAMPLE_SUBSET_IDS, select_frame_indices
from helm_roboreward.protocol.safe_files import file_digest
from helm_roboreward.protocol.video_decoding import probe_video
from tests.helpers.sample import distinct_videos, documented_counts, kind_of, rows_of, sample_rows, sample_subsets

UUID = "05748fab-fd34-5995-8e0d-14a2941b3ca5"

GOOD_ROWS: list[dict[str, object]] = [
    {"file_name": f"robo_arena/{UUID}_2_left.mp4", "task": "pick up the cup", "reward": 2, "gpt5_mini_check": "ok"},
    {"file_name": f"robo_arena/{UUID}_2_right.mp4", "task": "pick up the cup", "reward": 2, "gpt5_mini_check": "ok"},
    {"file_name": "bridge/ep7.mp4", "task": "put the spoon in the pot", "reward": 5, "gpt5_mini_check": "ok"},
    {"file_name": "bridge/ep7_attempt_0_score_3.mp4", "task": "put the spoon in the pot", "reward": 3},
    {"file_name": "bridge/ep7_attempt_1_score_1.mp4", "task": "put the spoon in the pot", "reward": 1},
    {"file_name": "bridge/ep9.mp4", "task": "open the drawer", "reward": 4, "gpt5_mini_check": "relabel"},
]


def write_metadata(root: Path, lines: list[object], raw: bytes | None = None) -> Path:
    """Write ``<root>/test/metadata.jsonl`` from objects (dumped as JSON) or strings (written as-is)."""
    path = root / "test" / "metadata.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    if raw is not None:
        path.write_bytes(raw)
        return path
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    path.write_text(text, encoding="utf-8")
    return path


def make_data(root: Path, rows: list[dict[str, object]] = GOOD_ROWS, videos: bool = True) -> Path:
    """A data folder in the dataset layout; video files hold placeholder bytes (never decoded here)."""
    write_metadata(root, list(rows))
    if videos:
        for row in rows:
            video = root / "test" / str(row["file_name"])
            video.parent.mkdir(parents=True, exist_ok=True)
            video.write_bytes(b"not decoded by the loader " + str(row["file_name"]).encode())
    return root


def assert_names(message: str, *fragments: str) -> None:
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in message:\n{message}"


def row_error(tmp_path: Path, line: object, line_number: int = 2) -> str:
    """The DataError message for one bad line placed after a good one."""
    path = write_metadata(tmp_path, [GOOD_ROWS[2], line] if line_number == 2 else [line])
    with pytest.raises(DataError) as raised:
        read_metadata(str(path))
    message = str(raised.value)
    assert_names(message, str(path), f"line {line_number}")
    return message


# --------------------------------------------------------------------------- read_metadata


def test_read_metadata_happy_path(tmp_path: Path) -> None:
    root = make_data(tmp_path)
    rows = read_metadata(metadata_path(str(root)))
    assert [row.file_name for row in rows] == [row["file_name"] for row in GOOD_ROWS]
    assert [row.line for row in rows] == [1, 2, 3, 4, 5, 6]
    assert rows[0].subset == "robo_arena" and rows[2].subset == "bridge"
    assert rows[3].stem == "ep7_attempt_0_score_3"
    assert rows[2].task == "put the spoon in the pot" and rows[2].gold_score == 5
    assert all(isinstance(row, MetadataRow) for row in rows)
    assert not hasattr(rows[0], "gpt5_mini_check")


def test_read_metadata_reuses_validated_rows_only_for_the_same_bytes(tmp_path: Path) -> None:
    """One helm-run reads the file once per subset entry: unchanged bytes give the same rows, changed ones are read."""
    root = make_data(tmp_path)
    path = metadata_path(str(root))
    first = read_metadata(path)
    assert read_metadata(path) == first and read_metadata(path) is not first
    edited: list[object] = [dict(row, task="stack the cups") if i == 2 else row for i, row in enumerate(GOOD_ROWS)]
    write_metadata(tmp_path, edited)
    assert read_metadata(path)[2].task == "stack the cups"
    write_metadata(tmp_path, [*GOOD_ROWS, {"file_name": "bridge/x.mp4", "task": "t", "reward": 9}])
    with pytest.raises(DataError, match="line 7, field 'reward'"):
        read_metadata(path)


def test_read_metadata_tolerates_blank_lines_bom_and_crlf(tmp_path: Path) -> None:
    text = "\ufeff" + json.dumps(GOOD_ROWS[2]) + "\r\n\r\n   \n" + json.dumps(GOOD_ROWS[3]) + "\r\n"
    path = write_metadata(tmp_path, [], raw=text.encode("utf-8"))
    rows = read_metadata(str(path))
    assert [row.line for row in rows] == [1, 4]  # line numbers stay the file's own


def test_read_metadata_keeps_unicode_task(tmp_path: Path) -> None:
    row = {"file_name": "bridge/x.mp4", "task": "mets la tasse dans le bol {0} 杯子", "reward": 3}
    rows = read_metadata(str(write_metadata(tmp_path, [row])))
    assert rows[0].task == row["task"]


def test_missing_metadata_file(tmp_path: Path) -> None:
    path = tmp_path / "test" / "metadata.jsonl"
    with pytest.raises(DataError) as raised:
        read_metadata(str(path))
    assert_names(str(raised.value), str(path), "not found", "test/metadata.jsonl", "test/<subset>/*.mp4")


def test_metadata_is_a_folder(tmp_path: Path) -> None:
    path = tmp_path / "test" / "metadata.jsonl"
    path.mkdir(parents=True)
    with pytest.raises(DataError) as raised:
        read_metadata(str(path))
    assert_names(str(raised.value), str(path), "folder")


@pytest.mark.parametrize("content", [b"", b"\n\n  \n"])
def test_empty_metadata(tmp_path: Path, content: bytes) -> None:
    path = write_metadata(tmp_path, [], raw=content)
    with pytest.raises(DataError) as raised:
        read_metadata(str(path))
    assert_names(str(raised.value), str(path), "no rows")


def test_not_utf8(tmp_path: Path) -> None:
    raw = (json.dumps(GOOD_ROWS[2]) + "\n").encode() + b'{"file_name": "bridge/a.mp4", "task": "\xff", "reward": 1}\n'
    path = write_metadata(tmp_path, [], raw=raw)
    with pytest.raises(DataError) as raised:
        read_metadata(str(path))
    assert_names(str(raised.value), str(path), "line 2", "UTF-8")


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ('{"file_name": "bridge/a.mp4", "task": "x", "reward": 1', "not valid JSON"),
        ("[1, 2, 3]", "expected a JSON object, got list"),
        ('"a string"', "expected a JSON object, got str"),
        ("42", "expected a JSON object, got int"),
        ("null", "expected a JSON object"),
    ],
)
def test_bad_json_lines(tmp_path: Path, line: str, fragment: str) -> None:
    assert_names(row_error(tmp_path, line), fragment)


@pytest.mark.parametrize("field", ["file_name", "task", "reward"])
def test_missing_required_field(tmp_path: Path, field: str) -> None:
    row = {"file_name": "bridge/a.mp4", "task": "open the drawer", "reward": 3}
    del row[field]
    assert_names(row_error(tmp_path, row), f"field '{field}'", "missing")


def test_gpt5_mini_check_is_optional(tmp_path: Path) -> None:
    rows = read_metadata(str(write_metadata(tmp_path, [{"file_name": "bridge/a.mp4", "task": "t t", "reward": 1}])))
    assert len(rows) == 1


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("reward", "3"),
        ("reward", 3.0),
        ("reward", 3.5),
        ("reward", True),
        ("reward", False),
        ("reward", None),
        ("reward", [3]),
        ("reward", 0),
        ("reward", 6),
        ("reward", -1),
        ("task", 5),
        ("task", ""),
        ("task", "   "),
        ("task", None),
        ("task", ["open"]),
        ("file_name", 5),
        ("file_name", None),
    ],
)
def test_wrong_field_values(tmp_path: Path, field: str, value: object) -> None:
    row = {"file_name": "bridge/a.mp4", "task": "open the drawer", "reward": 3, field: value}
    assert_names(row_error(tmp_path, row), f"field '{field}'")


@pytest.mark.parametrize("reward", [1, 2, 3, 4, 5])
def test_every_valid_reward(tmp_path: Path, reward: int) -> None:
    rows = read_metadata(str(write_metadata(tmp_path, [{"file_name": "b/a.mp4", "task": "x", "reward": reward}])))
    assert rows[0].gold_score == reward


@pytest.mark.parametrize(
    "file_name",
    [
        "/etc/passwd",
        "/bridge/a.mp4",
        "bridge/../../secret.mp4",
        "../bridge/a.mp4",
        "bridge/./a.mp4",
        "C:/data/bridge/a.mp4",
        "c:bridge/a.mp4",
        "C:\\data\\a.mp4",
        "bridge\\a.mp4",
        "a.mp4",  # no subset folder
        "bridge/",
        "bridge//a.mp4",
        "",
    ],
)
def test_unsafe_file_names(tmp_path: Path, file_name: str) -> None:
    row = {"file_name": file_name, "task": "open the drawer", "reward": 3}
    assert_names(row_error(tmp_path, row), "field 'file_name'")


def test_nul_in_file_name(tmp_path: Path) -> None:
    row = {"file_name": "bridge/a\u0000.mp4", "task": "open the drawer", "reward": 3}
    assert_names(row_error(tmp_path, row), "field 'file_name'")


def test_duplicate_file_name_names_both_lines(tmp_path: Path) -> None:
    rows = [GOOD_ROWS[2], GOOD_ROWS[3], dict(GOOD_ROWS[2], task="something else")]
    path = write_metadata(tmp_path, list(rows))
    with pytest.raises(DataError) as raised:
        read_metadata(str(path))
    assert_names(str(raised.value), str(path), "line 3", "line 1", "field 'file_name'", "bridge/ep7.mp4")


def test_several_bad_rows_are_reported_together(tmp_path: Path) -> None:
    lines: list[object] = [
        GOOD_ROWS[2],
        {"file_name": "bridge/b.mp4", "task": "x", "reward": "3"},
        "{broken",
        {"file_name": "../b.mp4", "task": "x", "reward": 3},
        GOOD_ROWS[3],
        {"file_name": "bridge/c.mp4", "reward": 3},
    ]
    path = write_metadata(tmp_path, lines)
    with pytest.raises(DataError) as raised:
        read_metadata(str(path))
    message = str(raised.value)
    assert_names(message, str(path), "4 invalid row(s)", "line 2, field 'reward'", "line 3",
                 "line 4, field 'file_name'", "line 6, field 'task'")
    assert "line 1" not in message and "line 5" not in message


def test_many_bad_rows_are_summarised(tmp_path: Path) -> None:
    lines: list[object] = [{"file_name": f"bridge/{i}.mp4", "task": "x", "reward": 9} for i in range(50)]
    with pytest.raises(DataError) as raised:
        read_metadata(str(write_metadata(tmp_path, lines)))
    message = str(raised.value)
    assert_names(message, "50 invalid row(s)", "line 1,", "line 20,", "and 30 more")
    assert "line 21," not in message


def test_data_error_is_a_value_error() -> None:
    assert issubclass(DataError, ValueError)


# --------------------------------------------------------------------------- load_rollouts


def test_load_rollouts(tmp_path: Path) -> None:
    root = make_data(tmp_path)
    rollouts = load_rollouts(str(root), None, "data=test")
    assert [r.row.file_name for r in rollouts] == [row["file_name"] for row in GOOD_ROWS]
    for rollout in rollouts:
        assert os.path.isabs(rollout.video_path) and os.path.isfile(rollout.video_path)
    assert [r.kind for r in rollouts] == [NATURAL, NATURAL, ORIGINAL, CLIP, CLIP, COUNTERFACTUAL]
    assert rollouts[0].robot == "Franka" and rollouts[2].robot == "WidowX"


def test_load_rollouts_selects_subsets(tmp_path: Path) -> None:
    root = make_data(tmp_path)
    rollouts = load_rollouts(str(root), ["bridge"], "data=test")
    assert {r.row.subset for r in rollouts} == {"bridge"} and len(rollouts) == 4


def test_unknown_subset_lists_available(tmp_path: Path) -> None:
    root = make_data(tmp_path)
    with pytest.raises(DataError) as raised:
        load_rollouts(str(root), ["droid"], "data=test")
    assert_names(str(raised.value), "'droid'", "data=test", "Available subsets: bridge, robo_arena")


def test_select_rows_all() -> None:
    rows = [MetadataRow(1, "bridge/a.mp4", "t", 1), MetadataRow(2, "droid/b.mp4", "t", 2)]
    assert select_rows(rows, None, "x") == rows
    assert select_rows(rows, ["droid"], "x") == [rows[1]]


def test_missing_videos_are_all_named(tmp_path: Path) -> None:
    root = make_data(tmp_path)
    (root / "test" / "bridge" / "ep9.mp4").unlink()
    (root / "test" / "robo_arena" / f"{UUID}_2_right.mp4").unlink()
    with pytest.raises(DataError) as raised:
        load_rollouts(str(root), None, "data=test")
    message = str(raised.value)
    assert_names(message, "2 video problem(s)", "data=test", "ep9.mp4", f"{UUID}_2_right.mp4", "line 6", "line 2",
                 "not found", str(root / "test" / "metadata.jsonl"))


def test_empty_video(tmp_path: Path) -> None:
    root = make_data(tmp_path)
    (root / "test" / "bridge" / "ep7.mp4").write_bytes(b"")
    with pytest.raises(DataError) as raised:
        load_rollouts(str(root), None, "data=test")
    assert_names(str(raised.value), "bridge/ep7.mp4", "empty", "line 3")


def test_video_is_a_folder(tmp_path: Path) -> None:
    root = make_data(tmp_path)
    video = root / "test" / "bridge" / "ep7.mp4"
    video.unlink()
    video.mkdir()
    with pytest.raises(DataError) as raised:
        load_rollouts(str(root), None, "data=test")
    assert_names(str(raised.value), "ep7.mp4", "not a regular file")


def test_symlink_outside_the_data_folder_is_rejected(tmp_path: Path) -> None:
    root = make_data(tmp_path / "data")
    outside = tmp_path / "outside.mp4"
    outside.write_bytes(b"secret")
    link = root / "test" / "bridge" / "ep7.mp4"
    link.unlink()
    link.symlink_to(outside)
    with pytest.raises(DataError) as raised:
        load_rollouts(str(root), None, "data=test")
    assert_names(str(raised.value), "bridge/ep7.mp4", "outside the data folder", "line 3")


def test_symlink_escaping_via_subset_folder_is_rejected(tmp_path: Path) -> None:
    root = make_data(tmp_path / "data", rows=[GOOD_ROWS[2]], videos=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "ep7.mp4").write_bytes(b"x")
    (root / "test" / "bridge").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(DataError, match="outside the data folder"):
        load_rollouts(str(root), None, "data=test")


def test_symlink_inside_the_data_folder_is_accepted(tmp_path: Path) -> None:
    root = make_data(tmp_path)
    link = root / "test" / "bridge" / "ep9.mp4"  # a relabel: a byte-identical duplicate of ep7
    link.unlink()
    link.symlink_to(root / "test" / "bridge" / "ep7.mp4")
    relative = root / "test" / "bridge" / "ep7_attempt_0_score_3.mp4"
    relative.unlink()
    relative.symlink_to(Path("..") / "robo_arena" / f"{UUID}_2_left.mp4")
    rollouts = {r.row.file_name: r for r in load_rollouts(str(root), None, "data=test")}
    assert os.path.samefile(rollouts["bridge/ep9.mp4"].video_path, root / "test" / "bridge" / "ep7.mp4")
    assert os.path.samefile(rollouts["bridge/ep7_attempt_0_score_3.mp4"].video_path,
                            root / "test" / "robo_arena" / f"{UUID}_2_left.mp4")


def test_trusted_root_allows_links_into_a_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    root = make_data(cache / "snapshot", rows=[GOOD_ROWS[2]], videos=False)
    blob = cache / "blobs" / "abc"
    blob.parent.mkdir(parents=True)
    blob.write_bytes(b"x")
    (root / "test" / "bridge").mkdir(parents=True)
    (root / "test" / "bridge" / "ep7.mp4").symlink_to(blob)
    with pytest.raises(DataError):
        load_rollouts(str(root), None, "data=test")
    rollouts = load_rollouts(str(root), None, "data=test", trusted_root=str(cache))
    assert os.path.samefile(rollouts[0].video_path, blob)


# --------------------------------------------------------------------------- kinds and episodes


def _row(file_name: str, reward: int = 3) -> MetadataRow:
    return MetadataRow(line=1, file_name=file_name, task="t", gold_score=reward)


@pytest.mark.parametrize(
    ("file_name", "reward", "kind"),
    [
        ("sim_arena/abc_1_left.mp4", 5, NATURAL),
        ("sim_arena/abc_1_left.mp4", 1, NATURAL),
        ("robo_arena/abc_1_right.mp4", 3, NATURAL),
        ("robo_arena/ep_attempt_0_score_2.mp4", 2, NATURAL),  # the subset decides first
        ("bridge/ep_attempt_0_score_3.mp4", 3, CLIP),
        ("sim_panda/episode_000557_attempt_1_score_4.mp4", 4, CLIP),
        ("droid/some_ep_attempt_12_score_1.mp4", 1, CLIP),
        ("bridge/ep.mp4", 1, COUNTERFACTUAL),
        ("bridge/ep.mp4", 4, COUNTERFACTUAL),
        ("sim_kuka/episode_000080_relabel_0.mp4", 2, COUNTERFACTUAL),
        ("bridge/ep.mp4", 5, ORIGINAL),
        ("unregistered_subset/ep.mp4", 5, NATURAL),  # a subset we do not know: natural unless OXE-named
        ("unregistered_subset/ep.mp4", 2, NATURAL),
        ("unregistered_subset/u_originalsplit_train_index_3.mp4", 2, COUNTERFACTUAL),
        ("bridge/ep_attempt_x_score_3.mp4", 3, COUNTERFACTUAL),  # not the clip pattern
        ("bridge/ep_score_3.mp4", 3, COUNTERFACTUAL),
    ],
)
def test_infer_kind(file_name: str, reward: int, kind: str) -> None:
    assert infer_kind(_row(file_name, reward)) == kind


def test_clips_share_their_episode() -> None:
    keys = {
        episode_key(_row("bridge/ep7.mp4", 5)),
        episode_key(_row("bridge/ep7_attempt_0_score_3.mp4")),
        episode_key(_row("bridge/ep7_attempt_1_score_1.mp4")),
    }
    assert keys == {"bridge/ep7"}
    assert episode_key(_row("bridge/ep8_attempt_0_score_3.mp4")) == "bridge/ep8"
    assert episode_key(_row("droid/ep7.mp4")) == "droid/ep7"  # subsets never share


def test_real_oxe_names_share_their_episode_across_duplicate_suffixes() -> None:
    base = "bridge/bridge_originalsplit_train_index_1811"
    names = [f"{base}_2.mp4", f"{base}.mp4", f"{base}_attempt_1_score_3.mp4", f"{base}_1.mp4"]
    assert {episode_key(_row(name)) for name in names} == {cluster_key(_row(name)) for name in names} == {base}
    assert episode_key(_row("droid/bridge_originalsplit_train_index_1811.mp4")) != base  # subsets never share


def test_roboarena_views_share_the_rollout_and_rollouts_share_the_session() -> None:
    left, right = _row(f"robo_arena/{UUID}_B_left.mp4"), _row(f"robo_arena/{UUID}_B_right.mp4")
    other_rollout = _row(f"robo_arena/{UUID}_E_left.mp4")
    assert episode_key(left) == episode_key(right) == f"robo_arena/{UUID}_B"
    assert episode_key(other_rollout) == f"robo_arena/{UUID}_E"
    assert cluster_key(left) == cluster_key(other_rollout) == f"robo_arena/{UUID}"
    assert cluster_key(_row(f"sim_arena/{UUID}_A_right.mp4")) == f"sim_arena/{UUID}"


def test_arena_names_without_a_letter_fall_back_to_one_rollout_per_name() -> None:
    left = episode_key(_row(f"robo_arena/{UUID}_2_left.mp4"))
    assert left == episode_key(_row(f"robo_arena/{UUID}_2_right.mp4")) == f"robo_arena/{UUID}_2"
    assert episode_key(_row(f"robo_arena/{UUID}_3_left.mp4")) == f"robo_arena/{UUID}_3"
    assert cluster_key(_row(f"robo_arena/{UUID}_2_left.mp4")) == left


def test_left_right_suffix_outside_natural_subsets_is_kept() -> None:
    assert episode_key(_row("bridge/cam_2_left.mp4")) == "bridge/cam_2_left"


def test_a_clip_whose_name_score_is_not_its_gold_score_is_a_data_error(tmp_path: Path) -> None:
    clip = "bridge/bridge_originalsplit_train_index_7_attempt_1_score_3.mp4"
    path = write_metadata(tmp_path, [{"file_name": "bridge/bridge_originalsplit_train_index_7.mp4", "task": "t",
                                      "reward": 5}, {"file_name": clip, "task": "t", "reward": 2}])
    with pytest.raises(DataError) as raised:
        read_metadata(str(path))
    assert_names(str(raised.value), str(path), "line 2", "field 'reward'", clip, "score 3", "reward is 2",
                 "Correct the reward or the file name")
    assert [row.gold_score for row in read_metadata(str(path), check_clip_name_scores=False)] == [5, 2]
    natural = write_metadata(tmp_path / "n", [{"file_name": "robo_arena/x_attempt_1_score_3.mp4", "task": "t",
                                               "reward": 2}])
    assert len(read_metadata(str(natural))) == 1  # natural rollouts are never clips


def test_rollouts_carry_their_cluster(tmp_path: Path) -> None:
    rows = [{"file_name": f"robo_arena/{UUID}_{letter}_{view}.mp4", "task": "t", "reward": 3}
            for letter in "AC" for view in ("left", "right")]
    rollouts = load_rollouts(str(make_data(tmp_path, rows)), None, "data=test")
    assert {rollout.episode for rollout in rollouts} == {f"robo_arena/{UUID}_A", f"robo_arena/{UUID}_C"}
    assert {rollout.cluster for rollout in rollouts} == {f"robo_arena/{UUID}"}


# --------------------------------------------------------------------------- resolve_data_source and the sample


def test_sample_source() -> None:
    source = resolve_data_source("sample")
    assert isinstance(source, DataSource)
    assert source.data == "sample"
    assert source.root == sample_root()
    assert os.path.isfile(metadata_path(source.root))
    assert re.fullmatch(r"sample-[0-9a-f]{16}", source.revision)
    assert source.description == "data=sample"
    assert resolve_data_source("sample").revision == source.revision  # stable


@pytest.fixture(scope="module")
def sample_rollouts() -> list:
    source = resolve_data_source("sample")
    return load_rollouts(source.root, None, source.description, source.trusted_root)


def test_sample_loads(sample_rollouts: list) -> None:
    rows = sample_rows()
    assert rows, "the bundled sample has no rows"
    assert [r.row.file_name for r in sample_rollouts] == [row["file_name"] for row in rows]
    assert [(r.row.task, r.row.gold_score) for r in sample_rollouts] == [(row["task"], row["reward"]) for row in rows]
    assert set(SAMPLE_SUBSET_IDS) == {"sim_arena", "sim_panda", "sim_kuka"}
    assert {r.row.subset for r in sample_rollouts} == set(SAMPLE_SUBSET_IDS)
    assert all(1 <= r.row.gold_score <= 5 for r in sample_rollouts)
    for subset in SAMPLE_SUBSET_IDS:  # every gold score in every subset
        assert {r.row.gold_score for r in sample_rollouts if r.row.subset == subset} == {1, 2, 3, 4, 5}, subset
    # the loader's kinds are the generator's (sim_state.jsonl), and natural rollouts only in the arena subset
    assert [r.kind for r in sample_rollouts] == [kind_of(row["file_name"]) for row in rows]
    assert {r.row.subset for r in sample_rollouts if r.kind == NATURAL} == {"sim_arena"}
    for subset in ("sim_panda", "sim_kuka"):
        assert {r.kind for r in sample_rollouts if r.row.subset == subset} == {ORIGINAL, CLIP, COUNTERFACTUAL}
    # the counts of the sample README
    documented, total_rows, _ = documented_counts()
    assert len(sample_rollouts) == total_rows
    assert Counter((r.row.subset, r.kind, r.row.gold_score) for r in sample_rollouts) == documented
    for rollout in sample_rollouts:
        if rollout.kind == CLIP:
            assert rollout.row.stem.endswith(f"_score_{rollout.row.gold_score}")
        if rollout.kind == ORIGINAL:
            assert rollout.row.gold_score == 5


def test_sample_subset_selection() -> None:
    source = resolve_data_source("sample")
    rollouts = load_rollouts(source.root, ["sim_kuka"], source.description, source.trusted_root)
    expected = [row["file_name"] for row in rows_of("sim_kuka")]
    assert expected and len(expected) < len(sample_rows())
    assert [r.row.file_name for r in rollouts] == expected
    available = ", ".join(sample_subsets())
    assert available == "sim_arena, sim_kuka, sim_panda"
    with pytest.raises(DataError, match=f"Available subsets: {available}"):
        load_rollouts(source.root, ["bridge"], source.description, source.trusted_root)


def test_whole_sample_decodes(sample_rollouts: list) -> None:
    distinct: dict[str, str] = {}
    for rollout in sample_rollouts:
        distinct.setdefault(file_digest(rollout.video_path), rollout.video_path)
    # the relabels are byte-identical duplicates of their originals; every other row is a video of its own
    relabels = sum(1 for r in sample_rollouts if r.kind == COUNTERFACTUAL)
    assert 0 < relabels and len(distinct) == len(sample_rollouts) - relabels
    assert set(distinct) == set(distinct_videos())  # the package's digest is the SHA-256 of the bytes
    assert len(distinct) == documented_counts()[2]
    for path in distinct.values():
        probe = probe_video(path)
        assert probe.num_frames > 0, path
        assert probe.native_fps == pytest.approx(10.0), path
        assert probe.codec == "h264"
        indices = select_frame_indices(probe.num_frames, probe.native_fps)
        assert indices and indices[0] == 0, path
        assert len(indices) == -(-probe.num_frames // 10)
        with av.open(path) as container:  # every counted frame really decodes
            assert sum(1 for _ in container.decode(video=0)) == probe.num_frames, path


def test_local_folder_source(tmp_path: Path) -> None:
    root = make_data(tmp_path / "copy")
    source = resolve_data_source(str(root))
    assert source.root == str(root)
    assert source.revision.startswith("local-")
    assert len(load_rollouts(source.root, None, source.description, source.trusted_root)) == len(GOOD_ROWS)
    # relative paths are made absolute
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        assert resolve_data_source("copy").root == str(root)
    finally:
        os.chdir(cwd)


def test_local_revision_follows_metadata(tmp_path: Path) -> None:
    root = make_data(tmp_path)
    before = resolve_data_source(str(root)).revision
    make_data(tmp_path, rows=GOOD_ROWS[:3])
    assert resolve_data_source(str(root)).revision != before


def test_nonexistent_folder(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"
    with pytest.raises(DataError) as raised:
        resolve_data_source(str(missing))
    assert_names(str(raised.value), str(missing), "test/metadata.jsonl", "test/<subset>/*.mp4")


def test_folder_without_metadata(tmp_path: Path) -> None:
    (tmp_path / "test" / "bridge").mkdir(parents=True)
    with pytest.raises(DataError) as raised:
        resolve_data_source(str(tmp_path))
    assert_names(str(raised.value), str(tmp_path), "test/metadata.jsonl", "test/<subset>/*.mp4", "not found")


def test_file_instead_of_folder(tmp_path: Path) -> None:
    file = tmp_path / "metadata.jsonl"
    file.write_text("{}")
    with pytest.raises(DataError, match="test/metadata.jsonl"):
        resolve_data_source(str(file))


# --------------------------------------------------------------------------- instance ids


def test_instance_id_stable_and_opaque(sample_rollouts: list) -> None:
    ids = [instance_id(r.row.file_name) for r in sample_rollouts]
    assert len(set(ids)) == len(ids) == len(sample_rows())
    assert ids == [instance_id(r.row.file_name) for r in sample_rollouts]
    assert instance_id("bridge/ep7_attempt_0_score_3.mp4") == instance_id("bridge/ep7_attempt_0_score_3.mp4")
    for rollout, identifier in zip(sample_rollouts, ids, strict=True):
        assert re.fullmatch(r"rr-[0-9a-f]{16}", identifier)
        assert "score" not in identifier and "attempt" not in identifier and "relabel" not in identifier
        assert rollout.row.subset not in identifier
        assert rollout.row.stem not in identifier
        for part in re.split(r"[_/.\-]", rollout.row.file_name):
            if len(part) >= 4 and not re.fullmatch(r"[0-9a-f]+", part):
                assert part not in identifier
    assert instance_id("b/e_attempt_0_score_3.mp4") != instance_id("b/e_attempt_0_score_4.mp4")


def test_rows_of_an_unknown_subset_are_natural_unless_named_like_oxe() -> None:
    from helm_roboreward.protocol.rows import MetadataRow, infer_kind

    def kind(name: str, reward: int) -> str:
        return infer_kind(MetadataRow(line=1, file_name=f"my_lab_robot/{name}.mp4", task="t", gold_score=reward))

    assert kind("episode_000012", 2) == "natural" and kind("episode_000013", 5) == "natural"  # a LeRobot import
    assert kind("my_lab_robot_originalsplit_train_index_3", 2) == "counterfactual"
    assert kind("my_lab_robot_originalsplit_train_index_3_attempt_1_score_2", 2) == "clip"
    assert infer_kind(MetadataRow(line=1, file_name="bridge/episode_1.mp4", task="t", gold_score=2)) == "counterfactual"
