"""``roboreward audit``: what a local copy of the test split holds, and exactly where it differs from the published one.

Reads ``test/metadata.jsonl`` and hashes every video (SHA-256 of the bytes): nothing is decoded and nothing is
sent to any model. Per subset and kind it counts rows, rows per gold score, distinct videos, rows sharing bytes,
links (a view to its rollout's other view, a clip to its episode's original, a relabel to an original of the same
bytes, an original to its clips or relabels), ladder videos, clips whose name's score is not their gold score and
names that follow neither real naming pattern; per subset the episodes and bootstrap clusters (names and identical
bytes). It then compares with the published split's counts (``num_rows`` in ``protocol/rules.py``, the
``PUBLISHED_*`` constants of ``protocol/published.py``, from the public harness GitHub ``dddais/Robo-dopamine``,
folder ``roborewardbench/``) and its metadata SHA-256. Totals over the whole split are compared only when the copy
holds every subset they cover. An mp4 under the audited subsets' folders that no metadata row lists is a
problem to fix: no run reads it, so a copy holding it is not the set of videos its metadata describes.
"""

import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from helm_roboreward.protocol.published import (
    PUBLISHED_CLIP_NAME_MISMATCHES,
    PUBLISHED_GOLD_SCORE_COUNTS_BY_KIND,
    PUBLISHED_KIND_ROWS,
    PUBLISHED_LADDERS,
    PUBLISHED_METADATA_SHA256,
    PUBLISHED_OXE_VIDEOS,
    PUBLISHED_RELABELS_WITHOUT_ORIGINAL,
)
from helm_roboreward.protocol.rows import (
    ARENA_NAME,
    CLIP,
    CLIP_NAME,
    COUNTERFACTUAL,
    KINDS,
    NATURAL,
    ORIGINAL,
    OXE_EPISODE_NAME,
    DataError,
    MetadataRow,
    clip_name_score_problem,
    cluster_key,
    cluster_numbers,
    episode_key,
    infer_kind,
    locate_video,
    metadata_path,
    read_metadata,
    select_rows,
)
from helm_roboreward.protocol.rules import (
    METADATA_FILE,
    OFFICIAL_SUBSET_IDS,
    RUBRIC_SCORES,
    TEST_SPLIT,
    subset_info,
    subset_order,
)
from helm_roboreward.protocol.safe_files import file_digest

MAX_LISTED = 10
KIND_COLUMNS = ("subset", "kind", "rows", *(str(gold_score) for gold_score in RUBRIC_SCORES), "videos", "shared",
                "linked", "ladders", "mismatches", "other_names")
SUBSET_COLUMNS = ("subset", "rows", "published", "episodes", "name_clusters", "clusters", "missing_videos")
NUMERIC_COLUMNS = KIND_COLUMNS[2:] + SUBSET_COLUMNS[1:]
LEGEND = (
    "videos: distinct videos by SHA-256; shared: rows whose bytes another row of the subset has; linked: a view "
    "with its rollout's other view, a clip with its episode's original, a relabel with an original of the same "
    "bytes, an original with a clip or relabel; ladders: videos carrying a 5 and at least one relabel; "
    "mismatches: clips whose name's score is not their gold score; other_names: names following neither real pattern "
    "(their episode is the name without a camera or clip suffix); name_clusters: RoboArena sessions, else "
    "episodes; clusters: name clusters joined by identical bytes (the bootstrap's clusters)."
)

# Which naming rule a name follows (name_pattern).
ROBOARENA = "roboarena"
OXE_EPISODE = "oxe_episode"
OXE_CLIP = "oxe_clip"
FALLBACK = "fallback"


def name_pattern(stem: str, natural: bool) -> str:
    """The rule a file stem follows (natural subsets: RoboArena or fallback)."""
    if natural:
        return ROBOARENA if ARENA_NAME.match(stem) else FALLBACK
    clip = CLIP_NAME.match(stem)
    if clip:
        return OXE_CLIP if OXE_EPISODE_NAME.match(clip.group("episode")) else FALLBACK
    return OXE_EPISODE if OXE_EPISODE_NAME.match(stem) else FALLBACK


@dataclass(frozen=True)
class AuditedRow:
    """One metadata row with what its name and its bytes say."""

    row: MetadataRow
    kind: str
    episode: str
    cluster: str
    pattern: str
    """The naming rule its name follows (:func:`name_pattern`)."""
    sha256: str
    """SHA-256 of the video; empty when the video is missing or unusable."""


@dataclass(frozen=True)
class KindCounts:
    """The counts of one subset and kind (the columns of :data:`KIND_COLUMNS`)."""

    subset: str
    kind: str
    rows: int
    gold_score_counts: tuple[int, ...]
    videos: int
    shared: int
    linked: int
    ladders: int
    mismatches: int
    other_names: int

    def cells(self) -> list[str]:
        """The row of the kind table."""
        values = [self.rows, *self.gold_score_counts, self.videos, self.shared, self.linked, self.ladders,
                  self.mismatches, self.other_names]
        return [self.subset, self.kind, *(str(value) for value in values)]


@dataclass(frozen=True)
class SubsetCounts:
    """One subset's rows, episodes and clusters (the columns of :data:`SUBSET_COLUMNS`)."""

    subset: str
    rows: int
    published: int | None
    episodes: int
    name_clusters: int
    clusters: int
    missing_videos: int

    def cells(self) -> list[str]:
        """The row of the subset table."""
        published = "-" if self.published is None else str(self.published)
        return [self.subset, str(self.rows), published, str(self.episodes), str(self.name_clusters),
                str(self.clusters), str(self.missing_videos)]


@dataclass
class Audit:
    """Everything ``roboreward audit`` prints."""

    metadata_sha256: str
    rows: list[AuditedRow]
    kinds: list[KindCounts]
    subsets: list[SubsetCounts]
    problems: list[str] = field(default_factory=list)
    """Rows that need fixing: clips whose name's score is not their gold score, missing or unusable videos."""
    differences: list[str] = field(default_factory=list)
    """Where the copy differs from the published split (empty: it matches wherever compared)."""
    compared: bool = False
    """Whether the copy holds any subset of the published split (otherwise nothing was compared)."""
    unlisted: list[str] = field(default_factory=list)
    """Videos (``<subset>/<name>.mp4`` under ``test/``) that no metadata row lists."""


def audit_copy(root: str, subsets: Sequence[str] | None, source: str, trusted_root: str | None = None) -> Audit:
    """Audit the copy under ``root`` (``<root>/test/metadata.jsonl``), all subsets or the given ones.

    Raises:
        DataError: The metadata itself cannot be read or has invalid rows (clips whose name's score is not their
            gold score are counted and listed instead).
    """
    path = metadata_path(root)
    every_row = read_metadata(path, check_clip_name_scores=False)
    rows = select_rows(every_row, subsets, source)
    audited, problems = _hash_rows(root, rows, trusted_root)
    problems = [f"{path}, {problem}" for row in rows if (problem := clip_name_score_problem(row))] + problems
    unlisted = unlisted_videos(root, every_row, subsets)
    if unlisted:
        shown = ", ".join(unlisted[:MAX_LISTED]) + (f" and {len(unlisted) - MAX_LISTED} more"
                                                      if len(unlisted) > MAX_LISTED else "")
        problems.append(f"{len(unlisted)} video file(s) under {os.path.join(root, TEST_SPLIT)} that no row of "
                        f"{METADATA_FILE} lists, so no run reads them: {shown}. Remove them, or add their rows")
    audit = Audit(file_digest(path), audited, kind_counts(audited), subset_counts(audited), problems,
                  unlisted=unlisted)
    audit.compared = any(row.row.subset in OFFICIAL_SUBSET_IDS for row in audited)
    audit.differences = differences(audit, whole_split=subsets is None)
    return audit


def unlisted_videos(root: str, rows: Sequence[MetadataRow], subsets: Sequence[str] | None) -> list[str]:
    """The ``.mp4`` files under ``root/test/<subset>/`` (the given subsets, else every folder) no row lists.

    Links to folders are not followed (a hub snapshot's files are links to files, which are listed).
    """
    split_dir = os.path.join(root, TEST_SPLIT)
    listed = {row.file_name for row in rows}
    folders = list(subsets) if subsets is not None else sorted(
        name for name in os.listdir(split_dir) if os.path.isdir(os.path.join(split_dir, name)))
    found = []
    for subset in folders:
        for folder, _, names in os.walk(os.path.join(split_dir, subset)):
            for name in names:
                relative = os.path.relpath(os.path.join(folder, name), split_dir).replace(os.sep, "/")
                if name.lower().endswith(".mp4") and relative not in listed:
                    found.append(relative)
    return sorted(found)


def _hash_rows(root: str, rows: Sequence[MetadataRow], trusted_root: str | None) -> tuple[list[AuditedRow],
                                                                                          list[str]]:
    split_dir = os.path.join(root, TEST_SPLIT)
    digests: dict[str, str] = {}
    audited, problems = [], []
    for row in rows:
        try:
            video = locate_video(split_dir, row, trusted_root)
        except DataError as problem:
            problems.append(str(problem))
            video = ""
        if video and video not in digests:
            digests[video] = file_digest(video)
        natural = subset_info(row.subset).natural
        audited.append(AuditedRow(row, infer_kind(row), episode_key(row), cluster_key(row),
                                  name_pattern(row.stem, natural), digests.get(video, "")))
    return audited, problems


def _by_subset(rows: Iterable[AuditedRow]) -> dict[str, list[AuditedRow]]:
    grouped: dict[str, list[AuditedRow]] = defaultdict(list)
    for row in rows:
        grouped[row.row.subset].append(row)
    return {subset: grouped[subset] for subset in subset_order(grouped)}


def kind_counts(rows: Sequence[AuditedRow]) -> list[KindCounts]:
    """Per subset (official order, then the sample's, then by name) and kind, the counts of the kind table."""
    out = []
    for subset, members in _by_subset(rows).items():
        by_video: dict[str, list[AuditedRow]] = defaultdict(list)
        by_episode: dict[str, list[AuditedRow]] = defaultdict(list)
        for row in members:
            if row.sha256:
                by_video[row.sha256].append(row)
            by_episode[row.episode].append(row)
        for kind in KINDS:
            group = [row for row in members if row.kind == kind]
            if not group:
                continue
            gold_score_counts = Counter(row.row.gold_score for row in group)
            out.append(KindCounts(
                subset, kind, len(group), tuple(gold_score_counts[gold_score] for gold_score in RUBRIC_SCORES),
                videos=len({row.sha256 for row in group if row.sha256}),
                shared=sum(1 for row in group if row.sha256 and len(by_video[row.sha256]) > 1),
                linked=sum(1 for row in group if _linked(row, by_video, by_episode)),
                ladders=sum(1 for video in by_video.values() if _kinds(video) >= {ORIGINAL, COUNTERFACTUAL})
                if kind == ORIGINAL else 0,
                mismatches=sum(1 for row in group if clip_name_score_problem(row.row)),
                other_names=sum(1 for row in group if row.pattern == FALLBACK),
            ))
    return out


def _kinds(rows: Iterable[AuditedRow]) -> set[str]:
    return {row.kind for row in rows}


def _linked(row: AuditedRow, by_video: dict[str, list[AuditedRow]], by_episode: dict[str, list[AuditedRow]]) -> bool:
    """Whether a row has its partner (see :data:`LEGEND`)."""
    same_episode = [other for other in by_episode[row.episode] if other is not row]
    if row.kind == NATURAL:
        return bool(same_episode)
    if row.kind == CLIP:
        return ORIGINAL in _kinds(same_episode)
    same_bytes = [other for other in by_video.get(row.sha256, []) if other is not row] if row.sha256 else []
    if row.kind == COUNTERFACTUAL:
        return ORIGINAL in _kinds(same_bytes)
    return CLIP in _kinds(same_episode) or COUNTERFACTUAL in _kinds(same_bytes)


clusters = cluster_numbers
"""Cluster number of each row: the bootstrap's own rule (rows sharing a name key or video bytes are one cluster)."""


def subset_counts(rows: Sequence[AuditedRow]) -> list[SubsetCounts]:
    """Per subset: rows (and the published number), episodes, name clusters and clusters."""
    out = []
    for subset, members in _by_subset(rows).items():
        info = subset_info(subset)
        numbers = clusters([row.cluster for row in members], [row.sha256 for row in members])
        out.append(SubsetCounts(
            subset, len(members), info.num_rows if subset in OFFICIAL_SUBSET_IDS else None,
            episodes=len({row.episode for row in members}), name_clusters=len({row.cluster for row in members}),
            clusters=len(set(numbers)), missing_videos=sum(1 for row in members if not row.sha256),
        ))
    return out


def _compare(what: str, here: object, published: object) -> list[str]:
    return [] if here == published else [f"{what}: {here} here, {published} published"]


def differences(audit: Audit, whole_split: bool) -> list[str]:
    """Where the copy differs from the published split, one line each (empty when it matches)."""
    found = list(audit.problems)
    if not audit.compared:
        return found
    present = {counts.subset for counts in audit.subsets}
    if audit.metadata_sha256 != PUBLISHED_METADATA_SHA256:
        found.append(f"{TEST_SPLIT}/metadata.jsonl: SHA-256 {audit.metadata_sha256}, published "
                     f"{PUBLISHED_METADATA_SHA256} (another or a changed file; the counts below say where)")
    missing = [subset for subset in OFFICIAL_SUBSET_IDS if subset not in present]
    if whole_split and missing:
        found.append(f"missing subsets ({len(missing)} of {len(OFFICIAL_SUBSET_IDS)}): {', '.join(missing)}")
    unknown = sorted(present - set(OFFICIAL_SUBSET_IDS))
    if unknown:
        found.append(f"subsets not in the published split: {', '.join(unknown)}")
    kinds = {(counts.subset, counts.kind): counts for counts in audit.kinds}
    for counts in audit.subsets:
        if counts.published is not None:
            found += _subset_differences(counts, kinds)
    found += _split_totals(audit, present)
    return found


def _subset_differences(counts: SubsetCounts, kinds: dict[tuple[str, str], KindCounts]) -> list[str]:
    """One line when a published subset's rows or rows per kind differ; one when names follow no real pattern."""
    found = []
    here = {kind: kinds[(counts.subset, kind)].rows for kind in KINDS if (counts.subset, kind) in kinds}
    published = ({NATURAL: counts.published or 0} if subset_info(counts.subset).natural
                 else dict(zip((CLIP, COUNTERFACTUAL, ORIGINAL), PUBLISHED_KIND_ROWS[counts.subset], strict=True)))
    if counts.rows != counts.published or any(here.get(kind, 0) != published.get(kind, 0) for kind in KINDS):
        by_kind = ", ".join(f"{kind} {here.get(kind, 0)}/{published.get(kind, 0)}" for kind in KINDS
                            if here.get(kind, 0) or published.get(kind, 0))
        found.append(f"{counts.subset}: {counts.rows} rows here, {counts.published} published ({by_kind})")
    other = sum(kinds[(counts.subset, kind)].other_names for kind in here)
    if other:
        found.append(f"{counts.subset}: {other} name(s) follow neither real naming pattern (each is taken as its own "
                     "episode; docs/protocol.md, section 1)")
    return found


def _split_totals(audit: Audit, present: set[str]) -> list[str]:
    """Gold score counts per kind, distinct videos, ladders and orphan relabels, where the copy has their subsets."""
    found = []
    natural_subsets = {subset for subset in OFFICIAL_SUBSET_IDS if subset_info(subset).natural}
    oxe_subsets = set(OFFICIAL_SUBSET_IDS) - natural_subsets
    for kind, published in PUBLISHED_GOLD_SCORE_COUNTS_BY_KIND.items():
        needed = natural_subsets if kind == NATURAL else oxe_subsets
        if needed <= present:
            here = tuple(sum(c.gold_score_counts[i] for c in audit.kinds if c.kind == kind and c.subset in needed)
                         for i in range(len(RUBRIC_SCORES)))
            found += _compare(f"{kind} rows with gold score 1/2/3/4/5", "/".join(map(str, here)),
                              "/".join(map(str, published)))
    if not oxe_subsets <= present:
        return found
    oxe = [row for row in audit.rows if row.row.subset in oxe_subsets and row.sha256]
    found += _compare("distinct videos among the OXE rows that are not clips",
                      len({row.sha256 for row in oxe if row.kind != CLIP}), PUBLISHED_OXE_VIDEOS)
    by_video: dict[tuple[str, str], list[AuditedRow]] = defaultdict(list)
    for row in oxe:
        by_video[(row.row.subset, row.sha256)].append(row)
    ladders = Counter(sum(1 for row in video if row.kind == COUNTERFACTUAL) for video in by_video.values()
                      if _kinds(video) >= {ORIGINAL, COUNTERFACTUAL})
    found += _compare("videos with a 5 and 1/2/3/4 relabels", "/".join(str(ladders[n]) for n in (1, 2, 3, 4)),
                      "/".join(str(PUBLISHED_LADDERS[n]) for n in (1, 2, 3, 4)))
    orphans = sum(1 for video in by_video.values() if ORIGINAL not in _kinds(video)
                  for row in video if row.kind == COUNTERFACTUAL)
    found += _compare("relabels without a 5 of the same bytes", orphans, PUBLISHED_RELABELS_WITHOUT_ORIGINAL)
    mismatches = sum(c.mismatches for c in audit.kinds if c.subset in oxe_subsets)
    found += _compare("clips whose name's score is not their gold score", mismatches, PUBLISHED_CLIP_NAME_MISMATCHES)
    return found
