"""The providers' documented image and video token formulas, against the documents' own examples, and the
Qwen3-VL formula against transformers' real video processor."""

import math

import numpy as np
import pytest

from helm_roboreward.model_tools import token_costs
from helm_roboreward.model_tools.token_costs import (
    claude_image_tokens,
    gemini_image_tokens,
    gemini_video_tokens,
    openai_image_tokens,
    qwen3vl_sampled_frames,
    qwen3vl_video_grid,
    qwen3vl_video_tokens,
    text_tokens,
)


@pytest.mark.parametrize("width, height, tokens", [
    (1024, 1024, 765),  # OpenAI's example: scaled to 768 x 768, 4 tiles
    (2048, 4096, 1105),  # OpenAI's example: 1024 x 2048, then 768 x 1536, 6 tiles
    (640, 480, 425),  # FINDINGS.md: ~425 for a 640 x 480 frame (2 tiles, never scaled up)
    (512, 512, 255),
    (4096, 8192, 1105),
    (224, 224, 255),
])
def test_openai_high_detail(width: int, height: int, tokens: int) -> None:
    assert openai_image_tokens(width, height) == tokens


@pytest.mark.parametrize("width, height, tokens", [
    (640, 480, 410),  # FINDINGS.md: ~410
    (1092, 1092, 1590),  # Anthropic's table: ~1590 for the largest 1:1 image that is not resized
    (200, 200, 54),
])
def test_claude(width: int, height: int, tokens: int) -> None:
    assert claude_image_tokens(width, height) == tokens


def test_claude_scales_large_images_down_to_about_1600_tokens() -> None:
    assert 1500 < claude_image_tokens(4000, 3000) <= 1600
    assert claude_image_tokens(3000, 100) == math.ceil(1568 * math.floor(100 * 1568 / 3000) / 750)


@pytest.mark.parametrize("width, height, tokens", [
    (384, 384, 258), (224, 224, 258), (640, 480, 258), (1024, 768, 516), (1536, 1536, 1032),
])
def test_gemini_images(width: int, height: int, tokens: int) -> None:
    assert gemini_image_tokens(width, height) == tokens


def test_gemini_video_is_263_per_second_plus_32_of_audio() -> None:
    assert gemini_video_tokens(10) == 2630
    assert gemini_video_tokens(10, has_audio=True) == 2630 + 320
    assert gemini_video_tokens(7.5) == math.ceil(7.5 * 263)
    with pytest.raises(ValueError, match="finite number of seconds"):
        gemini_video_tokens(float("nan"))


@pytest.mark.parametrize("formula", [openai_image_tokens, claude_image_tokens, gemini_image_tokens])
def test_sizes_must_be_positive(formula: object) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        formula(0, 10)  # type: ignore[operator]


def test_qwen3vl_frame_sampling() -> None:
    assert qwen3vl_sampled_frames(75, 10.0) == 15  # 7.5 s at 2 fps
    assert qwen3vl_sampled_frames(10, 10.0) == 4  # at least 4
    assert qwen3vl_sampled_frames(3, 10.0) == 3  # never more than the clip
    assert qwen3vl_sampled_frames(100_000, 30.0) == 768
    assert qwen3vl_sampled_frames(48, 0.0) == 4  # no frame rate: transformers assumes 24


def test_qwen3vl_tokens_per_group() -> None:
    groups, rows, columns = qwen3vl_video_grid(75, 10.0, 224, 224)
    assert (groups, rows, columns) == (8, 14, 14)
    assert qwen3vl_video_tokens(75, 10.0, 224, 224) == 8 * (14 * 14 // 4 + 2 + token_costs.QWEN3VL_TIMESTAMP_TOKENS)


@pytest.mark.parametrize("frames, fps, height, width", [
    (75, 10.0, 224, 224), (55, 10.0, 224, 224), (300, 30.0, 480, 640), (40, 15.0, 720, 1280), (5, 10.0, 100, 200),
    (900, 30.0, 480, 640), (61, 15.0, 256, 320),
])
def test_qwen3vl_grid_is_the_real_processors(frames: int, fps: float, height: int, width: int) -> None:
    pytest.importorskip("torch")
    video_processing = pytest.importorskip("transformers.models.qwen3_vl.video_processing_qwen3_vl")
    from transformers.video_utils import VideoMetadata

    processor = video_processing.Qwen3VLVideoProcessor()
    video = np.zeros((frames, height, width, 3), dtype=np.uint8)
    metadata = VideoMetadata(total_num_frames=frames, fps=fps, width=width, height=height, duration=frames / fps,
                             frames_indices=list(range(frames)))
    out = processor(videos=[video], video_metadata=[metadata], return_tensors="pt", cap_pixels_per_frame=False)
    assert tuple(out["video_grid_thw"].tolist()[0]) == qwen3vl_video_grid(frames, fps, height, width)


def test_text_is_characters_over_four() -> None:
    assert [text_tokens(text) for text in ("", "abc", "abcd", "abcde")] == [0, 1, 1, 2]
