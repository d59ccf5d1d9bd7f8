"""Text from runs and files (model display names, run names, notes) made safe to put into ``report.md``.

One escaping function, :func:`markdown_text`, used by the report's one table writer and for every other piece of
text that is not the report's own: a newline (or any other line break or control character) would end a table row
or a list item, a ``|`` would split a cell, a backtick open a code span, a backslash escape what follows.
"""

import re
import unicodedata

_ESCAPED = re.compile(r"([\\|`])")
_BRACKETS = re.compile(r"([\[\]])")


def _breaks_a_line(character: str) -> bool:
    r"""Control characters (``\n``, ``\r``, ``\t``, ``\x85``, ...) and the Unicode line and paragraph separators."""
    return unicodedata.category(character) in ("Cc", "Zl", "Zp")


def markdown_text(text: object, brackets: bool = False) -> str:
    r"""``text`` as one line of Markdown that shows it as it is: inside a table cell, a list item or a heading.

    Backslashes, ``|`` and backticks get a backslash; line breaks and other control characters become numeric
    character references (``\n`` -> ``&#xA;``), which render as the character without ending the line.

    Args:
        text: Any value (``str()`` of it is escaped).
        brackets: Also escape ``[`` and ``]`` (for image alt text and link text).
    """
    escaped = _ESCAPED.sub(r"\\\1", str(text))
    if brackets:
        escaped = _BRACKETS.sub(r"\\\1", escaped)
    return "".join(f"&#x{ord(character):X};" if _breaks_a_line(character) else character for character in escaped)


def markdown_code(text: object) -> str:
    """``text`` as inline code when it can be (no backtick, no line break), else as escaped text."""
    value = str(text)
    if "`" in value or any(_breaks_a_line(character) for character in value):
        return markdown_text(value)
    return f"`{value}`"
