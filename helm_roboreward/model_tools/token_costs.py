"""Input tokens of images and videos by each provider's documented formula (``roboreward estimate``). Pure.

Every formula is an estimate of what the provider bills, from its documentation as read for this package:

- OpenAI, high detail (:func:`openai_image_tokens`): scale to fit 2048 x 2048, then so the shortest side is at
  most 768 px, then 170 tokens per 512-px tile plus 85
  (https://platform.openai.com/docs/guides/images-vision, "Calculating costs"; a 1024 x 1024 image costs 765, a
  2048 x 4096 one 1105). Images are only scaled down. OpenAI documents other schemes for some models (32-px
  patches times a per-model multiplier, e.g. GPT-5 mini / nano, GPT-4.1 mini); those are not modelled here.
- Claude (:func:`claude_image_tokens`): ``width * height / 750`` after scaling down to at most 1568 px on the long
  edge and about 1,600 tokens (https://platform.claude.com/docs/en/build-with-claude/vision; 1092 x 1092 is
  about 1,590 tokens).
- Gemini (:func:`gemini_image_tokens`, :func:`gemini_video_tokens`): 258 tokens per image when both sides are at
  most 384 px, else 258 per 768 x 768 tile; video 263 tokens per second (1 frame per second), audio 32 per second
  (https://ai.google.dev/gemini-api/docs/tokens). Gemini 3 models bill media by their ``media_resolution``
  setting instead (https://ai.google.dev/gemini-api/docs/media-resolution); the 2.x rates are used for them too.
- Qwen3-VL and RoboReward (:func:`qwen3vl_video_tokens`): transformers' ``Qwen3VLVideoProcessor`` (5.x defaults:
  2 fps, 4..768 frames, patch 16, merge 2, temporal patch 2, ``smart_resize`` with a pixel budget per clip of
  32*32*768 and at least 128*32*32; ``transformers/models/qwen3_vl/video_processing_qwen3_vl.py``), plus per
  temporal group the vision start/end tokens and an approximate ``<t seconds>`` timestamp.
- Prompt text (:func:`text_tokens`): characters / 4, rounded up (an approximation; each provider's tokenizer
  differs).
"""

import math

OPENAI_BASE_TOKENS = 85
OPENAI_TILE_TOKENS = 170
OPENAI_FIT = 2048
OPENAI_SHORT_SIDE = 768
OPENAI_TILE = 512

CLAUDE_PIXELS_PER_TOKEN = 750
CLAUDE_MAX_EDGE = 1568
CLAUDE_MAX_TOKENS = 1600

GEMINI_IMAGE_TOKENS = 258
GEMINI_SMALL_SIDE = 384
GEMINI_TILE = 768
GEMINI_VIDEO_TOKENS_PER_SECOND = 263
GEMINI_AUDIO_TOKENS_PER_SECOND = 32

QWEN3VL_FPS = 2.0
QWEN3VL_MIN_FRAMES = 4
QWEN3VL_MAX_FRAMES = 768
QWEN3VL_PATCH = 16
QWEN3VL_MERGE = 2
QWEN3VL_TEMPORAL_PATCH = 2
QWEN3VL_MIN_PIXELS = 128 * 32 * 32
QWEN3VL_MAX_PIXELS = 32 * 32 * 768
QWEN3VL_GROUP_SPECIAL_TOKENS = 2
"""``<|vision_start|>`` and ``<|vision_end|>`` around each temporal group's video tokens."""
QWEN3VL_TIMESTAMP_TOKENS = 6
"""Approximate tokens of the ``<1.5 seconds>`` text before each temporal group (digits tokenize one by one)."""

CHARACTERS_PER_TOKEN = 4


def _check_size(width: int, height: int) -> None:
    if width <= 0 or height <= 0:
        raise ValueError(f"image size {width}x{height} must be positive")


def openai_image_tokens(width: int, height: int) -> int:
    """OpenAI high-detail tokens of one image (tiles of 512 px after scaling down; see the module docstring)."""
    _check_size(width, height)
    w, h = float(width), float(height)
    fit = min(1.0, OPENAI_FIT / max(w, h))
    w, h = w * fit, h * fit
    short = min(1.0, OPENAI_SHORT_SIDE / min(w, h))
    w, h = w * short, h * short
    tiles = math.ceil(round(w, 6) / OPENAI_TILE) * math.ceil(round(h, 6) / OPENAI_TILE)
    return OPENAI_BASE_TOKENS + OPENAI_TILE_TOKENS * tiles


def claude_image_tokens(width: int, height: int) -> int:
    """Claude tokens of one image: ``w * h / 750`` after scaling down to the documented size limits."""
    _check_size(width, height)
    scale = min(1.0, CLAUDE_MAX_EDGE / max(width, height),
                math.sqrt(CLAUDE_MAX_TOKENS * CLAUDE_PIXELS_PER_TOKEN / (width * height)))
    w, h = math.floor(width * scale), math.floor(height * scale)
    return math.ceil(w * h / CLAUDE_PIXELS_PER_TOKEN)


def gemini_image_tokens(width: int, height: int) -> int:
    """Gemini tokens of one image: 258 up to 384 px per side, else 258 per 768 x 768 tile."""
    _check_size(width, height)
    if width <= GEMINI_SMALL_SIDE and height <= GEMINI_SMALL_SIDE:
        return GEMINI_IMAGE_TOKENS
    return GEMINI_IMAGE_TOKENS * math.ceil(width / GEMINI_TILE) * math.ceil(height / GEMINI_TILE)


def gemini_video_tokens(duration_seconds: float, has_audio: bool = False) -> int:
    """Gemini tokens of a native video: 263 per second (frames at 1 fps), plus 32 per second of audio."""
    if duration_seconds < 0 or not math.isfinite(duration_seconds):
        raise ValueError(f"video duration {duration_seconds!r} must be a finite number of seconds >= 0")
    tokens = math.ceil(duration_seconds * GEMINI_VIDEO_TOKENS_PER_SECOND)
    return tokens + (math.ceil(duration_seconds * GEMINI_AUDIO_TOKENS_PER_SECOND) if has_audio else 0)


def qwen3vl_sampled_frames(total_frames: int, native_fps: float) -> int:
    """Frames the Qwen3-VL video processor samples: ``int(frames / fps * 2)`` clamped to 4..768 and the clip."""
    if total_frames <= 0:
        raise ValueError(f"a video needs frames, got {total_frames}")
    fps = native_fps if native_fps > 0 and math.isfinite(native_fps) else 24.0  # transformers' default
    wanted = int(total_frames / fps * QWEN3VL_FPS)
    return min(max(wanted, QWEN3VL_MIN_FRAMES), QWEN3VL_MAX_FRAMES, total_frames)


def qwen3vl_smart_resize(num_frames: int, height: int, width: int) -> tuple[int, int]:
    """The Qwen3-VL video processor's ``smart_resize``: sides multiple of 32 within the clip's pixel budget."""
    _check_size(width, height)
    factor = QWEN3VL_PATCH * QWEN3VL_MERGE
    if height < factor or width < factor:
        scale = max(factor / height, factor / width)
        height, width = int(height * scale), int(width * scale)
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    t_bar = round(num_frames / QWEN3VL_TEMPORAL_PATCH) * QWEN3VL_TEMPORAL_PATCH
    if t_bar * h_bar * w_bar > QWEN3VL_MAX_PIXELS:
        beta = math.sqrt(num_frames * height * width / QWEN3VL_MAX_PIXELS)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif t_bar * h_bar * w_bar < QWEN3VL_MIN_PIXELS:
        beta = math.sqrt(QWEN3VL_MIN_PIXELS / (num_frames * height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def qwen3vl_video_grid(total_frames: int, native_fps: float, height: int, width: int) -> tuple[int, int, int]:
    """``video_grid_thw`` the processor gives: (temporal groups, patch rows, patch columns)."""
    frames = max(qwen3vl_sampled_frames(total_frames, native_fps), QWEN3VL_TEMPORAL_PATCH)
    h_bar, w_bar = qwen3vl_smart_resize(frames, height, width)
    groups = math.ceil(frames / QWEN3VL_TEMPORAL_PATCH)
    return groups, h_bar // QWEN3VL_PATCH, w_bar // QWEN3VL_PATCH


def qwen3vl_video_tokens(total_frames: int, native_fps: float, height: int, width: int) -> int:
    """Prompt tokens of one video for Qwen3-VL / RoboReward: video tokens plus per-group markers and timestamps."""
    groups, rows, columns = qwen3vl_video_grid(total_frames, native_fps, height, width)
    per_group = rows * columns // (QWEN3VL_MERGE * QWEN3VL_MERGE)
    return groups * (per_group + QWEN3VL_GROUP_SPECIAL_TOKENS + QWEN3VL_TIMESTAMP_TOKENS)


def text_tokens(text: str) -> int:
    """Approximate text tokens: characters / 4, rounded up."""
    return math.ceil(len(text) / CHARACTERS_PER_TOKEN)


DEFAULT_OUTPUT_TOKENS = 200
"""Assumed output tokens per request of a non-reasoning model ("ANSWER: n" plus a short rationale)."""
DEFAULT_REASONING_OUTPUT_TOKENS = 2000
"""Assumed output tokens per request of a reasoning model (OpenAI, Gemini: reasoning is billed as output)."""
