"""What the in-process Qwen3-VL client records with each generation about how it was made (docs/clients.md)."""

import importlib.metadata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from helm_roboreward.clients.transformers_client import LoadedModel, TransformersQwen3VLClient


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
