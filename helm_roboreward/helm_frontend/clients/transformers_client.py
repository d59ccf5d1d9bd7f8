"""Qwen3-VL and RoboReward in the HELM process, as the official run: the authors' client, reimplemented."""

import contextlib
import hashlib
import importlib.metadata
import json
import os
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from helm.clients.client import CachingClient
from helm.common.cache import CacheConfig
from helm.common.request import GeneratedOutput, Request, RequestResult, Token, wrap_request_time
from helm.proxy.retry import NonRetriableException

from helm_roboreward.helm_frontend.clients.chat_replies import (
    check_top_logprobs,
    completion,
    failed_request,
    media_parts,
    succeeded,
)
from helm_roboreward.helm_frontend.clients.logprobs import digit_token_logprobs, record_generated_logprobs
from helm_roboreward.helm_frontend.clients.pyav_decoder import PYAV, decode_videos_with_pyav
from helm_roboreward.protocol.rules import CHECKPOINT, GREEDY
from helm_roboreward.protocol.safe_files import file_digest

DTYPES = ("auto", "bfloat16", "float16", "float32")
MODEL_CLASSES = {"qwen3_vl": "Qwen3VLForConditionalGeneration", "qwen3_vl_moe": "Qwen3VLMoeForConditionalGeneration"}
CHAT_TEMPLATE_FALLBACK = "Qwen/Qwen3-VL-4B-Instruct"  # for a checkpoint without one, as in the official client
DECODE = {"skip_special_tokens": True, "clean_up_tokenization_spaces": False}  # as in the official client


class TransformersClientError(NonRetriableException):
    """A problem that makes every request fail (checkpoint, model type, video decoder): raised, never retried."""


@dataclass
class LoadedModel:
    """One checkpoint in memory, shared by every client and request thread of the process."""

    model: Any
    processor: Any
    video_kwargs: dict[str, Any]  # what the processor gets with a video ({}: the checkpoint decides)
    lock: threading.Lock = field(default_factory=threading.Lock)  # one model on one device: one request at a time


_LOCK = threading.Lock()  # HELM builds one client per request thread at once; transformers' lazy imports are unsafe
_LOADED: dict[str, "LoadedModel | TransformersClientError"] = {}  # a failed load is remembered, never retried
_SAMPLING_LOCK = threading.Lock()  # torch's RNG is process-wide: no other model's sampling between seed and draw


class TransformersQwen3VLClient(CachingClient):
    """Qwen3-VL / RoboReward in this process with Hugging Face transformers, as the official RoboRewardBench run."""

    def __init__(self, cache_config: CacheConfig, checkpoint: str, revision: str | None = None,
                 decoding: str = CHECKPOINT, dtype: str = "auto", device_map: str | None = "auto",
                 attn_implementation: str | None = None, seed: int = 0, top_logprobs: int = 0,
                 video_decoder: str = "auto") -> None:
        """Check the arguments (ValueError), the checkpoint's config and the machine (TransformersClientError)."""
        super().__init__(cache_config=cache_config)
        for name, value, allowed in (("decoding", decoding, (CHECKPOINT, GREEDY)), ("dtype", dtype, DTYPES)):
            if value not in allowed:
                raise ValueError(f"TransformersQwen3VLClient: {name} must be one of {allowed}, got {value!r}")
        self.top_logprobs = check_top_logprobs(top_logprobs, "TransformersQwen3VLClient: ")
        import torch

        self.local = os.path.isdir(checkpoint) or os.path.isabs(checkpoint) or checkpoint.startswith((".", "~"))
        self.checkpoint = os.path.abspath(os.path.expanduser(checkpoint)) if self.local else checkpoint
        self.revision, self.decoding, self.seed = revision, decoding, int(seed)
        self.attn_implementation = attn_implementation
        cuda = torch.cuda.is_available()
        self.dtype = ("bfloat16" if cuda else "float32") if dtype == "auto" else dtype
        self.device_map = device_map if cuda else None
        where = f"checkpoint {self.checkpoint!r}" + (f" (revision {revision})" if revision else "")
        self.checkpoint_files: dict[str, Any] | None = None  # a local checkpoint's files, as the cache key holds them
        with _LOCK:
            self.video_decoder, self.video_decoder_version = check_environment(video_decoder, self.device_map)
            if self.local:
                self.checkpoint_files = checked_fingerprint(self.checkpoint, where)
            from transformers import AutoConfig

            try:
                config = AutoConfig.from_pretrained(self.checkpoint, revision=revision)
            except (OSError, ValueError) as error:
                raise TransformersClientError(f"TransformersQwen3VLClient: cannot read the config of {where}: "
                                              f"{error}") from error
        if config.model_type not in MODEL_CLASSES:
            raise TransformersClientError(
                f"TransformersQwen3VLClient: {where} has model_type {config.model_type!r}; this client runs "
                f"{' and '.join(MODEL_CLASSES)} (Qwen3-VL, RoboReward) only.")
        self.model_class, self.commit = MODEL_CLASSES[config.model_type], getattr(config, "_commit_hash", None)
        self.registry_key = json.dumps([self.checkpoint, revision, self.commit, self.checkpoint_files, self.dtype,
                                        self.device_map, attn_implementation])  # same files and settings: one load

    def load(self) -> LoadedModel:
        """The model and processor, loaded on first use and shared process-wide (TransformersClientError: cannot)."""
        with _LOCK:
            if self.registry_key not in _LOADED:
                try:
                    _LOADED[self.registry_key] = self._load_checkpoint()
                except TransformersClientError as error:  # every waiting request thread fails at once
                    _LOADED[self.registry_key] = error
            loaded = _LOADED[self.registry_key]
        if isinstance(loaded, TransformersClientError):
            raise loaded
        return loaded

    def _load_checkpoint(self) -> LoadedModel:
        import torch
        import transformers

        options = {"revision": self.revision, "device_map": self.device_map,
                   "attn_implementation": self.attn_implementation}
        try:
            model = getattr(transformers, self.model_class).from_pretrained(
                self.checkpoint, dtype=getattr(torch, self.dtype), **{k: v for k, v in options.items() if v}).eval()
            processor = transformers.AutoProcessor.from_pretrained(self.checkpoint, revision=self.revision)
            if getattr(processor, "chat_template", None) is None:
                processor.chat_template = transformers.AutoProcessor.from_pretrained(
                    CHAT_TEMPLATE_FALLBACK).chat_template
        except (OSError, ValueError, ImportError, RuntimeError) as error:
            raise TransformersClientError(f"TransformersQwen3VLClient: cannot load {self.model_class} from "
                                          f"{self.checkpoint!r}: {error}") from error
        if torch.cuda.is_available() and not self.device_map:
            model = model.to("cuda")
        # transformers 5.x asks whether to cap per-frame pixels; the official run's 4.57 had no cap.
        unset = getattr(getattr(processor, "video_processor", None), "cap_pixels_per_frame", 0) is None
        return LoadedModel(model, processor, {"cap_pixels_per_frame": False} if unset else {})

    def build_messages(self, request: Request) -> list[dict[str, Any]]:
        """One user message, the prompt's parts in order (ValueError: a part neither text, video nor image)."""
        if request.multimodal_prompt is None:
            return [{"role": "user", "content": [{"type": "text", "text": request.prompt}]}]
        return [{"role": "user", "content": [
            {"type": "text", "text": media.text or ""} if kind == "text" else {"type": kind, kind: media.location}
            for kind, media in media_parts(request, "TransformersQwen3VLClient")]}]

    def cache_key(self, request: Request, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """HELM's cache key: everything that decides the answer, media by SHA-256, never by path (docs/clients.md)."""
        checkpoint = {"path": self.checkpoint, "files": self.checkpoint_files} if self.local else \
            {"id": self.checkpoint, "revision": self.revision, "commit": self.commit}
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
        digest = hashlib.sha256(json.dumps(cache_key["content"], sort_keys=True).encode()).hexdigest()
        try:
            response, cached = self.cache.get(cache_key, wrap_request_time(
                lambda: self._generate(messages, request, digest)))
        except (RuntimeError, ValueError, TypeError, OSError) as error:
            return failed_generation(error, self.checkpoint, messages)
        return succeeded(response, cached, [completion_from(generated, response) for generated in
                                            response["completions"]])

    def processor_inputs(self, messages: list[dict[str, Any]]) -> tuple[Any, dict[str, Any]]:
        """What ``generate`` gets for ``messages`` (on the CPU), and the processor options the provenance records."""
        loaded = self.load()
        has_video = any(part["type"] == "video" for part in messages[0]["content"])
        processor_kwargs = dict(loaded.video_kwargs) if has_video else {}
        call_kwargs: dict[str, Any] = dict(processor_kwargs)  # a copy: transformers edits it
        if has_video and self.video_decoder == "pyav":  # decoded outside the model's lock
            messages = decode_videos_with_pyav(messages, loaded.processor.video_processor, call_kwargs)
        with loaded.lock:
            inputs = loaded.processor.apply_chat_template(
                messages, tokenize=True, add_generation_prompt=True, return_dict=True, return_tensors="pt",
                **({"processor_kwargs": call_kwargs} if call_kwargs else {}))
        return inputs, processor_kwargs

    def _generate(self, messages: list[dict[str, Any]], request: Request, content_digest: str) -> dict[str, Any]:
        inputs, processor_kwargs = self.processor_inputs(messages)
        loaded = self.load()
        seeds = [int.from_bytes(hashlib.sha256(f"{self.seed}:{content_digest}:{index}".encode()).digest()[:8], "big")
                 >> 1 for index in range(max(request.num_completions, 1))]  # a rerun draws the same samples
        with loaded.lock:
            inputs = inputs.to(loaded.model.device)
            completions = [self._generate_one(loaded, inputs, request.max_tokens, seed) for seed in seeds]

        return {"prompt_tokens": int(inputs["input_ids"].shape[1]), "completions": completions,
                "provenance": generation_provenance(self, loaded, inputs, processor_kwargs)}

    def _generate_one(self, loaded: LoadedModel, inputs: Any, max_new_tokens: int, seed: int) -> dict[str, Any]:
        import torch

        options: dict[str, Any] = {"max_new_tokens": max_new_tokens}  # checkpoint: its own generation config
        if self.decoding == GREEDY:
            options.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if self.top_logprobs:
            options.update(return_dict_in_generate=True, output_logits=True)
        sampling = self.decoding == CHECKPOINT
        with torch.inference_mode(), _SAMPLING_LOCK if sampling else contextlib.nullcontext():
            if sampling:
                torch.manual_seed(seed)
            output = loaded.model.generate(**inputs, **options)
        generated = (output.sequences if self.top_logprobs else output)[0, inputs["input_ids"].shape[1]:]
        ids: list[int] = generated.tolist()
        tokenizer = loaded.processor.tokenizer
        text = loaded.processor.batch_decode([generated], **DECODE)[0]
        special, eos = set(tokenizer.all_special_ids), loaded.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
        result: dict[str, Any] = {
            "text": text, "tokens": tokenizer.batch_decode([[i] for i in ids if i not in special], **DECODE),
            "completion_tokens": len(ids),
            "reason": "stop" if (ids and ids[-1] in eos_ids) or len(ids) < max_new_tokens else "length",
            "seed": seed if sampling else None}
        if self.top_logprobs:
            result["token_logprobs"] = digit_token_logprobs(tokenizer, ids, text, output.logits, self.top_logprobs,
                                                            DECODE)
        return result


def completion_from(generated: dict[str, Any], response: dict[str, Any]) -> GeneratedOutput:
    """A HELM completion from one cached generation: the answer, the reasoning apart, usage and provenance."""
    finish = {"reason": generated["reason"], "prompt_tokens": response["prompt_tokens"],
              "completion_tokens": generated["completion_tokens"], "seed": generated.get("seed"),
              **response.get("provenance", {})}
    output = completion(generated["text"], finish, [Token(text=piece, logprob=0.0) for piece in generated["tokens"]])
    if "token_logprobs" in generated:
        record_generated_logprobs(finish, generated, output.text)  # into the completion's finish_reason
    return output


AUTO, TORCHCODEC = "auto", "torchcodec"
VIDEO_DECODERS = (AUTO, TORCHCODEC, PYAV)
INSTALL_HINT = ('pip install ".[transformers]" from a checkout (or pip install "transformers>=4.57,<6" '
                "torchcodec accelerate)")
FFMPEG_HINT = "FFmpeg's shared libraries, which torchcodec loads (Debian/Ubuntu: apt-get install ffmpeg)"


def torchcodec_usable() -> bool:
    """Whether torchcodec is installed and loads FFmpeg, i.e. transformers' processor can decode a video path."""
    transformers_utils: object = None
    try:
        from transformers import utils as transformers_utils
    except ImportError:
        pass
    # transformers' own check where it has one (read by name: earlier versions, e.g. 4.57, the official run's,
    # have none): else import torchcodec
    is_torchcodec_usable = getattr(transformers_utils, "is_torchcodec_usable", None)
    if is_torchcodec_usable is None:
        try:
            import torchcodec
            from torchcodec.decoders import VideoDecoder  # noqa: F401  (fails without FFmpeg before torchcodec 0.16)
        except Exception:  # torchcodec raises RuntimeError or OSError when its libraries do not load
            return False
        return getattr(torchcodec, "ffmpeg_major_version", 0) is not None
    return bool(is_torchcodec_usable("video"))


def check_environment(video_decoder: str, device_map: str | None) -> tuple[str, str]:
    """The decoder that runs for ``video_decoder`` (``auto``: torchcodec where it loads) and its version.

    Called under the client's lock: transformers' lazy modules are not safe to import from several threads at once.

    Raises:
        ValueError: ``video_decoder`` is not one of :data:`VIDEO_DECODERS`.
        TransformersClientError: ``torchcodec`` was asked for and cannot load, or ``device_map`` needs accelerate.
    """
    if video_decoder not in VIDEO_DECODERS:
        raise ValueError(f"TransformersQwen3VLClient: video_decoder must be one of {VIDEO_DECODERS}, got "
                         f"{video_decoder!r}")
    if video_decoder == PYAV or not torchcodec_usable():
        if video_decoder == TORCHCODEC:
            raise TransformersClientError(
                "TransformersQwen3VLClient: video_decoder='torchcodec', but torchcodec is not installed or cannot "
                f"load FFmpeg. Install: {INSTALL_HINT} and {FFMPEG_HINT}; or use video_decoder='auto' (PyAV where "
                "torchcodec cannot load).")
        chosen = PYAV, importlib.metadata.version("av")
    else:
        chosen = TORCHCODEC, importlib.metadata.version("torchcodec")
    import transformers.video_utils  # noqa: F401  (what the PyAV route reads)

    if device_map:
        from transformers.utils import is_accelerate_available

        if not is_accelerate_available():
            raise TransformersClientError(f"device_map={device_map!r} needs accelerate. Install: {INSTALL_HINT}.")
    return chosen


DIGESTED_FILE_BYTES = 64 * 1024 * 1024
"""Files up to this size enter by SHA-256, larger ones (weight shards: minutes to hash) by size and mtime."""


def checked_fingerprint(folder: str, where: str) -> dict[str, Any]:
    """:func:`checkpoint_fingerprint`; TransformersClientError when ``folder`` (``where``) holds no config.json."""
    if not os.path.isfile(os.path.join(folder, "config.json")):
        raise TransformersClientError(
            f"TransformersQwen3VLClient: the folder of {where} "
            f"{'has no config.json' if os.path.isdir(folder) else 'does not exist'}. Point `checkpoint` at a folder "
            "written by save_pretrained, or give a hub id such as teetone/RoboReward-8B.")
    return checkpoint_fingerprint(folder)


def checkpoint_fingerprint(folder: str) -> dict[str, Any]:
    """Every file under ``folder`` (dot names skipped) by relative path: its SHA-256 or ``[size, mtime_ns]``."""
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


def failed_generation(error: Exception, checkpoint: str, messages: list[dict[str, Any]]) -> RequestResult:
    """The failed request naming the error and the media; frees what the generation held (out of memory) first."""
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()  # for the next request
    media = [part[part["type"]] for part in messages[0]["content"] if part["type"] != "text"]
    return failed_request(f"TransformersQwen3VLClient: {type(error).__name__} while running "
                          f"{checkpoint} on {', '.join(media) or 'a text prompt'}: {error}")


if TYPE_CHECKING:
    from helm_roboreward.helm_frontend.clients.transformers_client import LoadedModel, TransformersQwen3VLClient


def generation_provenance(client: "TransformersQwen3VLClient", loaded: "LoadedModel", inputs: Any,
                          processor_kwargs: dict[str, Any]) -> dict[str, Any]:
    """The checkpoint, versions, decoder and the video tokens the model saw (cached with the completions)."""
    import torch

    config, ids = loaded.model.config, inputs["input_ids"][0].tolist()
    grids = inputs["video_grid_thw"].tolist() if "video_grid_thw" in inputs else []
    images = len(inputs["image_grid_thw"]) if "image_grid_thw" in inputs else 0
    frame_groups = sum(int(t) for t, _, _ in grids)
    return {
        "checkpoint": client.checkpoint, "revision": client.revision, "checkpoint_commit": client.commit,
        "model_class": client.model_class, "dtype": client.dtype, "device": str(loaded.model.device),
        "attn_implementation": getattr(config, "_attn_implementation", None), "decoding": client.decoding,
        "transformers_version": importlib.metadata.version("transformers"), "torch_version": torch.__version__,
        "video_decoder": client.video_decoder if grids else None,
        "video_decoder_version": client.video_decoder_version if grids else None,
        "video_frames": frame_groups * int(getattr(loaded.processor.video_processor, "temporal_patch_size", 2)),
        "video_grid_thw": grids, "video_tokens": ids.count(config.video_token_id),
        "image_tokens": ids.count(config.image_token_id), "images": images,
        # transformers 5.x keeps the template's own <|vision_start|>..<|vision_end|> around the per-frame blocks
        "nested_video_wrapper": ids.count(config.vision_start_token_id) > frame_groups + images,
        "processor_kwargs": processor_kwargs}
