"""A local copy of the test split named exactly like the real one, with a realistic cluster structure.

The real names (docs/protocol.md, section 1, "File names"; source: the public harness GitHub
``dddais/Robo-dopamine``, folder ``roborewardbench/``):

- RoboArena ``robo_arena/<uuid>_<letter A-G>_<left|right>.mp4``: two views per rollout (different bytes, same
  task and gold score); the letters of one uuid are the rollouts (policies) of one session (same scene, task and
  evaluator);
- OXE ``<subset>/<subset>_originalsplit_<train|test>_index_<n>[_<c>].mp4``: the duplicate suffix ``_<c>`` marks
  another stored duplicate of the same bytes (the original or a relabel may carry it); relabels are byte-identical
  duplicates with another task and gold score 1..4; the same bytes may appear under another index number; many
  relabels have no original of the same bytes in the split;
- clips ``..._index_<n>_attempt_<m>_score_<k>.mp4`` (``m`` from 1, ``k`` = gold score 1..4), whose original may
  carry a duplicate suffix.

:func:`make_real_pattern_copy` writes the copy and returns every row with its ground truth: the source (a
rollout or an OXE episode), the true cluster (a session or an episode) and the video each row's bytes are. By
default the 20-row RoboArena part has 7 sessions. Videos are small distinct byte strings (enough for anything
that only reads names and hashes: cluster keys, ``roboreward audit``); ``decodable=True`` writes tiny real mp4s
instead (for runs through the whole pipeline, e.g. interval tests on a report).
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.videos import make_video

ARENA = "robo_arena"
NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "helm-roboreward/tests/real-pattern-copy")


@dataclass(frozen=True)
class Session:
    """A RoboArena session: one scene and task, one rollout per letter with its label."""

    task: str
    rollouts: tuple[tuple[str, int], ...]
    """(letter, label) per rollout."""


@dataclass(frozen=True)
class Relabel:
    """A counterfactual relabel: a copy of the episode's video under ``suffix`` (or another ``index``)."""

    suffix: str
    task: str
    reward: int
    index: int | None = None
    """Stored under this index number instead of the episode's (the same bytes under two index numbers)."""


@dataclass(frozen=True)
class OxeEpisode:
    """One Open X-Embodiment episode: its original (or none in the split), clips and relabels."""

    subset: str
    split: str
    index: int
    task: str
    original: str | None
    """Duplicate suffix of the original success (``""``: none); None: the original is not in the split."""
    clips: tuple[int, ...] = ()
    """The label of each temporal clip (attempts numbered from 1)."""
    relabels: tuple[Relabel, ...] = ()

    def name(self, suffix: str = "", index: int | None = None) -> str:
        number = self.index if index is None else index
        return f"{self.subset}/{self.subset}_originalsplit_{self.split}_index_{number}{suffix}"


SESSIONS: tuple[Session, ...] = (
    Session("put the marker in the cup", (("A", 5), ("B", 2), ("C", 4))),
    Session("close the drawer", (("A", 1), ("D", 3))),
    Session("pick up the towel and fold it", (("B", 4),)),
    Session("stack the red block on the blue block", (("A", 2),)),
    Session("move the spoon to the left of the bowl", (("C", 5),)),
    Session("open the cabinet door", (("E", 1),)),
    Session("put the banana on the plate", (("G", 3),)),
)
"""Seven sessions, ten rollouts, twenty rows."""

OXE_EPISODES: tuple[OxeEpisode, ...] = (
    OxeEpisode("bridge", "train", 1156, "put the spoon in the pot", "", clips=(2, 4),
               relabels=(Relabel("_1", "put the spoon on the towel", 1), Relabel("_2", "put the pot on the stove", 3),
                         Relabel("", "put the lid on the pot", 2, index=3001))),
    OxeEpisode("bridge", "train", 118, "wipe the table with the cloth", "_1", clips=(1, 3),
               relabels=(Relabel("", "fold the cloth", 2),)),
    OxeEpisode("bridge", "train", 2049, "open the microwave", "_2", clips=(3,),
               relabels=(Relabel("_1", "close the microwave", 1),)),
    OxeEpisode("bridge", "train", 777, "flip the pot upright", None,
               relabels=(Relabel("", "put the pot in the sink", 2), Relabel("_1", "put the carrot in the pot", 4))),
    OxeEpisode("fractal20220817_data", "train", 13603, "pick coke can", "_3", clips=(1, 4),
               relabels=(Relabel("", "pick the apple", 1), Relabel("_1", "move the coke can near the sponge", 3))),
    OxeEpisode("fractal20220817_data", "train", 402, "open the top drawer", "", clips=(2,)),
    OxeEpisode("jaco_play", "test", 26, "pick up the milk dairy", "", clips=(1, 2, 3),
               relabels=(Relabel("_1", "pick up the bread", 2),)),
    OxeEpisode("jaco_play", "test", 91, "place the black bowl in the oven", "_1", clips=(4,)),
)
"""Three OXE subsets: originals with and without duplicate suffixes, clips of suffixed originals, relabels under
suffixes, one relabel under another index number and one relabel-only video (its original not in the split)."""


@dataclass(frozen=True)
class CopyRow:
    """One row of the copy with its ground truth."""

    file_name: str
    task: str
    reward: int
    kind: str
    source: str
    """The rollout (RoboArena) or episode (OXE) the video comes from: ``<subset>/<id>``."""
    cluster: str
    """The true cluster: the session (RoboArena) or the episode (OXE)."""
    video: str
    """Which video the bytes are (relabels share their episode's, each view and clip has its own)."""

    def metadata(self) -> dict[str, object]:
        return {"file_name": self.file_name, "task": self.task, "reward": self.reward,
                "gpt5_mini_check": "ANSWER: TRUE"}


@dataclass
class RealPatternCopy:
    """The written copy: ``root/test/metadata.jsonl`` and ``root/test/<subset>/*.mp4``."""

    root: Path
    rows: list[CopyRow] = field(default_factory=list)

    @property
    def metadata_path(self) -> Path:
        return self.root / "test" / "metadata.jsonl"

    def subsets(self) -> list[str]:
        return sorted({row.file_name.split("/", 1)[0] for row in self.rows})

    def rows_of(self, subset: str) -> list[CopyRow]:
        return [row for row in self.rows if row.file_name.startswith(f"{subset}/")]

    def true_clusters(self, subset: str) -> int:
        """RoboArena sessions or OXE episodes of a subset: what a clustered bootstrap must draw."""
        return len({row.cluster for row in self.rows_of(subset)})

    def clips(self, subset: str | None = None) -> list[CopyRow]:
        return [row for row in self.rows if row.kind == "clip" and (subset is None or row.file_name.startswith(
            f"{subset}/"))]

    def write_metadata(self, rows: list[dict[str, object]] | None = None) -> None:
        """(Re)write the metadata: the copy's rows in file-name order, or the given records."""
        records = rows if rows is not None else [row.metadata() for row in sorted(self.rows, key=lambda r: r.file_name)]
        self.metadata_path.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records),
                                      encoding="utf-8")


def arena_rows(sessions: tuple[Session, ...] = SESSIONS) -> list[CopyRow]:
    rows = []
    for number, session in enumerate(sessions):
        session_id = str(uuid.uuid5(NAMESPACE, f"session-{number}"))
        for letter, label in session.rollouts:
            rollout = f"{session_id}_{letter}"
            for view in ("left", "right"):
                rows.append(CopyRow(f"{ARENA}/{rollout}_{view}.mp4", session.task, label, "natural",
                                    f"{ARENA}/{rollout}", f"{ARENA}/{session_id}", f"{ARENA}/{rollout}_{view}"))
    return rows


def oxe_rows(episodes: tuple[OxeEpisode, ...] = OXE_EPISODES) -> list[CopyRow]:
    rows = []
    for episode in episodes:
        source = episode.name()
        if episode.original is not None:
            rows.append(CopyRow(episode.name(episode.original) + ".mp4", episode.task, 5, "original", source, source,
                                source))
        for attempt, label in enumerate(episode.clips, start=1):
            base = episode.name()
            rows.append(CopyRow(f"{base}_attempt_{attempt}_score_{label}.mp4", episode.task, label, "clip", source,
                                source, f"{base}_attempt_{attempt}"))
        for relabel in episode.relabels:
            rows.append(CopyRow(episode.name(relabel.suffix, relabel.index) + ".mp4", relabel.task, relabel.reward,
                                "counterfactual", source, source, source))
    return rows


def _video_bytes(video: str) -> bytes:
    return f"not a real video: {video}\n".encode() * 8


def make_real_pattern_copy(root: Path, decodable: bool = False, sessions: tuple[Session, ...] = SESSIONS,
                           episodes: tuple[OxeEpisode, ...] = OXE_EPISODES) -> RealPatternCopy:
    """Write the copy under ``root`` (``decodable``: tiny real mp4s, else distinct byte strings)."""
    copy = RealPatternCopy(root, arena_rows(sessions) + oxe_rows(episodes))
    numbers: dict[str, int] = defaultdict(lambda: len(numbers))
    written: dict[str, Path] = {}
    for row in copy.rows:
        path = root / "test" / row.file_name
        path.parent.mkdir(parents=True, exist_ok=True)
        if row.video in written:
            path.write_bytes(written[row.video].read_bytes())
        elif decodable:
            frames = 6 if row.kind == "clip" else 12
            make_video(path, frames, first_number=100 * numbers[row.video])
        else:
            path.write_bytes(_video_bytes(row.video))
        written.setdefault(row.video, path)
    copy.write_metadata()
    return copy


# --------------------------------------------------------------------------------------------- the published shape


def published_shape_rows() -> list[CopyRow]:
    """2,831 rows with exactly the published split's counts, named with the real patterns.

    Rows per subset and kind, labels per kind, 760 distinct videos among the OXE rows that are not clips, videos
    with a 5 and 1/2/3/4 relabels (104/28/9/1), 478 relabels without a 5 of the same bytes, every clip's name
    score equal to its label (``core/published_split.py``). RoboArena's odd label counts (263 twos, 141 fours) mean a
    rollout with a single view for each; the others have both. Everything else (tasks, which subset holds which
    label) is made up.
    """
    from helm_roboreward.protocol.published import PUBLISHED_GOLD_SCORE_COUNTS_BY_KIND, PUBLISHED_KIND_ROWS
    from helm_roboreward.protocol.rules import OFFICIAL_SUBSETS

    rows = _published_arena(PUBLISHED_GOLD_SCORE_COUNTS_BY_KIND["natural"])
    clip_labels = _label_pool(PUBLISHED_GOLD_SCORE_COUNTS_BY_KIND["clip"])
    relabel_labels = _label_pool(PUBLISHED_GOLD_SCORE_COUNTS_BY_KIND["counterfactual"])
    ladders = [4] + [3] * 9 + [2] * 28 + [1] * 104
    merges = 478 - 389  # orphan relabels beyond one video each: 389 relabel-only videos hold 478 relabels
    for subset in (s.id for s in OFFICIAL_SUBSETS if not s.natural):
        clips, relabels, originals = PUBLISHED_KIND_ROWS[subset]
        episodes: list[OxeEpisode] = []
        for number in range(originals):
            size = ladders.pop(0) if ladders and ladders[0] <= relabels - sum(len(e.relabels) for e in episodes) else 0
            suffix = ("", "_1", "_2", "_3")[number % 4]
            names = [s for s in ("", "_1", "_2", "_3", "_4") if s != suffix][:size]
            episodes.append(OxeEpisode(subset, "train", 10 * number, f"{subset} task {number}", suffix,
                                       relabels=tuple(Relabel(name, f"{subset} task {number} relabel {i}",
                                                              relabel_labels.pop(0)) for i, name in enumerate(names))))
        orphans = relabels - sum(len(e.relabels) for e in episodes)
        number = originals
        while orphans:
            pair = 2 if merges and orphans >= 2 else 1
            merges -= pair - 1
            orphans -= pair
            episodes.append(OxeEpisode(subset, "test", 10 * number, f"{subset} task {number}", None, relabels=tuple(
                Relabel(("", "_1")[i], f"{subset} task {number} relabel {i}", relabel_labels.pop(0))
                for i in range(pair))))
            number += 1
        for clip in range(clips):  # round-robin over the episodes (a subset without originals: orphan episodes)
            target = episodes[clip % len(episodes)] if episodes else OxeEpisode(subset, "test", 9999, "t", None)
            rows += _clip_row(target, clip // max(1, len(episodes)) + 1, clip_labels.pop(0))
        rows += oxe_rows(tuple(episodes))
    assert not ladders and not merges and not clip_labels and not relabel_labels
    return rows


def _label_pool(counts: tuple[int, ...]) -> list[int]:
    """Labels 1..5, ``counts[i]`` of label i + 1, interleaved (so every subset gets a mix)."""
    pool = [label for label, count in enumerate(counts, start=1) for _ in range(count)]
    return pool[::2] + pool[1::2]


def _clip_row(episode: OxeEpisode, attempt: int, label: int) -> list[CopyRow]:
    base = episode.name()
    return [CopyRow(f"{base}_attempt_{attempt}_score_{label}.mp4", episode.task, label, "clip", base, base,
                    f"{base}_attempt_{attempt}")]


def _published_arena(counts: tuple[int, ...]) -> list[CopyRow]:
    """500 rollouts in sessions of 1..3 rollouts; two views each, but one view for one rollout of each odd count."""
    rollouts = [(label, 2) for label, count in enumerate(counts, start=1) for _ in range(count // 2)]
    rollouts += [(label, 1) for label, count in enumerate(counts, start=1) if count % 2]
    rollouts = rollouts[::3] + rollouts[1::3] + rollouts[2::3]
    rows, start, number = [], 0, 0
    while start < len(rollouts):
        size = (3, 1, 2)[number % 3]
        session = Session(f"arena task {number}", tuple(("ABCDEFG"[i], label) for i, (label, _) in
                                                        enumerate(rollouts[start:start + size])))
        views = [count for _, count in rollouts[start:start + size]]
        session_rows = arena_rows((session,))
        session_id = str(uuid.uuid5(NAMESPACE, f"published-session-{number}"))
        for row, view_index in zip(session_rows, [i for i, count in enumerate(views) for _ in range(2)], strict=True):
            if views[view_index] == 1 and row.file_name.endswith("_right.mp4"):
                continue
            rows.append(_renamed(row, session_id))
        start, number = start + size, number + 1
    return rows


def _renamed(row: CopyRow, session_id: str) -> CopyRow:
    old = row.file_name.split("/", 1)[1].rsplit("_", 2)[0]
    return CopyRow(row.file_name.replace(old, session_id), row.task, row.reward, row.kind,
                   row.source.replace(old, session_id), f"{ARENA}/{session_id}", row.video.replace(old, session_id))


def make_published_shape_copy(root: Path) -> RealPatternCopy:
    """Write :func:`published_shape_rows` under ``root`` (distinct byte strings as videos)."""
    copy = RealPatternCopy(root, published_shape_rows())
    for row in copy.rows:
        path = root / "test" / row.file_name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_video_bytes(row.video))
    copy.write_metadata()
    return copy
