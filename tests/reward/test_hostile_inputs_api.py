"""Hostile inputs to the reward API (issue 36): decoded-size budgets, what may pass as an mp4, text that is not
text, numpy numbers, per-item failures in ``score_many``, and what building a model says while it loads."""

import hashlib
import io
import struct
import zlib
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image, PngImagePlugin

from helm_roboreward.protocol.video_decoding import MediaWriteError
from helm_roboreward.reward import Frames, RewardInputError, RewardModel, inputs
from tests.helpers.fakes import CHAT, FakeModelServer, media_parts
from tests.helpers.reward import RR8B
from tests.helpers.sample import SAMPLE, sample_rows

ROW = sample_rows()[0]
VIDEO = SAMPLE / ROW["file_name"]
LABEL = "LABEL=5 success episode_0042.mp4"
LONE_SURROGATE = b"open the dr\xffawer".decode("utf-8", errors="surrogateescape")


@pytest.fixture(scope="module")
def native(reward_local_path: Path) -> RewardModel:
    return RewardModel(RR8B, "vllm/roboreward-8b", local_path=str(reward_local_path), cache=False, verbose=False)


def clip(frames: int = 12, height: int = 48, width: int = 64) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, (frames, height, width, 3), dtype=np.uint8)


def one_bit_png(width: int, height: int) -> bytes:
    """A one-colour 1-bit greyscale PNG: a few KB that decode to ``width * height`` RGB pixels."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = (b"\x00" + b"\x00" * ((width + 7) // 8)) * height
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 9))
            + chunk(b"IEND", b""))


def labelled_png() -> bytes:
    """A real 64x48 PNG whose tEXt chunk holds a label and a file name."""
    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", LABEL)
    buffer = io.BytesIO()
    Image.fromarray(clip(1)[0]).save(buffer, format="PNG", pnginfo=info)
    return buffer.getvalue()


def sent_video(fake: FakeModelServer) -> bytes:
    (request,) = fake.requests_to(CHAT)
    data = media_parts(request)[1].data
    assert data is not None
    return data


# A1: decoded size is limited, from shapes and image headers, before anything is allocated or decoded.

def test_a_frames_array_over_the_pixel_budget_is_refused_before_it_is_copied(native: RewardModel,
                                                                             fake: FakeModelServer) -> None:
    """A broadcast view costs nothing; copying it (147 TB) would. Before: MemoryError, not an input error."""
    huge = np.broadcast_to(np.zeros((1, 1, 1, 3), np.uint8), (1_000_000, 7000, 7000, 3))
    with pytest.raises(RewardInputError) as raised:
        native.score("t", Frames(huge, 10.0))
    assert raised.value.field == "video" and "pixels" in raised.value.message
    assert fake.requests == []


def test_frames_over_the_per_frame_limit_are_refused(native: RewardModel) -> None:
    big = np.broadcast_to(np.zeros((1, 1, 3), np.uint8), (7000, 7000, 3))
    with pytest.raises(RewardInputError, match=r"video: frames of 7000x7000 pixels are too large"):
        native.score("t", [big, big], fps=10)
    long = np.broadcast_to(np.zeros((1, 1, 1, 3), np.uint8), (inputs.MAX_FRAMES + 1, 16, 16, 3))
    with pytest.raises(RewardInputError, match=r"video: has 10,001 frames"):
        native.score("t", long, fps=10)


def test_frame_shapes_are_checked_with_python_integers() -> None:
    """A6: ``[2**32, 2**32, 1, 3]`` overflows int64 (its product wraps to 0); checked before any allocation."""
    with pytest.raises(RewardInputError) as raised:
        inputs.check_frame_shape([2**32, 2**32, 1, 3], "video.shape")
    assert raised.value.field == "video.shape" and "frames" in raised.value.message
    for shape in ([1, 7000, 7000, 3], [500, 720, 1280, 3], [2, 32, 32, 4], [2, 32, 32], [True, 32, 32, 3],
                  "1,32,32,3", [-1, 32, 32, 3]):
        with pytest.raises(RewardInputError):
            inputs.check_frame_shape(shape, "video.shape")
    assert inputs.check_frame_shape([401, 288, 512, 3], "video.shape") == (401, 288, 512, 3)  # robo_arena's longest


def test_images_over_the_budget_are_refused_from_their_headers() -> None:
    """The issue's two 7000x7000 one-colour PNGs (a few KB each) are refused before decoding, naming the image."""
    bomb = one_bit_png(7000, 7000)
    assert len(bomb) < 100_000
    with pytest.raises(RewardInputError) as raised:
        inputs.decode_images([bomb, bomb], 10)
    assert raised.value.field == "video.images_base64[0]" and "7000x7000" in raised.value.message
    with pytest.raises(RewardInputError, match=r"images_base64\[0\]: declares more pixels than PIL decodes"):
        inputs.decode_images([one_bit_png(20_000, 20_000)], 10)  # over PIL's own decompression-bomb limit
    uhd = one_bit_png(3840, 2160)  # within the per-frame limit; 17 of them are not within the per-video one
    with pytest.raises(RewardInputError) as raised:
        inputs.decode_images([uhd] * 17, 10)
    assert raised.value.field == "video.images_base64[16]" and "per video" in raised.value.message


def test_images_decode_to_frames_and_bad_ones_are_named() -> None:
    frames = clip(3)
    pngs = []
    for frame in frames:
        buffer = io.BytesIO()
        Image.fromarray(frame).save(buffer, format="PNG")
        pngs.append(buffer.getvalue())
    decoded = inputs.decode_images(pngs, np.float32(10))
    assert np.array_equal(decoded.array, frames) and decoded.fps == 10.0
    gif = io.BytesIO()
    Image.fromarray(frames[0]).save(gif, format="GIF")
    for bad, words in ((pngs[1][:60], "cannot be decoded"), (gif.getvalue(), "PNG, JPEG or WebP"),
                       (b"not an image", "PNG, JPEG or WebP")):
        with pytest.raises(RewardInputError) as raised:
            inputs.decode_images([pngs[0], bad], 10)
        assert raised.value.field == "video.images_base64[1]" and words in raised.value.message
    small = io.BytesIO()
    Image.fromarray(clip(1, 32, 32)[0]).save(small, format="PNG")
    with pytest.raises(RewardInputError, match=r"video.images_base64\[1\]: .*mixed"):
        inputs.decode_images([pngs[0], small.getvalue()], 10)


# A2: what reaches a model as an mp4 is an mp4 (verified, or remuxed by this package), or a refusal.

def test_a_png_is_not_mp4_bytes(native: RewardModel, fake: FakeModelServer, tmp_path: Path) -> None:
    """Before: the PNG was scored and its bytes, label text included, sent to the model as video/mp4."""
    png = labelled_png()
    with pytest.raises(RewardInputError) as raised:
        native.score(ROW["task"], png)
    assert raised.value.field == "video" and "not an mp4" in raised.value.message and "PNG" in raised.value.message
    as_file = tmp_path / "episode.mp4"
    as_file.write_bytes(png)
    with pytest.raises(RewardInputError, match=r"video: .*episode.mp4 .*not an mp4"):
        native.score(ROW["task"], str(as_file))
    assert fake.requests == [], "nothing is sent"
    name = hashlib.sha256(png).hexdigest()[:32] + ".mp4"
    assert not (Path(native.media_dir) / "inputs" / name[:2] / name).exists(), "nor stored"


def encoded(container_format: str, codec: str, pixel_format: str) -> bytes:
    buffer = io.BytesIO()
    with av.open(buffer, "w", format=container_format) as container:
        stream = container.add_stream(codec, rate=10)
        stream.width, stream.height, stream.pix_fmt = 64, 48, pixel_format
        for image in clip():
            container.mux(stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")))
        container.mux(stream.encode())
    return buffer.getvalue()


def test_other_containers_and_image_codecs_are_refused(native: RewardModel, fake: FakeModelServer) -> None:
    with pytest.raises(RewardInputError, match=r"video: .*not an mp4 \(.*Matroska"):
        native.score(ROW["task"], encoded("matroska", "libx264", "yuv420p"))
    with pytest.raises(RewardInputError, match=r"video: the video given holds png video"):
        native.score(ROW["task"], encoded("mp4", "png", "rgb24"))  # PNG frames: their text chunks survive a remux
    assert fake.requests == []


def test_bytes_hidden_in_an_mp4_do_not_reach_the_model(native: RewardModel, fake: FakeModelServer) -> None:
    """Text inside ``mdat`` that no sample uses is invisible to the box and tag checks: the mp4 is remuxed."""
    data = VIDEO.read_bytes()
    position = data.index(b"mdat") - 4
    size = struct.unpack(">I", data[position:position + 4])[0]
    end = position + size
    hidden = LABEL.encode()
    # A moov after mdat moves, and its chunk offsets still point at the same samples.
    padded = data[:position] + struct.pack(">I", size + len(hidden)) + data[position + 4:end] + hidden + data[end:]
    native.score(ROW["task"], padded)
    sent = sent_video(fake)
    assert hidden not in sent and b"LABEL" not in sent
    with av.open(io.BytesIO(sent)) as container:
        assert sum(1 for _ in container.decode(video=0)) > 0
    again = native.request_for(ROW["task"], padded)
    assert again == native.request_for(ROW["task"], padded), "content-addressed: the same input, the same request"


def test_a_clean_mp4_is_sent_as_it_is(native: RewardModel, fake: FakeModelServer) -> None:
    native.score(ROW["task"], VIDEO.read_bytes())
    assert sent_video(fake) == VIDEO.read_bytes(), "a verified mp4 keeps helm-run's request bytes"


# A5: a task that is not valid text.

def test_a_task_that_is_not_valid_text_is_an_input_error(native: RewardModel, fake: FakeModelServer) -> None:
    """Before: a bare UnicodeEncodeError from ``score``; in ``score_many`` every item's result was lost."""
    with pytest.raises(RewardInputError) as raised:
        native.score(LONE_SURROGATE, str(VIDEO))
    assert raised.value.field == "task" and "surrogate" in raised.value.message
    with pytest.raises(RewardInputError) as raised:
        native.score_many([("ok", str(VIDEO)), (LONE_SURROGATE, str(VIDEO)), ("fine", str(VIDEO))])
    assert raised.value.field == "items[1].task"
    assert fake.requests == [], "every item is checked before anything is sent"
    with pytest.raises(RewardInputError, match="task: is empty"):
        native.score("\u200b\u200b", str(VIDEO))


def test_score_many_keeps_the_others_when_one_item_fails_unexpectedly(native: RewardModel,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """An error no input check foresaw (here: the media folder cannot take one video) fails that item only."""
    prepare = native._prepare

    def full_for_frames(path: str, *args: object) -> object:
        if "frames-" in path:
            raise MediaWriteError("media folder is full")
        return prepare(path, *args)

    monkeypatch.setattr(native, "_prepare", full_for_frames)
    seen: list[int] = []
    rewards = native.score_many([("ok", str(VIDEO)), ("t", clip(), 10), ("fine", str(VIDEO))],
                                on_result=lambda index, reward: seen.append(index))
    assert [r.score for r in rewards] == [3.0, None, 3.0] and sorted(seen) == [0, 1, 2]
    assert rewards[1].failed and "MediaWriteError: media folder is full" in (rewards[1].error or "")


# A8: numpy numbers are numbers.

def test_numpy_numbers_are_numbers(native: RewardModel, reward_local_path: Path) -> None:
    """Before: fps=np.float32(10) was refused ("must be a number of frames per second, got float32")."""
    for fps in (np.float32(10), np.int64(10), np.float64(10), Fraction(10)):
        assert native.score("t", clip(), fps=fps).score == 3.0
    assert native.score("t", Frames(clip(), np.int64(10))).score == 3.0
    for bad in (True, np.True_, "10", None):
        with pytest.raises(RewardInputError, match="fps"):
            native.score("t", clip(), fps=bad)
    rewards = native.score_many([("t", clip(), np.float32(10))], max_workers=np.int64(2))
    assert rewards[0].score == 3.0
    with pytest.raises(RewardInputError, match="max_workers"):
        native.score_many([], max_workers=np.True_)
    model = RewardModel(RR8B, "vllm/roboreward-8b", local_path=str(reward_local_path), cache=False, verbose=False,
                        options={"video": "frames", "max_frames": np.int64(2), "last_frame": np.True_})
    assert model.settings["frame_options"]["max_frames"] == 2 and model.settings["frame_options"]["include_last_frame"]


# B3: building a model says what it is doing.

def test_building_a_model_says_what_it_loads(reward_local_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    RewardModel(RR8B, "vllm/roboreward-8b", local_path=str(reward_local_path), cache=False)
    lines = capsys.readouterr().err.splitlines()
    steps = [line for line in lines if line.startswith("RewardModel: ")]
    assert len(steps) >= 3, lines
    assert "registries" in steps[0] and "ready" in steps[-1] and " s" in steps[-1]
    RewardModel(RR8B, "vllm/roboreward-8b", local_path=str(reward_local_path), cache=False, verbose=False)
    assert "RewardModel:" not in capsys.readouterr().err
