"""In-process Hugging Face transformers for Qwen3-VL and RoboReward 4B/8B: the official RoboRewardBench path.

The official leaderboard ran Qwen3-VL 4B/8B/30B-A3B and RoboReward 4B/8B inside the HELM process
(HELM branch ``rob``, ``src/helm/clients/vision_language/qwen3_vlm_client.py``, class
``Qwen3VLMClient``; docs/protocol.md, sections 3 and 5). :class:`TransformersQwen3VLClient` reimplements that path:

- each checkpoint is loaded once per process (a module-level registry behind a lock) with
  ``Qwen3VLForConditionalGeneration`` (``model_type`` ``qwen3_vl``) or
  ``Qwen3VLMoeForConditionalGeneration`` (``qwen3_vl_moe``, Qwen3-VL-30B-A3B), ``.eval()``, and
  ``AutoProcessor``; a checkpoint without a chat template gets Qwen/Qwen3-VL-4B-Instruct's;
- the request becomes ONE user message whose content lists the prompt's parts in order:
  ``{"type": "text", "text": ...}``, ``{"type": "video", "video": <mp4 path>}``,
  ``{"type": "image", "image": <path>}``;
- ``processor.apply_chat_template(messages, tokenize=True, add_generation_prompt=True,
  return_dict=True, return_tensors="pt")``: the checkpoint's own video processor decodes the mp4
  (with torchcodec) and chooses the frames (transformers' Qwen3-VL defaults: 2 fps, 4..768 frames);
  where torchcodec cannot load (no FFmpeg shared libraries) the client decodes with PyAV instead (see
  "Video decoder" below);
- ``model.generate(**inputs, max_new_tokens=request.max_tokens)`` and nothing else under
  ``decoding="checkpoint"`` (the default), so the checkpoint's generation config applies (Qwen3-VL
  samples: it does not honour the request's temperature 0, as in the official run); the prompt
  tokens are cut off and the rest decoded with ``skip_special_tokens=True,
  clean_up_tokenization_spaces=False``.

Differences from the official client, all deliberate:

- Seeding: under ``decoding="checkpoint"`` torch's RNG is seeded per request from ``seed`` and a
  digest of the request content (prompt text, media bytes), so a rerun draws the same sample. The
  official run did not seed, so its samples cannot be redrawn.
- ``decoding="greedy"`` (an option, not official): ``do_sample=False`` with temperature, top_p and
  top_k unset.
- Errors are non-fatal: an exception while preprocessing or generating (CUDA out of memory, a
  video that does not decode, a ``ValueError`` from the processor) returns a failed result with
  ``ErrorFlags(is_retriable=False, is_fatal=False)``; HELM's executor records an empty completion
  and the run goes on (the metric counts it in ``failed_request``). In the official client such an
  exception stopped the run. Problems that make every request fail (no checkpoint, another model
  type, ``video_decoder="torchcodec"`` where it cannot load) raise at construction or at the first load, and
  are never retried.
- dtype: ``auto`` is bfloat16 on CUDA (official) and float32 on CPU; ``device_map`` (official
  ``"auto"``) is used only with CUDA.
- Attention: transformers' default unless ``attn_implementation`` is set; the official client used
  ``"flash_attention_2"``, which needs the ``flash-attn`` package.
- Pixel cap: transformers 5.x asks whether to cap per-frame pixels like qwen-vl-utils
  (``cap_pixels_per_frame``) and announces a new default; the official generation of transformers
  (4.57) had no cap, so the client passes ``cap_pixels_per_frame=False`` when the checkpoint leaves it
  unset (never under 4.57, whose processor has no such option).
- The cache key holds the SHA-256 of each media file, never its path, and what else decides the answer
  (see :meth:`cache_key`).

Video decoder (``video_decoder``): ``auto`` (default) is torchcodec wherever it loads, which is the official
route above, and PyAV (the package's own decoder, a wheel that bundles FFmpeg) where it cannot; ``torchcodec`` or
``pyav`` force one (``torchcodec`` fails at construction where it cannot load). The PyAV route gives the processor
what the path route gives it, so the same frames reach the model:

- the metadata is counted as torchcodec's ``seek_mode="exact"`` (what transformers' path route uses) counts it:
  one demux pass, no decoding; ``total_num_frames`` is the number of video packets not flagged discard (never
  the header's count, which can be one more than decodes), ``fps`` that count over the span from the first
  presentation time to the end of the last packet (the header's average rate only when that span is 0);
- the checkpoint's video processor picks the indices from that metadata with its own ``sample_frames`` and the
  arguments its preprocessing passes (``fps``, ``num_frames``; 2 fps, 4..768 frames for Qwen3-VL); all frames
  when its ``do_sample_frames`` is off;
- only those frames are decoded (:func:`helm_roboreward.media.decoding.decode_frames`: forward, seeking only
  to a later keyframe), converted to RGB by swscale (as torchcodec does for these videos) and rotated as the
  file asks (torchcodec applies the rotation too); a wanted frame that does not decode fails the request
  (torchcodec fails it too);
- the processor gets ``videos=[frames]`` with ``video_metadata`` (``frames_indices`` set) and
  ``do_sample_frames=False``, so the frame timestamps in the prompt come from the same indices and fps.

Checked on the sample videos and a 401-frame 512x288 h264 clip: identical ``pixel_values_videos``,
``video_grid_thw`` and prompt tokens from both routes (tests/clients/test_video_decoders.py).
Memory: only the kept frames are held (a 401-frame 512x288 clip at 15 fps keeps 53 frames, 23 MB as uint8; all
401 would be 177 MB), as in the torchcodec route. ``finish_reason["video_decoder"]`` and
``["video_decoder_version"]`` record which ran.

Log-probabilities (``top_logprobs`` > 0; an option, 0 by default, which changes nothing of the above; its value
is part of the cache key): ``generate`` also gets ``return_dict_in_generate=True, output_logits=True``, i.e.
the RAW logits of every step (transformers 5.x ``GenerateDecoderOnlyOutput.logits``, taken before any logits
processor: not the ``scores`` after the checkpoint's temperature, top-k/top-p or biases), so the recorded
values are the model's own distribution whichever decoding picked the token; sampling draws the same tokens
as without the option. For each generated token whose decoded text holds a decimal digit and that lies in
the final answer (after a ``<think>`` block), ``log_softmax`` of that step's logits gives the top
``top_logprobs`` alternatives (the chosen token added when it is not among them), each decoded alone like
the answer (``skip_special_tokens=True, clean_up_tokenization_spaces=False``; alternatives decoding to the
same text add their probabilities). They become ``finish_reason["score_token_logprobs"]`` with offsets into
``GeneratedOutput.text`` (the same format as :class:`OpenAIVideoClient`'s, see
:func:`~helm_roboreward.clients.openai_video_client.answer_digit_tokens`). Only those tokens are
kept and cached; but ``output_logits`` holds every step's logits until ``generate`` returns (steps x
vocabulary x 4 bytes on the model's device: about 0.6 MB per generated token for Qwen3-VL's 151,936-token
vocabulary, 3 GB at a 5,000-token budget), so long reasoning answers cost accelerator memory.

Not changed, but recorded: transformers 5.x expands only the chat template's ``<|video_pad|>`` into the
per-frame ``<t seconds><|vision_start|>...<|vision_end|>`` blocks and keeps the template's own
``<|vision_start|>``/``<|vision_end|>`` around them (2 more prompt tokens per video); 4.57 replaced the
whole wrapper. ``finish_reason["nested_video_wrapper"]`` says which layout a run had. Pin
``transformers==4.57.*`` for the official token layout; this client runs on both.

Every completion's ``finish_reason`` records ``reason``, ``prompt_tokens``, ``completion_tokens`` and
the provenance of the answer: versions of transformers and torch, the video decoder that ran and its
version, the frames the processor kept, the video tokens, the decoding mode and seed (and, with ``top_logprobs``,
``score_token_logprobs``). A ``<think>`` block (Qwen3 thinking
checkpoints) goes to ``GeneratedOutput.thinking`` (:func:`split_reasoning`).
"""

import hashlib
import importlib.metadata
import json
import os
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from helm.clients.client import CachingClient
from helm.common.cache import CacheConfig
from helm.common.request import (
    ErrorFlags,
    GeneratedOutput,
    Request,
    RequestResult,
    Thinking,
    Token,
    wrap_request_time,
)
from helm.proxy.retry import NonRetriableException

from helm_roboreward.clients.openai_video_client import (
    SCORE_TOKEN_LOGPROBS,
    answer_digit_tokens,
    answer_start,
    merge_logprob,
    split_reasoning,
    warn_once,
)
from helm_roboreward.clients.video_decoders import (
    AUTO,
    INSTALL_HINT,
    PYAV,
    VideoDecoderError,
    choose_video_decoder,
    decode_videos_with_pyav,
)
from helm_roboreward.core.files import file_digest
from helm_roboreward.protocol import CHECKPOINT, GREEDY

DECODING_MODES = (CHECKPOINT, GREEDY)

MODEL_CLASSES: dict[str, str] = {
    "qwen3_vl": "Qwen3VLForConditionalGeneration",
    "qwen3_vl_moe": "Qwen3VLMoeForConditionalGeneration",
}
"""transformers model class by the checkpoint config's ``model_type``."""

CHAT_TEMPLATE_FALLBACK = "Qwen/Qwen3-VL-4B-Instruct"
"""Whose chat template a checkpoint without one gets (as in the official client)."""

DTYPES = ("auto", "bfloat16", "float16", "float32")

"""``video_decoder`` values: ``auto`` is torchcodec (official) where it loads, else PyAV (module docstring)."""


DIGESTED_FILE_BYTES = 64 * 1024 * 1024
"""Files of a local checkpoint up to this size enter the cache key by SHA-256, larger ones by size and mtime."""
_DIGIT = re.compile(r"\d")
_DECODE = {"skip_special_tokens": True, "clean_up_tokenization_spaces": False}
"""How the answer, each of its tokens and each alternative are decoded (as in the official client)."""


class TransformersClientError(NonRetriableException):
    """A problem that makes every request fail (checkpoint, model type, video decoder): raised, never retried."""


@dataclass
class LoadedModel:
    """One checkpoint in memory, shared by every client instance and request thread of the process."""

    model: Any
    processor: Any
    device: Any
    model_class: str
    cap_pixels_per_frame: bool | None
    """What the client passes to the video processor (None: the checkpoint decides)."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Held around preprocessing and generate: one model on one device serves one request at a time."""


_REGISTRY: dict[str, LoadedModel] = {}
_REGISTRY_LOCK = threading.Lock()
_LOAD_COUNTS: dict[str, int] = {}
_LOAD_FAILURES: dict[str, "TransformersClientError"] = {}
_SAMPLING_LOCK = threading.Lock()
"""torch's global RNG is process-wide: seeding and sampling hold this lock so another model's sampling cannot
interleave."""


def load_counts() -> dict[str, int]:
    """How many times each registry key (see :attr:`TransformersQwen3VLClient.registry_key`) was loaded."""
    with _REGISTRY_LOCK:
        return dict(_LOAD_COUNTS)


def checkpoint_fingerprint(folder: str) -> dict[str, Any]:
    """What the cache key holds of a local checkpoint folder, so that changed files never get old answers.

    Every file under ``folder`` by relative path (names starting with a dot, such as ``.cache`` or ``.git``,
    skipped): the SHA-256 of files up to :data:`DIGESTED_FILE_BYTES` (configs, tokenizer, chat template, a small
    model's weights), ``[size, mtime_ns]`` of larger ones (weight shards: hashing gigabytes per client would take
    minutes). A copy that does not keep modification times therefore misses the cache; it never hits wrongly.
    """
    files: dict[str, Any] = {}
    for root, folders, names in os.walk(folder):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in sorted(name for name in names if not name.startswith(".")):
            path = os.path.join(root, name)
            try:
                status = os.stat(path)
                files[os.path.relpath(path, folder)] = file_digest(path) if status.st_size <= DIGESTED_FILE_BYTES \
                    else [status.st_size, status.st_mtime_ns]
            except OSError as error:  # a broken link: recorded, the load will say what is wrong
                files[os.path.relpath(path, folder)] = f"unreadable: {error.strerror}"
    return files


def _media_sha256(part: dict[str, Any]) -> str:
    return file_digest(part[part["type"]])


def _looks_local(checkpoint: str) -> bool:
    return os.path.isdir(checkpoint) or os.path.isabs(checkpoint) or checkpoint.startswith((".", "~"))


class TransformersQwen3VLClient(CachingClient):
    """Qwen3-VL / RoboReward in this process with Hugging Face transformers, as the official RoboRewardBench run."""

    def __init__(
        self,
        cache_config: CacheConfig,
        checkpoint: str,
        revision: str | None = None,
        decoding: str = CHECKPOINT,
        dtype: str = "auto",
        device_map: str | None = "auto",
        attn_implementation: str | None = None,
        seed: int = 0,
        top_logprobs: int = 0,
        video_decoder: str = AUTO,
    ) -> None:
        """Check the checkpoint's config and the video decoder; the weights load at the first uncached request.

        Args:
            cache_config: HELM's request cache (injected).
            checkpoint: A hub id (``teetone/RoboReward-8B``) or a local checkpoint folder.
            revision: Hub revision (branch, tag or commit); None: the hub's default.
            decoding: ``checkpoint`` (official: the checkpoint's generation config, seeded) or ``greedy``.
            dtype: ``auto`` (bfloat16 on CUDA, float32 on CPU), ``bfloat16``, ``float16`` or ``float32``.
            device_map: transformers' ``device_map`` (official ``auto``), used only when CUDA is available.
            attn_implementation: e.g. ``flash_attention_2`` (official; needs flash-attn) or ``sdpa``; None:
                transformers' default.
            seed: Seeds sampling under ``decoding=checkpoint`` together with the request content.
            top_logprobs: 0 (default): no log-probabilities. N > 0: record the top N alternatives of the
                answer's digit tokens from the raw logits in ``finish_reason["score_token_logprobs"]`` (see the
                module docstring); part of the cache key.
            video_decoder: ``auto`` (torchcodec where it loads, else PyAV), ``torchcodec`` or ``pyav`` (module
                docstring, "Video decoder"); the one that ran is part of the cache key of video requests.

        Raises:
            ValueError: An argument is not one of its allowed values.
            TransformersClientError: The checkpoint cannot be read or is not a Qwen3-VL model, or
                ``video_decoder="torchcodec"`` cannot load.
        """
        super().__init__(cache_config=cache_config)
        if decoding not in DECODING_MODES:
            raise ValueError(f"TransformersQwen3VLClient: decoding must be one of {DECODING_MODES}, got {decoding!r}")
        if dtype not in DTYPES:
            raise ValueError(f"TransformersQwen3VLClient: dtype must be one of {DTYPES}, got {dtype!r}")
        if isinstance(top_logprobs, bool) or not isinstance(top_logprobs, int) or top_logprobs < 0:
            raise ValueError("TransformersQwen3VLClient: top_logprobs must be a whole number >= 0 (0: no "
                             f"log-probabilities), got {top_logprobs!r}")
        import torch

        self.checkpoint = os.path.abspath(os.path.expanduser(checkpoint)) if _looks_local(checkpoint) else checkpoint
        self.local = _looks_local(checkpoint)
        self.revision = revision
        self.decoding = decoding
        self.seed = int(seed)
        self.top_logprobs = top_logprobs
        self.attn_implementation = attn_implementation
        cuda = torch.cuda.is_available()
        self.dtype = ("bfloat16" if cuda else "float32") if dtype == "auto" else dtype
        self.device_map = device_map if cuda else None
        # HELM builds one client per request thread at once, and loads run while other clients are being built:
        # transformers' lazy modules are not safe to import from several threads together (a first import racing
        # another raised "cannot import name 'AutoConfig'"), so every first import of transformers here, and every
        # load, holds the registry lock.
        with _REGISTRY_LOCK:
            try:
                self.video_decoder, self.video_decoder_version = choose_video_decoder(video_decoder)
            except VideoDecoderError as error:
                raise TransformersClientError(str(error)) from None
            import transformers.video_utils  # noqa: F401  (what pyav_video reads, imported under the lock)

            if self.device_map:
                from transformers.utils import is_accelerate_available

                if not is_accelerate_available():
                    raise TransformersClientError(
                        f"device_map={device_map!r} needs accelerate. Install: {INSTALL_HINT}.")
            config = self._read_config()
        self.model_type = str(config.model_type)
        self.commit = getattr(config, "_commit_hash", None)
        self.checkpoint_files = checkpoint_fingerprint(self.checkpoint) if self.local else None
        """A local checkpoint's files as the cache key holds them (:func:`checkpoint_fingerprint`)."""
        files = hashlib.sha256(json.dumps(self.checkpoint_files, sort_keys=True).encode()).hexdigest()
        self.registry_key = json.dumps([self.checkpoint, revision, self.commit, files, self.dtype, self.device_map,
                                        attn_implementation])
        """The registry entry this client shares with every client of the same checkpoint (the same files: weights
        replaced in the folder load anew) and load settings."""

    def _read_config(self) -> Any:
        from transformers import AutoConfig

        where = f"checkpoint {self.checkpoint!r}" + (f" (revision {self.revision})" if self.revision else "")
        if self.local and not os.path.isfile(os.path.join(self.checkpoint, "config.json")):
            problem = "has no config.json" if os.path.isdir(self.checkpoint) else "does not exist"
            raise TransformersClientError(
                f"TransformersQwen3VLClient: the folder of {where} {problem}. Point `checkpoint` at a folder written "
                "by save_pretrained, or give a hub id such as teetone/RoboReward-8B."
            )
        try:
            config = AutoConfig.from_pretrained(self.checkpoint, revision=self.revision)
        except (OSError, ValueError) as error:
            raise TransformersClientError(f"TransformersQwen3VLClient: cannot read the config of {where}: {error}") \
                from error
        if config.model_type not in MODEL_CLASSES:
            raise TransformersClientError(
                f"TransformersQwen3VLClient: {where} has model_type {config.model_type!r}; this client runs "
                f"{' and '.join(MODEL_CLASSES)} (Qwen3-VL, RoboReward) only."
            )
        return config

    @property
    def model_class(self) -> str:
        """The transformers class the checkpoint loads with."""
        return MODEL_CLASSES[self.model_type]

    def load(self) -> LoadedModel:
        """The model and processor, loaded on first use and shared process-wide.

        Raises:
            TransformersClientError: The weights or the processor cannot be loaded.
        """
        with _REGISTRY_LOCK:
            loaded = _REGISTRY.get(self.registry_key)
            if loaded is None:
                if self.registry_key in _LOAD_FAILURES:  # every waiting request thread fails at once, no reload
                    raise _LOAD_FAILURES[self.registry_key]
                try:
                    loaded = self._load_checkpoint()
                except TransformersClientError as error:
                    _LOAD_FAILURES[self.registry_key] = error
                    raise
                _REGISTRY[self.registry_key] = loaded
                _LOAD_COUNTS[self.registry_key] = _LOAD_COUNTS.get(self.registry_key, 0) + 1
        return loaded

    def _load_checkpoint(self) -> LoadedModel:
        import torch
        import transformers

        options: dict[str, Any] = {"dtype": getattr(torch, self.dtype)}
        if self.revision:
            options["revision"] = self.revision
        if self.device_map:
            options["device_map"] = self.device_map
        if self.attn_implementation:
            options["attn_implementation"] = self.attn_implementation
        try:
            model = getattr(transformers, self.model_class).from_pretrained(self.checkpoint, **options).eval()
            processor = transformers.AutoProcessor.from_pretrained(self.checkpoint, revision=self.revision)
            if getattr(processor, "chat_template", None) is None:
                processor.chat_template = transformers.AutoProcessor.from_pretrained(
                    CHAT_TEMPLATE_FALLBACK).chat_template
        except (OSError, ValueError, ImportError, RuntimeError) as error:
            raise TransformersClientError(
                f"TransformersQwen3VLClient: cannot load {self.model_class} from {self.checkpoint!r}: {error}"
            ) from error
        if torch.cuda.is_available() and not self.device_map:
            model = model.to("cuda")
        video_processor = getattr(processor, "video_processor", None)
        cap = False if video_processor is not None and hasattr(video_processor, "cap_pixels_per_frame") and \
            video_processor.cap_pixels_per_frame is None else None
        return LoadedModel(model=model, processor=processor, device=model.device, model_class=self.model_class,
                           cap_pixels_per_frame=cap)

    def build_messages(self, request: Request) -> list[dict[str, Any]]:
        """The chat messages for a request: one user message, its parts in the prompt's order.

        Raises:
            ValueError: A media object is neither text, video nor image, or has no location.
        """
        content: list[dict[str, Any]] = []
        if request.multimodal_prompt is None:
            return [{"role": "user", "content": [{"type": "text", "text": request.prompt}]}]
        for media in request.multimodal_prompt.media_objects:
            if media.is_type("text"):
                content.append({"type": "text", "text": media.text or ""})
                continue
            kind = "video" if media.is_type("video") else "image" if media.is_type("image") else None
            if kind is None:
                raise ValueError(f"TransformersQwen3VLClient cannot send {media.content_type} media")
            if not media.location:
                raise ValueError(f"{media.content_type} media object without a location")
            content.append({"type": kind, kind: media.location})
        return [{"role": "user", "content": content}]

    def cache_key(self, request: Request, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """HELM's cache key: everything that decides the answer.

        - the model: a hub id with its revision and the commit the config resolved to (a moving ``main``
          changes it), or a local folder's absolute path and :func:`checkpoint_fingerprint` (configs,
          tokenizer and small files by SHA-256, weight shards by size and modification time);
        - ``dtype``, ``attn_implementation``, ``decoding``, ``seed``, ``top_logprobs``, the token budget and
          the number of completions; for a request with a video, the video decoder that runs;
        - the prompt text and each media file's SHA-256, never its path (media folders differ between
          machines, and changed bytes must not be served from the cache).

        Keys written before this layout (which identified a local folder by its config.json and
        generation_config.json only, and left ``top_logprobs`` out when 0) are never matched: those requests
        simply run again.
        """
        if self.local:
            checkpoint: dict[str, Any] = {"path": self.checkpoint, "files": self.checkpoint_files}
        else:
            checkpoint = {"id": self.checkpoint, "revision": self.revision, "commit": self.commit}
        content = [part if part["type"] == "text" else {"type": part["type"], "sha256": _media_sha256(part)}
                   for part in messages[0]["content"]]
        raw = {"client": "transformers_qwen3_vl", "checkpoint": checkpoint, "dtype": self.dtype,
               "attn_implementation": self.attn_implementation, "decoding": self.decoding, "seed": self.seed,
               "top_logprobs": self.top_logprobs, "max_new_tokens": request.max_tokens,
               "num_completions": request.num_completions, "content": content}
        if any(part["type"] == "video" for part in content):
            raw["video_decoder"] = self.video_decoder
        return dict(CachingClient.make_cache_key(raw, request))

    def make_request(self, request: Request) -> RequestResult:
        """Generate (or serve from the cache) the completions of one request."""
        try:
            messages = self.build_messages(request)
            cache_key = self.cache_key(request, messages)
        except (OSError, ValueError) as error:
            return _failure(f"TransformersQwen3VLClient: cannot build the request: {error}")
        content_digest = hashlib.sha256(json.dumps(cache_key["content"], sort_keys=True).encode()).hexdigest()

        def compute() -> dict[str, Any]:
            return self._generate(messages, request, content_digest)

        try:
            response, cached = self.cache.get(cache_key, wrap_request_time(compute))
        except TransformersClientError:
            raise
        except (RuntimeError, ValueError, TypeError, OSError) as error:
            _release_accelerator_memory()
            media = [part[part["type"]] for part in messages[0]["content"] if part["type"] != "text"]
            return _failure(f"TransformersQwen3VLClient: {type(error).__name__} while running {self.checkpoint} on "
                            f"{', '.join(media) or 'a text prompt'}: {error}")
        return RequestResult(
            success=True,
            cached=cached,
            request_time=response.get("request_time"),
            request_datetime=response.get("request_datetime"),
            completions=[completion_from(generated, response) for generated in response["completions"]],
            embedding=[],
        )

    def request_seed(self, content_digest: str, index: int) -> int:
        """The torch seed of completion ``index`` of a request whose content digest is given."""
        digest = hashlib.sha256(f"{self.seed}:{content_digest}:{index}".encode()).digest()
        return int.from_bytes(digest[:8], "big") >> 1

    def processor_inputs(self, messages: list[dict[str, Any]]) -> tuple[Any, dict[str, Any]]:
        """What ``generate`` gets for ``messages`` (on the CPU), and the processor options the provenance records.

        The checkpoint's processor decodes each video path with torchcodec, or gets the frames PyAV decoded
        (:func:`decode_videos_with_pyav`, outside the model's lock, while another request generates).
        """
        loaded = self.load()
        has_video = any(part["type"] == "video" for part in messages[0]["content"])
        processor_kwargs = {"cap_pixels_per_frame": loaded.cap_pixels_per_frame} \
            if has_video and loaded.cap_pixels_per_frame is not None else {}
        call_kwargs: dict[str, Any] = dict(processor_kwargs)  # a copy: transformers edits it
        if has_video and self.video_decoder == PYAV:
            messages, metadata = decode_videos_with_pyav(messages, loaded.processor.video_processor)
            call_kwargs.update(video_metadata=metadata, do_sample_frames=False)
        with loaded.lock:
            inputs = loaded.processor.apply_chat_template(
                messages, tokenize=True, add_generation_prompt=True, return_dict=True, return_tensors="pt",
                **({"processor_kwargs": call_kwargs} if call_kwargs else {}))
        return inputs, processor_kwargs

    def _generate(self, messages: list[dict[str, Any]], request: Request, content_digest: str) -> dict[str, Any]:
        inputs, processor_kwargs = self.processor_inputs(messages)
        loaded = self.load()
        with loaded.lock:
            inputs = inputs.to(loaded.device)
            completions = [self._generate_one(loaded, inputs, request.max_tokens, self.request_seed(content_digest, i))
                           for i in range(max(request.num_completions, 1))]
        return {"prompt_tokens": int(inputs["input_ids"].shape[1]), "completions": completions,
                "provenance": self._provenance(loaded, inputs, processor_kwargs)}

    def _generate_one(self, loaded: LoadedModel, inputs: Any, max_new_tokens: int, seed: int) -> dict[str, Any]:
        import torch

        options: dict[str, Any] = {"max_new_tokens": max_new_tokens}
        if self.decoding == GREEDY:
            options.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if self.top_logprobs:
            options.update(return_dict_in_generate=True, output_logits=True)
        with torch.inference_mode():
            if self.decoding == CHECKPOINT:
                with _SAMPLING_LOCK:
                    torch.manual_seed(seed)
                    output = loaded.model.generate(**inputs, **options)
            else:
                output = loaded.model.generate(**inputs, **options)
        sequences = output.sequences if self.top_logprobs else output
        generated = sequences[0, inputs["input_ids"].shape[1]:]
        ids: list[int] = generated.tolist()
        tokenizer = loaded.processor.tokenizer
        text = loaded.processor.batch_decode([generated], skip_special_tokens=True,
                                             clean_up_tokenization_spaces=False)[0]
        special = set(tokenizer.all_special_ids)
        pieces = tokenizer.batch_decode([[i] for i in ids if i not in special], skip_special_tokens=True,
                                        clean_up_tokenization_spaces=False)
        eos = loaded.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
        reason = "stop" if (ids and ids[-1] in eos_ids) or len(ids) < max_new_tokens else "length"
        result: dict[str, Any] = {"text": text, "tokens": pieces, "completion_tokens": len(ids), "reason": reason,
                                  "seed": seed if self.decoding == CHECKPOINT else None}
        if self.top_logprobs:
            result["token_logprobs"] = self._digit_token_logprobs(tokenizer, ids, text, output.logits)
        return result

    def _digit_token_logprobs(self, tokenizer: Any, ids: list[int], text: str, logits: Any) -> list[dict[str, Any]]:
        """The answer's digit tokens: offset in ``text`` (before the reasoning split), text, top alternatives.

        Offsets are the running length of the tokens decoded one by one when those concatenate to ``text``;
        otherwise (a character split over several byte-level tokens) the length of the decoded prefix.
        :func:`completion_from` checks each against the answer.
        """
        import torch

        start = answer_start(text)
        if start is None:
            return []
        pieces: list[str] = tokenizer.batch_decode([[i] for i in ids], **_DECODE)
        running = "".join(pieces) == text
        entries: list[dict[str, Any]] = []
        offset = 0
        for step, (token_id, piece) in enumerate(zip(ids, pieces, strict=True)):
            at = offset if running else None
            offset += len(piece)
            if not _DIGIT.search(piece):
                continue
            at = len(tokenizer.decode(ids[:step], **_DECODE)) if at is None else at
            if at < start:
                continue  # reasoning: not part of the answer
            logprobs = torch.log_softmax(logits[step][0].float(), dim=-1)
            values, indices = torch.topk(logprobs, min(self.top_logprobs, int(logprobs.shape[-1])))
            chosen: list[int] = indices.tolist()
            scores: list[float] = values.tolist()
            if token_id not in chosen:  # sampling may pick a token outside the top N: it is always recorded
                chosen.append(token_id)
                scores.append(float(logprobs[token_id]))
            top: dict[str, float] = {}
            for alternative, score in zip(tokenizer.batch_decode([[i] for i in chosen], **_DECODE), scores,
                                          strict=True):
                merge_logprob(top, alternative, score)
            entries.append({"offset": at, "text": piece, "top": top})
        return entries

    def _provenance(self, loaded: LoadedModel, inputs: Any, processor_kwargs: dict[str, Any]) -> dict[str, Any]:
        import torch

        config = loaded.model.config
        ids: list[int] = inputs["input_ids"][0].tolist()
        temporal_patch = int(getattr(loaded.processor.video_processor, "temporal_patch_size", 2))
        grids = inputs["video_grid_thw"].tolist() if "video_grid_thw" in inputs else []
        images = len(inputs["image_grid_thw"]) if "image_grid_thw" in inputs else 0
        frame_groups = sum(int(t) for t, _, _ in grids)
        return {
            "checkpoint": self.checkpoint, "revision": self.revision, "checkpoint_commit": self.commit,
            "model_class": loaded.model_class, "dtype": self.dtype, "device": str(loaded.device),
            "attn_implementation": getattr(config, "_attn_implementation", None), "decoding": self.decoding,
            "transformers_version": importlib.metadata.version("transformers"),
            "torch_version": torch.__version__,
            "video_decoder": self.video_decoder if grids else None,
            "video_decoder_version": self.video_decoder_version if grids else None,
            "video_frames": frame_groups * temporal_patch, "video_grid_thw": grids,
            "video_tokens": ids.count(config.video_token_id), "image_tokens": ids.count(config.image_token_id),
            "images": images,
            # transformers 5.x keeps the chat template's <|vision_start|>..<|vision_end|> around the per-frame
            # blocks (4.57, the official run's generation, replaced the whole wrapper): recorded, not changed.
            "nested_video_wrapper": ids.count(config.vision_start_token_id) > frame_groups + images,
            "processor_kwargs": processor_kwargs,
        }


def completion_from(generated: dict[str, Any], response: dict[str, Any]) -> GeneratedOutput:
    """A HELM completion from one cached generation: the answer, the reasoning apart, usage and provenance."""
    text, thinking = split_reasoning(generated["text"])
    finish: dict[str, Any] = {
        "reason": generated["reason"],
        "prompt_tokens": response["prompt_tokens"],
        "completion_tokens": generated["completion_tokens"],
        "seed": generated.get("seed"),
        **response.get("provenance", {}),
    }
    if "token_logprobs" in generated:
        start = answer_start(generated["text"])
        spans = ((entry["offset"], entry["text"], entry["top"]) for entry in generated["token_logprobs"])
        entries = answer_digit_tokens(spans, text, start) if start is not None else []
        if entries is None:
            warn_once("transformers_unaligned", "TransformersQwen3VLClient: the digit tokens of a completion do not "
                      "line up with its answer text: no score_token_logprobs for it (logged once)")
        else:
            finish[SCORE_TOKEN_LOGPROBS] = entries
    return GeneratedOutput(text=text, logprob=0.0, tokens=[Token(text=piece, logprob=0.0) for piece in
                                                           generated["tokens"]],
                           finish_reason=finish, thinking=Thinking(text=thinking) if thinking else None)


def _release_accelerator_memory() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _failure(message: str) -> RequestResult:
    return RequestResult(success=False, cached=False, error=message, completions=[], embedding=[],
                         error_flags=ErrorFlags(is_retriable=False, is_fatal=False))


__all__: list[str] = ["TransformersQwen3VLClient", "TransformersClientError", "LoadedModel", "load_counts",
                      "completion_from", "checkpoint_fingerprint", "CHECKPOINT", "GREEDY"]
