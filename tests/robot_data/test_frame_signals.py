"""``roboreward label --format frame-signals``: LeRobot's frame-signal file, schema v1, beside the RA-BC file.

The contract checked here is LeRobot's, read from its source (huggingface/lerobot pull request #4554,
``src/lerobot/rewards/scoring/schema.py`` at def00e39536122e0bd98827e4b331e398713c92c, ``types.py`` at
259bdf24535deddc93629a0c29e6231b77559fc8): the assertions restate it independently of the package's own check
(:func:`check_frame_signals`), which is tested to refuse what the contract refuses. lerobot's released packages
(0.6.1 and older) do not have ``lerobot.rewards.scoring``, so no test reads the file with lerobot itself.
"""

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helm_roboreward.robot_data.frame_signals import (
    FRAME_SIGNALS_FILE,
    PROGRESS_SIGNAL,
    SCORE_SIGNAL,
    SCORED_SIGNAL,
    check_frame_signals,
    episode_signals,
    frame_signals_table,
    prefix_signals,
)
from helm_roboreward.robot_data.label_outputs import labelling_model
from tests.helpers.harness import check_completed, cli, helm_environment, private_local_path
from tests.helpers.lerobot_datasets import default_episodes, write_v3

TIMEOUT = 600
DESCRIPTOR_FIELDS = {"description", "direction", "bounds", "unit", "missing_values"}
"""``dataclasses.asdict(SignalDescriptor(...))`` at the commit named above."""
KEYS = {name: f"lerobot.reward_scoring.{name}".encode() for name in
        ("format", "schema_version", "provenance", "descriptors", "episode_indices")}


def label(source: Path, out: Path, local: Path, *options: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
    process = subprocess.run([cli("roboreward"), "label", str(source), "--out", str(out), "--local-path", str(local),
                              "--quiet", "--model", "baseline/constant-3", *options], env=helm_environment(),
                             capture_output=True, text=True, timeout=TIMEOUT)
    if expect == 0:
        check_completed(process, "roboreward label")
    assert process.returncode == expect, process.stderr[-2000:]
    return process


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_v3(tmp_path_factory.mktemp("lerobot") / "kitchen_robot", default_episodes(4), episodes_per_file=3)


@pytest.fixture(scope="module")
def prefix_out(dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("signals_prefix")
    label(dataset, work / "out", private_local_path(work / "local"), "--mode", "prefix", "--anchors", "3",
          "--format", "both")
    return work / "out"


def meets_the_contract(table: pa.Table) -> dict[str, Any]:
    """LeRobot's schema-v1 rules, restated; returns the decoded metadata."""
    metadata = table.schema.metadata
    assert metadata[KEYS["format"]] == b"lerobot.frame_signals" and metadata[KEYS["schema_version"]] == b"1"
    decoded = {name: json.loads(metadata[key]) for name, key in KEYS.items() if name not in ("format",
                                                                                              "schema_version")}
    for name, key in KEYS.items():  # canonical JSON: sorted keys, no spaces
        if name in decoded:
            assert metadata[key] == json.dumps(decoded[name], sort_keys=True, separators=(",", ":")).encode()
    assert table.column_names[:3] == ["index", "episode_index", "frame_index"]
    assert set(table.column_names[3:]) == set(decoded["descriptors"])
    for name in ("index", "episode_index", "frame_index"):
        assert table.schema.field(name).type == pa.int64() and table[name].null_count == 0
    for name, descriptor in decoded["descriptors"].items():
        assert set(descriptor) == DESCRIPTOR_FIELDS and descriptor["direction"] in ("higher", "lower", "none")
        assert descriptor["missing_values"] in ("forbidden", "nan") and descriptor["description"].strip()
        values = table[name].to_numpy(zero_copy_only=False)
        assert table[name].null_count == 0
        if values.dtype.kind == "f":
            assert not np.isinf(values).any()
            assert descriptor["missing_values"] == "nan" or not np.isnan(values).any()
        if descriptor["bounds"] is not None:
            finite = values[np.isfinite(values)] if values.dtype.kind == "f" else values
            assert finite.min() >= descriptor["bounds"][0] and finite.max() <= descriptor["bounds"][1]
    index, episode, frame = (table[name].to_numpy() for name in ("index", "episode_index", "frame_index"))
    assert np.all(np.diff(index) > 0) and np.all(np.diff(episode) >= 0)
    assert sorted(set(episode.tolist())) == decoded["episode_indices"]
    for number in set(episode.tolist()):
        assert len(set((index - frame)[episode == number].tolist())) == 1 and np.all(frame[episode == number] >= 0)
    assert isinstance(decoded["provenance"], dict)
    return decoded


def test_prefix_mode_writes_every_frame_beside_the_rabc_file(prefix_out: Path) -> None:
    table = pq.read_table(prefix_out / FRAME_SIGNALS_FILE)
    decoded = meets_the_contract(table)
    rabc = pq.read_table(prefix_out / "roboreward_progress.parquet").to_pydict()
    rows = table.to_pydict()
    assert rows["index"] == rabc["index"] and rows["frame_index"] == rabc["frame_index"]  # every frame, the same keys
    assert rows[PROGRESS_SIGNAL] == rabc["progress_sparse"] == [0.5] * len(rabc["index"])
    scored = [i for i, flag in enumerate(rows[SCORED_SIGNAL]) if flag]
    assert len(scored) == 4 * 3  # 3 anchors per episode
    assert [rows[SCORE_SIGNAL][i] for i in scored] == [3.0] * 12
    assert all(math.isnan(v) for i, v in enumerate(rows[SCORE_SIGNAL]) if i not in scored)
    last_frames = {rows["episode_index"][i]: rows["frame_index"][i] for i in scored}
    assert all(rows["frame_index"][i] <= last_frames[rows["episode_index"][i]] for i in scored)
    provenance = decoded["provenance"]
    assert provenance["model"]["id"] == "baseline/constant-3" and provenance["adapter"]["id"] == (
        "helm_roboreward.label.prefix")
    assert provenance["dataset"]["kind"] == "local" and provenance["camera"]
    assert labelling_model(str(prefix_out), "baseline/constant-3", None) is None
    assert labelling_model(str(prefix_out), "baseline/uniform-random", None) == "baseline/constant-3"


def test_episode_mode_writes_one_row_per_episode_at_its_last_frame(dataset: Path, tmp_path: Path,
                                                                   prefix_out: Path) -> None:
    out = tmp_path / "out"
    label(dataset, out, private_local_path(tmp_path / "local"), "--format", "frame-signals", "--episodes", "1,3")
    table = pq.read_table(out / FRAME_SIGNALS_FILE)
    meets_the_contract(table)
    rows = table.to_pylist()
    everything = pq.read_table(prefix_out / FRAME_SIGNALS_FILE).to_pydict()
    last = {}
    for index, episode in zip(everything["index"], everything["episode_index"], strict=True):
        last[episode] = index
    assert [(r["episode_index"], r["index"]) for r in rows] == [(1, last[1]), (3, last[3])]
    assert [(r[SCORE_SIGNAL], r[PROGRESS_SIGNAL], r[SCORED_SIGNAL]) for r in rows] == [(3.0, 0.5, True)] * 2
    assert not (out / "roboreward_progress.parquet").exists()
    # the same --out again with the RA-BC default: this run writes no frame-signal file, so the earlier one goes
    rerun = label(dataset, out, private_local_path(tmp_path / "local2"), "--episodes", "1,3")
    assert not (out / FRAME_SIGNALS_FILE).exists() and f"removed {out / FRAME_SIGNALS_FILE}" in rerun.stdout


def test_both_formats_need_prefix_mode(dataset: Path, tmp_path: Path) -> None:
    failed = label(dataset, tmp_path / "out", private_local_path(tmp_path / "local"), "--format", "both", expect=2)
    assert "--format both: the RA-BC progress file needs --mode prefix" in failed.stderr
    assert not (tmp_path / "out").exists()


def test_the_check_refuses_what_the_contract_refuses() -> None:
    episodes = [prefix_signals(0, 0, [0.0, 0.5, 1.0], {2: 3.0, 3: 5.0}), episode_signals(2, 3, 4, None, None)]
    table = frame_signals_table(episodes, {"model": {"id": "m"}})
    assert table.to_pydict()["index"] == [0, 1, 2, 6] and math.isnan(table.to_pydict()[SCORE_SIGNAL][3])
    meets_the_contract(table)

    def broken(**columns: Any) -> pa.Table:
        data = table.to_pydict()
        data.update(columns)
        return pa.table({name: pa.array(values, table.schema.field(name).type) for name, values in data.items()},
                        metadata=table.schema.metadata)

    cases = {
        "increase strictly": broken(index=[0, 2, 1, 6]),
        "in step with the index": broken(frame_index=[0, 1, 3, 3]),
        "outside its bounds": broken(**{PROGRESS_SIGNAL: [0.0, 0.5, 1.0, 1.5]}),
    }
    for expected, bad in cases.items():
        with pytest.raises(ValueError, match=expected):
            check_frame_signals(bad)
    with pytest.raises(ValueError, match="increase strictly"):  # an episode whose frames come before another's
        frame_signals_table([episode_signals(0, 10, 4, 3.0, 0.5), episode_signals(1, 2, 4, 3.0, 0.5)], {})
    with pytest.raises(ValueError):  # provenance must be JSON without NaN
        frame_signals_table(episodes, {"x": math.nan})
    with pytest.raises(ValueError, match="does not declare"):
        check_frame_signals(table.replace_schema_metadata({}))
