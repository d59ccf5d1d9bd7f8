"""Offline reference models: a constant and a seeded uniform score, honest non-learned baselines, not real models."""

import hashlib
import os
import time

from helm.clients.client import Client
from helm.common.request import GeneratedOutput, Request, RequestResult, Token

from helm_roboreward.protocol.rules import MAX_SCORE, MIN_SCORE


def request_fingerprint(request: Request) -> str:
    """A digest of what the request shows a model: its text and media identities (not their folders)."""
    if request.multimodal_prompt is None:
        return hashlib.sha256(request.prompt.encode("utf-8")).hexdigest()
    parts = [media.text or "" if media.is_type("text") else f"{media.content_type}:"
             f"{os.path.basename(os.path.dirname(media.location or ''))}/{os.path.basename(media.location or '')}"
             for media in request.multimodal_prompt.media_objects]
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


class _ScoreClient(Client):
    """Answers ``ANSWER: <score>`` without looking at the media.

    Not through HELM's request cache: the answer is a function of the request, made in microseconds, while a cached
    request opens HELM's SQLite store anew (about 1.3 ms, about 40% of a leaderboard-sized helm-run: docs/clients.md).
    """

    def _answer(self, request: Request) -> int:
        raise NotImplementedError

    def make_request(self, request: Request) -> RequestResult:
        """Answer ``ANSWER: <score>`` for every completion asked."""
        started = time.time()
        text = f"ANSWER: {self._answer(request)}"
        completions = [GeneratedOutput(text, 0.0, [Token(text, 0.0)]) for _ in range(request.num_completions)]
        return RequestResult(success=True, cached=False, request_time=time.time() - started,
                             request_datetime=int(started), completions=completions, embedding=[])


class ConstantScoreClient(_ScoreClient):
    """Always answers the same progress score (``score``, 1..5)."""

    def __init__(self, score: int = 3) -> None:
        if not MIN_SCORE <= int(score) <= MAX_SCORE:
            raise ValueError(f"ConstantScoreClient: score must be in {MIN_SCORE}..{MAX_SCORE}, got {score!r}")
        self.score = int(score)

    def _answer(self, request: Request) -> int:
        return self.score


class RandomScoreClient(_ScoreClient):
    """A uniformly random score, seeded by ``seed`` and the request's content: the same request, the same answer."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = int(seed)

    def _answer(self, request: Request) -> int:
        digest = hashlib.sha256(f"{self.seed}:{request_fingerprint(request)}".encode()).digest()
        return MIN_SCORE + int.from_bytes(digest[:8], "big") % (MAX_SCORE - MIN_SCORE + 1)
