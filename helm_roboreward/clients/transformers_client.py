"""Qwen3-VL and RoboReward 4B/8B in the HELM process with Hugging Face transformers: the official path.

Reimplements the official leaderboard's in-process client (HELM branch ``rob``, ``Qwen3VLMClient``) with a few
deliberate differences; what it sends, decodes, records and caches: docs/clients.md, "TransformersQwen3VLClient".
"""

import hashlib
import importlib.metadata
import json
import os
import threading
from dataclasses import dataclass, field
from typing import Any

from helm.clients.client import CachingClient
from helm.common.cache import CacheConfig
from helm.common.request import GeneratedOutput, Request, RequestResult, Thinking, Token, wrap_request_time
from helm.proxy.retry import NonRetriableException

from helm_roboreward.clients.chat_reply import failed_request, split_reasoning
from helm_roboreward.clients.video_decoders import AUTO, INSTALL_HINT, PYAV, VideoDecoderError, choose_video_decoder
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
DECODE = {"skip_special_tokens": True, "clean_up_tokenization_spaces": False}
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
"""torch's RNG is process-wide: seeding and sampling hold this lock so another model's sampling cannot interleave."""


def load_counts() -> dict[str, int]:
    """How many times each registry key (see :attr:`TransformersQwen3VLClient.registry_key`) was loaded."""
    with _REGISTRY_LOCK:
        return dict(_LOAD_COUNTS)


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
        """Check the arguments, the checkpoint's config and the video decoder; the weights load on first use.

        ``checkpoint`` is a hub id (``teetone/RoboReward-8B``) or a local folder; ``device_map`` applies only with
        CUDA; ``top_logprobs`` > 0 records the answer's digit tokens from the raw logits (docs/clients.md).

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

        self.local = _looks_local(checkpoint)
        self.checkpoint = os.path.abspath(os.path.expanduser(checkpoint)) if self.local else checkpoint
        self.revision = revision
        self.decoding = decoding
        self.seed = int(seed)
        self.top_logprobs = top_logprobs
        self.attn_implementation = attn_implementation
        cuda = torch.cuda.is_available()
        self.dtype = ("bfloat16" if cuda else "float32") if dtype == "auto" else dtype
        self.device_map = device_map if cuda else None
        # transformers' lazy modules are not safe to import from several threads at once, and HELM builds one client
        # per request thread together: every first import of transformers here, and every load, holds the lock.
        with _REGISTRY_LOCK:
            try:
                self.video_decoder, self.video_decoder_version = choose_video_decoder(video_decoder)
            except VideoDecoderError as error:
                raise TransformersClientError(str(error)) from None
            import transformers.video_utils  # noqa: F401  (what the PyAV route reads, imported under the lock)

            if self.device_map:
                from transformers.utils import is_accelerate_available

                if not is_accelerate_available():
                    raise TransformersClientError(
                        f"device_map={device_map!r} needs accelerate. Install: {INSTALL_HINT}.")
            config = self._read_config()
        self.model_type = str(config.model_type)
        self.commit = getattr(config, "_commit_hash", None)
        self.checkpoint_files: dict[str, Any] | None = None
        """A local checkpoint's files as the cache key holds them."""
        if self.local:
            from helm_roboreward.clients.checkpoint_files import checkpoint_fingerprint

            self.checkpoint_files = checkpoint_fingerprint(self.checkpoint)
        files = hashlib.sha256(json.dumps(self.checkpoint_files, sort_keys=True).encode()).hexdigest()
        self.registry_key = json.dumps([self.checkpoint, revision, self.commit, files, self.dtype, self.device_map,
                                        attn_implementation])
        """Shared by every client of the same checkpoint files and load settings (replaced weights load anew)."""

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
            TransformersClientError: The weights or the processor cannot be loaded (now or at an earlier try).
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
        # transformers 5.x asks whether to cap per-frame pixels; the official run's 4.57 had no cap.
        video_processor = getattr(processor, "video_processor", None)
        cap = False if video_processor is not None and hasattr(video_processor, "cap_pixels_per_frame") and \
            video_processor.cap_pixels_per_frame is None else None
        return LoadedModel(model=model, processor=processor, device=model.device, model_class=self.model_class,
                           cap_pixels_per_frame=cap)

    def build_messages(self, request: Request) -> list[dict[str, Any]]:
        """One user message, the prompt's parts in order (ValueError: a part neither text, video nor image)."""
        if request.multimodal_prompt is None:
            return [{"role": "user", "content": [{"type": "text", "text": request.prompt}]}]
        content: list[dict[str, Any]] = []
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
        """HELM's cache key: everything that decides the answer, media by SHA-256, never by path (docs/clients.md)."""
        if self.local:
            checkpoint: dict[str, Any] = {"path": self.checkpoint, "files": self.checkpoint_files}
        else:
            checkpoint = {"id": self.checkpoint, "revision": self.revision, "commit": self.commit}
        content = [part if part["type"] == "text" else {"type": part["type"], "sha256": file_digest(part[part["type"]])}
                   for part in messages[0]["content"]]
        raw = {"client": "transformers_qwen3_vl", "checkpoint": checkpoint, "dtype": self.dtype,
               "attn_implementation": self.attn_implementation, "decoding": self.decoding, "seed": self.seed,
               "top_logprobs": self.top_logprobs, "max_new_tokens": request.max_tokens,
               "num_completions": request.num_completions, "content": content}
        if any(part["type"] == "video" for part in content):
            raw["video_decoder"] = self.video_decoder
        return dict(CachingClient.make_cache_key(raw, request))

    def make_request(self, request: Request) -> RequestResult:
        """Generate (or serve from the cache) the completions of one request; a failure fails only this request."""
        try:
            messages = self.build_messages(request)
            cache_key = self.cache_key(request, messages)
        except (OSError, ValueError) as error:
            return failed_request(f"TransformersQwen3VLClient: cannot build the request: {error}")
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
            return failed_request(f"TransformersQwen3VLClient: {type(error).__name__} while running "
                                  f"{self.checkpoint} on {', '.join(media) or 'a text prompt'}: {error}")
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
        """What ``generate`` gets for ``messages`` (on the CPU), and the processor options the provenance records."""
        loaded = self.load()
        has_video = any(part["type"] == "video" for part in messages[0]["content"])
        processor_kwargs = {"cap_pixels_per_frame": loaded.cap_pixels_per_frame} \
            if has_video and loaded.cap_pixels_per_frame is not None else {}
        call_kwargs: dict[str, Any] = dict(processor_kwargs)  # a copy: transformers edits it
        if has_video and self.video_decoder == PYAV:  # decoded outside the model's lock
            from helm_roboreward.clients.pyav_decoder import decode_videos_with_pyav

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
        text = loaded.processor.batch_decode([generated], **DECODE)[0]
        special = set(tokenizer.all_special_ids)
        pieces = tokenizer.batch_decode([[i] for i in ids if i not in special], **DECODE)
        eos = loaded.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
        reason = "stop" if (ids and ids[-1] in eos_ids) or len(ids) < max_new_tokens else "length"
        result: dict[str, Any] = {"text": text, "tokens": pieces, "completion_tokens": len(ids), "reason": reason,
                                  "seed": seed if self.decoding == CHECKPOINT else None}
        if self.top_logprobs:
            from helm_roboreward.clients.logprobs import digit_token_logprobs

            result["token_logprobs"] = digit_token_logprobs(tokenizer, ids, text, output.logits, self.top_logprobs,
                                                            DECODE)
        return result

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
            # transformers 5.x keeps the template's own <|vision_start|>..<|vision_end|> around the per-frame blocks
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
        from helm_roboreward.clients.logprobs import record_generated_logprobs

        record_generated_logprobs(finish, generated, text)
    return GeneratedOutput(text=text, logprob=0.0, tokens=[Token(text=piece, logprob=0.0) for piece in
                                                           generated["tokens"]],
                           finish_reason=finish, thinking=Thinking(text=thinking) if thinking else None)


def _release_accelerator_memory() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()

