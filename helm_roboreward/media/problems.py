"""What a preparation pass tells the user when something went wrong: failed rows and rebuilt cache entries."""

from collections.abc import Sequence

from helm_roboreward.data.rows import DataError, Rollout
from helm_roboreward.media.preparation import PreparationReport


def failures_by_row(rollouts: Sequence[Rollout], report: PreparationReport) -> list[str]:
    """One line per failed row: metadata line, file name, the error and what to do."""
    lines: list[str] = []
    for rollout in rollouts:
        failure = report.failures.get(rollout.video_path)
        if failure is not None:
            fix = failure.fix.replace("the subset,", f"the subset {rollout.row.subset!r},")
            lines.append(f"metadata line {rollout.row.line} ({rollout.row.file_name}): {failure.message}. {fix}")
    return lines


def failed_rows_error(rollouts: Sequence[Rollout], report: PreparationReport, description: str) -> DataError:
    """The error a run raises when some rows' videos cannot be used, naming each row."""
    lines = failures_by_row(rollouts, report)
    return DataError(f"{len(lines)} row(s) of {description} have videos that cannot be used "
                     f"(the other videos are prepared and cached):\n" + "\n".join(lines))


def rebuilt_summary(report: PreparationReport, limit: int = 5) -> list[str]:
    """Lines saying which cache entries were not trusted and rebuilt (empty when none)."""
    reasons = list(report.rebuilt.values())
    if not reasons:
        return []
    lines = [f"{len(reasons)} cache entr{'y was' if len(reasons) == 1 else 'ies were'} not trusted and rebuilt:"]
    lines += [f"  {reason}" for reason in reasons[:limit]]
    return lines + ([f"  ... and {len(reasons) - limit} more"] if len(reasons) > limit else [])
