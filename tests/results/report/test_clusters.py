"""Where a report's rows come from: bootstrap clusters as the test split was built, and a copy's label source.

The bootstrap clusters follow how the test split was built (docs/reward_metrics.md, "Clusters").

On a copy named exactly like the real split (``tests/helpers/real_pattern_copy.py``): a RoboArena session (one
uuid: its rollouts and both camera views) is one cluster, an OXE episode (its original under any duplicate suffix, its
relabels, its clips) is one cluster. The rows come from the copy as a run records them (the rows module's keys in
the instance record), and the counts are the report's own (``analyse`` -> ``SubsetSummary.num_clusters``).
Suites written before the record held the cluster key get it from the row's file name.
"""

import hashlib
from pathlib import Path

from helm_roboreward.helm_frontend.run_rows import InstanceRow, ModelRows, SuiteRows, cluster_of_record
from helm_roboreward.protocol.instance_record import InstanceRecord
from helm_roboreward.protocol.rows import load_rollouts
from helm_roboreward.results.report.analysis import Settings, analyse
from tests.helpers.real_pattern_copy import make_real_pattern_copy


def suite_of(root: Path, with_cluster_field: bool = True) -> SuiteRows:
    rows = []
    for rollout in load_rollouts(str(root), None, "the copy", str(root)):
        record = InstanceRecord(subset=rollout.row.subset, episode=rollout.episode,
                                cluster=rollout.cluster if with_cluster_field else "",
                                source_file=rollout.row.file_name)
        digest = hashlib.sha256(Path(rollout.video_path).read_bytes()).hexdigest()
        rows.append(InstanceRow(f"rr-{rollout.row.line}", rollout.row.subset, rollout.robot, rollout.kind,
                                rollout.episode, digest, float(rollout.row.gold_score), 3.0,
                                abs(3.0 - rollout.row.gold_score), False, False, rollout.row.task,
                                cluster=cluster_of_record(record, rollout.row.subset)))
    return SuiteRows("clusters", [ModelRows("baseline/constant-3", "Constant 3", rows, {})])


def test_cluster_counts_are_sessions_and_episodes(tmp_path: Path) -> None:
    copy = make_real_pattern_copy(tmp_path / "copy")
    for with_cluster_field in (True, False):  # recorded, or recomputed from the file name (older suites)
        report = analyse(suite_of(copy.root, with_cluster_field), Settings(resamples=50))
        counts = {subset.id: subset.num_clusters for subset in report.subsets}
        assert counts == {subset: copy.true_clusters(subset) for subset in copy.subsets()}, with_cluster_field
    assert counts["robo_arena"] == 7 and len(copy.rows_of("robo_arena")) == 20  # 7 sessions, 10 rollouts


def test_coarse_and_placeholder_labels_are_said() -> None:
    import json
    import tempfile

    from helm_roboreward.helm_frontend.run_rows import label_notes

    with tempfile.TemporaryDirectory() as folder:
        coarse, placeholder, own = (Path(folder) / name for name in ("coarse", "placeholder", "own"))
        for path, labels in ((coarse, {"source": "next.success", "coarse": True}),
                             (placeholder, {"source": "placeholder", "coarse": False}),
                             (own, {"source": "file", "coarse": False})):
            path.mkdir()
            (path / "roboreward_import.json").write_text(json.dumps({"labels": labels}))
        notes = label_notes([str(coarse), str(placeholder), str(own), "hf", "sample", str(Path(folder) / "none")])
    assert len(notes) == 2
    assert "coarse labels from next.success" in notes[0] and "placeholder labels" in notes[1]
