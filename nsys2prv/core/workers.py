"""What every worker process of nsys2prv does first: die with its parent, leave signals to it.

- ``PR_SET_PDEATHSIG`` (Linux): the kernel sends SIGKILL to the worker when the process that forked it
  dies, even by SIGKILL; elsewhere, a watchdog thread checks the parent every 0.5 s.  A killed
  conversion leaves no worker behind holding the caller's terminal or pipes.
- SIGINT, SIGTERM and SIGHUP are ignored: the parent handles them once, cleans up and stops the
  workers; a Ctrl-C reaches every process of the terminal's group, and without this each worker
  printed its own traceback.

``forked`` / ``in_fork`` run calls in such processes, forked so that they inherit their arguments.
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import select
import signal
import sys
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager

from nsys2prv.core import libc
from nsys2prv.core.errors import STOP_SIGNALS, signals_held

PR_SET_PDEATHSIG = 1


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(1)


def init_worker(parent: int | None = None) -> None:
    """The initializer of every worker pool (``parent``: the pid that created the pool)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    parent = parent if parent is not None else os.getppid()
    armed = False
    prctl = libc.function("prctl", [ctypes.c_int] + [ctypes.c_ulong] * 4)  # (Linux)
    if prctl is not None:
        armed = prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)
    if not armed:
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


class WorkerPool(ProcessPoolExecutor):
    """nsys2prv's process pools: each worker starts with ``init_worker``, and the pool forks its
    processes (at a submit: a fork context launches them at the first) inside ``errors.signals_held``."""

    def __init__(self, workers: int, context) -> None:
        super().__init__(max_workers=workers, mp_context=context, initializer=init_worker, initargs=(os.getpid(),))

    def submit(self, fn, /, *args, **kwargs):
        with signals_held():
            return super().submit(fn, *args, **kwargs)


def start_reporter(target, *args):
    """A daemon process forked (inside ``errors.signals_held``) to run ``target(*args, send, parent)``
    -- ``send`` the writing end of a pipe, ``parent`` this process's pid (for its ``init_worker``) --
    and the reading end: the child holds the only writing end, so its exit is the end of the pipe.
    An OSError (no process to spare) is raised with the pipe closed; a stop signal during the fork
    with the child ended too (the caller has no handle on it)."""
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=target, args=(*args, send, os.getpid()), daemon=True)
    try:
        with signals_held():  # (a signal during the fork: raised after it, in the caller's code)
            proc.start()
    except BaseException:
        recv.close()
        if proc.pid is not None:
            proc.kill()
            proc.join()
        raise
    finally:
        send.close()
    return proc, recv


def being_traced() -> bool:
    """A profiler or tracer (cProfile, coverage, a debugger) watches this process: keep the work in
    it and leave it normally, so that the tool sees everything and writes its results."""
    return sys.getprofile() is not None or sys.gettrace() is not None


_FORKED: list = []  # the calls of ``forked``, set before its processes fork (they inherit them)
_STARTED: int | None = None  # a pipe's writing end: each call of ``forked`` writes a byte as it starts


def _call_forked(i: int):
    if _STARTED is not None:
        os.write(_STARTED, b"s")
    fn, args = _FORKED[i]
    return fn(*args)


def _wait_started(read_end: int, futures: list[Future]) -> None:
    """Until every call of ``futures`` has started in its process (or one has ended: it failed)."""
    started = 0
    while started < len(futures):
        if select.select([read_end], [], [], 0.05)[0]:
            started += len(os.read(read_end, 64))
        elif any(f.done() for f in futures):
            return


@contextmanager
def forked(calls: list[tuple]):
    """Each ``(fn, args)`` of ``calls`` in a forked process of its own, which inherits ``fn`` and
    ``args`` (only the results are pickled: no copy of large arguments through a pipe, and the memory
    the call needs goes with its process); yields one future per call.  The caller may work while
    they run; leaving the block waits for them.  The block starts once every call has started: the
    pool hands a call to its process through its threads in this process, which need the GIL, and a
    caller gone on into a numba kernel or numpy kept them from it -- the merge's forked part started
    only when this process had done its own part and the rest of POP (0.14-0.2 s of stage D's wall
    time on 8 ranks, the two parts run one after the other); waiting costs the few ms a fork takes."""
    global _FORKED, _STARTED
    _FORKED = list(calls)
    read_end, _STARTED = os.pipe()
    pool = WorkerPool(max(1, len(calls)), mp.get_context("fork"))
    done = False
    try:
        futures: list[Future] = [pool.submit(_call_forked, i) for i in range(len(calls))]
        _wait_started(read_end, futures)
        yield futures
        done = True
    finally:
        _FORKED = []
        try:
            if done:
                pool.shutdown(wait=True)
            else:  # an error or a signal in the caller: stop the calls now (SIGKILL: they ignore SIGTERM),
                kill_pool(pool)  # not when they finish, and none writes on after the caller cleaned up
        finally:
            os.close(read_end)
            if _STARTED is not None:
                os.close(_STARTED)
            _STARTED = None


def kill_pool(pool: ProcessPoolExecutor) -> None:
    """Shut ``pool`` down with SIGKILL to each of its processes, and wait until they are gone."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    ends = results_end(pool)  # (before the shutdown, which lets go of them)
    killed = False
    for p in procs:
        if p.is_alive():
            p.kill()
            killed = True
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        p.join()
    if killed:
        unblock(ends)


def results_end(pool: ProcessPoolExecutor) -> tuple | None:
    """``pool``'s thread in this process and the writing end of its results pipe (for ``unblock``;
    taken before ``shutdown``, which lets go of both)."""
    thread = getattr(pool, "_executor_manager_thread", None)
    queue = getattr(pool, "_result_queue", None)
    return None if thread is None or queue is None else (thread, queue._writer.fileno())


def unblock(ends: tuple | None) -> None:
    """After SIGKILL to a pool's processes (``ends``: ``results_end``): one killed while writing its
    result left part of a message in the results pipe, and the pool's thread in this process waits
    in ``recv`` for the rest
    -- forever, so the interpreter hung at exit (``concurrent.futures`` joins that thread), e.g. a
    program whose conversion failed.  A daemon thread writes zero bytes into the pipe until the thread
    has read past the message (it cannot be unpickled: the pool is marked broken and the thread ends)."""
    if ends is None:
        return
    thread, fd = ends
    thread.join(0.1)
    if not thread.is_alive():
        return

    def feed():
        zeros = bytes(65536)
        os.set_blocking(fd, False)  # (the pool is gone: nothing else writes there)
        while thread.is_alive():
            if select.select([], [fd], [], 0.05)[1]:
                try:
                    os.write(fd, zeros)
                except BlockingIOError:
                    continue
                except OSError:
                    return

    threading.Thread(target=feed, name="nsys2prv-unblock", daemon=True).start()


def in_fork(fn, *args):
    """``fn(*args)`` in a forked process (see ``forked``); its result."""
    with forked([(fn, args)]) as (future,):
        return future.result()
