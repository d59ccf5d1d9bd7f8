"""What a file name says about a row: its source episode, its bootstrap cluster and, for a clip, its label.

Pure string functions following the real test split's names (docs/protocol.md, section 1, "File names"). The keys
returned here are without the subset; ``rows.py`` prefixes it.
"""

import re
from collections.abc import Sequence

CLIP_NAME = re.compile(r"^(?P<episode>.+)_attempt_(?P<attempt>\d+)_score_(?P<score>\d+)$")
ARENA_NAME = re.compile(r"^(?P<session>.+)_(?P<rollout>[A-Z])_(?P<view>left|right)$")
CAMERA_VIEW = re.compile(r"^(?P<episode>.+)_(?P<view>left|right)$")
OXE_EPISODE_NAME = re.compile(r"^(?P<episode>.+_originalsplit_[A-Za-z]+_index_\d+)(?:_(?P<copy>\d+))?$")

# Which naming rule a name follows (name_pattern).
ROBOARENA = "roboarena"
OXE_EPISODE = "oxe_episode"
OXE_CLIP = "oxe_clip"
FALLBACK = "fallback"


def clip_name_score(stem: str) -> int | None:
    """The ``k`` of a clip name ``..._attempt_<m>_score_<k>``, or None for any other name."""
    clip = CLIP_NAME.match(stem)
    return int(clip.group("score")) if clip else None


def name_pattern(stem: str, natural: bool) -> str:
    """The rule a file stem follows (natural subsets: RoboArena or fallback)."""
    if natural:
        return ROBOARENA if ARENA_NAME.match(stem) else FALLBACK
    clip = CLIP_NAME.match(stem)
    if clip:
        return OXE_CLIP if OXE_EPISODE_NAME.match(clip.group("episode")) else FALLBACK
    return OXE_EPISODE if OXE_EPISODE_NAME.match(stem) else FALLBACK


def episode_of(stem: str, natural: bool) -> str:
    """The source episode a file stem belongs to."""
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
    """The bootstrap cluster of a file stem by its name: a RoboArena session, else its episode."""
    arena = ARENA_NAME.match(stem) if natural else None
    return arena.group("session") if arena else episode_of(stem, natural)


def cluster_numbers(keys: Sequence[str], video_hashes: Sequence[str]) -> list[int]:
    """Cluster number of each row: rows sharing a non-empty key or video hash are one cluster (docs/data.md)."""
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
