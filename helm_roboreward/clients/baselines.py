"""Offline reference models: a constant and a seeded uniform score, honest non-learned baselines, not real models."""

import hashlib
import os
from typing import Any

from helm.clients.client import CachingClient
from helm.common.cache import CacheConfig
from helm.common.request import GeneratedOutput, Request, RequestResult, Token, wrap_request_time

from helm_roboreward.protocol import MAX_SCORE, MIN_SCORE


def request_fingerprint(request: Request) -> str:
    """A digest of what the request shows a model: its text and media identities (not their folders)."""
    if request.multimodal_prompt is None:
        return hashlib.sha256(request.prompt.encode("utf-8")).hexdigest()
    parts = [media.text or "" if media.is_type("text") else f"{media.content_type}:"
             f"{os.path.basename(os.path.dirname(media.location or ''))}/{os.path.basename(media.location or '')}"
             for media in request.multimodal_prompt.media_objects]
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


class _ScoreClient(CachingClient):
    """Answers ``ANSWER: <score>`` without looking at the media, through HELM's request cache."""

    identity: dict[str, Any]  # what the cache key holds of the client

    def _answer(self, request: Request) -> int:
        raise NotImplementedError

    def make_request(self, request: Request) -> RequestResult:
        """Answer ``ANSWER: <score>`` for every completion asked."""
        key = {**self.identity, "prompt": request_fingerprint(request), "n": request.num_completions}
        response, cached = self.cache.get(CachingClient.make_cache_key(key, request), wrap_request_time(
            lambda: {"completions": [f"ANSWER: {self._answer(request)}"] * request.num_completions}))
        completions = [GeneratedOutput(text, 0.0, [Token(text, 0.0)]) for text in response["completions"]]
        return RequestResult(success=True, cached=cached, request_time=response["request_time"],
                             request_datetime=response.get("request_datetime"), completions=completions, embedding=[])


class ConstantScoreClient(_ScoreClient):
    """Always answers the same progress score (``score``, 1..5)."""

    def __init__(self, cache_config: CacheConfig, score: int = 3) -> None:
        super().__init__(cache_config=cache_config)
        if not MIN_SCORE <= int(score) <= MAX_SCORE:
            raise ValueError(f"ConstantScoreClient: score must be in {MIN_SCORE}..{MAX_SCORE}, got {score!r}")
        self.score = int(score)
        self.identity = {"baseline": "constant", "score": self.score}

    def _answer(self, request: Request) -> int:
        return self.score


class RandomScoreClient(_ScoreClient):
    """A uniformly random score, seeded by ``seed`` and the request's content: the same request, the same answer."""

    def __init__(self, cache_config: CacheConfig, seed: int = 0) -> None:
        super().__init__(cache_config=cache_config)
        self.seed = int(seed)
        self.identity = {"baseline": "uniform_random", "seed": self.seed}

    def _answer(self, request: Request) -> int:
        digest = hashlib.sha256(f"{self.seed}:{request_fingerprint(request)}".encode()).digest()
        return MIN_SCORE + int.from_bytes(digest[:8], "big") % (MAX_SCORE - MIN_SCORE + 1)
