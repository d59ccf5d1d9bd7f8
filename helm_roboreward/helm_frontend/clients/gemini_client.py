"""Gemini with the whole prompt in one user message (``layout=one_message``, a named option; HELM's sends two).

Cached apart from HELM's client, and an unusable reply is one failed request, never cached (docs/clients.md,
"OneMessageGoogleGenAIClient").
"""

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from google.genai.types import Content, GenerateContentResponse
from helm.clients.google_genai_client import GoogleGenAIClient, GoogleGenAIContentBlockedError
from helm.common.cache import Cache, CacheConfig, MongoCacheConfig, SqliteCacheConfig
from helm.common.request import Request, RequestResult

from helm_roboreward.helm_frontend.clients.chat_replies import UnusableReplyError, failed_request

CACHE_SUFFIX = "-one-message"
_TIMES = ("request_time", "request_datetime")


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


class CheckedCache(Cache):
    """HELM's request cache that never stores (nor serves) a reply ``problem`` rejects: it raises instead.

    Args:
        config: HELM's cache configuration.
        problem: Why a response (as HELM would cache it) is unusable, or None.
    """

    def __init__(self, config: CacheConfig, problem: Callable[[Mapping[str, Any]], str | None]) -> None:
        super().__init__(config)
        self.problem = problem

    def get(self, request: Mapping[str, Any], compute: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], bool]:
        """HELM's ``Cache.get``; raises :class:`UnusableReplyError` before an unusable reply is written or used."""

        def checked() -> dict[str, Any]:
            try:
                response = compute()
            except ValueError as error:  # the SDK could not read the reply: not JSON, or a field of the wrong type
                raise UnusableReplyError(f"the server's reply cannot be read ({type(error).__name__}: "
                                         f"{str(error)[:300]})") from error
            problem = self.problem(response)
            if problem is not None:
                raise UnusableReplyError(f"the server's reply is unusable: {problem}")
            return response

        response, cached = super().get(request, checked)
        problem = self.problem(response) if cached else None
        if problem is not None:  # written before replies were checked
            raise UnusableReplyError(f"the cached reply is unusable: {problem}; it was cached before replies were "
                                     f"checked: remove the cache ({self.config}) to send the request again")
        return response, cached


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
        self.cache = CheckedCache(separate_cache_config(cache_config), self.reply_problem) \
            if cache_config is not None else None

    def reply_problem(self, response: Mapping[str, Any]) -> str | None:
        """Why a response (as HELM caches it) cannot become completions; None when usable or reported as blocked."""
        try:
            parsed = GenerateContentResponse.model_validate({k: v for k, v in response.items() if k not in _TIMES})
        except ValueError as error:
            return f"not a GenerateContentResponse ({str(error)[:300]})"
        if not parsed.candidates and not (parsed.prompt_feedback and parsed.prompt_feedback.block_reason):
            return "no candidates, and no prompt_feedback block reason"
        try:
            self._convert_generate_content_response_to_generated_outputs(parsed)
        except GoogleGenAIContentBlockedError:
            return None  # HELM's "Content blocked" failure
        except (AssertionError, AttributeError, TypeError, ValueError) as error:  # HELM asserts content and role
            detail = f": {error}" if str(error) else ""
            return f"a candidate cannot be read ({type(error).__name__}{detail}): no content, or not the model's"
        return None

    def make_request(self, request: Request) -> RequestResult:
        """HELM's request; an unusable reply is one failed request (non-fatal, non-retriable), never cached."""
        try:
            return super().make_request(request)
        except UnusableReplyError as error:
            return failed_request(f"{error}; not cached, a rerun sends the request again")

    def _convert_request_to_contents(self, request: Request) -> list[Content]:
        contents = super()._convert_request_to_contents(request)
        return merge_turns(contents) if request.multimodal_prompt is not None else contents
