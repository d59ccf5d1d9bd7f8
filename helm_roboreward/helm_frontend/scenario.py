"""The RoboRewardBench scenario: one instance per test row (``teetone/RoboReward``, arXiv 2601.00675).

Input: the rubric prompt with the row's task, then the mp4 or its frames, under content-addressed names (the file
name and the gold score never reach a model). Reference: the gold score.
"""

import hashlib
import json
import os
import sys

from helm.benchmark.scenarios import scenario as helm_scenario  # for ScenarioMetadata (helm-summarize)
from helm.benchmark.scenarios.scenario import CORRECT_TAG, TEST_SPLIT, Input, Instance, Output, Reference, Scenario
from helm.common.hierarchical_logger import hlog
from helm.common.media_object import MediaObject, MultimediaObject

from helm_roboreward.helm_frontend.model_registry import register_option_deployments, register_package_models
from helm_roboreward.helm_frontend.refusals import unresolved_video
from helm_roboreward.protocol.data_sources import resolve_data_source
from helm_roboreward.protocol.instance_record import InstanceRecord
from helm_roboreward.protocol.media_preparation import (
    PreparedMedia,
    failed_rows_error,
    prepare_media,
    rebuilt_summary,
    recorded_path,
)
from helm_roboreward.protocol.rows import Rollout, load_rollouts
from helm_roboreward.protocol.rules import (
    DATASET_REVISION,
    DATASET_URL,
    FRAMES,
    NATIVE,
    PAPER_URL,
    PROMPT_VERSION,
    FrameOptions,
    build_prompt,
)
from helm_roboreward.protocol.safe_files import write_atomically

JOBS_VARIABLE = "ROBOREWARD_JOBS"  # frame-extraction worker processes (default: the CPU count); changes no result
PROVENANCE_PREFIX = "roboreward-data-"  # data, requested and resolved revision, written next to the media


def worker_count() -> int:
    """Frame-extraction worker processes: ``ROBOREWARD_JOBS`` (a whole number >= 1) when set, else the CPU count."""
    value = os.environ.get(JOBS_VARIABLE, "").strip()
    if value and (not value.isdigit() or int(value) < 1):
        raise ValueError(f"{JOBS_VARIABLE}={value!r}: give a whole number of worker processes >= 1")
    return int(value) if value else os.cpu_count() or 1


def instance_id(file_name: str) -> str:
    """A stable, unique id from the row's file name that does not reveal the name (or the gold score a clip's holds)."""
    return "rr-" + hashlib.sha256(file_name.encode("utf-8")).hexdigest()[:16]


class RoboRewardScenario(Scenario):
    """RoboRewardBench: score a robot rollout video's end-of-episode progress 1..5 under a rubric."""

    name = "roboreward"
    description = "Vision-language reward modeling on real robot rollouts (RoboRewardBench, arXiv 2601.00675)."
    tags = ["vision-language", "video", "robotics", "reward modeling"]

    def __init__(self, subset: str = "all", data: str = "hf", revision: str = DATASET_REVISION, video: str = FRAMES,
                 frames_per_second: float = 1.0, include_last_frame: bool = False, max_frames: int = 0,
                 max_side: int = 0, media_dir: str | None = None) -> None:
        """What changes the instances (README's run-entry options; ``video`` resolved); ``media_dir``: tests."""
        super().__init__()
        if "helm_roboreward.helm_frontend.plugin" not in sys.modules:
            # HELM's Slurm worker loads no entry-point plugins but creates the scenario before any client: register
            # the package's models there, and every option deployment (the worker cannot know which one it needs).
            register_package_models()
            register_option_deployments()
        if video not in (FRAMES, NATIVE):
            raise unresolved_video(video, (FRAMES, NATIVE))
        self.subset = subset
        self.data = data
        self.revision = revision
        self.video = video
        self.frame_options = FrameOptions(frames_per_second=float(frames_per_second),
                                          include_last_frame=bool(include_last_frame), max_frames=int(max_frames),
                                          max_side=int(max_side))
        self.media_dir = media_dir

    def get_instances(self, output_path: str) -> list[Instance]:
        """Read the data, prepare the media under ``output_path``, and build one instance per row."""
        subsets = None if self.subset == "all" else [self.subset]
        source = resolve_data_source(self.data, self.revision, subsets)
        rollouts = load_rollouts(source.root, subsets, source.description, source.trusted_root)
        media_dir = recorded_path(self.media_dir or output_path)
        report = prepare_media(rollouts, media_dir, self.video == NATIVE, self.frame_options, jobs=worker_count())
        if report.failures or report.rebuilt:
            if report.failures:
                raise failed_rows_error(rollouts, report, source.description)
            for line in rebuilt_summary(report):
                hlog(f"RoboReward: {line}")
        hlog(f"RoboReward: {len(rollouts)} rows from {source.description} (revision {source.revision}); media in "
             f"{media_dir}: {len(report.media)} videos, {report.cache_hits} from cache, {report.seconds:.1f} s")
        self._write_provenance(output_path, source.revision, rollouts)
        return [self._instance(rollout, report.media[rollout.video_path], source.revision, len(rollouts))
                for rollout in rollouts]

    def _instance(self, rollout: Rollout, media: PreparedMedia, revision: str, rows_in_run: int) -> Instance:
        content = [MediaObject(text=build_prompt(rollout.row.task), content_type="text/plain")]
        content += [MediaObject(location=path, content_type=media.content_type) for path in media.paths]
        record = InstanceRecord(
            subset=rollout.row.subset, task=rollout.row.task, robot=rollout.robot, kind=rollout.kind,
            episode=rollout.episode, cluster=rollout.cluster, video_sha256=media.video_sha256, video_mode=self.video,
            num_frames=len(media.frame_indices), frame_indices=tuple(media.frame_indices), media_bytes=media.num_bytes,
            dataset_revision=revision, source_file=rollout.row.file_name, metadata_line=rollout.row.line,
            rows_in_run=rows_in_run,  # lets the metric see HELM's -m subsampling
        )
        return Instance(input=Input(multimedia_content=MultimediaObject(content)),
                        references=[Reference(Output(text=str(rollout.row.gold_score)), tags=[CORRECT_TAG])],
                        split=TEST_SPLIT, id=instance_id(rollout.row.file_name), extra_data=record.to_extra_data())

    def _write_provenance(self, output_path: str, revision: str, rollouts: list[Rollout]) -> None:
        os.makedirs(output_path, exist_ok=True)
        record = {"data": self.data, "requested_revision": self.revision, "resolved_revision": revision,
                  "subset": self.subset, "rows": len(rollouts), "prompt_version": PROMPT_VERSION}
        encoded = json.dumps(record, sort_keys=True, indent=2).encode("utf-8")
        name = f"{PROVENANCE_PREFIX}{hashlib.sha256(encoded).hexdigest()[:12]}.json"
        write_atomically(os.path.join(output_path, name), encoded)

    def get_metadata(self) -> helm_scenario.ScenarioMetadata:
        """Metadata shown by HELM (helm-summarize)."""
        description = ("Vision-language models score real robot rollout videos 1..5 for end-of-episode task progress "
                       f"under a fixed rubric ([paper]({PAPER_URL}), [dataset]({DATASET_URL})).")
        return helm_scenario.ScenarioMetadata(name=self.name, display_name="RoboRewardBench", description=description,
                                              main_metric="abs_error", main_split=TEST_SPLIT)
