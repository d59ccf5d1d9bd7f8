"""Cutting an episode (and prefixes of it) out of its LeRobot video into H.264 yuv420p mp4 files, with PyAV.

Which frames: LeRobot reads frame ``k`` of an episode at ``from_timestamp + k / fps`` of its video, taking the
decoded frame within a tolerance of that time (``LeRobotDataset._query_videos``). Here every decoded frame whose
presentation time ``t`` satisfies ``from_timestamp - h <= t < to_timestamp - h``, ``h`` half a frame period,
belongs to the episode; their number must equal the episode's ``length``, else the metadata and the video
disagree and the import stops naming the episode. One decode pass per episode feeds every clip being written
(the full episode, and in prefix mode the clips ``[0, end)``), so prefixes cost no extra decoding.

Output: ``libx264``, ``yuv420p`` (what every model client and browser plays), the episode's own frame rate,
constant frame timing from 0; odd frame sizes are padded by one edge pixel (yuv420p needs even sizes). Decoded
source frames go to the encoder without an RGB round trip, so colours are not converted.
"""

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, cast

import av
import numpy as np
from av.video.stream import VideoStream

from helm_roboreward.robot_data.lerobot_format import Episode, LeRobotFormatError

ENCODER = "libx264"
PIXEL_FORMAT = "yuv420p"
DEFAULT_CRF = 18
"""x264's constant rate factor; 18 is visually lossless for this content (docs/own_robot_data.md)."""
PRESET = "veryfast"


class EpisodeVideoError(LeRobotFormatError):
    """An episode's video cannot be cut as its metadata says; the message names the file and the episode."""


@dataclass(frozen=True)
class ClipTarget:
    """One file to write: the episode's frames ``[0, end_frame)``."""

    path: str
    end_frame: int


@dataclass(frozen=True)
class CutEpisode:
    """What was cut: the episode's frames as found in the source video."""

    frames: int
    first_time: float
    """Presentation time (s) of its first frame in the source video."""

    last_time: float
    width: int
    height: int
    """Size of the written frames (after padding to even sizes)."""


def frame_rate(fps: float) -> Fraction:
    """The output frame rate as a fraction (29.97 and friends stay exact)."""
    return Fraction(fps).limit_denominator(1001)


class _Encoder:
    """One output file being written."""

    def __init__(self, target: ClipTarget, rate: Fraction, width: int, height: int, crf: int) -> None:
        self.target = target
        self.container = av.open(target.path, mode="w", format="mp4")
        options = {"crf": str(crf), "preset": PRESET, "threads": "1"}
        self.stream = cast(VideoStream, self.container.add_stream(ENCODER, rate=rate, options=options))
        self.stream.width, self.stream.height, self.stream.pix_fmt = width, height, PIXEL_FORMAT
        self.stream.codec_context.thread_count = 1
        self.time_base = 1 / rate
        self.written = 0

    def add(self, frame: av.VideoFrame) -> None:
        frame.pts, frame.time_base = self.written, self.time_base
        for packet in self.stream.encode(frame):
            self.container.mux(packet)
        self.written += 1

    def close(self) -> None:
        for packet in self.stream.encode(None):
            self.container.mux(packet)
        self.container.close()


def _even(frame: av.VideoFrame) -> av.VideoFrame:
    """The frame itself when its sizes are even, else an RGB copy padded by repeating the last row/column."""
    if frame.width % 2 == 0 and frame.height % 2 == 0:
        return frame
    rgb = frame.to_ndarray(format="rgb24")
    padding = ((0, rgb.shape[0] % 2), (0, rgb.shape[1] % 2), (0, 0))
    padded: np.ndarray[Any, np.dtype[np.uint8]] = np.pad(rgb, padding, mode="edge")
    return av.VideoFrame.from_ndarray(padded, format="rgb24")


def open_video(path: str) -> "av.container.InputContainer":
    """A video opened for one decoder thread (threads were slower than processes on 2 cores; FINDINGS.md)."""
    container = av.open(path)
    for stream in container.streams.video:
        stream.thread_count = 1
    return container


def _source_frames(container: "av.container.InputContainer", episode: Episode, fps: float,
                   where: str) -> "Iterator[tuple[float, av.VideoFrame | None]]":
    """The episode's decoded frames with their times, decoding forward from a seek to its start.

    Ends with ``(time, None)`` when a frame after the episode was decoded (the video goes on past it).
    """
    if not container.streams.video:
        raise EpisodeVideoError(f"{where}: the file has no video stream")
    stream = container.streams.video[0]
    half = 0.5 / fps
    start, end = episode.from_timestamp - half, episode.to_timestamp - half
    if stream.time_base is not None and episode.from_timestamp > half:
        container.seek(int(start / stream.time_base), stream=stream, backward=True, any_frame=False)
    for packet in container.demux(stream):
        for frame in packet.decode():
            time = frame.time
            if time is None:
                raise EpisodeVideoError(f"{where}: a decoded frame has no timestamp; the video cannot be cut by time")
            if time >= end:
                yield float(time), None  # the first frame after the episode: the video goes on
                return
            if time >= start:
                yield float(time), frame


def cut_episode(source: str, episode: Episode, fps: float, targets: Sequence[ClipTarget],
                crf: int = DEFAULT_CRF, container: "av.container.InputContainer | None" = None) -> CutEpisode:
    """Write ``targets`` (clips ``[0, end)`` of ``episode``) from ``source``, checking the cut frame by frame.

    Frames stream from the decoder to the encoders (one frame in memory); when the count turns out wrong the
    files written are removed before the error is raised.

    Args:
        source: The episode's mp4 (absolute path).
        episode: Its metadata (time span, length).
        fps: The camera's frame rate.
        targets: Files to write; each ``end_frame`` in ``1..length``.
        crf: x264 quality.
        container: ``source`` already opened (several episodes of one shared file), else it is opened here.

    Raises:
        EpisodeVideoError: The file is missing or undecodable, or the frames between the timestamps do not
            number ``length`` (timestamps beyond the video, another frame rate).
    """
    where = f"{source}, episode {episode.index}"
    if not os.path.isfile(source):
        raise EpisodeVideoError(f"{where}: video file not found; re-download the dataset's videos/ folder")
    encoders: list[_Encoder] = []
    times: list[float] = []
    ended = True
    """Whether the video ended before the episode's ``to_timestamp`` (no later frame seen)."""
    size = (0, 0)
    opened = container is None
    try:
        container = container or open_video(source)
        for time, frame in _source_frames(container, episode, fps, where):
            if frame is None:
                ended = False
                break
            even = _even(frame)
            if not encoders:
                size = (even.width, even.height)
                encoders = [_Encoder(target, frame_rate(fps), even.width, even.height, crf) for target in targets]
            if len(times) >= episode.length:
                times.append(time)
                ended = False
                break  # one too many is enough to know
            for encoder in encoders:
                if len(times) < encoder.target.end_frame:
                    encoder.add(even)
            times.append(time)
    except av.FFmpegError as error:
        _discard(encoders)
        raise EpisodeVideoError(f"{where}: the video cannot be decoded ({error}); re-download it, or leave the "
                                "episode out with --episodes") from None
    except BaseException:
        _discard(encoders)
        raise
    finally:
        if opened and container is not None:
            container.close()
    try:
        _check_frames(times, episode, fps, where, ended)
    except EpisodeVideoError:
        _discard(encoders)
        raise
    for encoder in encoders:
        encoder.close()
    return CutEpisode(frames=len(times), first_time=times[0], last_time=times[-1], width=size[0], height=size[1])


def _discard(encoders: Sequence[_Encoder]) -> None:
    for encoder in encoders:
        try:
            encoder.container.close()
        except av.FFmpegError:
            pass
        if os.path.exists(encoder.target.path):
            os.remove(encoder.target.path)


def _check_frames(times: list[float], episode: Episode, fps: float, where: str, ended: bool) -> None:
    span = f"{episode.from_timestamp:g}..{episode.to_timestamp:g} s"
    # The video ended inside the span: fewer frames than the episode has, or its end lies past the last frame.
    beyond = ended and (not times or episode.to_timestamp > times[-1] + 1.5 / fps)
    if len(times) < episode.length or beyond:
        ends = f"it ends at {times[-1] + 1 / fps:.3f} s" if times else "no frame of the span is in it"
        if len(times) < episode.length:
            ends += f", with {len(times)} of the episode's {episode.length} frames"
        raise EpisodeVideoError(
            f"{where}: timestamps {span} lie beyond the end of the video ({ends}). The metadata and the video "
            "disagree: re-download the dataset, or leave the episode out with --episodes")
    if len(times) > episode.length:
        raise EpisodeVideoError(
            f"{where}: more than {episode.length} frames lie within {span} but the episode has {episode.length}; "
            "the video's frame rate differs from info.json's fps. Re-encode the videos at the dataset's fps")
