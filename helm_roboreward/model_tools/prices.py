"""Token prices for ``roboreward estimate --prices FILE``: a small YAML the user writes (no built-in prices).

Format (USD per million tokens, one entry per model name)::

    openai/gpt-5-mini-2025-08-07:
      input: 0.25
      output: 2.00
    anthropic/claude-sonnet-4-5-20250929: {input: 3.00, output: 15.00}

Every model of the estimate must have an entry; prices change, so copy them from the provider's page. A model
(or ``input`` / ``output``) written twice is refused, never "the last one wins"; numbers may use an exponent
(``1e3``, ``2.5e-1``: YAML 1.1 would read ``1e3`` as text); a price must be finite, >= 0 and at most
:data:`MAX_PRICE` (above it a cost would be nonsense, and ``1.7e+308`` would print ``inf``).
"""

import re
from dataclasses import dataclass
from typing import Any

import yaml

MAX_PRICE = 1_000_000.0
"""USD per million tokens: far above any provider's price (1 USD per token), low enough that any cost is finite."""

_EXPONENT_NUMBER = re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")
"""``1e3``, ``1.5E-2``: numbers YAML 1.2 reads and YAML 1.1 (PyYAML) would take for text."""


class _DuplicateKeyError(Exception):
    def __init__(self, key: object, first: int, second: int) -> None:
        super().__init__(key)
        self.key, self.first, self.second = key, first, second


class _PriceLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing repeated keys and reading exponent numbers as numbers."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[object, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                if key in seen:
                    raise _DuplicateKeyError(key, seen[key], line)
                seen[key] = line
            except TypeError:  # an unhashable key: PyYAML's own error follows
                break
        return super().construct_mapping(node, deep=deep)


_PriceLoader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_NUMBER, list("-+0123456789"))


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
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            0 <= value <= MAX_PRICE):
        raise PriceError(f"{path}: {model}: {key}: {value!r} must be a number >= 0 and at most {MAX_PRICE:,.0f} (USD "
                         "per million tokens), e.g. 0.25 or 1.5e-1")
    return float(value)


def read_prices(path: str) -> dict[str, Price]:
    """The prices of a file, by model name.

    Raises:
        PriceError: The file is missing, not YAML, repeats a key, or an entry lacks a plausible number for
            ``input`` or ``output``.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            content = yaml.load(handle, Loader=_PriceLoader)  # noqa: S506  (a SafeLoader subclass)
    except FileNotFoundError:
        raise PriceError(f"--prices {path}: no such file; write one with USD per million tokens per model, "
                         f"{_EXAMPLE}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise PriceError(f"--prices {path}: cannot read it ({error})") from None
    except yaml.YAMLError as error:
        raise PriceError(f"--prices {path}: not valid YAML ({' '.join(str(error).split())})") from None
    except _DuplicateKeyError as error:
        where = (f"lines {error.first} and {error.second}" if error.first != error.second
                 else f"on line {error.first}")
        raise PriceError(f"--prices {path}: {error.key!r} appears twice ({where}); keep one entry per model, with "
                         "one input and one output price") from None
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
