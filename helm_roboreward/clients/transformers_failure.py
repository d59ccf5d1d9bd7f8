"""A failed generation of the in-process Qwen3-VL client as one failed request; imported only when one fails."""

from typing import Any

from helm.common.request import RequestResult

from helm_roboreward.clients.common import failed_request


def failed_generation(error: Exception, checkpoint: str, messages: list[dict[str, Any]]) -> RequestResult:
    """The failed request naming the error and the media; frees what the generation held (out of memory) first."""
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()  # for the next request
    media = [part[part["type"]] for part in messages[0]["content"] if part["type"] != "text"]
    return failed_request(f"TransformersQwen3VLClient: {type(error).__name__} while running "
                          f"{checkpoint} on {', '.join(media) or 'a text prompt'}: {error}")
