"""``roboreward serve --workers N``: N processes forked after the model is built and the port is bound.

Each worker runs its own uvicorn event loop on a listening socket of its own on the one port (``SO_REUSEPORT``: the
kernel spreads new connections over the sockets; no balancer of ours; server.worker_sockets). The model is built
once, before the fork (HELM's imports, registries and client: seconds to minutes), so the workers start at once and
share its memory until they write to it; gunicorn's ``--preload`` works the same way. HELM's request cache (one
SQLite connection per lookup, ``helm.common.cache.Cache.get``) and the media folder (content-addressed files written
atomically) are files, shared the way ``helm-run -n`` threads and ``roboreward prepare -j`` processes share them.

The places a request takes (:class:`Places`) are counted for the whole server in shared memory: one slot per
worker, written by that worker only, summed by all; a worker that dies has its slot cleared. No worker outlives the
server: SIGTERM or SIGINT to the parent stops every worker gracefully, and a worker whose parent dies (even by
SIGKILL) gets SIGTERM from the kernel (``PR_SET_PDEATHSIG``; elsewhere a thread watching the parent's pid).
"""

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, MutableSequence
from typing import Any

PR_SET_PDEATHSIG = 1
"""prctl option (linux/prctl.h): the signal this process gets when the thread that forked it ends."""
RESTART_PAUSE = 1.0
"""Seconds before a worker that ended on its own is replaced (a worker failing at once does not spin)."""
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def machine_cores() -> int:
    """The cores this process may run on (its CPU affinity; ``os.cpu_count`` where that is unknown)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


class Places:
    """Items admitted and not yet answered, counted against ``capacity`` for the whole server.

    With one process the count is a list of one slot; with workers, a shared array of one slot per worker.
    :meth:`take` adds first and checks after, so the server never holds more than ``capacity``; two requests
    arriving in two workers at the same instant for the last place may both be refused (a 503 at the boundary).
    """

    def __init__(self, capacity: int, slots: MutableSequence[int] | None = None, index: int = 0) -> None:
        self.capacity = capacity
        self._slots: MutableSequence[int] = slots if slots is not None else [0]
        self.index = index
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        """Items held by every process together."""
        return int(sum(self._slots))

    def take(self, count: int) -> bool:
        """Take ``count`` places, or none and False when the server would hold more than its capacity."""
        with self._lock:
            self._slots[self.index] += count
            if self.held > self.capacity:
                self._slots[self.index] -= count
                return False
            return True

    def give_back(self, count: int) -> None:
        """Free ``count`` places this process took."""
        with self._lock:
            self._slots[self.index] -= count


def serve_in_workers(run_worker: Callable[[Places], None], workers: int, capacity: int,
                     say: Callable[[str], None]) -> None:
    """Fork ``workers`` processes that each call ``run_worker(places)``: a uvicorn server on socket ``places.index``.

    Then wait for them, replace one that ends on its own, and on SIGTERM or SIGINT stop them all gracefully and end
    with that signal's default action (as one uvicorn process does).
    """
    slots: Any = multiprocessing.RawArray("q", workers)  # shared memory, inherited by the forks
    children: dict[int, int] = {}  # pid: worker index
    stopping: list[int] = []
    parent = os.getpid()

    def stop(signum: int, frame: Any) -> None:
        if not stopping:
            stopping.append(signum)
        for pid in list(children):  # SIGTERM only: a second SIGINT would make uvicorn skip its graceful stop
            _signal(pid, signal.SIGTERM)

    def start(index: int) -> None:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)  # no stop between fork and bookkeeping
        pid = os.fork()
        if pid == 0:
            _become_worker(parent, previous)
            try:
                run_worker(Places(capacity, slots, index))
            finally:
                os._exit(0)  # never back into the parent's code (the CLI's exit path)
        children[pid] = index
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    for index in range(workers):
        start(index)
    handlers = {signum: signal.signal(signum, stop) for signum in STOP_SIGNALS}
    try:
        while children:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            if pid not in children:
                continue
            index = children.pop(pid)
            slots[index] = 0  # what a dead worker held is free again
            if not stopping:
                say(f"worker {index} (pid {pid}) ended ({_status(status)}); starting another")
                time.sleep(RESTART_PAUSE)
                if not stopping:
                    start(index)
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        for pid in children:  # an exception of our own: no worker is left behind
            _signal(pid, signal.SIGKILL)
    if stopping:
        signal.signal(stopping[0], signal.SIG_DFL)
        os.kill(os.getpid(), stopping[0])


def _become_worker(parent: int, mask: Any) -> None:
    """Make a fresh fork a worker: default signal actions, its own process group, SIGTERM when the parent dies.

    uvicorn installs its own handlers; in a group of its own a terminal's Ctrl-C reaches the parent only, which
    stops the workers once (a second SIGINT would make uvicorn skip its graceful stop).
    """
    for signum in (*STOP_SIGNALS, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    os.setpgid(0, 0)
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    else:
        threading.Thread(target=_watch_parent, args=(parent,), name="roboreward-parent-watch", daemon=True).start()
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGTERM)


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _status(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"
