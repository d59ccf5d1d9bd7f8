"""Token prices for ``roboreward estimate --prices FILE``: a small YAML the user writes (no built-in prices).

Format (USD per million tokens, one entry per model name)::

    openai/gpt-5-mini-2025-08-07:
      input: 0.25
      output: 2.00
    anthropic/claude-sonnet-4-5-20250929: {input: 3.00, output: 15.00}

Every model of the estimate must have an entry; prices change, so copy them from the provider's page.
"""

import math
from dataclasses import dataclass

import yaml


class PriceError(ValueError):
    """A price file that cannot be used; the message names the file, the entry and the fix."""


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input_per_million: float
    output_per_million: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """USD for these token counts."""
        return (input_tokens * self.input_per_million + output_tokens * self.output_per_million) / 1_000_000


_EXAMPLE = "e.g.\n  openai/gpt-5-mini-2025-08-07: {input: 0.25, output: 2.00}"


def _number(path: str, model: str, key: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise PriceError(f"{path}: {model}: {key}: {value!r} must be a number >= 0 (USD per million tokens)")
    return float(value)


def read_prices(path: str) -> dict[str, Price]:
    """The prices of a file, by model name.

    Raises:
        PriceError: The file is missing, not YAML, or an entry lacks a number for ``input`` or ``output``.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            content = yaml.safe_load(handle)
    except FileNotFoundError:
        raise PriceError(f"--prices {path}: no such file; write one with USD per million tokens per model, "
                         f"{_EXAMPLE}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise PriceError(f"--prices {path}: cannot read it ({error})") from None
    except yaml.YAMLError as error:
        raise PriceError(f"--prices {path}: not valid YAML ({' '.join(str(error).split())})") from None
    if not isinstance(content, dict) or not content:
        raise PriceError(f"--prices {path}: expected a mapping of model names to their prices, {_EXAMPLE}")
    prices = {}
    for model, entry in content.items():
        if not isinstance(entry, dict) or set(entry) - {"input", "output"} or not {"input", "output"} <= set(entry):
            raise PriceError(f"--prices {path}: {model}: expected exactly 'input' and 'output' (USD per million "
                             f"tokens), {_EXAMPLE}")
        prices[str(model)] = Price(_number(path, str(model), "input", entry["input"]),
                                   _number(path, str(model), "output", entry["output"]))
    return prices


def price_of(prices: dict[str, Price], model: str, path: str) -> Price:
    """The price of one model.

    Raises:
        PriceError: The file has no entry for it (the message says what to add).
    """
    if model not in prices:
        raise PriceError(f"--prices {path}: no price for {model}; add '{model}: {{input: <USD per million "
                         "tokens>, output: <USD per million tokens>}' (from the provider's price page), or leave "
                         "the model out of the estimate")
    return prices[model]
