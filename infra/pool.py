"""Process pools for the builders (``tasks.threedpc``, ``tasks.generate``): workers that die with their
parent, leave Ctrl-C to the parent, and a pool that fails fast.

* **Parent death**: each worker asks Linux to send it SIGKILL when its parent dies
  (``prctl(PR_SET_PDEATHSIG)``, via ctypes) and, everywhere, runs a watchdog thread that exits the worker
  when its parent PID changes — so a ``kill -9`` of the main process does not leave workers (and, as they
  hold its pipe, multiprocessing's resource tracker) running for the rest of their job.
* **Ctrl-C** reaches the whole process group; workers ignore SIGINT and the parent stops them, so the user
  sees one line, not one traceback per worker.
* **Fail fast**: the first failing job cancels the queued ones and stops the running ones.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

PR_SET_PDEATHSIG = 1


def _watch_parent(parent: int, period: float) -> None:
    while True:
        time.sleep(period)
        if os.getppid() != parent:
            os._exit(1)


def die_with_parent(parent: int | None = None, period: float = 1.0) -> None:
    """Make this (worker) process exit when ``parent`` (default: the current parent) dies."""
    parent = os.getppid() if parent is None else parent
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no prctl: the watchdog below still works
            pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent, period), daemon=True, name="parent-watchdog").start()


def _init(parent: int | None, initializer: Callable | None, initargs: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)
    if initializer is not None:
        initializer(*initargs)


def _stop(ex) -> None:
    """Cancel queued jobs and terminate the workers now (``shutdown(wait=True)`` would wait for them).

    Then wait for the executor's manager thread: it closes its wake-up pipe as it ends, and Python's exit
    hook for process pools writes to that pipe. Left running (Python 3.11), the two race and a Ctrl-C'd run
    ends with "Exception ignored ... Bad file descriptor" and a traceback under its one line (seen in CI)."""
    procs = list((getattr(ex, "_processes", None) or {}).values())
    manager = getattr(ex, "_executor_manager_thread", None)  # shutdown() forgets it
    ex.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(5)
    if manager is not None:
        manager.join(10)


def run_jobs(fn: Callable[[Any], Any], jobs: Iterable[Any], workers: int, initializer: Callable | None = None,
             initargs: tuple = (), ordered: bool = False, mp_context=None) -> Iterator[Any]:
    """Yield ``fn(job)`` for every job, computed by ``workers`` processes (results in completion order, or job
    order with ``ordered``). The first exception stops everything and is raised here.

    ``mp_context``: a ``multiprocessing`` context, default ``spawn``. Under ``forkserver`` a worker's parent is
    the fork server, which exits when this process dies, so workers watch their own parent instead."""
    import concurrent.futures as cf
    import multiprocessing as mp

    jobs = list(jobs)
    ctx = mp_context or mp.get_context("spawn")
    watched = os.getpid() if ctx.get_start_method() == "spawn" else None
    ex = cf.ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init, initargs=(watched, initializer, initargs))
    ok = False
    try:
        futures = [ex.submit(fn, j) for j in jobs]
        it = futures if ordered else cf.as_completed(futures)
        for fut in it:
            yield fut.result()
        ok = True
    finally:
        if ok:
            ex.shutdown(wait=True)
        else:
            _stop(ex)
