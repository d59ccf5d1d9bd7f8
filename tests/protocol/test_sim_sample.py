"""The simulated sample: every label follows from the stored simulator state, the naming and label rules of
the augmentation kinds hold, and the layout is exactly the real test split's.

The sample folder is ``$ROBOREWARD_SIM_SAMPLE_DIR`` or, by default, the bundled ``helm_roboreward/sample``.
The labelling logic is imported from the generator (``scripts/sim/labels.py``), which needs no pybullet.
The regeneration test (slow, needs pybullet) rebuilds the sample and compares it with the folder (the rebuild may
have started in the background right after collection: tests/helpers/regeneration.py).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from helm_roboreward.protocol.rows import (
    CLIP,
    COUNTERFACTUAL,
    NATURAL,
    ORIGINAL,
    cluster_key,
    episode_key,
    infer_kind,
    load_rollouts,
    read_metadata,
)
from helm_roboreward.protocol.rules import SAMPLE_SUBSET_IDS
from scripts.sim.labels import (
    GOAL_REGIONS,
    RULE_SCORES,
    TaskState,
    is_stable,
    measure,
    progress_score,
    state_from_record,
    state_to_record,
    thresholds_table,
)
from scripts.sim.records import METADATA_KEYS, counts_table
from tests.helpers import regeneration
from tests.helpers.sample import REPO

SAMPLE_DIR = regeneration.SIM_SAMPLE_DIR
GENERATOR = regeneration.GENERATOR
README_COPY = REPO / "scripts" / "sim" / "SAMPLE_README.md"
MAX_BYTES = 5_000_000

OXE_EPISODE = r"(?P<episode>(?P<subset>sim_[a-z]+)_originalsplit_(?:train|test)_index_(?:0|[1-9]\d*))"
CLIP_NAME = re.compile(rf"^{OXE_EPISODE}_attempt_(?P<attempt>[1-9]\d*)_score_(?P<score>\d+)$")
COPY_NAME = re.compile(rf"^{OXE_EPISODE}(?:_(?P<copy>[1-9]))?$")
"""An original or a relabel: the episode's name, with or without a duplicate suffix (the real split's patterns)."""
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
ARENA_NAME = re.compile(rf"^(?P<episode>(?P<session>{UUID})_(?P<letter>[A-G]))_(?P<view>left|right)$")


# --------------------------------------------------------------------------- fixtures


def load_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def sample() -> dict[str, Any]:
    """Metadata rows, sidecar states (by file name) and the README of the sample folder."""
    readme = (SAMPLE_DIR / "README.md").read_text(encoding="utf-8")
    rows = load_jsonl(SAMPLE_DIR / "test" / "metadata.jsonl")
    states = load_jsonl(SAMPLE_DIR / "sim_state.jsonl")
    return {"rows": rows, "states": {s["file_name"]: s for s in states},
            "state_order": [s["file_name"] for s in states], "readme": readme}


def stem(file_name: str) -> str:
    return file_name.rsplit("/", 1)[-1][: -len(".mp4")]


def copy_name(file_name: str) -> re.Match[str]:
    """The parts of an original's or a relabel's name (the test fails on any other name)."""
    match = COPY_NAME.match(stem(file_name))
    assert match, file_name
    return match


def video(file_name: str) -> Path:
    return SAMPLE_DIR / "test" / file_name


def decoded(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        return [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]


# --------------------------------------------------------------------------- the labelling rules (pure)


def state(final: tuple[float, float, float], held: bool = False, kind: str = "circle", bottom: float | None = None,
          start: tuple[float, float, float] = (0.4, 0.0, 0.65)) -> TaskState:
    """A cube (half size 0.025) starting at ``start``; the goal circle at (0.4, 0.3) on the table (z 0.626)."""
    return TaskState(kind, start, final, start[2] - 0.025, final[2] - 0.025 if bottom is None else bottom,
                     (0.4, 0.3, 0.626), held)


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        (state((0.4, 0.31, 0.651)), ("rests_at_goal", 5)),
        (state((0.4, 0.31, 0.651), held=True), ("held_above_goal", 4)),
        (state((0.4, 0.30, 0.75), held=True), ("held_above_goal", 4)),
        (state((0.4, 0.30, 0.95), held=True), ("good_progress", 3)),
        (state((0.4, 0.30, 0.70)), ("released_near_goal", 4)),
        (state((0.4, 0.20, 0.651)), ("released_near_goal", 4)),
        (state((0.4, 0.16, 0.651)), ("good_progress", 3)),
        (state((0.4, 0.16, 0.70), held=True), ("good_progress", 3)),
        (state((0.4, 0.14, 0.651)), ("small_change", 2)),
        (state((0.4, 0.05, 0.70), held=True), ("small_change", 2)),
        (state((0.4, 0.0, 0.70)), ("small_change", 2)),
        (state((0.4, 0.04, 0.651)), ("small_change", 2)),
        (state((0.4, 0.0, 0.651)), ("no_change", 1)),
        (state((0.4, -0.1, 0.651)), ("no_change", 1)),
    ],
)
def test_rules(case: TaskState, expected: tuple[str, int]) -> None:
    rule, score = expected
    assert progress_score(case) == (score, rule)
    assert RULE_SCORES[rule] == score


def test_five_needs_release_and_rest() -> None:
    at_goal = state((0.4, 0.3, 0.651))
    assert progress_score(at_goal)[0] == 5
    assert progress_score(state((0.4, 0.3, 0.651), held=True))[0] == 4
    radius = GOAL_REGIONS["circle"].at_goal_radius
    assert progress_score(state((0.4, 0.3 - radius - 0.001, 0.651)))[0] == 4


def test_record_round_trip_and_stability() -> None:
    original = state((0.41, 0.12, 0.651), kind="tray")
    record = state_to_record(original)
    again = state_from_record(json.loads(json.dumps(record)))
    assert again.goal_kind == original.goal_kind and again.held == original.held
    assert again.object_final == pytest.approx(original.object_final, abs=1e-5)
    assert progress_score(again) == progress_score(original)
    assert record["rule"] == progress_score(original)[1]
    assert is_stable(state((0.4, 0.3, 0.651)))
    assert not is_stable(state((0.4, 0.3 - GOAL_REGIONS["circle"].at_goal_radius - 0.002, 0.651)))


def test_labels_module_needs_no_pybullet() -> None:
    code = "import sys; sys.modules['pybullet'] = None; import scripts.sim.labels, scripts.sim.records"
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


# --------------------------------------------------------------------------- the sample


def test_layout_is_exactly_the_real_one(sample: dict[str, Any]) -> None:
    test_dir = SAMPLE_DIR / "test"
    assert sorted(p.name for p in test_dir.iterdir()) == sorted(["metadata.jsonl", *SAMPLE_SUBSET_IDS])
    raw = (test_dir / "metadata.jsonl").read_bytes()
    assert b"\r" not in raw and raw.endswith(b"\n") and not raw.startswith(b"\xef\xbb\xbf")
    lines = raw.decode("utf-8").splitlines()
    assert len(lines) == len(sample["rows"])
    names = [row["file_name"] for row in sample["rows"]]
    assert names == sorted(names) and len(set(names)) == len(names)
    for line, row in zip(lines, sample["rows"], strict=True):
        assert tuple(row) == METADATA_KEYS
        assert line == json.dumps(row, ensure_ascii=False)
        assert type(row["reward"]) is int and 1 <= row["reward"] <= 5
        assert 4 <= len(row["task"]) <= 207 and row["gpt5_mini_check"]
        subset, name = row["file_name"].split("/")
        assert subset in SAMPLE_SUBSET_IDS and name.endswith(".mp4")
    on_disk = sorted(str(p.relative_to(test_dir)) for p in test_dir.glob("*/*"))
    assert on_disk == names
    assert not list(test_dir.rglob("sim_state*"))
    rollouts = load_rollouts(str(SAMPLE_DIR), None, "the simulated sample")
    assert len(rollouts) == len(names)


def test_sample_size(sample: dict[str, Any]) -> None:
    total = sum(p.stat().st_size for p in SAMPLE_DIR.rglob("*") if p.is_file())
    assert total <= MAX_BYTES
    assert 40 <= len(sample["rows"]) <= 80


def test_every_label_matches_the_simulator_state(sample: dict[str, Any]) -> None:
    assert sample["state_order"] == [row["file_name"] for row in sample["rows"]]
    for row in sample["rows"]:
        entry = sample["states"][row["file_name"]]
        task_state = state_from_record(entry)
        score, rule = progress_score(task_state)
        assert (score, rule) == (row["reward"], entry["rule"]), row["file_name"]
        assert entry["score"] == row["reward"]
        measures = measure(task_state)
        for key in ("start_distance", "final_distance", "progress", "height_above_goal", "lift"):
            assert round(getattr(measures, key), 5) == entry[key], (row["file_name"], key)
        assert is_stable(task_state), row["file_name"]


def test_kinds_follow_the_naming_and_label_rules(sample: dict[str, Any]) -> None:
    by_name = {row["file_name"]: row for row in sample["rows"]}
    metadata = {row.file_name: row for row in read_metadata(str(SAMPLE_DIR / "test" / "metadata.jsonl"))}
    for name, row in by_name.items():
        entry = sample["states"][name]
        kind = infer_kind(metadata[name])
        assert kind == entry["kind"], name
        subset, base = name.split("/")[0], stem(name)
        if kind == NATURAL:
            assert subset == "sim_arena" and ARENA_NAME.match(base), name
            continue
        match = (CLIP_NAME if kind == CLIP else COPY_NAME).match(base)
        assert match and match["subset"] == subset, name
        if kind == ORIGINAL:
            assert row["reward"] == 5, name
        elif kind == CLIP:
            assert int(match["score"]) == row["reward"] and 1 <= row["reward"] <= 4, name
            original = by_name[entry["source"]]
            assert sample["states"][original["file_name"]]["kind"] == ORIGINAL
            assert copy_name(original["file_name"])["episode"] == match["episode"]  # with any duplicate suffix
            assert original["task"] == row["task"]
            assert episode_key(metadata[name]) == episode_key(metadata[original["file_name"]])
            assert len(decoded(video(name))) == entry["frame"] + 1
        else:
            assert kind == COUNTERFACTUAL and "score" not in base and 1 <= row["reward"] <= 4, name
            original = by_name[entry["source"]]
            assert original["reward"] == 5 and original["task"] != row["task"]
            assert video(name).read_bytes() == video(original["file_name"]).read_bytes()


def test_names_follow_the_real_duplicate_suffix_patterns(sample: dict[str, Any]) -> None:
    """Per OXE-like subset: originals with and without a duplicate suffix, clips of a suffixed original, a relabel
    without a suffix beside a suffixed original; one relabel under another index; none of the old names."""
    rows = {row["file_name"]: sample["states"][row["file_name"]] for row in sample["rows"]}
    names = "\n".join(rows)
    assert not re.search(r"_relabel_|_attempt_0_|_\d_(?:left|right)\.mp4|episode_\d", names)
    for subset in ("sim_panda", "sim_kuka"):
        originals = {name: COPY_NAME.match(stem(name)) for name, state in rows.items()
                     if name.startswith(f"{subset}/") and state["kind"] == ORIGINAL}
        suffixed = {name for name, match in originals.items() if match and match["copy"]}
        assert suffixed and len(suffixed) < len(originals), subset
        sources = {state["source"] for state in rows.values() if state["kind"] == CLIP}
        assert suffixed & sources, f"{subset}: no clip of an original with a duplicate suffix"
        plain_relabels = {state["source"] for name, state in rows.items() if state["kind"] == COUNTERFACTUAL
                          and name.startswith(f"{subset}/") and not copy_name(name)["copy"]}
        assert plain_relabels & suffixed, f"{subset}: no unsuffixed relabel beside a suffixed original"
    elsewhere = [name for name, state in rows.items() if state["kind"] == COUNTERFACTUAL
                 and copy_name(name)["episode"] != copy_name(state["source"])["episode"]]
    assert len(elsewhere) == 1 and elsewhere[0].startswith("sim_kuka/")  # the same bytes under two index numbers


def test_every_label_in_every_subset(sample: dict[str, Any]) -> None:
    labels: dict[str, set[int]] = defaultdict(set)
    for row in sample["rows"]:
        labels[row["file_name"].split("/")[0]].add(row["reward"])
    assert labels == {subset: {1, 2, 3, 4, 5} for subset in SAMPLE_SUBSET_IDS}


def test_arena_views_come_in_pairs_and_rollouts_in_sessions(sample: dict[str, Any]) -> None:
    episodes: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    sessions: dict[str, set[str]] = defaultdict(set)
    for row in sample["rows"]:
        if row["file_name"].startswith("sim_arena/"):
            match = ARENA_NAME.match(stem(row["file_name"]))
            assert match
            episodes[match["episode"]][match["view"]] = row
            sessions[match["session"]].add(match["episode"])
    assert episodes
    for views in episodes.values():
        assert set(views) == {"left", "right"}
        left, right = views["left"], views["right"]
        assert (left["task"], left["reward"]) == (right["task"], right["reward"])
        assert video(left["file_name"]).read_bytes() != video(right["file_name"]).read_bytes()
    for rollouts in sessions.values():  # one scene and task per session, another outcome per rollout
        assert len({episodes[rollout]["left"]["task"] for rollout in rollouts}) == 1
        first_frames = {decoded(video(episodes[rollout]["left"]["file_name"]))[0].tobytes() for rollout in rollouts}
        assert len(first_frames) == 1
    assert max(len(rollouts) for rollouts in sessions.values()) >= 3 and min(map(len, sessions.values())) == 1
    metadata = [row for row in read_metadata(str(SAMPLE_DIR / "test" / "metadata.jsonl"))
                if row.subset == "sim_arena"]
    assert len({cluster_key(row) for row in metadata}) == len(sessions)
    assert len({episode_key(row) for row in metadata}) == len(episodes)


def test_readme_documents_thresholds_and_counts(sample: dict[str, Any]) -> None:
    readme = sample["readme"]
    table = "\n".join(thresholds_table())
    assert table in readme
    docstring = ast.get_docstring(ast.parse(GENERATOR.read_text(encoding="utf-8"))) or ""
    assert table in docstring
    triples = [(row["file_name"].split("/")[0], sample["states"][row["file_name"]]["kind"], row["reward"])
               for row in sample["rows"]]
    assert "\n".join(counts_table(triples, SAMPLE_SUBSET_IDS)) in readme
    seed = re.search(r"Seed: `(\d+)`", readme)
    assert seed
    if seed.group(1) == "0":
        assert README_COPY.read_text(encoding="utf-8") == readme


# --------------------------------------------------------------------------- regeneration


@pytest.fixture()
def regenerated(tmp_path: Path) -> Path:
    """A fresh generation with the README's seed: the one tests/conftest.py started in the background, if any."""
    running = regeneration.background()
    if running is None:
        seed = regeneration.sample_seed()
        assert seed is not None, "the sample README records no seed"
        running = regeneration.start(tmp_path, seed)
    return running.wait()


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("pybullet") is None, reason="needs pybullet (pip install -e .[sim])")
def test_regeneration_is_deterministic(sample: dict[str, Any], regenerated: Path) -> None:
    seed = re.search(r"Seed: `(\d+)`", sample["readme"])
    assert seed
    assert regeneration.sample_seed() == seed.group(1)
    out = regenerated
    names = [row["file_name"] for row in sample["rows"]]
    if regeneration.EPISODES is None:  # the whole sample: byte for byte
        for relative in ("test/metadata.jsonl", "sim_state.jsonl"):
            assert (out / relative).read_bytes() == (SAMPLE_DIR / relative).read_bytes(), relative
    else:  # the first episodes of each subset: their lines, in the sample's order, and only theirs
        names = [json.loads(line)["file_name"] for line in (out / "test/metadata.jsonl").read_text().splitlines()]
        subsets = {name.split("/")[0] for name in names}
        assert subsets == {row["file_name"].split("/")[0] for row in sample["rows"]}, subsets
        for relative in ("test/metadata.jsonl", "sim_state.jsonl"):
            bundled_lines = {json.loads(line)["file_name"]: line
                             for line in (SAMPLE_DIR / relative).read_text(encoding="utf-8").split("\n") if line}
            fresh_lines = [line for line in (out / relative).read_text(encoding="utf-8").split("\n") if line]
            assert [json.loads(line)["file_name"] for line in fresh_lines] == names, relative
            assert fresh_lines == [bundled_lines[name] for name in names], relative
    assert sorted(p.relative_to(out / "test").as_posix() for p in (out / "test").rglob("*.mp4")) == sorted(names)
    for name in names:  # every regenerated video: each must decode to the bundled frames
        again, bundled = decoded(out / "test" / name), decoded(video(name))
        assert len(again) == len(bundled)
        assert all(np.array_equal(a, b) for a, b in zip(again, bundled, strict=True)), name
