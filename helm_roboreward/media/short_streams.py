"""Streams that end before their last packet: a damaged tail, or a header that counts one frame too many.

A sequential reader stops where decoding stops, so the frames that decode are counted and the selection is made
again for that count, as a full read would make it (docs/media.md, "Streams that end early").
"""

import av

from helm_roboreward.media.decoding import VideoProbe, write_selected
from helm_roboreward.protocol import FrameOptions, select_frame_indices


def count_decodable_frames(video_path: str) -> int:
    """How many frames a sequential read decodes (a damaged packet ends it, as it ends any sequential reader)."""
    count = 0
    with av.open(video_path) as container:
        try:
            for _ in container.decode(container.streams.video[0]):
                count += 1
        except av.FFmpegError:
            pass
    return count


def reselect(video_path: str, container: "av.container.InputContainer", directory: str, probe: VideoProbe,
             written: list[tuple[int, str, str]], options: FrameOptions) -> tuple[list[tuple[int, str, str]], int]:
    """The stored frames and the decodable frame count after a pass that missed wanted frames."""
    num_frames = count_decodable_frames(video_path)
    if num_frames < probe.num_frames:
        corrected = select_frame_indices(num_frames, probe.native_fps, options)
        if corrected != [index for index, _, _ in written]:
            written = write_selected(container, directory, probe, corrected, options)
    return written, num_frames
