"""``roboreward report`` in process on a suite copy, and what its tests read back (shared by the report tests)."""

from pathlib import Path

import pytest

from helm_roboreward import cli
from tests.helpers.harness import PROD_ENV
from tests.helpers.suite import SUITE


def report(output: Path, out: Path, *extra: str, local: Path = PROD_ENV, resamples: str = "200") -> int:
    return cli.main(["report", "--suite", SUITE, "--output-path", str(output), "--out", str(out), "--local-path",
                     str(local), "--resamples", resamples, *extra])


def run_dirs(output: Path) -> list[Path]:
    return sorted(path for path in (output / "runs" / SUITE).iterdir() if (path / "run_spec.json").exists())


def runs_of(output: Path, model: str) -> list[Path]:
    return [path for path in run_dirs(output) if path.name.endswith(f"model={model.replace('/', '_')}")]


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("roboreward report: ") and "\n" not in err and "Traceback" not in err, err
    return err
