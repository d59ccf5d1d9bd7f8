"""Episode selections and reward labels: the syntax, every invalid record listed, unknown and missing episodes."""

from pathlib import Path

import pytest

from helm_roboreward.robot_data.labels import (
    ImportRequestError,
    check_label_episodes,
    format_selection,
    parse_episode_selection,
    read_labels,
    select_episodes,
    success_labels,
)
from helm_roboreward.robot_data.lerobot_format import Episode


def episodes(indices: list[int]) -> list[Episode]:
    return [Episode(i, 5, ("task",), "v.mp4", 0.0, 0.5, 5 * i, "d.parquet") for i in indices]


def test_selection_syntax() -> None:
    assert parse_episode_selection("0:200,305") == [(0, 200), (305, None)]
    assert parse_episode_selection(" 3 , 1:2") == [(3, None), (1, 2)]
    for bad in ("", "a", "5:5", "-1", "3:1", "1:2:3"):
        with pytest.raises(ImportRequestError, match="is not an episode index or a range"):
            parse_episode_selection(bad)


def test_selection_keeps_dataset_order_and_checks_indices() -> None:
    dataset = episodes([0, 1, 2, 5, 7])
    assert [e.index for e in select_episodes(dataset, "7,0:3", "ds")] == [0, 1, 2, 7]
    assert [e.index for e in select_episodes(dataset, "0:200", "ds")] == [0, 1, 2, 5, 7]
    assert select_episodes(dataset, None, "ds") == dataset
    with pytest.raises(ImportRequestError, match=r"episode 6 is not in ds \(its episodes: 0:3,5,7\)"):
        select_episodes(dataset, "6", "ds")
    with pytest.raises(ImportRequestError, match="the range 8:20 covers no episode"):
        select_episodes(dataset, "8:20", "ds")
    assert format_selection([0, 1, 2, 5, 7, 8]) == "0:3,5,7:9"


def test_jsonl_and_csv_labels(tmp_path: Path) -> None:
    jsonl = tmp_path / "labels.jsonl"
    jsonl.write_text('{"episode_index": 0, "reward": 5}\n\n{"episode_index": 3, "reward": 2, "task": "open it"}\n',
                     encoding="utf-8")
    labels = read_labels(str(jsonl))
    assert [(x.episode_index, x.gold_score, x.task, x.line) for x in labels.values()] == [(0, 5, None, 1),
                                                                                        (3, 2, "open it", 3)]
    csv = tmp_path / "labels.csv"
    csv.write_text("episode_index,reward,task\n0,5,\n3,2,open it\n", encoding="utf-8")
    assert [(x.episode_index, x.gold_score, x.task) for x in read_labels(str(csv)).values()] == [(0, 5, None),
                                                                                              (3, 2, "open it")]


def test_every_invalid_label_is_listed(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join([
        '{"episode_index": 0, "reward": 6}', '{"episode_index": 1, "reward": 0}', '{"episode_index": 2}',
        '{"episode_index": 3, "reward": true}', '{"episode_index": 4, "reward": 2.5}',
        '{"episode_index": 5, "reward": 3}', '{"episode_index": 5, "reward": 4}', '[1, 2]',
        '{"episode_index": 6, "reward": "\u00b3"}', '{"episode_index": "--1", "reward": 3}',
        '{"episode_index": 7, "reward": 3, "task": "\u200b\u2060"}']) + "\n", encoding="utf-8")
    with pytest.raises(ImportRequestError) as caught:
        read_labels(str(path))
    message = str(caught.value)
    assert "10 invalid label(s)" in message and "Traceback" not in message
    for expected in ("line 1, field 'reward': 6 is outside 1..5", "line 2, field 'reward': 0 is outside 1..5",
                     "line 3, field 'reward': missing", "line 4, field 'reward': expected an integer 1..5, got True",
                     "line 5, field 'reward': expected an integer 1..5, got 2.5",
                     # ASCII digits only: "³".isdigit() is true, and int() raises on "³" and "--1"
                     "line 9, field 'reward': expected an integer 1..5, got '³'",
                     "line 10, field 'episode_index': expected an integer, got '--1'",
                     # the rule roboreward prepare applies to a row's task (core/validation.py)
                     "line 11, field 'task': has no visible characters",
                     "line 7, field 'episode_index': episode 5 is already labelled on line 6",
                     "line 8: expected an object"):
        assert expected in message


def test_csv_without_the_columns_and_bad_json(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("episode,score\n0,5\n", encoding="utf-8")
    with pytest.raises(ImportRequestError, match="the header row has no column 'episode_index'"):
        read_labels(str(path))
    path = tmp_path / "labels.jsonl"
    path.write_text('{"episode_index": 0, "reward": 5\n', encoding="utf-8")
    with pytest.raises(ImportRequestError, match="line 1: not valid JSON"):
        read_labels(str(path))
    with pytest.raises(ImportRequestError, match="file not found"):
        read_labels(str(tmp_path / "missing.jsonl"))


def test_labels_must_name_dataset_episodes_and_cover_the_selection(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text('{"episode_index": 0, "reward": 5}\n{"episode_index": 9, "reward": 1}\n', encoding="utf-8")
    labels = read_labels(str(path))
    dataset = episodes([0, 1, 2])
    with pytest.raises(ImportRequestError,
                       match=r"label\(s\) for episode\(s\) not in ds: 9 \(line 2\). Its episodes: 0:3"):
        check_label_episodes(labels, dataset, dataset[:1], str(path), "ds")
    labels.pop(9)
    with pytest.raises(ImportRequestError, match=r"no label for selected episode\(s\) 1:3"):
        check_label_episodes(labels, dataset, dataset, str(path), "ds")
    check_label_episodes(labels, dataset, dataset[:1], str(path), "ds")


def test_success_labels_are_five_or_one() -> None:
    assert {i: x.gold_score for i, x in success_labels({0: True, 1: False}).items()} == {0: 5, 1: 1}
