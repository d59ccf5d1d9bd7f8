"""Plain-text and CSV renderings of a table: column names and rows of cells (``roboreward models``, ``estimate``)."""

import csv
import io
from collections.abc import Sequence


def format_text_table(columns: Sequence[str], rows: Sequence[Sequence[str]], right_aligned: Sequence[str] = ()) -> str:
    """Columns padded to their widest cell, two spaces apart; ``right_aligned`` columns (numbers) flush right."""
    widths = [max([len(column)] + [len(row[i]) for row in rows]) for i, column in enumerate(columns)]
    right = {i for i, column in enumerate(columns) if column in right_aligned}

    def line(cells: Sequence[str]) -> str:
        padded = [cell.rjust(width) if i in right else cell.ljust(width)
                  for i, (cell, width) in enumerate(zip(cells, widths, strict=True))]
        return "  ".join(padded).rstrip()

    return "\n".join([line(columns), line(["-" * width for width in widths])] + [line(row) for row in rows])


def csv_text(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The table as CSV (header row first, one line per row)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    return buffer.getvalue()
