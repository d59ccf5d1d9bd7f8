"""The PyAV route to the Qwen3-VL processor: the frames and metadata transformers' torchcodec route would give it.

Used when PyAV decodes (docs/clients.md, "Video decoder"); tests/helm_frontend/clients/test_video_decoders.py
checks that both routes give identical model inputs.
"""

from typing import Any

from helm_roboreward.protocol.video_decoding import VideoProbe, decode_frames

PYAV = "pyav"  # the decoder's name, as transformers calls it (video_backend)


def decode_videos_with_pyav(messages: list[dict[str, Any]], video_processor: Any,
                            processor_kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages with each video path replaced by its kept frames (:func:`pyav_video`).

    Their metadata go into ``processor_kwargs``, with the processor told not to sample frames again.
    """
    content: list[dict[str, Any]] = []
    metadata: list[Any] = []
    for part in messages[0]["content"]:
        if part["type"] == "video":
            frames, video_metadata = pyav_video(part["video"], video_processor)
            part = {"type": "video", "video": frames}
            metadata.append(video_metadata)
        content.append(part)
    processor_kwargs.update(video_metadata=metadata, do_sample_frames=False)
    return [{**messages[0], "content": content}]


def pyav_video(path: str, video_processor: Any) -> tuple[Any, Any]:
    """The frames ``video_processor`` keeps from the video at ``path``, decoded with PyAV, and their metadata.

    The ``VideoMetadata`` has ``frames_indices`` set, for ``do_sample_frames=False``.

    Raises:
        ValueError: The file is not a video, has no video frames, or a kept frame does not decode.
    """
    import av
    import numpy as np
    from av.video.reformatter import VideoReformatter
    from transformers.video_utils import VideoMetadata


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
    """One demux pass counting frames, fps and duration (s) as torchcodec's exact seek mode does, bit for bit.

    Raises:
        ValueError: No video stream, or no frames in it.
        av.FFmpegError: The file cannot be read as a container.
    """
    import av


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
