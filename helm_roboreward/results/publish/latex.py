"""``leaderboard.tex``: the paper's table of every model and subset, compiling with a stock ``pdflatex``.

booktabs rules, one column per subset in the official order, then the macro mean; the best value of each column in
bold (ties all bold); the suite's rows first (best macro first), then, when every run read the public split, the
published leaderboard's rows, marked and not rerun; a caption naming the suite, the dataset revision and each row's
comparability (:mod:`.comparability`). Only ``article`` with geometry, booktabs and graphicx (Debian's
texlive-latex-base and texlive-latex-recommended).
"""

import os
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
            "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def escape(text: str) -> str:
    """``text`` as LaTeX prints it verbatim (its special characters escaped)."""
    return "".join(_SPECIAL.get(character, character) for character in text)


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
        rows.append(TableRow(escape(model.display_name) + mark, values))
    if published:
        for entry in PUBLISHED_LEADERBOARD:
            values = {**PUBLISHED_SUBSET_MAE.get(entry.model, {}), MACRO: entry.macro_mae}
            rows.append(TableRow(escape(entry.display_name) + PUBLISHED_MARK, values, published=True))
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
