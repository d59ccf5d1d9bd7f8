"""Cutting episodes out of their LeRobot videos: frame-exact, H.264 yuv420p, at the episode's fps.

Reference: the source file decoded from its first frame with plain sequential PyAV decoding (no seek, no code of
the package), keeping the frames whose time lies in the episode's ``[from, to)`` (half a frame of slack). Each
imported episode must have exactly ``length`` frames, the same frame numbers (drawn in the pixels) as those, and a
PSNR of at least :data:`MIN_PSNR_DB` to each of them. Why 40 dB: re-encoding decoded frames with x264 at crf 18
measured about 50 dB on these frames, while the neighbouring frame (a cut one frame off) measured at most 15 dB,
so the threshold separates "the same frame, re-encoded" from "another frame" with a wide margin either side.
"""

import os
from pathlib import Path

import av
import pytest

from helm_roboreward.robot_data.episode_clips import ClipTarget, EpisodeVideoError, cut_episode
from helm_roboreward.robot_data.lerobot_episodes import read_episodes
from helm_roboreward.robot_data.lerobot_format import Episode, choose_camera, read_info
from tests.helpers.lerobot_datasets import (
    EpisodeSpec,
    default_episodes,
    psnr,
    reference_frames,
    write_v2,
    write_v3,
)
from tests.helpers.videos import decode_all, frame_numbers

MIN_PSNR_DB = 40.0


def stream_facts(path: Path) -> tuple[str, str, float, int]:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return stream.codec_context.name, stream.codec_context.pix_fmt or "", float(stream.average_rate or 0), sum(
            1 for _ in container.decode(stream))


@pytest.mark.parametrize("layout, codec", [("v3.0", "libsvtav1"), ("v3.0", "libx264"), ("v2.1", "libx264"),
                                           ("v2.1", "libsvtav1")])
def test_every_episode_is_cut_frame_exactly(tmp_path: Path, layout: str, codec: str) -> None:
    specs = default_episodes(5)
    root = (write_v3 if layout == "v3.0" else write_v2)(tmp_path / "ds", specs, codec=codec)
    info = read_info(str(root))
    camera = choose_camera(info, None)
    for episode in read_episodes(info, camera):
        source = os.path.join(info.root, episode.video_file)
        target = tmp_path / f"episode_{episode.index}.mp4"
        cut = cut_episode(source, episode, camera.fps, [ClipTarget(str(target), episode.length)])
        assert cut.frames == episode.length
        assert stream_facts(target) == ("h264", "yuv420p", 10.0, episode.length)
        reference = reference_frames(source, episode.from_timestamp, episode.to_timestamp, camera.fps)
        imported = decode_all(target)
        expected = list(range(episode.first_frame_index, episode.first_frame_index + episode.length))
        assert len(reference) == len(imported) == episode.length
        assert frame_numbers(reference) == frame_numbers(imported) == expected
        assert min(psnr(a, b) for a, b in zip(reference, imported, strict=True)) >= MIN_PSNR_DB
        if len(imported) > 1:  # the threshold tells frames apart: a one-frame shift is far below it
            assert max(psnr(a, b) for a, b in zip(reference[1:], imported[:-1], strict=True)) < MIN_PSNR_DB / 2


def test_prefix_clips_come_from_one_decode_and_hold_the_first_frames(tmp_path: Path) -> None:
    root = write_v3(tmp_path / "ds", [EpisodeSpec(7), EpisodeSpec(9)], episodes_per_file=2)
    info = read_info(str(root))
    camera = choose_camera(info, None)
    episode = read_episodes(info, camera)[1]
    targets = [ClipTarget(str(tmp_path / f"upto_{end}.mp4"), end) for end in (3, 6, 9)]
    cut_episode(os.path.join(info.root, episode.video_file), episode, camera.fps, targets)
    for target in targets:
        assert frame_numbers(decode_all(target.path)) == list(range(7, 7 + target.end_frame))


def test_odd_frame_sizes_are_padded_to_even(tmp_path: Path) -> None:
    root = write_v2(tmp_path / "ds", [EpisodeSpec(5)], width=66, height=50)
    info = read_info(str(root))
    camera = choose_camera(info, None)
    (episode,) = read_episodes(info, camera)
    source = tmp_path / "odd.mp4"
    with av.open(os.path.join(info.root, episode.video_file)) as inp, av.open(str(source), "w") as out:
        stream = out.add_stream("libx264rgb", rate=10)
        stream.width, stream.height, stream.pix_fmt = 65, 49, "rgb24"
        for number, frame in enumerate(inp.decode(inp.streams.video[0])):
            cropped = av.VideoFrame.from_ndarray(frame.to_ndarray(format="rgb24")[:49, :65], format="rgb24")
            cropped.pts = number
            for packet in stream.encode(cropped):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    cut = cut_episode(str(source), episode, camera.fps, [ClipTarget(str(tmp_path / "even.mp4"), 5)])
    assert (cut.width, cut.height) == (66, 50)
    assert frame_numbers(decode_all(tmp_path / "even.mp4")) == [0, 1, 2, 3, 4]


def test_timestamps_beyond_the_video_name_the_episode_and_leave_no_file(tmp_path: Path) -> None:
    root = write_v3(tmp_path / "ds", [EpisodeSpec(6), EpisodeSpec(6)], episodes_per_file=2)
    info = read_info(str(root))
    camera = choose_camera(info, None)
    episode = read_episodes(info, camera)[1]
    late = Episode(**{**episode.__dict__, "from_timestamp": 0.9, "to_timestamp": 1.5})
    target = tmp_path / "late.mp4"
    with pytest.raises(EpisodeVideoError, match=r"file-000.mp4, episode 1: timestamps 0.9..1.5 s lie beyond the end "
                                                r"of the video \(it ends at 1.200 s, with 3 of the episode's 6 "
                                                r"frames\)"):
        cut_episode(os.path.join(info.root, episode.video_file), late, camera.fps, [ClipTarget(str(target), 6)])
    assert not target.exists()


def test_more_frames_than_the_length_mean_another_frame_rate(tmp_path: Path) -> None:
    root = write_v2(tmp_path / "ds", [EpisodeSpec(10)])
    info = read_info(str(root))
    camera = choose_camera(info, None)
    (episode,) = read_episodes(info, camera)
    short = Episode(**{**episode.__dict__, "length": 5})
    with pytest.raises(EpisodeVideoError, match="more than 5 frames lie within 0..1 s.*frame rate differs"):
        cut_episode(os.path.join(info.root, episode.video_file), short, camera.fps,
                    [ClipTarget(str(tmp_path / "x.mp4"), 5)])
    assert not (tmp_path / "x.mp4").exists()


def test_an_undecodable_video_names_file_and_episode(tmp_path: Path) -> None:
    root = write_v2(tmp_path / "ds", [EpisodeSpec(6)])
    info = read_info(str(root))
    camera = choose_camera(info, None)
    (episode,) = read_episodes(info, camera)
    path = Path(info.root) / episode.video_file
    path.write_bytes(b"not a video" * 50)
    with pytest.raises(EpisodeVideoError, match="episode_000000.mp4, episode 0: the video cannot be decoded"):
        cut_episode(str(path), episode, camera.fps, [ClipTarget(str(tmp_path / "x.mp4"), 6)])
