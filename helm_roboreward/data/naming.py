"""What a file name says about a row: its source episode, its bootstrap cluster and, for a clip, its label.

The rules follow the names of the real test split, as documented by an independent public harness whose
authors had the data (GitHub ``dddais/Robo-dopamine``, folder ``roborewardbench/``; docs/protocol.md,
section 1, "File names"):

- RoboArena (natural subsets): ``<uuid>_<letter>_<left|right>``. The two camera views of one rollout are
  one episode, ``<uuid>_<letter>``; the rollouts of one session (the same uuid: same scene, task and
  evaluator, another policy per letter) are one cluster, ``<uuid>``.
- Open X-Embodiment episodes: ``<subset>_originalsplit_<split>_index_<n>``, optionally with a copy suffix
  ``_<c>`` that only marks another stored copy of the same video (a relabel, or the original itself). The
  episode is the name without the suffix.
- Temporal clips: ``<episode name>_attempt_<m>_score_<k>``: the episode of the name before ``_attempt_``
  (its copy suffix, if any, removed), so a clip joins its original with or without a suffix; ``k`` is the
  row's label.
- Other names (a user's own copy): a natural subset's ``<name>_<left|right>`` is the episode ``<name>``;
  any other name is its own episode (without a clip suffix). Such an episode is its own cluster.

Pure string functions; no I/O. The keys returned here are without the subset; ``rows.py`` prefixes it.
"""

import re
from collections.abc import Sequence

CLIP_NAME = re.compile(r"^(?P<episode>.+)_attempt_(?P<attempt>\d+)_score_(?P<score>\d+)$")
"""A temporal clip: ``<episode name>_attempt_<m>_score_<k>`` (``k`` is the label)."""

ARENA_NAME = re.compile(r"^(?P<session>.+)_(?P<rollout>[A-Z])_(?P<view>left|right)$")
"""A RoboArena view: ``<session uuid>_<rollout letter>_<camera>`` (letters A..G in the test split)."""

CAMERA_VIEW = re.compile(r"^(?P<episode>.+)_(?P<view>left|right)$")
"""Any name ending in a camera (the fallback for natural subsets)."""

OXE_EPISODE_NAME = re.compile(r"^(?P<episode>.+_originalsplit_[A-Za-z]+_index_\d+)(?:_(?P<copy>\d+))?$")
"""An Open X-Embodiment episode: ``<subset>_originalsplit_<split>_index_<n>`` and an optional copy suffix."""

ROBOARENA = "roboarena"
OXE_EPISODE = "oxe_episode"
OXE_CLIP = "oxe_clip"
FALLBACK = "fallback"
PATTERNS = (ROBOARENA, OXE_EPISODE, OXE_CLIP, FALLBACK)
"""Which naming rule a name follows (:func:`name_pattern`)."""


def clip_name_score(stem: str) -> int | None:
    """The ``k`` of a clip name ``..._attempt_<m>_score_<k>``, or None for any other name."""
    clip = CLIP_NAME.match(stem)
    return int(clip.group("score")) if clip else None


def name_pattern(stem: str, natural: bool) -> str:
    """The rule a file stem follows: one of :data:`PATTERNS` (natural subsets: RoboArena or fallback)."""
    if natural:
        return ROBOARENA if ARENA_NAME.match(stem) else FALLBACK
    clip = CLIP_NAME.match(stem)
    if clip:
        return OXE_CLIP if OXE_EPISODE_NAME.match(clip.group("episode")) else FALLBACK
    return OXE_EPISODE if OXE_EPISODE_NAME.match(stem) else FALLBACK


def episode_of(stem: str, natural: bool) -> str:
    """The source episode a file stem belongs to (see the module docstring)."""
    if natural:
        arena = ARENA_NAME.match(stem)
        if arena:
            return f"{arena.group('session')}_{arena.group('rollout')}"
        view = CAMERA_VIEW.match(stem)
        return view.group("episode") if view else stem
    clip = CLIP_NAME.match(stem)
    base = clip.group("episode") if clip else stem
    episode = OXE_EPISODE_NAME.match(base)
    return episode.group("episode") if episode else base


def cluster_of(stem: str, natural: bool) -> str:
    """The bootstrap cluster a file stem belongs to by its name: a RoboArena session, else its episode.

    Rows with byte-identical videos also share a cluster; that link needs the bytes, not the name.
    """
    if natural:
        arena = ARENA_NAME.match(stem)
        if arena:
            return arena.group("session")
    return episode_of(stem, natural)


def cluster_numbers(keys: Sequence[str], video_hashes: Sequence[str]) -> list[int]:
    """Cluster number of each row (union-find): rows sharing a key or a video hash are one cluster.

    Empty keys and hashes link nothing. Clusters are numbered 0..K-1 in order of first appearance.
    """
    parent = list(range(len(keys)))

    def root(item: int) -> int:
        while parent[item] != item:
            parent[item] = parent[parent[item]]  # path halving
            item = parent[item]
        return item

    for values in (keys, video_hashes):
        first_row: dict[str, int] = {}
        for row, value in enumerate(values):
            if value:
                parent[root(row)] = root(first_row.setdefault(value, row))
    numbers: dict[int, int] = {}
    return [numbers.setdefault(root(row), len(numbers)) for row in range(len(parent))]
