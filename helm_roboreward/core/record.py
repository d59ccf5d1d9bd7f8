"""What each instance carries in HELM's ``extra_data`` (never sent to a model), typed. Fields: docs/data.md."""

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

_INT_FIELDS = ("num_frames", "media_bytes", "metadata_line", "rows_in_run")


@dataclass(frozen=True)
class InstanceRecord:
    """One instance's facts beyond its prompt and gold label."""

    subset: str = ""
    task: str = ""
    robot: str = ""
    kind: str = ""
    episode: str = ""
    cluster: str = ""
    video_sha256: str = ""
    video_mode: str = ""
    num_frames: int | None = None
    frame_indices: tuple[int, ...] = field(default_factory=tuple)
    media_bytes: int | None = None
    dataset_revision: str = ""
    source_file: str = ""  # the row's file_name: it can carry the label, so it never reaches a model
    metadata_line: int | None = None
    rows_in_run: int | None = None

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
            value = extra.get(item.name)
            if value is None:
                continue
            if item.name == "frame_indices":
                values[item.name] = tuple(int(index) for index in value)
            elif item.name in _INT_FIELDS:
                values[item.name] = int(value)
            else:
                values[item.name] = str(value)
        return cls(**values)
