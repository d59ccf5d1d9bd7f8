"""A video read by path, for checks and tools: its demux probe, and selected frames (extraction opens it once)."""

from collections.abc import Iterator, Sequence

import av

from helm_roboreward.media.decoding import VideoError, VideoProbe, decode_container, probe_container


def probe_video(path: str) -> VideoProbe:
    """Demux a video once (no decoding) to count frames and find keyframes; :class:`VideoError` if it cannot."""
    try:
        with av.open(path) as container:
            return probe_container(path, container)
    except av.FFmpegError as error:
        raise VideoError(f"{path}: cannot be read as a video ({error})") from None


def decode_frames(path: str, indices: Sequence[int], probe: VideoProbe) -> Iterator[tuple[int, av.VideoFrame]]:
    """``(index, frame)`` for the wanted presentation-order indices the stream delivers, decoding the least."""
    with av.open(path) as container:
        yield from decode_container(container, indices, probe, rewind=False)
