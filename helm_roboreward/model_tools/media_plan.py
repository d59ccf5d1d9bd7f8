"""The media plan of a run, without preparing it: what each model will be sent, per video (``roboreward estimate``).

:class:`ModelPlan` is what routing decided for one model (deployment, client, native video or frames, frame
options, max_tokens, request limits); :func:`video_facts` probes a video once (a demux pass, as preparation does,
plus one decoded frame for frames models); :func:`frames_plan` applies the same frame selection a run applies
(:func:`helm_roboreward.protocol.rules.select_frame_indices`). Nothing is written and nothing is sent.
"""

from dataclasses import dataclass

import av

from helm_roboreward.protocol.request_limits import RequestLimits
from helm_roboreward.protocol.rules import FrameOptions, scaled_size, select_frame_indices
from helm_roboreward.protocol.video_decoding import VideoError, decode_frames, encode_jpeg, probe_video, to_image

NATIVE = "native"
FRAMES = "frames"


@dataclass(frozen=True)
class ModelPlan:
    """What a ``roboreward`` run of one model will send, as routing resolved it."""

    model: str
    deployment: str
    client: str
    """The deployment's client class (full name)."""

    video_mode: str
    """``native`` or ``frames``."""

    frame_options: FrameOptions
    max_tokens: int
    reasoning: bool
    """The model gets the reasoning token allowance (OpenAI and Gemini models)."""

    request_limits: RequestLimits


@dataclass(frozen=True)
class VideoFacts:
    """What one probe tells about a video."""

    path: str
    num_frames: int
    native_fps: float
    width: int
    height: int
    """Decoded size (the stream's; rotation is applied to frames only)."""

    duration_seconds: float
    has_audio: bool
    num_bytes: int


@dataclass(frozen=True)
class FramesPlan:
    """The frames a frames model gets from one video, with their estimated size."""

    count: int
    width: int
    height: int
    """Size of the stored frames (after rotation and ``max_side``)."""

    bytes_per_frame: int
    """JPEG bytes of the first selected frame (all frames are estimated at this size)."""

    @property
    def total_bytes(self) -> int:
        """Estimated bytes of every frame."""
        return self.count * self.bytes_per_frame


def video_facts(path: str, num_bytes: int) -> VideoFacts:
    """Probe one video (a demux pass, no decoding).

    Raises:
        VideoError: The file is not a readable video (the message names it).
    """
    probe = probe_video(path)
    try:
        with av.open(path) as container:
            has_audio = bool(container.streams.audio)
    except av.FFmpegError as error:
        raise VideoError(f"{path}: cannot be read as a video ({error})") from None
    fps = probe.native_fps
    duration = probe.num_frames / fps if fps > 0 else 0.0
    return VideoFacts(path, probe.num_frames, fps, probe.width, probe.height, duration, has_audio, num_bytes)


def frames_plan(facts: VideoFacts, options: FrameOptions) -> FramesPlan:
    """The frames of one video under ``options`` (the run's selection rule) and their estimated JPEG size.

    One frame is decoded and encoded (the first selected) to measure the size of the stored frames.

    Raises:
        VideoError: No selected frame could be decoded.
    """
    indices = select_frame_indices(facts.num_frames, facts.native_fps, options)
    if not indices:
        raise VideoError(f"{facts.path}: the video has no frames")
    probe = probe_video(facts.path)
    for _, frame in decode_frames(facts.path, indices[:1], probe):
        image = to_image(frame, options)
        return FramesPlan(len(indices), image.width, image.height, len(encode_jpeg(image, options.jpeg_quality)))
    width, height = scaled_size(facts.width, facts.height, options.max_side)
    raise VideoError(f"{facts.path}: frame {indices[0]} ({width}x{height}) could not be decoded")
