"""Which models their provider has retired, and which names are aliases: the one table for both (docs/data.md)."""

import datetime
import os
from typing import NamedTuple

ALLOW_RETIRED_VARIABLE = "ROBOREWARD_ALLOW_RETIRED"


class Retirement(NamedTuple):
    """A model its provider turned off: when, the model (``org/name``) to run instead, and the provider's page."""

    date: datetime.date
    successor: str
    source: str


RETIRED_MODELS: dict[str, Retirement] = {
    "google/gemini-robotics-er-1.6-preview": Retirement(
        datetime.date(2026, 8, 31), "google/gemini-robotics-er-2-preview",
        "https://ai.google.dev/gemini-api/docs/robotics-overview"),
    "google/gemini-3-pro-preview": Retirement(
        datetime.date(2026, 3, 9), "google/gemini-3.1-pro-preview",
        "https://ai.google.dev/gemini-api/docs/deprecations"),
}

ALIASES: dict[str, str] = {  # old name -> the model it now runs (same API id and settings)
    "openai/gpt-5.5": "openai/gpt-5.5-2026-04-23",
    "openai/gpt-5.5-xhigh": "openai/gpt-5.5-2026-04-23-xhigh-reasoning-effort",
}


def check_not_retired(model: str) -> None:
    """Stop a run naming a retired model before any request, with its successor (unless ROBOREWARD_ALLOW_RETIRED)."""
    retirement = RETIRED_MODELS.get(model)
    if retirement is not None and os.environ.get(ALLOW_RETIRED_VARIABLE, "").strip().lower() not in (
            "1", "true", "yes", "on"):
        from helm_roboreward.refusals import retired

        raise retired(model, retirement)
