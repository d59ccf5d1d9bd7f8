"""Gemini with the whole prompt in one user message (layout=one_message; docs/protocol.md, section 3).

HELM 0.5.16's ``GoogleGenAIClient`` turns every media object of a multimodal prompt into its own
user turn, so the RoboReward prompt reaches Gemini as two user messages (the text, then the
video): that is how every official Gemini number was measured, and the default here. This
subclass, a named departure, sends the same parts, in the same order, as one user message; everything
else (API key or Vertex AI settings, thinking config, safety handling, parsing of the answer and of
the thoughts) is HELM's client.

Its answers are cached apart from HELM's client (a ``-one-message`` cache next to ``google``'s):
the cache key holds the prompt and the model, not the message layout, so sharing the cache would
hand out answers to the other layout.

The package registers a twin of every HELM Gemini deployment using this client
(:func:`helm_roboreward.helm_layer.model_registry.register_variant_twins`); ``roboreward`` runs use it only when
the run entry says ``layout=one_message`` or names the twin (``model_deployment=google/<model>-one-message``).
"""

import dataclasses
from typing import Any

from google.genai.types import Content
from helm.clients.google_genai_client import GoogleGenAIClient
from helm.common.cache import Cache, CacheConfig, MongoCacheConfig, SqliteCacheConfig
from helm.common.request import Request

CACHE_SUFFIX = "-one-message"


def separate_cache_config(cache_config: CacheConfig) -> CacheConfig:
    """The same kind of cache as ``cache_config``, under another file or collection name."""
    if isinstance(cache_config, SqliteCacheConfig):
        path = cache_config.path
        stem, dot, extension = path.rpartition(".")
        return SqliteCacheConfig(f"{stem}{CACHE_SUFFIX}.{extension}" if dot else path + CACHE_SUFFIX)
    if isinstance(cache_config, MongoCacheConfig):
        return dataclasses.replace(cache_config, collection_name=cache_config.collection_name + CACHE_SUFFIX)
    return cache_config  # no cache at all (black hole): nothing to keep apart


def merge_turns(contents: list[Content]) -> list[Content]:
    """Consecutive contents of the same role joined into one, parts in order."""
    merged: list[Content] = []
    for content in contents:
        if merged and merged[-1].role == content.role:
            merged[-1] = Content(role=content.role, parts=list(merged[-1].parts or []) + list(content.parts or []))
        else:
            merged.append(content)
    return merged


class OneMessageGoogleGenAIClient(GoogleGenAIClient):
    """HELM's Gemini client, sending a multimodal prompt as one user message."""

    def __init__(
        self,
        cache_config: CacheConfig,
        api_key: str | None = None,
        project_id: str | None = None,
        location: str | None = None,
        thinking_config: dict[str, Any] | None = None,
        genai_model: str | None = None,
        genai_use_vertexai: bool | None = None,
    ) -> None:
        # The explicit signature matters: HELM injects api_key, project_id and location by parameter name.
        super().__init__(
            cache_config=cache_config,
            api_key=api_key,
            project_id=project_id,
            location=location,
            thinking_config=thinking_config,
            genai_model=genai_model,
            genai_use_vertexai=genai_use_vertexai,
        )
        self.cache = Cache(separate_cache_config(cache_config)) if cache_config is not None else None

    def _convert_request_to_contents(self, request: Request) -> list[Content]:
        contents = super()._convert_request_to_contents(request)
        return merge_turns(contents) if request.multimodal_prompt is not None else contents
