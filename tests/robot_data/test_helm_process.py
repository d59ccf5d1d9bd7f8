"""The progress bar over helm-run's requests: read from HELM's own log lines and tqdm bar, on a pseudo-terminal."""

import sys
from pathlib import Path

from helm_roboreward.robot_data.helm_process import RequestProgress, run_with_progress

HELM_OUTPUT = (
    "\x1b[1;30m2026-12-01T16:30:47\x1b[0m INFO   Parallelizing computation on 20 items over 2 threads {\n"
    "\r  0%|          | 0/20 [00:00<?, ?it/s]\r 50%|#####     | 10/20 [00:01<00:01]\n"  # the adapter's bar: not ours
    "INFO     Executor.execute {\n"
    "INFO       Parallelizing computation on 20 items over 2 threads {\n"
    "\r  0%|          | 0/20 [00:00<?, ?it/s]\r 35%|###5      | 7/20 [00:01<00:02,  6.10it/s]"
)


def test_only_the_executors_bar_counts() -> None:
    progress = RequestProgress()
    assert progress.feed(HELM_OUTPUT[:120]) == 0
    assert progress.feed(HELM_OUTPUT[120:]) == 0  # the 7/20 line is not finished yet
    assert progress.feed("\r 90%|######### | 18/20 [00:02<00:00]\n") == 18
    assert progress.feed("INFO       Processed 20 requests\n") == 20
    assert progress.feed("\r 50%|#####     | 10/20 [00:01<00:01]\n") == 20  # the metrics' bar afterwards


def test_the_command_runs_on_a_terminal_and_its_log_is_plain(tmp_path: Path) -> None:
    script = ("import sys\nprint(sys.stdout.isatty(), sys.stderr.isatty())\nprint('Executor.execute {')\n"
              "sys.stderr.write('\\r 50%|#| 1/2 [00:00]\\r100%|##| 2/2 [00:00]\\x1b[0m\\n')\n"
              "print('Processed 2 requests')\nsys.exit(3)\n")
    log = tmp_path / "log.txt"
    status = run_with_progress([sys.executable, "-c", script], str(tmp_path), {}, str(log), 2, "test", progress=False)
    assert status == 3
    text = log.read_text()
    assert text.splitlines()[:2] == ["True True", "Executor.execute {"]
    assert "100%|##| 2/2 [00:00]" in text and " 50%" not in text and "\x1b" not in text
