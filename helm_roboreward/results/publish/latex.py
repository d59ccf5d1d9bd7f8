"""``leaderboard.tex``: the paper's table of every model and subset, compiling with a stock ``pdflatex``.

booktabs rules, one column per subset in the official order, then the macro mean; the best value of each column in
bold (ties all bold); the suite's rows first (best macro first), then, when every run read the public split, the
published leaderboard's rows, marked and not rerun; a caption naming the suite, the dataset revision and each row's
comparability (:mod:`.comparability`). Only ``article`` with geometry, booktabs and graphicx (Debian's
texlive-latex-base and texlive-latex-recommended). The file is ASCII: :func:`escape` prints any name with the
default font encoding, and a comment at its top lists the names it changed.
"""

import os
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from helm_roboreward.protocol.published import PUBLISHED_LEADERBOARD, PUBLISHED_SUBSET_MAE
from helm_roboreward.protocol.rules import OFFICIAL_SUBSET_IDS, subset_info, subset_order
from helm_roboreward.protocol.safe_files import write_atomically
from helm_roboreward.results.publish.evidence import SuiteFacts

LEADERBOARD_TEX = "leaderboard.tex"
PUBLISHED_MARK = r"$^{\dagger}$"
NOT_COMPARABLE_MARK = r"$^{*}$"
_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
            "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}",
            ">": r"\textgreater{}", "|": r"\textbar{}"}
# pdflatex's default font encoding (OT1) prints < > | as the glyphs in their slots: inverted ! and ?, a dash.
_BREAKS = {"Cc", "Zl", "Zp"}
"""Unicode categories printed as a space: line breaks and control characters (a blank line ends a table row)."""
_ASCII_FORMS = {"\u00df": "ss", "\u00e6": "ae", "\u00c6": "AE", "\u0153": "oe", "\u0152": "OE", "\u00f8": "o",
                "\u00d8": "O", "\u0142": "l", "\u0141": "L", "\u0111": "d", "\u0110": "D", "\u00fe": "th",
                "\u00de": "Th", "\u0131": "i", "\u2018": "`", "\u2019": "'", "\u201c": "``", "\u201d": "''",
                "\u2013": "--", "\u2014": "---", "\u2026": "..."}
"""Letters and punctuation with no decomposition to ASCII, and what LaTeX writes for them."""


def escape(text: str) -> str:
    """``text`` as a stock pdflatex prints it, in ASCII.

    Special characters escaped; line breaks and control characters as spaces; accented letters without their accents
    (NFKD); any other non-ASCII character as its code point (``U+1F600``, typewriter type).
    """
    parts = []
    for character in text:
        if character.isascii() and character.isprintable():
            parts.append(_SPECIAL.get(character, character))
        elif unicodedata.category(character) in _BREAKS:
            parts.append(" ")
        else:
            plain = "".join(part for part in unicodedata.normalize("NFKD", _ASCII_FORMS.get(character, character))
                            if not unicodedata.combining(part))  # e-acute: e and its accent; a lone accent: nothing
            parts.append(escape(plain) if plain.isascii() else rf"\texttt{{U+{ord(character):04X}}}")
    return "".join(parts)


def _changed_names(names: Sequence[str]) -> list[str]:
    """Comment lines listing each name :func:`escape` prints otherwise than as written (as Python's ``ascii``)."""
    changed = list(dict.fromkeys(name for name in names if not (name.isascii() and name.isprintable())))
    if not changed:
        return []
    return ["% Names changed to print with a stock pdflatex (line breaks and control characters as spaces, accents "
            "dropped, other", "% non-ASCII characters as their code point U+XXXX), as written:"] + [
        f"%   {ascii(name)}" for name in changed]


def _label(name: str, mark: str) -> str:
    label = escape(name) + mark
    # After \\ or \midrule, a row starting with [ or * would be read as their option: {} ends that.
    return "{}" + label if label.lstrip().startswith(("[", "*")) else label


@dataclass(frozen=True)
class TableRow:
    """One row of the table."""

    label: str
    """Already LaTeX (escaped name and marks)."""

    values: dict[str, float]
    """Column (subset id, or :data:`MACRO`) -> MAE."""

    published: bool = False


MACRO = "macro"


def _published_text(value: float, column: str) -> str:
    """Subset MAEs were published to 3 decimals; macro MAEs as the leaderboard shows them (0.63, 0.665)."""
    return f"{value:.3f}" if column != MACRO else f"{value:.3f}".rstrip("0")


def _rows(facts: SuiteFacts, published: bool) -> list[TableRow]:
    ordered = sorted(facts.models, key=lambda model: (model.macro_mae is None, model.macro_mae or 0.0, model.key))
    rows = []
    for model in ordered:
        mark = "" if model.verdict.comparable else NOT_COMPARABLE_MARK
        values = dict(model.subset_mae)
        if model.macro_mae is not None:
            values[MACRO] = model.macro_mae
        rows.append(TableRow(_label(model.display_name, mark), values))
    if published:
        for entry in PUBLISHED_LEADERBOARD:
            values = {**PUBLISHED_SUBSET_MAE.get(entry.model, {}), MACRO: entry.macro_mae}
            rows.append(TableRow(_label(entry.display_name, PUBLISHED_MARK), values, published=True))
    return rows


def _cell(row: TableRow, column: str, best: dict[str, float]) -> str:
    value = row.values.get(column)
    if value is None:
        return "--"
    text = _published_text(value, column) if row.published else f"{value:.3f}"
    return rf"\textbf{{{text}}}" if abs(value - best[column]) < 1e-12 else text


def _caption(facts: SuiteFacts, published: bool) -> str:
    revisions = sorted({read.revision for read in facts.reads.values()})
    revision = ", ".join(rf"\texttt{{{escape(item)}}}" for item in revisions) or "not recorded"
    parts = [f"RoboRewardBench mean absolute error per subset and its unweighted mean over the subsets (Macro); "
             rf"lower is better, the best value of each column in bold. Suite \texttt{{{escape(facts.suite)}}}, "
             f"dataset revision {revision}."]
    if published:
        parts.append(f"{PUBLISHED_MARK}: the published leaderboard (macro MAE; per subset where published), not "
                     "rerun.")
    groups: dict[tuple[str, ...], list[str]] = {}
    for model in facts.models:
        if not model.verdict.comparable:
            groups.setdefault(model.verdict.reasons, []).append(model.display_name)
    if not groups:
        parts.append("Every row of this suite is comparable with the published leaderboard.")
    elif sum(len(names) for names in groups.values()) == len(facts.models) and len(groups) == 1:
        parts.append(_sentence(f"{NOT_COMPARABLE_MARK}: no row of this suite is comparable with the published "
                               f"leaderboard: {escape('; '.join(next(iter(groups))))}"))
    else:
        parts.append(f"{NOT_COMPARABLE_MARK}: not comparable with the published leaderboard. "
                     + " ".join(_sentence(f"{escape(', '.join(names))}: {escape('; '.join(reasons))}")
                                for reasons, names in groups.items()))
    return " ".join(parts)


def _sentence(text: str) -> str:
    return text if text.endswith(".") else text + "."  # a reason may end in "..." (a shortened hash)


def leaderboard_tex(facts: SuiteFacts, published: bool = True) -> str:
    """The LaTeX document of a suite's leaderboard.

    Args:
        facts: The suite's rows and verdicts (:func:`.evidence.gather`).
        published: Show the published rows when every run read the public split (``roboreward report
            --no-published`` passes False).
    """
    published = published and bool(facts.reads) and all(read.data == "hf" for read in facts.reads.values())
    rows = _rows(facts, published)
    subsets = {subset for model in facts.models for subset in model.subset_mae}
    columns = subset_order(subsets | (set(OFFICIAL_SUBSET_IDS) if published else set())) + [MACRO]
    best = {column: min((row.values[column] for row in rows if column in row.values), default=float("nan"))
            for column in columns}
    header = ["Model"] + [rf"\rotatebox{{90}}{{{escape(_title(column))}}}" for column in columns]
    lines = [
        "% Written by helm-roboreward (roboreward report). Compiles on its own with pdflatex; in a paper, copy the",
        "% table environment and add \\usepackage{booktabs,graphicx} to the preamble.",
        *_changed_names([facts.suite] + [model.display_name for model in facts.models]),
        r"\documentclass{article}",
        r"\usepackage[landscape,margin=1.5cm]{geometry}",
        r"\usepackage{booktabs}",
        r"\usepackage{graphicx}",
        r"\pagestyle{empty}",
        r"\begin{document}",
        r"\begin{table}[!t]",
        r"\centering",
        rf"\caption{{{_caption(facts, published)}}}",
        r"\label{tab:roboreward-leaderboard}",
        r"\smallskip",
        r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%",  # shrink a wide table, never enlarge
        rf"\begin{{tabular}}{{l{'r' * len(columns)}}}",
        r"\toprule",
        " & ".join(header) + r" \\",
        r"\midrule",
    ]
    suite_rows = [row for row in rows if not row.published]
    lines += _body(suite_rows, columns, best)
    if len(suite_rows) < len(rows):
        lines.append(r"\midrule")
        lines += _body([row for row in rows if row.published], columns, best)
    lines += [r"\bottomrule", r"\end{tabular}}", r"\end{table}", r"\end{document}", ""]
    return "\n".join(lines)


def _title(column: str) -> str:
    if column == MACRO:
        return "Macro"
    info = subset_info(column)
    return info.short_display_name or info.display_name


def _body(rows: Sequence[TableRow], columns: Sequence[str], best: dict[str, float]) -> list[str]:
    return [" & ".join([row.label] + [_cell(row, column, best) for column in columns]) + r" \\" for row in rows]


def write_leaderboard_tex(facts: SuiteFacts, out_dir: str, published: bool = True) -> str:
    """Write ``<out_dir>/leaderboard.tex`` atomically; returns its path."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, LEADERBOARD_TEX)
    write_atomically(path, leaderboard_tex(facts, published).encode("utf-8"))
    return path
