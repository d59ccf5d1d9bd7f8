"""What each instance carries in HELM's ``extra_data`` (never sent to a model), typed. Fields: docs/data.md."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

_READ_BACK: dict[str, Callable[[Any], Any]] = {
    "frame_indices": lambda indices: tuple(int(index) for index in indices),
    **dict.fromkeys(("num_frames", "media_bytes", "metadata_line", "rows_in_run"), int),
}


@dataclass(frozen=True)
class InstanceRecord:
    """One instance's facts beyond its prompt and gold score."""

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
    source_file: str = ""  # the row's file_name: a clip's holds its gold score, so it never reaches a model
    metadata_line: int | None = None
    rows_in_run: int | None = None

    def to_extra_data(self) -> dict[str, Any]:
        """The JSON-ready ``extra_data`` dict (fields in declaration order; unset optional fields left out)."""
        return {name: list(value) if isinstance(value, tuple) else value
                for name, value in vars(self).items() if value is not None}

    @classmethod
    def from_extra_data(cls, extra: Mapping[str, Any] | None) -> "InstanceRecord":
        """The record of an instance's ``extra_data`` (fields not in ``_READ_BACK`` as strings, missing as empty)."""
        values = {item.name: (extra or {}).get(item.name) for item in fields(cls)}
        return cls(**{name: _READ_BACK.get(name, str)(value) for name, value in values.items() if value is not None})

