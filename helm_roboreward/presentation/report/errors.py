"""The one error type of the report: bad input the user can fix, shown as a one-line message."""


class ReportError(Exception):
    """A suite, run or environment problem that stops the report; its message is one line saying what to do."""
