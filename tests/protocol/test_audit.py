"""``roboreward audit`` (data/audit.py): counts, links and clusters of a copy, and where it differs from the
published split; on copies built with the real naming patterns, the bundled sample and the fake hub."""

import json
import os
import shutil
from pathlib import Path

import huggingface_hub.constants
import pytest

from helm_roboreward import cli
from helm_roboreward.protocol.published import (
    PUBLISHED_GOLD_SCORE_COUNTS_BY_KIND,
    PUBLISHED_KIND_ROWS,
    PUBLISHED_LADDERS,
    PUBLISHED_RELABELS_WITHOUT_ORIGINAL,
)
from helm_roboreward.protocol.rows import DataError, read_metadata
from helm_roboreward.protocol.rules import DATASET_ID, OFFICIAL_SUBSETS
from helm_roboreward.protocol.split_audit import Audit, audit_copy, clusters
from helm_roboreward.results.report.bootstrap import cluster_ids
from tests.helpers.fakes.hf_hub import FakeHfHub, FakeRepo
from tests.helpers.real_pattern_copy import RealPatternCopy, make_published_shape_copy, make_real_pattern_copy
from tests.helpers.sample import SAMPLE, documented_counts, sample_rows, sample_subsets

COMMIT = "89abcdef0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> RealPatternCopy:
    """A 2,831-row copy with exactly the published counts (built once; tests change private copies of it)."""
    return make_published_shape_copy(tmp_path_factory.mktemp("published"))


def changed_copy(published: RealPatternCopy, target: Path, change) -> Path:
    """A copy of ``published`` whose metadata records went through ``change`` (a function on the list)."""
    shutil.copytree(published.root, target)
    copy = RealPatternCopy(target, published.rows)
    records = [json.loads(line) for line in copy.metadata_path.read_text(encoding="utf-8").splitlines()]
    copy.write_metadata(change(records))
    return target


def audit_of(root: Path, subsets: list[str] | None = None) -> Audit:
    return audit_copy(str(root), subsets, "data=test")


# --------------------------------------------------------------------------- the small real-pattern copy


def test_clusters_are_sessions_and_episodes_and_every_clip_is_linked(tmp_path: Path) -> None:
    copy = make_real_pattern_copy(tmp_path)
    audit = audit_of(tmp_path)
    by_subset = {counts.subset: counts for counts in audit.subsets}
    assert set(by_subset) == set(copy.subsets())
    for subset in copy.subsets():
        assert by_subset[subset].clusters == copy.true_clusters(subset), subset
    assert by_subset["robo_arena"].rows == 20 and by_subset["robo_arena"].clusters == 7
    assert by_subset["robo_arena"].episodes == 10  # rollouts: both views of one are one episode
    clips = [counts for counts in audit.kinds if counts.kind == "clip"]
    assert sum(counts.rows for counts in clips) == sum(counts.linked for counts in clips) == len(copy.clips()) > 0
    assert all(counts.other_names == 0 and counts.mismatches == 0 for counts in audit.kinds)
    relabels = {counts.subset: counts for counts in audit.kinds if counts.kind == "counterfactual"}
    assert relabels["bridge"].linked == 5 and relabels["bridge"].rows == 7  # two relabels of a video without a 5


def test_audit_clusters_equal_the_reports(tmp_path: Path) -> None:
    make_real_pattern_copy(tmp_path)
    audit = audit_of(tmp_path)
    for subset in {row.row.subset for row in audit.rows}:
        rows = [row for row in audit.rows if row.row.subset == subset]
        keys, hashes = [row.cluster for row in rows], [row.sha256 for row in rows]
        assert clusters(keys, hashes) == list(cluster_ids(keys, hashes)), subset


def test_a_partial_copy_is_compared_subset_by_subset(tmp_path: Path) -> None:
    make_real_pattern_copy(tmp_path)
    differences = audit_of(tmp_path).differences
    assert any(line.startswith("missing subsets (19 of 23): ") for line in differences)
    assert "bridge: 15 rows here, 100 published (clip 5/36, counterfactual 7/44, original 3/20)" in differences
    assert not any(line.startswith("clip rows with gold score") for line in differences)  # not every OXE subset is here
    only = audit_of(tmp_path, ["jaco_play"]).differences
    assert not any("missing subsets" in line for line in only)  # asked for one subset: the others are not missing
    assert any(line.startswith("jaco_play: 7 rows here, 100 published") for line in only)


def test_a_missing_video_is_listed_and_not_hashed(tmp_path: Path) -> None:
    copy = make_real_pattern_copy(tmp_path)
    gone = copy.clips("jaco_play")[0].file_name
    (tmp_path / "test" / gone).unlink()
    audit = audit_of(tmp_path)
    assert [counts.missing_videos for counts in audit.subsets if counts.subset == "jaco_play"] == [1]
    assert any(gone in line and "not found" in line for line in audit.differences)


# --------------------------------------------------------------------------- the published shape


def test_the_published_shape_matches_everything_but_the_file_hash(published: RealPatternCopy) -> None:
    audit = audit_of(published.root)
    assert len(audit.rows) == 2831
    assert len(audit.differences) == 1 and "SHA-256" in audit.differences[0], audit.differences
    kinds = {(counts.subset, counts.kind): counts for counts in audit.kinds}
    for subset, (clips, relabels, originals) in PUBLISHED_KIND_ROWS.items():
        assert [kinds[(subset, kind)].rows if (subset, kind) in kinds else 0
                for kind in ("clip", "counterfactual", "original")] == [clips, relabels, originals]
    assert sum(counts.ladders for counts in audit.kinds) == sum(PUBLISHED_LADDERS.values())
    orphans = sum(counts.rows - counts.linked for counts in audit.kinds if counts.kind == "counterfactual")
    assert orphans == PUBLISHED_RELABELS_WITHOUT_ORIGINAL
    arena = next(counts for counts in audit.subsets if counts.subset == "robo_arena")
    assert (arena.rows, arena.episodes) == (1000, 501)  # 499 rollouts with two views, two with one


def test_a_changed_gold_score_is_named_by_kind(published: RealPatternCopy, tmp_path: Path) -> None:
    def change(records):
        first = next(r for r in records if r["file_name"].startswith("robo_arena/") and r["reward"] == 1)
        first["reward"] = 2
        return records

    differences = audit_of(changed_copy(published, tmp_path / "c", change)).differences
    counts = PUBLISHED_GOLD_SCORE_COUNTS_BY_KIND["natural"]
    assert differences[1:] == ["natural rows with gold score 1/2/3/4/5: "
                               f"{counts[0] - 1}/{counts[1] + 1}/{counts[2]}/{counts[3]}/{counts[4]} here, "
                               + "/".join(map(str, counts)) + " published"]


def test_a_missing_subset_is_named(published: RealPatternCopy, tmp_path: Path) -> None:
    root = changed_copy(published, tmp_path / "c", lambda records: [r for r in records
                                                                    if not r["file_name"].startswith("viola/")])
    shutil.rmtree(root / "test" / "viola")  # its videos too: else they are videos no row lists
    differences = audit_of(root).differences
    assert differences[1:] == ["missing subsets (1 of 23): viola"]  # split totals need viola: not compared


def test_a_clip_whose_name_score_is_not_its_gold_score(published: RealPatternCopy, tmp_path: Path, capsys) -> None:
    wrong: dict[str, object] = {}

    def change(records):
        clip = next(r for r in records if "_attempt_" in r["file_name"] and r["reward"] == 3)
        clip["reward"] = 4
        wrong.update(clip)
        return records

    root = changed_copy(published, tmp_path / "c", change)
    with pytest.raises(DataError, match="reward is 4"):
        read_metadata(str(root / "test" / "metadata.jsonl"))  # loading for a run refuses it
    assert cli.main(["audit", "--data", str(root)]) == cli.EXIT_FAILURES
    out = capsys.readouterr().out
    line = next(number for number, text in enumerate((root / "test" / "metadata.jsonl").read_text().splitlines(),
                                                     start=1) if str(wrong["file_name"]) in text)
    assert f"line {line}, field 'reward': '{wrong['file_name']}' is a temporal clip named score 3, " in out
    assert "but its reward is 4; a clip's name score is its gold score" in out
    assert "clips whose name's score is not their gold score: 1 here, 0 published" in out
    assert "clip rows with gold score 1/2/3/4/5:" in out


# --------------------------------------------------------------------------- the sample and the command


def test_sample_audit_counts_what_the_sample_readme_documents(capsys) -> None:
    assert cli.main(["audit", "--data", "sample"]) == 0
    out = capsys.readouterr().out
    assert "No subset of the published split here" in out and "difference" not in out
    audit = audit_copy(str(SAMPLE.parent), None, "data=sample")
    documented, rows, videos = documented_counts()
    assert len(audit.rows) == rows == len(sample_rows())
    found = {(c.subset, c.kind, gold_score): n for c in audit.kinds
             for gold_score, n in enumerate(c.gold_score_counts, start=1) if n}
    assert found == dict(documented)
    assert len({row.sha256 for row in audit.rows}) == videos
    assert {c.subset for c in audit.subsets} == set(sample_subsets())
    assert all(c.other_names == 0 and c.mismatches == 0 for c in audit.kinds)  # the real naming patterns
    assert all(c.linked == c.rows for c in audit.kinds if c.kind in ("natural", "clip", "counterfactual"))


@pytest.fixture()
def hub_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    content = tmp_path / "repo"
    make_real_pattern_copy(content)
    with FakeHfHub([FakeRepo(DATASET_ID, commits={COMMIT: content}, refs={"main": COMMIT})]) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        yield hub, content


def test_hf_audit_downloads_the_metadata_and_the_subsets_videos(hub_env: tuple[FakeHfHub, Path], capsys) -> None:
    hub, content = hub_env
    assert cli.main(["audit", "--data", "hf", "--subset", "jaco_play"]) == cli.EXIT_FAILURES  # 7 of 100 rows
    out = capsys.readouterr().out
    assert f"data=hf (revision {COMMIT}), 7 rows in 1 subsets" in out
    assert "jaco_play: 7 rows here, 100 published" in out
    assert "not found" not in out  # every video of the subset was there to hash
    downloaded = set(hub.downloaded_files())  # byte-identical duplicates share one blob: fetched once
    videos = {f"test/jaco_play/{name}" for name in os.listdir(content / "test" / "jaco_play")}
    assert "test/metadata.jsonl" in downloaded and downloaded - {"test/metadata.jsonl"} <= videos


def test_published_constants_add_up() -> None:
    oxe = [subset for subset in OFFICIAL_SUBSETS if not subset.natural]
    assert set(PUBLISHED_KIND_ROWS) == {subset.id for subset in oxe}
    assert all(sum(PUBLISHED_KIND_ROWS[subset.id]) == subset.num_rows for subset in oxe)
    totals = [sum(counts[i] for counts in PUBLISHED_KIND_ROWS.values()) for i in range(3)]
    assert totals == [791, 669, 371]
    assert [sum(counts) for counts in PUBLISHED_GOLD_SCORE_COUNTS_BY_KIND.values()] == [1000, 791, 669, 371]
    by_gold_score = [sum(counts[i] for counts in PUBLISHED_GOLD_SCORE_COUNTS_BY_KIND.values()) for i in range(5)]
    assert by_gold_score == [689, 641, 556, 418, 527]
    ladder_relabels = sum(n * videos for n, videos in PUBLISHED_LADDERS.items())
    assert ladder_relabels + PUBLISHED_RELABELS_WITHOUT_ORIGINAL == 669


def test_a_video_no_row_lists_is_a_problem(tmp_path: Path, capsys) -> None:
    copy = make_real_pattern_copy(tmp_path)
    listed = sorted((tmp_path / "test").rglob("*.mp4"))[0]
    stray = listed.parent / "not_in_the_metadata.mp4"
    shutil.copyfile(listed, stray)
    relative = stray.relative_to(tmp_path / "test").as_posix()
    audit = audit_of(tmp_path)
    assert audit.unlisted == [relative]
    assert (f"1 video file(s) under {tmp_path / 'test'} that no row of metadata.jsonl lists, so no run reads them: "
            f"{relative}. Remove them, or add their rows") in audit.differences
    other = next(subset for subset in copy.subsets() if subset != relative.split("/")[0])
    assert audit_of(tmp_path, [other]).unlisted == []  # only the audited subsets' folders are searched
    assert cli.main(["audit", "--data", str(tmp_path)]) == 1
    assert "no run reads them" in capsys.readouterr().out
