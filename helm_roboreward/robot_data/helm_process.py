"""Running ``helm-run`` as a subprocess with one progress bar over its requests, and its log in a file.

HELM's executor shows a tqdm bar only on a terminal (``helm.common.general.parallel_map``: ``disable=None``), so
the command runs on a pseudo-terminal; its output goes to a log file (colours and bar redraws removed) and the
executor's ``n/total`` counts drive our own bar. Nothing of HELM is imported: ``helm-run`` does everything
(plugins, caching, retries, ``-n`` threads, every client) exactly as when a user runs it.

``helm-run`` never outlives the command that started it: on Linux the child asks the kernel for SIGTERM when its
parent dies (``prctl(PR_SET_PDEATHSIG)``, which holds even when the parent is killed with SIGKILL, where no
handler runs); an exception or Ctrl-C in the parent terminates it and waits for it. Its own frame workers follow
it (they watch their parent, docs/media.md).
"""

import ctypes
import ctypes.util
import fcntl
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import termios
from collections.abc import Callable, Sequence

from tqdm import tqdm

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_BAR_COUNT = re.compile(r"\|\s*(\d+)/(\d+)\s*\[")
_EXECUTOR_START = "Executor.execute {"
_PROCESSED = re.compile(r"Processed (\d+) requests")
_WINDOW = struct.pack("HHHH", 50, 160, 0, 0)
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _parent_death_signal() -> "Callable[[], None] | None":
    """A ``preexec_fn`` that makes the child get SIGTERM when its parent dies (Linux), else None."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    parent = os.getpid()

    def arm() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent died before the request took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return arm


def console_script(name: str) -> str:
    """A console script next to the running Python (the venv's ``helm-run``), else one on PATH."""
    candidate = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.isfile(candidate):
        return candidate
    found = shutil.which(name)
    if not found:
        raise FileNotFoundError(f"{name} not found next to {sys.executable} or on PATH; install crfm-helm")
    return found


class RequestProgress:
    """Reads helm-run's output and tells how many requests of the executor are done."""

    def __init__(self) -> None:
        self.in_executor = False
        self.done = 0
        self._pending = ""

    def feed(self, text: str) -> int:
        """Take more output; returns the requests done so far."""
        pieces = re.split(r"[\r\n]", self._pending + _ANSI.sub("", text))
        self._pending = pieces.pop()
        for piece in pieces:
            self._line(piece)
        return self.done

    def _line(self, line: str) -> None:
        if _EXECUTOR_START in line:
            self.in_executor = True
        elif self.in_executor:
            processed = _PROCESSED.search(line)
            count = _BAR_COUNT.search(line)
            if processed:
                self.done, self.in_executor = int(processed.group(1)), False
            elif count:
                self.done = max(self.done, int(count.group(1)))


def _log_lines(text: str) -> str:
    """Output as a plain log: no colours, a progress bar's redraws reduced to its last state."""
    lines = [line.rsplit("\r", 1)[-1] for line in _ANSI.sub("", text).replace("\r\n", "\n").split("\n")]
    return "\n".join(lines)


def run_with_progress(command: Sequence[str], cwd: str, env: dict[str, str], log_path: str, total: int,
                      description: str, progress: bool = True) -> int:
    """Run ``command``, log its output to ``log_path`` and show a bar of its executor's requests.

    Returns:
        The exit status.
    """
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, _WINDOW)
    try:
        process = subprocess.Popen(list(command), cwd=cwd, env={**env, "COLUMNS": "160"}, stdin=subprocess.DEVNULL,
                                   stdout=slave, stderr=slave, close_fds=True, preexec_fn=_parent_death_signal())
    finally:
        os.close(slave)
    tracker = RequestProgress()
    chunks: list[str] = []
    try:
        with tqdm(total=total, desc=description, unit="request", disable=not progress) as bar:
            while True:
                try:
                    data = os.read(master, 1 << 16)
                except OSError:  # EIO: the command closed its terminal
                    break
                if not data:
                    break
                text = data.decode("utf-8", errors="replace")
                chunks.append(text)
                done = min(tracker.feed(text), total)
                if done > bar.n:
                    bar.update(done - bar.n)
        return process.wait()
    except BaseException:
        process.terminate()
        process.wait()
        raise
    finally:
        os.close(master)
        with open(log_path, "w", encoding="utf-8") as log:
            log.write(_log_lines("".join(chunks)))
