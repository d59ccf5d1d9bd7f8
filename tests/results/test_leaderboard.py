"""``roboreward leaderboard``: the suite's tables in the terminal, then each row's comparability verdict."""

import pytest

from helm_roboreward.results.terminal_leaderboard import main
from tests.helpers.suite import SUITE, SampleSuite


def test_the_tables_then_each_rows_verdict(sample_suite: SampleSuite, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--suite", SUITE, "--output-path", str(sample_suite.workdir / "benchmark_output")]) == 0
    printed = capsys.readouterr().out
    tables, verdicts = printed.split("Comparable with the published leaderboard? (docs/publishing.md)\n")
    assert "Constant 3 (baseline)" in tables and "1.289" in tables
    lines = verdicts.strip().splitlines()
    assert [line.split(":")[0].strip() for line in lines] == ["baseline/constant-3", "baseline/uniform-random"]
    assert all("not comparable with the published leaderboard: its runs read the bundled sample" in line
               for line in lines)


def test_a_suite_never_summarized_is_named(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--suite", "none", "--output-path", str(tmp_path)]) == 1
    assert "run helm-summarize --suite none first" in capsys.readouterr().err
