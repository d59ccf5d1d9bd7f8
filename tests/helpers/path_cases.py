"""Crafted paths out of a command's root folder: the ``export-media`` refusal cases, by catalogue id.

Each case (docs/bad_inputs.md) is a function that records, in a run of an :class:`ExportCase` tree, media
locations that lead out of the output folder (or plants a link in the export folder) and returns the path the
refusal message must name. tests/integration/test_path_safety.py runs them; tests/integration/test_bad_inputs.py
checks that every catalogue id of this kind is one of them.
"""

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

JPEG = b"\xff\xd8\xff\xe0" + b"frame" * 20
SECRET = b"\xff\xd8\xff\xe0 not for export: a file outside the output folder"
SUITE = "s"
FRAME = "benchmark_output/scenarios/roboreward/frames/aa/aakey/0000.jpg"


def snapshot(folder: Path) -> dict[str, tuple[str, str]]:
    """Every entry under ``folder``: relative path -> (kind, sha256 or link target)."""
    entries: dict[str, tuple[str, str]] = {}
    if not folder.exists():
        return entries
    for path in sorted(folder.rglob("*")):
        relative = str(path.relative_to(folder))
        if path.is_symlink():
            entries[relative] = ("link", os.readlink(path))
        elif path.is_file():
            entries[relative] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
        else:
            entries[relative] = ("folder", "")
    return entries


# ----------------------------------------------------------------------------- export-media


@dataclass
class ExportCase:
    """A tree under ``tmp``: ``a/work`` (cwd, holds benchmark_output/), ``a/outside``, ``b/export``, ``b/outside``."""

    tmp: Path

    @property
    def work(self) -> Path:
        return self.tmp / "a" / "work"

    @property
    def export(self) -> Path:
        return self.tmp / "b" / "export"

    def outsides(self) -> dict[str, dict[str, tuple[str, str]]]:
        return {side: snapshot(self.tmp / side / "outside") for side in ("a", "b")}

    def record(self, media: list[tuple[str, str]]) -> None:
        """A run whose scenario_state.json records these ``(content_type, location)`` media objects."""
        run = self.work / "benchmark_output" / "runs" / SUITE / "roboreward:subset=x,video=frames,model=m"
        run.mkdir(parents=True, exist_ok=True)
        objects = [{"content_type": "text/plain", "text": "prompt"}]
        objects += [{"content_type": kind, "location": location} for kind, location in media]
        state = {"request_states": [{"request": {"multimodal_prompt": {"media_objects": objects}}}]}
        (run / "scenario_state.json").write_text(json.dumps(state), encoding="utf-8")
        (run / "stats.json").write_text("[]", encoding="utf-8")


def _dotdot_source(case: ExportCase) -> str:
    case.record([("image/jpeg", FRAME), ("image/jpeg", "benchmark_output/../../outside/secret.jpg")])
    return "benchmark_output/../../outside/secret.jpg"


def _dotdot_inside(case: ExportCase) -> str:
    location = "benchmark_output/scenarios/roboreward/../roboreward/frames/aa/aakey/0000.jpg"
    case.record([("image/jpeg", location)])
    return location


def _absolute_outside(case: ExportCase) -> str:
    other = case.tmp / "a" / "outside" / "benchmark_output" / "x.jpg"
    other.parent.mkdir()
    other.write_bytes(SECRET)
    case.record([("image/jpeg", str(other))])
    return str(other)


def _not_media(case: ExportCase) -> str:
    location = f"benchmark_output/runs/{SUITE}/roboreward:subset=x,video=frames,model=m/stats.json"
    case.record([("image/jpeg", location)])
    return location


def _wrong_content_type(case: ExportCase) -> str:
    case.record([("application/octet-stream", FRAME)])
    return FRAME


def _link_in_output(case: ExportCase) -> str:
    (case.work / "benchmark_output/scenarios/roboreward/frames/zz").symlink_to(case.tmp / "a" / "outside")
    location = "benchmark_output/scenarios/roboreward/frames/zz/secret.jpg"
    case.record([("image/jpeg", location)])
    return location


def _folder_link_in_export(case: ExportCase) -> str:
    (case.export / "benchmark_output").mkdir()
    (case.export / "benchmark_output" / "scenarios").symlink_to(case.tmp / "b" / "outside")
    case.record([("image/jpeg", FRAME)])
    return str(case.export / "benchmark_output" / "scenarios")


EXPORT_REFUSALS: dict[str, Callable[[ExportCase], str]] = {  # case id (docs/bad_inputs.md) -> crafting
    "export-source-dotdot-out-of-output": _dotdot_source,
    "export-source-dotdot-inside": _dotdot_inside,
    "export-source-absolute-outside": _absolute_outside,
    "export-source-not-media": _not_media,
    "export-source-wrong-content-type": _wrong_content_type,
    "export-source-link-leads-out": _link_in_output,
    "export-target-folder-link-leads-out": _folder_link_in_export,
}
