"""Loopback fakes of the services RoboRewardBench talks to, for offline tests of the real client libraries.

- :mod:`.server`: :class:`FakeModelServer`, one HTTP server on ``127.0.0.1`` speaking every model API below;
- one module per provider API, each with its request parsing and reply rendering: :mod:`.openai_chat`
  (vLLM / OpenAI-compatible chat completions), :mod:`.openai_responses` (OpenAI Responses),
  :mod:`.anthropic_messages` (Anthropic Messages), :mod:`.gemini` (Gemini ``generateContent``);
- :mod:`.exchange`: what they share (:class:`Recorded`, :class:`Reply`, :class:`Part`, behaviours);
- :mod:`.hf_hub`: the Hugging Face Hub's HTTP API serving local folders as repositories;
- :mod:`.silent`: a server that accepts connections and never answers (time limits).
"""

from tests.helpers.fakes.anthropic_messages import MESSAGES
from tests.helpers.fakes.exchange import (
    Behaviour,
    FailFirst,
    Part,
    Recorded,
    Reply,
    b64decode,
    constant,
    decode_data_url,
)
from tests.helpers.fakes.gemini import GEMINI, gemini_inline
from tests.helpers.fakes.openai_chat import CHAT, MODELS
from tests.helpers.fakes.openai_responses import RESPONSES
from tests.helpers.fakes.server import (
    UNKNOWN,
    FakeModelServer,
    api_of,
    media_parts,
    unused_port,
    user_messages,
    without_media_payloads,
)

__all__ = [
    "CHAT",
    "GEMINI",
    "MESSAGES",
    "MODELS",
    "RESPONSES",
    "UNKNOWN",
    "Behaviour",
    "FailFirst",
    "FakeModelServer",
    "Part",
    "Recorded",
    "Reply",
    "api_of",
    "b64decode",
    "constant",
    "decode_data_url",
    "gemini_inline",
    "media_parts",
    "unused_port",
    "user_messages",
    "without_media_payloads",
]
