"""The instance record: what each RoboReward instance carries in HELM's ``extra_data``, typed.

The scenario writes it (:meth:`InstanceRecord.to_extra_data`), the metric and the report read it
(:meth:`InstanceRecord.from_extra_data`). Nothing here reaches a model: ``extra_data`` stays in HELM's files
(``scenario_state.json``, ``instances.json``), never in a request.

Reading is tolerant: a suite written by an earlier version may lack a field, which then reads as its empty
value (``""``, ``None``), exactly as the readers treated a missing key before.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class InstanceRecord:
    """One instance's facts beyond its prompt and gold label."""

    subset: str = ""
    """Subset id (the first component of the row's ``file_name``)."""

    task: str = ""
    """The row's task instruction (what preference pairs share; it is in the prompt anyway)."""

    robot: str = ""
    """Robot embodiment of the subset."""

    kind: str = ""
    """Augmentation kind: natural, clip, counterfactual or original (inferred; docs/protocol.md, section 1)."""

    episode: str = ""
    """Source-episode key: clips and camera views of one rollout share it (clip links, preference pairs)."""

    cluster: str = ""
    """Bootstrap cluster key by name: a RoboArena session (its uuid), else the episode (docs/reward_metrics.md).
    Suites written before it existed lack it; readers then derive it from ``source_file``."""

    video_sha256: str = ""
    """SHA-256 of the source video (counterfactual relabels of one video share it)."""

    video_mode: str = ""
    """``frames`` or ``native``: what the model received."""

    num_frames: int | None = None
    """Frames sent (0 for native video)."""

    frame_indices: tuple[int, ...] = field(default_factory=tuple)
    """Source frame numbers of the frames sent."""

    media_bytes: int | None = None
    """Bytes of video or frames sent."""

    dataset_revision: str = ""
    """The resolved dataset revision (commit) the row came from."""

    source_file: str = ""
    """The row's ``file_name`` (provenance only; it can carry the label, so it never reaches a model)."""

    metadata_line: int | None = None
    """The row's line in ``metadata.jsonl``."""

    rows_in_run: int | None = None
    """Rows the run covers before HELM's ``-m`` subsampling (the metric's ``eval_coverage``)."""

    def to_extra_data(self) -> dict[str, Any]:
        """The JSON-ready ``extra_data`` dict (fields in declaration order; unset optional fields left out)."""
        out: dict[str, Any] = {}
        for item in fields(self):
            value = getattr(self, item.name)
            if value is None:
                continue
            out[item.name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_extra_data(cls, extra: Mapping[str, Any] | None) -> "InstanceRecord":
        """The record of an instance's ``extra_data`` (missing or empty fields read as empty)."""
        extra = extra or {}
        values: dict[str, Any] = {}
        for item in fields(cls):
            if item.name not in extra or extra[item.name] is None:
                continue
            value = extra[item.name]
            if item.name == "frame_indices":
                values[item.name] = tuple(int(index) for index in value)
            elif item.name in ("num_frames", "media_bytes", "metadata_line", "rows_in_run"):
                values[item.name] = int(value)
            else:
                values[item.name] = str(value)
        return cls(**values)
