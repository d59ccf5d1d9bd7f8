"""Real LeRobot datasets for the tests, written by their documented layouts (and by lerobot itself, if installed).

:func:`write_v3` writes a v3.0 dataset the way lerobot 0.4 does (``src/lerobot/datasets/utils.py`` and
``lerobot_dataset.py``): ``meta/info.json``, ``meta/episodes/chunk-000/file-000.parquet`` with per-camera
``videos/<key>/{chunk_index,file_index,from_timestamp,to_timestamp}``, ``meta/tasks.parquet``, frames in
``data/chunk-000/file-000.parquet``, and several episodes concatenated in each shared mp4 (AV1 by default, as
LeRobot encodes: libsvtav1, GOP 2). :func:`write_v2` writes v2.1 (``meta/episodes.jsonl``, ``meta/tasks.jsonl``,
one mp4 per episode under ``videos/chunk-000/<key>/episode_<index>.mp4``). Every frame draws its dataset-wide
``index`` (:func:`tests.helpers.videos.draw_frame`), so a decoded frame tells which source frame it is.

:func:`build_with_lerobot` runs lerobot's own writer (``LeRobotDataset.create`` / ``add_frame`` /
``save_episode``) in the interpreter named by ``ROBOREWARD_LEROBOT_PYTHON`` (lerobot's pins conflict with
crfm-helm's, so it lives in a separate venv); :func:`lerobot_python` is None when it is not set up.
"""

import json
import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from tests.helpers.sample import REPO
from tests.helpers.videos import draw_frame

CAMERA = "observation.images.front"
WRIST = "observation.images.wrist"
DEPTH = "observation.images.depth"
LEROBOT_PYTHON_VARIABLE = "ROBOREWARD_LEROBOT_PYTHON"
CAMERA_OFFSET = 10_000
"""The second camera draws ``index + CAMERA_OFFSET`` (the two cameras' frames differ)."""


@dataclass(frozen=True)
class EpisodeSpec:
    length: int
    task: str = "put the red cube in the bowl"
    success: bool = False


def default_episodes(count: int = 5, base_length: int = 8) -> list[EpisodeSpec]:
    """Short episodes of different lengths and tasks; the odd ones succeed at their last frame."""
    tasks = ["put the red cube in the bowl", "open the drawer", "stack the blocks"]
    return [EpisodeSpec(base_length + index, tasks[index % len(tasks)], index % 2 == 1) for index in range(count)]


def _encode(path: Path, numbers: Sequence[int], fps: int, codec: str, width: int, height: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rate = Fraction(fps)
    options = ({"g": "2", "crf": "30", "preset": "12"} if codec == "libsvtav1"
               else {"crf": "18", "preset": "veryfast", "threads": "1", "x264-params": "keyint=10:scenecut=0"})
    with av.open(str(path), "w", format="mp4") as container:
        stream = container.add_stream(codec, rate=rate, options=options)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for position, number in enumerate(numbers):
            frame = av.VideoFrame.from_ndarray(draw_frame(number, width, height), format="rgb24")
            frame.pts, frame.time_base = position, 1 / rate
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)


def _features(fps: int, width: int, height: int, codec: str, cameras: Sequence[str],
              depth: Sequence[str]) -> dict[str, Any]:
    features: dict[str, Any] = {}
    for key in list(cameras) + list(depth):
        features[key] = {"dtype": "video", "shape": [height, width, 3], "names": ["height", "width", "channels"],
                         "info": {"video.height": height, "video.width": width,
                                  "video.codec": "av1" if codec == "libsvtav1" else "h264",
                                  "video.pix_fmt": "yuv420p", "video.is_depth_map": key in depth, "video.fps": fps,
                                  "video.channels": 3, "has_audio": False}}
    features["observation.state"] = {"dtype": "float32", "shape": [2], "names": None}
    features["action"] = {"dtype": "float32", "shape": [2], "names": None}
    features["next.success"] = {"dtype": "bool", "shape": [1], "names": None}
    for name, dtype in (("timestamp", "float32"), ("frame_index", "int64"), ("episode_index", "int64"),
                        ("index", "int64"), ("task_index", "int64")):
        features[name] = {"dtype": dtype, "shape": [1], "names": None}
    return features


def _frames_table(episodes: Sequence[EpisodeSpec], indices: Sequence[int], task_index: dict[str, int],
                  fps: int, first_index: int = 0) -> pa.Table:
    rows: dict[str, list[Any]] = {key: [] for key in ("observation.state", "action", "next.success", "timestamp",
                                                      "frame_index", "episode_index", "index", "task_index")}
    start = first_index
    for spec, episode_index in zip(episodes, indices, strict=True):
        for frame in range(spec.length):
            rows["observation.state"].append([0.0, float(frame)])
            rows["action"].append([0.0, 0.0])
            rows["next.success"].append(spec.success and frame == spec.length - 1)
            rows["timestamp"].append(frame / fps)
            rows["frame_index"].append(frame)
            rows["episode_index"].append(episode_index)
            rows["index"].append(start + frame)
            rows["task_index"].append(task_index[spec.task])
        start += spec.length
    return pa.table({**rows, "timestamp": pa.array(rows["timestamp"], pa.float32())})


def write_v3(root: Path, episodes: Sequence[EpisodeSpec], fps: int = 10, codec: str = "libsvtav1",
             width: int = 64, height: int = 48, episodes_per_file: int = 3, cameras: Sequence[str] = (CAMERA,),
             depth: Sequence[str] = ()) -> Path:
    """A v3.0 dataset: ``episodes_per_file`` episodes back to back in each shared mp4, per camera."""
    root = Path(root)
    tasks = list(dict.fromkeys(spec.task for spec in episodes))
    task_index = {task: index for index, task in enumerate(tasks)}
    indices = list(range(len(episodes)))
    starts = [sum(spec.length for spec in episodes[:i]) for i in range(len(episodes))]
    columns: dict[str, list[Any]] = {"episode_index": indices, "tasks": [[spec.task] for spec in episodes],
                                     "length": [spec.length for spec in episodes],
                                     "data/chunk_index": [0] * len(episodes), "data/file_index": [0] * len(episodes),
                                     "dataset_from_index": starts,
                                     "dataset_to_index": [s + e.length for s, e in zip(starts, episodes, strict=True)]}
    for camera_number, key in enumerate(list(cameras) + list(depth)):
        chunk, file_index, from_ts, to_ts = [], [], [], []
        for group_start in range(0, len(episodes), episodes_per_file):
            group = range(group_start, min(len(episodes), group_start + episodes_per_file))
            numbers: list[int] = []
            for episode in group:
                chunk.append(0)
                file_index.append(group_start // episodes_per_file)
                from_ts.append(len(numbers) / fps)
                numbers += [starts[episode] + frame + camera_number * CAMERA_OFFSET
                            for frame in range(episodes[episode].length)]
                to_ts.append(len(numbers) / fps)
            _encode(root / "videos" / key / "chunk-000" / f"file-{group_start // episodes_per_file:03d}.mp4",
                    numbers, fps, codec, width, height)
        columns.update({f"videos/{key}/chunk_index": chunk, f"videos/{key}/file_index": file_index,
                        f"videos/{key}/from_timestamp": from_ts, f"videos/{key}/to_timestamp": to_ts})
    columns["meta/episodes/chunk_index"] = [0] * len(episodes)
    columns["meta/episodes/file_index"] = [0] * len(episodes)
    (root / "meta" / "episodes" / "chunk-000").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), root / "meta" / "episodes" / "chunk-000" / "file-000.parquet")
    pd.DataFrame({"task_index": list(task_index.values())}, index=pd.Index(tasks)).to_parquet(
        root / "meta" / "tasks.parquet")
    (root / "data" / "chunk-000").mkdir(parents=True, exist_ok=True)
    pq.write_table(_frames_table(episodes, indices, task_index, fps), root / "data" / "chunk-000" / "file-000.parquet")
    info = _info("v3.0", episodes, tasks, fps, _features(fps, width, height, codec, cameras, depth))
    info.update({"data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
                 "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
                 "data_files_size_in_mb": 100, "video_files_size_in_mb": 200})
    (root / "meta" / "info.json").write_text(json.dumps(info, indent=4), encoding="utf-8")
    return root


def _info(version: str, episodes: Sequence[EpisodeSpec], tasks: list[str], fps: int,
          features: dict[str, Any]) -> dict[str, Any]:
    return {"codebase_version": version, "robot_type": "so100", "total_episodes": len(episodes),
            "total_frames": sum(spec.length for spec in episodes), "total_tasks": len(tasks), "chunks_size": 1000,
            "fps": fps, "splits": {"train": f"0:{len(episodes)}"}, "features": features}


def write_v2(root: Path, episodes: Sequence[EpisodeSpec], fps: int = 10, codec: str = "libx264", width: int = 64,
             height: int = 48, cameras: Sequence[str] = (CAMERA,)) -> Path:
    """A v2.1 dataset: one mp4 per episode and camera, ``meta/episodes.jsonl`` and ``meta/tasks.jsonl``."""
    root = Path(root)
    tasks = list(dict.fromkeys(spec.task for spec in episodes))
    task_index = {task: index for index, task in enumerate(tasks)}
    (root / "meta").mkdir(parents=True, exist_ok=True)
    start = 0
    episode_lines, stats_lines = [], []
    for index, spec in enumerate(episodes):
        for camera_number, key in enumerate(cameras):
            _encode(root / "videos" / "chunk-000" / key / f"episode_{index:06d}.mp4",
                    [start + frame + camera_number * CAMERA_OFFSET for frame in range(spec.length)], fps, codec,
                    width, height)
        table = _frames_table([spec], [index], task_index, fps, first_index=start)
        (root / "data" / "chunk-000").mkdir(parents=True, exist_ok=True)
        pq.write_table(table, root / "data" / "chunk-000" / f"episode_{index:06d}.parquet")
        episode_lines.append(json.dumps({"episode_index": index, "tasks": [spec.task], "length": spec.length}))
        stats_lines.append(json.dumps({"episode_index": index, "stats": {}}))
        start += spec.length
    (root / "meta" / "episodes.jsonl").write_text("\n".join(episode_lines) + "\n", encoding="utf-8")
    (root / "meta" / "episodes_stats.jsonl").write_text("\n".join(stats_lines) + "\n", encoding="utf-8")
    (root / "meta" / "tasks.jsonl").write_text(
        "".join(json.dumps({"task_index": i, "task": t}) + "\n" for t, i in task_index.items()), encoding="utf-8")
    info = _info("v2.1", episodes, tasks, fps, _features(fps, width, height, codec, cameras, ()))
    info.update({"total_chunks": 1, "total_videos": len(episodes) * len(cameras),
                 "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
                 "video_path": "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"})
    (root / "meta" / "info.json").write_text(json.dumps(info, indent=4), encoding="utf-8")
    return root


def edit_info(root: Path, **changes: Any) -> None:
    """Change top-level fields of ``meta/info.json``."""
    path = Path(root) / "meta" / "info.json"
    info = json.loads(path.read_text(encoding="utf-8"))
    info.update(changes)
    path.write_text(json.dumps(info, indent=4), encoding="utf-8")


def edit_v3_episode(root: Path, episode_index: int, **columns: Any) -> None:
    """Change columns of one episode's row in a v3.0 dataset's episode metadata."""
    path = Path(root) / "meta" / "episodes" / "chunk-000" / "file-000.parquet"
    frame = pq.read_table(path).to_pandas()
    for column, value in columns.items():
        frame.loc[frame["episode_index"] == episode_index, column] = value
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)


def set_v3_episode_values(root: Path, episode: int, **columns: Any) -> None:
    """Set columns of one episode's row in a v3.0 dataset's episode metadata, keeping the schema (a None is a
    real null, a float NaN stays NaN; :func:`edit_v3_episode` goes through pandas, which turns nulls into NaN)."""
    path = Path(root) / "meta" / "episodes" / "chunk-000" / "file-000.parquet"
    table = pq.read_table(path)
    rows = table.to_pylist()
    for row in rows:
        if row["episode_index"] == episode:
            row.update(columns)
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)


# --------------------------------------------------------------------------- checking a cut


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    """Peak signal-to-noise ratio of two RGB frames in dB (99 when identical)."""
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return 99.0 if mse == 0 else float(10 * np.log10(255.0**2 / mse))


def reference_frames(path: str | Path, from_timestamp: float, to_timestamp: float, fps: float) -> list[np.ndarray]:
    """The source video's frames in ``[from, to)`` (half a frame of slack), by plain sequential decoding (no seek)."""
    half = 0.5 / fps
    frames = []
    with av.open(str(path)) as container:
        for frame in container.decode(container.streams.video[0]):
            if from_timestamp - half <= frame.time < to_timestamp - half:
                frames.append(frame.to_ndarray(format="rgb24"))
    return frames


# --------------------------------------------------------------------------- lerobot itself


def lerobot_python() -> str | None:
    """The interpreter of a venv where ``import lerobot`` works (``ROBOREWARD_LEROBOT_PYTHON``), else None."""
    python = os.environ.get(LEROBOT_PYTHON_VARIABLE)
    return python if python and os.path.isfile(python) else None


WRITER_SCRIPT = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[3])
from tests.helpers.videos import draw_frame
from lerobot.datasets.lerobot_dataset import LeRobotDataset
spec = json.loads(sys.argv[2])
features = {
    "observation.images.front": {"dtype": "video", "shape": (96, 128, 3), "names": ["height", "width", "channels"]},
    "observation.state": {"dtype": "float32", "shape": (2,), "names": None},
    "action": {"dtype": "float32", "shape": (2,), "names": None},
    "next.success": {"dtype": "bool", "shape": (1,), "names": None},
}
dataset = LeRobotDataset.create("tests/tiny", fps=spec["fps"], features=features, root=sys.argv[1], use_videos=True)
index = 0
for episode in spec["episodes"]:
    for frame in range(episode["length"]):
        dataset.add_frame({"observation.images.front": draw_frame(index, 128, 96),
                           "observation.state": np.array([0.0, frame], np.float32),
                           "action": np.zeros(2, np.float32),
                           "next.success": np.array([episode["success"] and frame == episode["length"] - 1]),
                           "task": episode["task"]})
        index += 1
    dataset.save_episode()
dataset.finalize()
"""


def build_with_lerobot(python: str, root: Path, episodes: Sequence[EpisodeSpec], fps: int = 10) -> Path:
    """A v3.0 dataset written by lerobot's own ``LeRobotDataset`` writer (AV1 video, LeRobot's defaults)."""
    spec = {"fps": fps, "episodes": [{"length": e.length, "task": e.task, "success": e.success} for e in episodes]}
    done = subprocess.run([python, "-c", WRITER_SCRIPT, str(root), json.dumps(spec), str(REPO)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return Path(root)


RABC_SCRIPT = """
import json, sys
import numpy as np, torch
from lerobot.utils.rabc import RABCWeights
weights = RABCWeights(progress_path=sys.argv[1], chunk_size=int(sys.argv[2]), head_mode="sparse",
                      device=torch.device("cpu"))
indices = json.loads(sys.argv[3])
batch_weights, stats = weights.compute_batch_weights({"index": torch.tensor(indices)})
print(json.dumps({"weights": batch_weights.tolist(), "frames": weights.get_stats()["num_frames"],
                  "lookup": {str(i): weights.progress_lookup.get(i) for i in indices}}))
"""


def read_progress_with_lerobot(python: str, progress_file: Path, indices: Sequence[int],
                               chunk_size: int = 4) -> dict[str, Any]:
    """LeRobot's RA-BC reader (``lerobot.utils.rabc.RABCWeights``) on a progress parquet: weights and lookups."""
    done = subprocess.run([python, "-c", RABC_SCRIPT, str(progress_file), str(chunk_size), json.dumps(list(indices))],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@dataclass(frozen=True)
class ImportCase:
    """One refused ``import-lerobot`` case: its id (a docs/bad_inputs.md row), arguments and expected message parts."""

    id: str
    arguments: tuple[str, ...]
    expected: tuple[str, ...]
    damage: Callable[[Path], None] | None = None
    """Changes the case's private copy of the dataset."""
    inputs: Callable[[Path, Path], list[str]] | None = None
    """``(dataset, folder) -> more arguments``: writes inputs (labels, links, an earlier import) into ``folder``."""
    dataset: str = "plain"


def labels_file(*lines: str) -> Callable[[Path, Path], list[str]]:
    """An :attr:`ImportCase.inputs` writing ``labels.jsonl`` with ``lines`` and passing ``--labels``."""
    def write(dataset: Path, folder: Path) -> list[str]:
        path = folder / "labels.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return ["--labels", str(path)]

    return write

