"""What a file name says: its episode and cluster (without the subset), a clip's label (protocol.md, "File names")."""

import re

CLIP_NAME = re.compile(r"^(?P<episode>.+)_attempt_(?P<attempt>\d+)_score_(?P<score>\d+)$")
ARENA_NAME = re.compile(r"^(?P<session>.+)_(?P<rollout>[A-Z])_(?P<view>left|right)$")
CAMERA_VIEW = re.compile(r"^(?P<episode>.+)_(?P<view>left|right)$")
OXE_EPISODE_NAME = re.compile(r"^(?P<episode>.+_originalsplit_[A-Za-z]+_index_\d+)(?:_(?P<copy>\d+))?$")


def clip_name_score(stem: str) -> int | None:
    """The ``k`` of a clip name ``..._attempt_<m>_score_<k>``, or None for any other name."""
    clip = CLIP_NAME.match(stem)
    return int(clip.group("score")) if clip else None


def episode_of(stem: str, natural: bool) -> str:
    """The source episode a file stem belongs to."""
    if natural:  # <name>_<left|right> is the episode <name> (RoboArena: <uuid>_<letter>)
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
