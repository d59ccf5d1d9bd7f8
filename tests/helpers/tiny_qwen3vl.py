"""A tiny random-weight Qwen3-VL checkpoint folder, built locally for offline tests (nothing is downloaded).

:func:`build_tiny_qwen3vl` saves what ``from_pretrained`` needs for the dense ``qwen3_vl`` model, or the
MoE ``qwen3_vl_moe`` model with tiny experts:

- ``config.json`` + ``model.safetensors``: real transformers model classes with tiny sizes (text: hidden
  64, 2 layers, 4 heads, 2 KV heads, head_dim 16, ``mrope_section`` [2, 3, 3] summing to head_dim / 2;
  vision: depth 2, hidden 32, patch 16, spatial merge 2, temporal patch 2, ``out_hidden_size`` = text
  hidden, deepstack taken after vision block 1), random weights from a fixed torch seed;
- a character-level ``tokenizers`` WordLevel tokenizer: printable ASCII, newline and tab, plus Qwen's
  special tokens, whose ids go into the config (``image_token_id``, ``video_token_id``, ...);
- a small Jinja chat template shaped like Qwen3-VL's: ``<|im_start|>user`` then, in order, the text parts
  and ``<|vision_start|><|video_pad|><|vision_end|>`` (``<|image_pad|>`` for images) for media parts;
- the processor (``Qwen3VLProcessor``), image processor and video processor configs: transformers' real
  Qwen3-VL video defaults for sampling (2 fps, 4..768 frames, patch 16, merge 2, temporal patch 2) but a
  small pixel budget, so a 224x224 clip becomes 64x64 frames;
- ``generation_config.json`` that samples like Qwen3-VL-Instruct: ``do_sample`` true, temperature 0.7,
  top_p 0.8, top_k 20. These are the values in the ``generation_config.json`` of checkpoints derived from
  Qwen/Qwen3-VL-8B-Instruct and the Instruct settings the Qwen3-VL model card recommends; Qwen's own file
  was not read here (the hub is unreachable), so treat them as unverified. Two settings Qwen's file does
  not have make a random model stop: ``min_new_tokens`` (:data:`ANSWER_LENGTH`) forbids ``<|im_end|>``
  before that many tokens and a ``sequence_bias`` on ``<|im_end|>`` makes it win right after, so every
  answer has exactly :data:`ANSWER_LENGTH` tokens and a 5,000-token budget costs a few steps.

The folder is about 1 MB and builds in well under a second on CPU.
"""

import json
import shutil
import string
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import (
    AutoConfig,
    GenerationConfig,
    PreTrainedTokenizerFast,
    Qwen3VLConfig,
    Qwen3VLForConditionalGeneration,
    Qwen3VLMoeConfig,
    Qwen3VLMoeForConditionalGeneration,
    Qwen3VLProcessor,
    Qwen3VLVideoProcessor,
)
from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
END_OF_TEXT = "<|endoftext|>"
VISION_START = "<|vision_start|>"
VISION_END = "<|vision_end|>"
IMAGE_PAD = "<|image_pad|>"
VIDEO_PAD = "<|video_pad|>"
UNKNOWN = "<unk>"
SPECIAL_TOKENS = [END_OF_TEXT, IM_START, IM_END, VISION_START, VISION_END, IMAGE_PAD, VIDEO_PAD, UNKNOWN]

TEXT_HIDDEN = 64
SEED = 1234

GENERATION = {"do_sample": True, "temperature": 0.7, "top_p": 0.8, "top_k": 20}
"""Qwen3-VL-Instruct's sampling settings (see the module docstring for their source)."""

ANSWER_LENGTH = 6
"""Tokens (characters) in every answer of the tiny model, end of turn not counted."""

VIDEO_PIXEL_BUDGET = {"shortest_edge": 32 * 32, "longest_edge": 128 * 32 * 32}
"""Pixels of the whole sampled clip (t x h x w); Qwen3-VL's checkpoints ship 4096 .. 25,165,824."""

IMAGE_PIXEL_BUDGET = {"shortest_edge": 32 * 32, "longest_edge": 16 * 32 * 32}
"""Pixels per image; Qwen3-VL's checkpoints ship 65,536 .. 16,777,216."""

CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['content'] is string %}{{- message['content'] }}"
    "{%- else %}{%- for part in message['content'] %}"
    "{%- if part['type'] == 'image' %}{{- '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{%- elif part['type'] == 'video' %}{{- '<|vision_start|><|video_pad|><|vision_end|>' }}"
    "{%- elif part['type'] == 'text' %}{{- part['text'] }}"
    "{%- endif %}{%- endfor %}{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
"""Qwen3-VL's template reduced to what one user turn needs (no system prompt, tools or thinking)."""


def _vocabulary() -> dict[str, int]:
    characters: list[str] = sorted(set(string.printable) - set("\x0b\x0c\r"))
    vocabulary = {token: index for index, token in enumerate(SPECIAL_TOKENS)}
    for character in characters:
        vocabulary.setdefault(character, len(vocabulary))
    return vocabulary


def _tokenizer(vocabulary: dict[str, int]) -> PreTrainedTokenizerFast:
    backend = Tokenizer(models.WordLevel(vocab=vocabulary, unk_token=UNKNOWN))
    backend.pre_tokenizer = pre_tokenizers.Split(pattern="", behavior="isolated")
    backend.decoder = decoders.Fuse()
    backend.add_special_tokens(SPECIAL_TOKENS)
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token=IM_END,
        pad_token=END_OF_TEXT,
        unk_token=UNKNOWN,
        model_max_length=32768,
    )


def _text_config(vocabulary: dict[str, int], moe: bool) -> dict[str, Any]:
    text: dict[str, Any] = {
        "vocab_size": len(vocabulary),
        "hidden_size": TEXT_HIDDEN,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "max_position_embeddings": 4096,
        "rope_parameters": {"rope_type": "default", "rope_theta": 5_000_000.0, "mrope_section": [2, 3, 3],
                            "mrope_interleaved": True},
        "pad_token_id": vocabulary[END_OF_TEXT],
        "eos_token_id": vocabulary[IM_END],
    }
    if moe:
        text.update({"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "decoder_sparse_step": 1})
    return text


def _vision_config() -> dict[str, Any]:
    return {
        "depth": 2,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_heads": 2,
        "patch_size": 16,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "out_hidden_size": TEXT_HIDDEN,
        "num_position_embeddings": 256,
        "deepstack_visual_indexes": [1],
    }


def build_tiny_qwen3vl(folder: Path, moe: bool = False) -> Path:
    """Save a random-weight Qwen3-VL checkpoint (MoE when ``moe``) with its processor into ``folder``.

    Returns:
        The folder, loadable with ``AutoConfig``/``AutoProcessor``/``Qwen3VL*ForConditionalGeneration``
        ``.from_pretrained``.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocabulary = _vocabulary()
    tokenizer = _tokenizer(vocabulary)
    token_ids: dict[str, Any] = {
        "image_token_id": vocabulary[IMAGE_PAD],
        "video_token_id": vocabulary[VIDEO_PAD],
        "vision_start_token_id": vocabulary[VISION_START],
        "vision_end_token_id": vocabulary[VISION_END],
    }
    text_config, vision_config = _text_config(vocabulary, moe), _vision_config()
    model: Qwen3VLMoeForConditionalGeneration | Qwen3VLForConditionalGeneration
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        if moe:
            model = Qwen3VLMoeForConditionalGeneration(Qwen3VLMoeConfig(
                text_config=text_config, vision_config=vision_config, **token_ids)).eval()
        else:
            model = Qwen3VLForConditionalGeneration(Qwen3VLConfig(
                text_config=text_config, vision_config=vision_config, **token_ids)).eval()
    model.generation_config = GenerationConfig(
        **GENERATION,
        min_new_tokens=ANSWER_LENGTH,
        sequence_bias=[[[vocabulary[IM_END]], 30.0]],
        eos_token_id=[vocabulary[IM_END], vocabulary[END_OF_TEXT]],
        pad_token_id=vocabulary[END_OF_TEXT],
        bos_token_id=vocabulary[END_OF_TEXT],
    )
    model.save_pretrained(folder)

    common = {"patch_size": 16, "temporal_patch_size": 2, "merge_size": 2, "image_mean": [0.5, 0.5, 0.5],
              "image_std": [0.5, 0.5, 0.5]}
    processor = Qwen3VLProcessor(
        image_processor=Qwen2VLImageProcessor(size=dict(IMAGE_PIXEL_BUDGET), **common),
        tokenizer=tokenizer,
        video_processor=Qwen3VLVideoProcessor(size=dict(VIDEO_PIXEL_BUDGET), fps=2, min_frames=4, max_frames=768,
                                              **common),
        chat_template=CHAT_TEMPLATE,
    )
    processor.save_pretrained(folder)
    _check_loads(folder, "qwen3_vl_moe" if moe else "qwen3_vl")
    return folder


SCORE_DIGITS = "12345"


def build_digit_answering(tiny: Path, folder: Path) -> Path:
    """A copy of a tiny checkpoint that answers one digit 1..5 and stops; only ``generation_config.json`` changes.

    ``min_new_tokens`` 1 and a ``sequence_bias`` of +20 on the tokens "1".."5" and of +60 on ``<|im_end|>`` right
    after one of them. Biases are logits processors: they decide which token is DRAWN (one digit, then the end of
    the turn) but never touch the raw logits a client records, so the distribution over 1..5 read from the answer
    token is the random model's own.
    """
    folder = Path(folder)
    shutil.copytree(tiny, folder)
    vocabulary = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    config = GenerationConfig.from_pretrained(folder)
    config.min_new_tokens = 1
    config.sequence_bias = ([[[vocabulary[d]], 20.0] for d in SCORE_DIGITS]
                            + [[[vocabulary[d], vocabulary[IM_END]], 60.0] for d in SCORE_DIGITS])
    config.save_pretrained(folder)
    return folder


def _check_loads(folder: Path, model_type: str) -> None:
    config = AutoConfig.from_pretrained(folder)
    assert config.model_type == model_type, (config.model_type, model_type)
    with open(folder / "generation_config.json", encoding="utf-8") as handle:
        assert json.load(handle)["do_sample"] is True
