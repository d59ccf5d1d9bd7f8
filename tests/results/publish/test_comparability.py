"""The comparability rule (pure) and how a run's settings become its non-default settings."""

import copy
import hashlib
from pathlib import Path
from typing import Any

from helm_roboreward.protocol.rules import OFFICIAL_SUBSETS
from helm_roboreward.results.publish.comparability import (
    COMPARABLE_LINE,
    PUBLISHED_METADATA_SHA256,
    DataRead,
    ModelEvidence,
    SubsetCoverage,
    judge,
)
from helm_roboreward.results.publish.evidence import data_read, non_default_settings

COMMIT = "0123456789abcdef0123456789abcdef01234567"
PUBLISHED = PUBLISHED_METADATA_SHA256
ROWS = {subset.id: subset.num_rows for subset in OFFICIAL_SUBSETS}


def full_coverage() -> tuple[SubsetCoverage, ...]:
    return tuple(SubsetCoverage(subset, rows, rows) for subset, rows in ROWS.items())


def public_read(sha: str = PUBLISHED, revision: str = COMMIT) -> DataRead:
    return DataRead("hf", revision, sha, "", ROWS)


def test_the_public_split_with_every_row_and_official_settings_is_comparable() -> None:
    verdict = judge(ModelEvidence("m", (public_read(),), full_coverage()))
    assert verdict.comparable and verdict.reasons == () and verdict.line == COMPARABLE_LINE


def test_the_published_hash_is_data_another_copy_is_not_comparable_unless_given_its_own() -> None:
    other = "ab" * 32
    evidence = ModelEvidence("m", (public_read(other),), full_coverage())
    verdict = judge(evidence)
    assert not verdict.comparable
    assert verdict.reasons == (f"test/metadata.jsonl at revision {COMMIT} has SHA-256 {other[:12]}..., not the "
                               f"published {PUBLISHED[:12]}...",)
    assert judge(evidence, published_sha256=other).comparable


def test_every_reason_is_given_at_once() -> None:
    coverage = full_coverage()[1:] + (SubsetCoverage("sim_kuka", 3, 3),)
    coverage = (SubsetCoverage(coverage[0].subset, 50, 100),) + coverage[1:]
    evidence = ModelEvidence("m", (DataRead("sample", "sample-0123", "cd" * 32, "", None),
                                   DataRead("hf", "f" * 40, None, "not in the cache")),
                             coverage, ("fps=2 (official: 1.0)",))
    reasons = judge(evidence).reasons
    assert reasons[0] == "its runs read the bundled sample (data=sample), not the public split (data=hf)"
    assert reasons[1].startswith("its runs read 2 revisions")
    assert reasons[2] == f"the SHA-256 of test/metadata.jsonl at revision {'f' * 40} is unknown (not in the cache)"
    assert reasons[3] == "22 of the 23 official subsets ran (missing: robo_arena)"
    assert reasons[4] == "it includes subsets outside the benchmark (sim_kuka)"
    assert reasons[5].startswith("not every row was evaluated (rows evaluated of rows in the data: "
                                 "austin_sirius_dataset_converted_externally_to_rlds 50 of 100")
    assert reasons[6] == "non-default settings: fps=2 (official: 1.0)"
    assert judge(evidence).line.startswith("not comparable with the published leaderboard: its runs read")


def test_no_run_and_no_subset() -> None:
    reasons = judge(ModelEvidence("m", (), ())).reasons
    assert reasons == ("its runs record no dataset revision", "none of the 23 official subsets ran")


def official_spec(model: str = "openai/gpt-5-2025-08-07", video: str = "frames", max_tokens: int = 65000
                  ) -> dict[str, Any]:
    prefix = f"roboreward:subset=bridge,video={video}"
    return {
        "name": f"{prefix},model={model.replace('/', '_')}",
        "scenario_spec": {"args": {"subset": "bridge", "video": video}},
        "adapter_spec": {"model": model, "model_deployment": model, "temperature": 0.0, "num_outputs": 1,
                         "max_tokens": max_tokens},
        "routing": {"video": "auto", "frame_options": {"frames_per_second": 1.0, "include_last_frame": False,
                                                       "max_frames": 0, "max_side": 0, "jpeg_quality": 95},
                    "failed": "max_error", "score": "parsed", "layout": "official", "decoding": "official",
                    "name_prefix": prefix},
    }


def test_official_runs_have_no_non_default_setting() -> None:
    assert non_default_settings(official_spec()) == []
    assert non_default_settings(official_spec("teetone/roboreward-8b", "native", 5000)) == []
    assert non_default_settings(official_spec("baseline/constant-3", "frames", 5000)) == []


def test_each_non_default_setting_is_named() -> None:
    spec = official_spec()
    spec["routing"]["frame_options"]["include_last_frame"] = True
    spec["routing"]["failed"] = "skip"
    spec["adapter_spec"]["temperature"] = 0.7
    spec["name"] = spec["name"] + ",stop=hash"
    assert non_default_settings(spec) == ["include_last_frame=True (official: False)",
                                          "failed=skip (official: max_error)", "temperature=0.7 (official: 0.0)",
                                          "stop=hash"]
    native_as_frames = official_spec("qwen/qwen3-vl-8b-instruct", "frames", 5000)
    assert non_default_settings(native_as_frames) == ["video=frames (official: native)"]
    short = official_spec(max_tokens=5000)
    assert non_default_settings(short) == ["max_tokens=5000 (official: 65000)"]


def test_a_model_tagged_as_taking_video_routed_by_auto_is_official() -> None:
    spec = official_spec("lab/my-video-model", "native", 5000)
    assert non_default_settings(spec) == []
    asked = copy.deepcopy(spec)
    asked["routing"]["video"] = "native"
    assert non_default_settings(asked) == ["video=native (official: frames)"]


def test_a_local_copys_hash_is_read_where_it_lies_and_must_match_its_recorded_revision(tmp_path: Path) -> None:
    metadata = tmp_path / "test" / "metadata.jsonl"
    metadata.parent.mkdir()
    metadata.write_text('{"file_name": "bridge/bridge_originalsplit_train_index_1156.mp4", "task": "t", "reward": 5}\n'
                        '{"file_name": "bridge/bridge_originalsplit_train_index_118.mp4", "task": "t", "reward": 1}\n')
    digest = hashlib.sha256(metadata.read_bytes()).hexdigest()
    read = data_read(str(tmp_path), f"local-{digest[:16]}")
    assert (read.metadata_sha256, read.subset_rows, read.metadata_problem) == (digest, {"bridge": 2}, "")
    metadata.write_text('{"file_name": "bridge/bridge_originalsplit_train_index_1156.mp4", "task": "t", "reward": 4}\n')
    changed = data_read(str(tmp_path), f"local-{digest[:16]}")
    assert changed.metadata_sha256 is None
    assert changed.metadata_problem.startswith(f"{metadata} changed since the runs read it")
    gone = data_read(str(tmp_path / "elsewhere"), "local-0123")
    assert gone.metadata_problem == f"{tmp_path / 'elsewhere' / 'test' / 'metadata.jsonl'} not found (the runs' data " \
                                   "copy is not here)"
