"""A time limit on every request to the Hugging Face hub (``data=hf``, ``import-lerobot``, ``label``, pushes).

huggingface_hub (2.x) sends its API calls (repository info, create, pre-upload, commit) through one shared HTTP
client made with no time limit; only file downloads pass their own (``HF_HUB_DOWNLOAD_TIMEOUT``,
``HF_HUB_ETAG_TIMEOUT``). A hub endpoint that accepts the connection and never answers would hang the command.
:func:`limit_hub_requests` gives that client a limit of ``ROBOREWARD_HUB_TIMEOUT`` seconds (default
:data:`DEFAULT_HUB_TIMEOUT`) to connect and for each read or write (not for a whole transfer: a large upload may
take longer). huggingface_hub retries a timed-out call a few times with a backoff, so a silent hub fails after a
bounded time: about 6 limits plus 25 s of backoff.
"""

import math
import os

HUB_TIMEOUT_VARIABLE = "ROBOREWARD_HUB_TIMEOUT"
DEFAULT_HUB_TIMEOUT = 60.0


def hub_timeout() -> float:
    """The limit in seconds (``ROBOREWARD_HUB_TIMEOUT``, default :data:`DEFAULT_HUB_TIMEOUT`).

    Raises:
        ValueError: The variable is set to something other than a positive number of seconds.
    """
    text = os.environ.get(HUB_TIMEOUT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_HUB_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{HUB_TIMEOUT_VARIABLE}={text!r}: give a number of seconds > 0 (default "
                         f"{DEFAULT_HUB_TIMEOUT:g})")
    return seconds


def limit_hub_requests() -> float:
    """Set the limit on huggingface_hub's shared client (this process); returns it in seconds."""
    from huggingface_hub import get_session

    seconds = hub_timeout()
    get_session().timeout = seconds  # httpx turns a number into its Timeout
    return seconds
