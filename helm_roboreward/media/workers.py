"""Worker processes for runs with many videos to prepare: spawned, watching their parent, stopped on SIGTERM.

Loaded only when a run starts workers; why each rule holds: docs/media.md ("Preparing media").
"""

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

PARENT_CHECK_SECONDS = 0.5
"""How often a worker checks that the process that started it is alive."""

_T = TypeVar("_T")


def in_workers(function: Callable[..., _T], calls: Sequence[tuple[Any, ...]], workers: int) -> Iterator[_T]:
    """``function(*call)`` for every call, run in ``workers`` spawned processes, yielded in the order of ``calls``.

    Leaving the loop early, an exception, SIGINT or SIGTERM cancels the queued calls and ends the workers at once.
    """
    # "spawn": forking a process that runs threads (helm-run, tqdm's monitor) and FFmpeg can deadlock the child.
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_watch_parent, initargs=(os.getpid(),))
    with _stop_on_sigterm(pool):
        try:
            futures = [pool.submit(function, *call) for call in calls]
            for future in futures:
                yield future.result()
        except BaseException:
            _stop(pool)
            raise
    pool.shutdown(wait=True)


def _watch_parent(parent: int) -> None:
    """Worker initializer: exit as soon as the parent is gone (killed, even by SIGKILL), queued work or not."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="roboreward-parent-watch", daemon=True).start()


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel the queued calls and end the workers now (a file being written stays unfinished, never partial)."""
    pool.shutdown(wait=False, cancel_futures=True)
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14
    if terminate is not None:
        terminate()
        return
    processes: dict[int, Any] = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        process.terminate()
    for process in list(processes.values()):
        process.join(timeout=5)


class _Stopped(BaseException):
    """SIGTERM arrived while workers ran: unwinds like KeyboardInterrupt, then the signal's default applies."""


def _raise_stopped(signum: int, frame: Any) -> None:
    raise _Stopped()


@contextmanager
def _stop_on_sigterm(pool: ProcessPoolExecutor) -> Iterator[None]:
    """Within this block, SIGTERM stops the pool, then takes its course (main thread only; elsewhere no change)."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_stopped) if main else None
    stopped = False
    try:
        yield
    except _Stopped:
        stopped = True
        raise
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
        if stopped:
            _stop(pool)
            signal.raise_signal(signal.SIGTERM)  # the previous handler (or the default: terminate) decides
