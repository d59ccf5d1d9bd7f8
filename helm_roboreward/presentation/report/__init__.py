"""``roboreward report``: macro MAE with clustered bootstrap intervals, pairwise tests, tables and plots.

Modules, in the order data flows: :mod:`.loading` (runs -> rows), :mod:`.bootstrap` (the
statistics, pure numpy), :mod:`.analysis` (rows -> the report's numbers), :mod:`.writer`
(markdown and CSV), :mod:`.plots` (PNG, matplotlib imported lazily), :mod:`.command` (the CLI).
Importing this package loads none of them.
"""

from helm_roboreward.presentation.report.errors import ReportError

__all__ = ["ReportError"]
