"""Offline reference models: honest non-learned baselines (a constant and a seeded uniform score), not real models.

Both answer ``ANSWER: <k>`` without looking at the media, through HELM's request cache (docs/clients.md, "Baselines").
"""

import hashlib
import os
from typing import Any

from helm.clients.client import CachingClient
from helm.common.cache import CacheConfig
from helm.common.media_object import TEXT_TYPE
from helm.common.request import GeneratedOutput, Request, RequestResult, Token, wrap_request_time

from helm_roboreward.protocol import MAX_SCORE, MIN_SCORE


def request_fingerprint(request: Request) -> str:
    """A digest of what the request shows a model: its text and media identities (not their folders)."""
    parts: list[str] = []
    if request.multimodal_prompt is not None:
        for media in request.multimodal_prompt.media_objects:
            if media.is_type(TEXT_TYPE):
                parts.append(media.text or "")
            else:
                location = media.location or ""
                parts.append(f"{media.content_type}:{os.path.basename(os.path.dirname(location))}/"
                             f"{os.path.basename(location)}")
    else:
        parts.append(request.prompt)
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


class _ScoreClient(CachingClient):
    """Shared plumbing: cache lookup and the HELM result for a one-line answer."""

    def _answer(self, request: Request) -> int:
        raise NotImplementedError

    def _identity(self) -> dict[str, Any]:
        raise NotImplementedError

    def make_request(self, request: Request) -> RequestResult:
        """Answer ``ANSWER: <score>`` for every completion asked."""
        raw_request = {**self._identity(), "prompt": request_fingerprint(request), "n": request.num_completions}

        def compute() -> dict[str, Any]:
            score = self._answer(request)
            return {"completions": [f"ANSWER: {score}"] * request.num_completions}

        cache_key = CachingClient.make_cache_key(raw_request, request)
        response, cached = self.cache.get(cache_key, wrap_request_time(compute))
        completions = [
            GeneratedOutput(text=text, logprob=0.0, tokens=[Token(text=text, logprob=0.0)])
            for text in response["completions"]
        ]
        return RequestResult(
            success=True,
            cached=cached,
            request_time=response["request_time"],
            request_datetime=response.get("request_datetime"),
            completions=completions,
            embedding=[],
        )


class ConstantScoreClient(_ScoreClient):
    """Always answers the same progress score."""

    def __init__(self, cache_config: CacheConfig, score: int = 3) -> None:
        """Args: score: The answer, 1..5."""
        super().__init__(cache_config=cache_config)
        if not MIN_SCORE <= int(score) <= MAX_SCORE:
            raise ValueError(f"ConstantScoreClient: score must be in {MIN_SCORE}..{MAX_SCORE}, got {score!r}")
        self.score = int(score)

    def _identity(self) -> dict[str, Any]:
        return {"baseline": "constant", "score": self.score}

    def _answer(self, request: Request) -> int:
        return self.score


class RandomScoreClient(_ScoreClient):
    """Answers a uniformly random score, seeded by ``seed`` and the request content."""

    def __init__(self, cache_config: CacheConfig, seed: int = 0) -> None:
        """Args: seed: Changes every answer; the same seed and request always give the same answer."""
        super().__init__(cache_config=cache_config)
        self.seed = int(seed)

    def _identity(self) -> dict[str, Any]:
        return {"baseline": "uniform_random", "seed": self.seed}

    def _answer(self, request: Request) -> int:
        digest = hashlib.sha256(f"{self.seed}:{request_fingerprint(request)}".encode()).digest()
        return MIN_SCORE + int.from_bytes(digest[:8], "big") % (MAX_SCORE - MIN_SCORE + 1)
