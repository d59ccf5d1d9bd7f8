"""How a video reaches the Qwen3-VL processor of the in-process transformers client: torchcodec, or PyAV.

transformers' Qwen3-VL processor decodes a video path with torchcodec only, which loads the system's FFmpeg
libraries (the official path). Where torchcodec cannot load, :func:`pyav_video` gives the processor what the path
route would: the frames its own ``sample_frames`` keeps (same ``fps`` / ``num_frames`` arguments as its
preprocessing), decoded with the package's PyAV helpers, and a ``VideoMetadata`` counted the way torchcodec's exact
seek mode counts (:func:`scan_like_torchcodec`: packets not flagged discard, never the header's count; fps over
the time span in torchcodec's floating-point order). tests/clients/test_video_decoders.py checks
that both routes give identical model inputs.
"""

import importlib.metadata
from typing import Any

from helm.proxy.retry import NonRetriableException

AUTO = "auto"
TORCHCODEC = "torchcodec"
PYAV = "pyav"
VIDEO_DECODERS = (AUTO, TORCHCODEC, PYAV)

INSTALL_HINT = 'pip install "helm-roboreward[transformers]" (transformers, torchcodec, accelerate)'
FFMPEG_HINT = "FFmpeg's shared libraries, which torchcodec loads (Debian/Ubuntu: apt-get install ffmpeg)"


class VideoDecoderError(NonRetriableException):
    """The decoder asked for cannot run here."""


def torchcodec_usable() -> bool:
    """Whether torchcodec is installed and loads FFmpeg, i.e. transformers' processor can decode a video path."""
    try:
        from transformers.utils import is_torchcodec_usable
    except ImportError:  # transformers < 5 (e.g. 4.57, the official run's generation): import it to find out
        return _torchcodec_imports()
    return bool(is_torchcodec_usable("video"))


def require_torchcodec() -> str:
    """The torchcodec version, after checking that it loads with FFmpeg and can decode video.

    Raises:
        VideoDecoderError: torchcodec is not installed or cannot load FFmpeg.
    """
    if not torchcodec_usable():
        raise VideoDecoderError(
            "TransformersQwen3VLClient: video_decoder='torchcodec', but torchcodec is not installed or cannot load "
            f"FFmpeg. Install: {INSTALL_HINT} and {FFMPEG_HINT}; or use video_decoder='auto' (PyAV where "
            "torchcodec cannot load)."
        )
    return importlib.metadata.version("torchcodec")


def choose_video_decoder(video_decoder: str) -> tuple[str, str]:
    """The decoder that will run for ``video_decoder`` (``auto``: torchcodec where it loads) and its version.

    Raises:
        ValueError: ``video_decoder`` is not one of :data:`VIDEO_DECODERS`.
        VideoDecoderError: ``torchcodec`` was asked for and cannot load.
    """
    if video_decoder not in VIDEO_DECODERS:
        raise ValueError(f"TransformersQwen3VLClient: video_decoder must be one of {VIDEO_DECODERS}, got "
                         f"{video_decoder!r}")
    if video_decoder == TORCHCODEC or (video_decoder == AUTO and torchcodec_usable()):
        return TORCHCODEC, require_torchcodec()
    return PYAV, importlib.metadata.version("av")


def _torchcodec_imports() -> bool:
    try:
        import torchcodec
        from torchcodec.decoders import VideoDecoder  # noqa: F401  (fails without FFmpeg before torchcodec 0.16)
    except Exception:  # torchcodec raises RuntimeError or OSError when its libraries do not load
        return False
    return getattr(torchcodec, "ffmpeg_major_version", 0) is not None


def pyav_video(path: str, video_processor: Any) -> tuple[Any, Any]:
    """The frames ``video_processor`` keeps from the video at ``path``, decoded with PyAV, and their metadata.

    What transformers' path route with torchcodec gives the processor (module docstring, "Video decoder"): the
    returned ``VideoMetadata`` has ``frames_indices`` set, for ``do_sample_frames=False``.

    Raises:
        ValueError: The file is not a video, has no video frames, or a kept frame does not decode.
    """
    import av
    import numpy as np
    from av.video.reformatter import VideoReformatter
    from transformers.video_utils import VideoMetadata

    from helm_roboreward.media.decoding import decode_frames

    try:
        probe, duration = scan_like_torchcodec(path)
        metadata = VideoMetadata(total_num_frames=probe.num_frames, fps=probe.native_fps or None, width=probe.width,
                                 height=probe.height, duration=duration, video_backend=PYAV)
        if getattr(video_processor, "do_sample_frames", False):  # the arguments its preprocessing passes
            chosen = video_processor.sample_frames(metadata, num_frames=getattr(video_processor, "num_frames", None),
                                                   fps=getattr(video_processor, "fps", None))
            indices = [int(index) for index in chosen]
        else:
            indices = list(range(probe.num_frames))
        reformatter = VideoReformatter()  # one per video: a swscale context is not shared between threads
        frames = {index: _rgb(frame, reformatter) for index, frame in decode_frames(path, indices, probe)}
    except av.FFmpegError as error:
        raise ValueError(f"{path}: PyAV cannot read it as a video ({error})") from None
    missing = sorted(set(indices) - set(frames))
    if missing:
        raise ValueError(f"{path}: frame {missing[0]} of the {probe.num_frames} frames its packets announce does not "
                         f"decode ({len(missing)} kept frames missing; torchcodec fails on such a file too)")
    video = np.stack([frames[index] for index in indices])
    metadata.frames_indices = indices
    metadata.height, metadata.width = int(video.shape[1]), int(video.shape[2])  # after rotation, as torchcodec's
    return video, metadata


def scan_like_torchcodec(path: str) -> tuple[Any, float | None]:
    """One demux pass (no decoding) counting as torchcodec's exact seek mode does: the probe and the duration (s).

    ``probe.num_frames``, ``probe.native_fps`` and the duration equal torchcodec's ``num_frames``, ``average_fps``
    and ``duration_seconds`` bit for bit (the frame timestamps in the prompt are rounded from them).

    Raises:
        ValueError: No video stream, or no frames in it.
        av.FFmpegError: The file cannot be read as a container.
    """
    import av

    from helm_roboreward.media.decoding import VideoProbe

    with av.open(path) as container:
        if not container.streams.video:
            raise ValueError(f"{path}: no video stream")
        stream = container.streams.video[0]
        entries: list[tuple[int, bool]] = []
        begin, end = None, None
        for packet in container.demux(stream):
            if packet.size == 0 or packet.is_discard:  # PyAV's flush packet; packets an edit list cuts away
                continue
            stamp = packet.pts if packet.pts is not None else packet.dts
            stamp = len(entries) if stamp is None else stamp
            entries.append((stamp, bool(packet.is_keyframe)))
            begin = stamp if begin is None else min(begin, stamp)
            end = stamp + (packet.duration or 0) if end is None else max(end, stamp + (packet.duration or 0))
        if not entries or begin is None or end is None:
            raise ValueError(f"{path}: the video stream has no frames")
        header_fps = float(stream.average_rate) if stream.average_rate else 0.0
        duration = None
        if stream.time_base:  # in torchcodec's doubles, bit for bit: seconds = pts * num / den, fps = n / duration
            num, den = stream.time_base.numerator, stream.time_base.denominator
            duration = float(end) * num / den - float(begin) * num / den
        entries.sort(key=lambda entry: entry[0])
        probe = VideoProbe(
            num_frames=len(entries), native_fps=len(entries) / duration if duration else header_fps,
            width=stream.codec_context.width, height=stream.codec_context.height, codec=stream.codec_context.name,
            keyframes=tuple(index for index, (_, key) in enumerate(entries) if key) or (0,),
            timestamps=tuple(stamp for stamp, _ in entries))
        return probe, duration


def _rgb(frame: Any, reformatter: Any) -> Any:
    """One frame as an RGB ``uint8`` array (height, width, 3), turned upright as its display matrix asks."""
    import numpy as np

    rgb = reformatter.reformat(frame, format="rgb24").to_ndarray()
    quarter_turns = round((getattr(frame, "rotation", 0) or 0) / 90) % 4  # counter-clockwise, as media.decoding
    return np.ascontiguousarray(np.rot90(rgb, quarter_turns)) if quarter_turns else rgb


def decode_videos_with_pyav(messages: list[dict[str, Any]], video_processor: Any) -> tuple[list[dict[str, Any]],
                                                                                           list[Any]]:
    """The messages with each video path replaced by its kept frames (:func:`pyav_video`), and their metadata."""
    content: list[dict[str, Any]] = []
    metadata: list[Any] = []
    for part in messages[0]["content"]:
        if part["type"] == "video":
            frames, video_metadata = pyav_video(part["video"], video_processor)
            part = {"type": "video", "video": frames}
            metadata.append(video_metadata)
        content.append(part)
    return [{**messages[0], "content": content}], metadata
