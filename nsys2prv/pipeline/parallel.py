"""Where the per-report stages run: this process, local worker processes (``--jobs N``) or a
Dask cluster (``--dask ADDRESS|SCHEDULER_FILE``, optional extra ``nsys2prv[dask]``).

Every executor maps a module-level function over picklable jobs and returns the results in
job order; an exception in a job is re-raised here (UserError keeps its message).

``map(fn, items, *args, shared=obj)`` calls ``fn(item, *args, obj)`` with one object every job
needs (the resource model: O(ranks)), sent once per worker rather than once per job (pickled
with each of N jobs it would cost O(N^2)).  Local processes
inherit it: the pool is forked anew after it is set; Dask scatters it to every worker once.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from nsys2prv.core.environment import environment
from nsys2prv.core.errors import UserError
from nsys2prv.core.workers import WorkerPool, being_traced, results_end, unblock


def can_fork() -> bool:
    """Whether worker processes are forked here (Linux); elsewhere they are spawned, and nothing
    that relies on inheriting this process's state (the shared model, the split merge) forks."""
    return sys.platform.startswith("linux")


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _bar(total: int, desc: str, show: bool):
    """A progress bar (tqdm, on stderr) for a stage over several reports, or None."""
    if not show or total < 2:
        return None
    from tqdm import tqdm  # (here: a run without progress bars does not load it)

    return tqdm(total=total, desc=desc, unit="report", leave=False)


def _tick(bar) -> None:
    if bar is not None:
        bar.update(1)


def _done(bar) -> None:
    if bar is not None:
        bar.close()


_SHARED = None  # the ``shared`` object of the running map, inherited by forked workers


def _with_shared(item, fn, *args):
    return fn(item, *args, _SHARED)


class Helpers:
    """The worker processes idle while this process runs a map's only job (``Local.map(helped=True)``):
    forked at the first ``pool()`` (all of them: before the job starts a thread)."""

    def __init__(self, pool, workers: int):
        self._start, self.workers = pool, workers

    def pool(self) -> ProcessPoolExecutor:
        return self._start()


_HELPERS: Helpers | None = None  # set while ``Local.map(helped=True)`` runs its one job here


def helpers() -> Helpers | None:
    """The idle workers this process may hand parts of its job to (the futures' results come back in
    it; an exception in a part is raised by ``result()``), or None: no local pool helps here (a worker
    process, ``Serial``, Dask, spawned workers)."""
    return _HELPERS


class Serial:
    name = "serial"
    progress = False

    def map(self, fn, items, *args, desc: str = "", shared=None, helped: bool = False):
        items = list(items)
        bar = _bar(len(items), desc, self.progress)
        extra = (shared,) if shared is not None else ()
        out = []
        for it in items:
            out.append(fn(it, *args, *extra))
            _tick(bar)
        _done(bar)
        return out

    def close(self, **_):
        pass


class Local:
    """A process pool, started on first use (fork on Linux: workers share the loaded modules)."""

    progress = False

    def __init__(self, jobs: int):
        self.jobs = jobs
        self.pool: ProcessPoolExecutor | None = None
        self._workers: list[BaseProcess] = []
        self._closed: list = []  # the pools shut down (``results_end``), until ``close(final=True)``
        self.name = f"{jobs} local processes"

    def _pool(self, fork: bool) -> ProcessPoolExecutor:
        if self.pool is None:
            ctx = mp.get_context("fork" if fork else "spawn")
            self.pool = WorkerPool(self.jobs, ctx)
        return self.pool

    def _helped(self, fn, item, args):
        """``fn(item, *args)`` here, the pool's workers its ``helpers`` (forked when it first gives
        them a part, which it does before starting a thread)."""
        global _HELPERS
        _HELPERS = Helpers(lambda: self._pool(True), self.jobs)
        try:
            return fn(item, *args)
        finally:
            _HELPERS = None

    def map(self, fn, items, *args, desc: str = "", shared=None, helped: bool = False):
        """``helped``: a map of one job runs it here with the pool's workers as its ``helpers``."""
        global _SHARED
        items = list(items)
        fork = can_fork()
        if shared is not None:
            if len(items) <= 1 or not fork:  # (spawned workers: it goes with every job)
                args = (*args, shared)
            else:
                self.close(wait=True)  # a fresh fork inherits the shared object (no
                # thread of the old pool may run while forking)
                _SHARED = shared
                fn, args = _with_shared, (fn, *args)
        if len(items) == 1 and helped and fork and shared is None:
            return [self._helped(fn, items[0], args)]
        if len(items) <= 1:
            return [fn(it, *args) for it in items]
        pool = self._pool(fork)
        futures = [pool.submit(fn, it, *args) for it in items]
        bar = _bar(len(futures), desc, self.progress)
        for f in as_completed(futures):
            f.result()
            _tick(bar)
        _done(bar)
        return [f.result() for f in futures]

    def close(self, wait: bool = False, final: bool = False):
        """Shut the pool down (its idle workers exit while the merge runs); ``final``: no worker of
        any pool may outlive the conversion -- the command ends with os._exit, which would leave a
        busy (after an error) or not yet stopped worker behind, holding the output pipes."""
        if self.pool is not None:
            self._workers += list((getattr(self.pool, "_processes", None) or {}).values())
            self._closed.append(results_end(self.pool))
            self.pool.shutdown(wait=wait and not final, cancel_futures=True)
            # (a worker the pool started while shutting down: ended too)
            self._workers += [
                p for p in (getattr(self.pool, "_processes", None) or {}).values() if p not in self._workers
            ]
            self.pool = None
        if final:
            global _SHARED
            _SHARED = None  # the workers had their copy (fork)
            deadline = time.monotonic() + 0.05
            for p in self._workers:
                p.join(max(0.0, deadline - time.monotonic()))
            killed = False
            for p in self._workers:  # still busy (after an error or a signal): SIGKILL -- the workers
                if p.is_alive():  # ignore SIGTERM, and one still writing would refill the staging
                    p.kill()  # directory the conversion is about to remove
                    killed = True
            for p in self._workers:
                p.join()
            self._workers = []
            for ends in self._closed if killed else ():
                unblock(ends)  # (one killed while writing its result: the pool's thread waits on)
            self._closed = []


class Dask:
    TIMEOUT = "30"  # seconds to wait for the scheduler (tests use a short one)

    def __init__(self, address: str):
        self.client: Any  # distributed.Client (an optional dependency)
        try:  # optional dependency (extra "dask")
            from distributed import Client
        except ImportError:
            raise UserError(
                "--dask needs Dask: pip install 'dask[distributed]' (or, from this repository, pip install '.[dask]')"
            ) from None
        try:
            if Path(address).is_file():
                self.client = Client(scheduler_file=address, timeout=f"{self.TIMEOUT}s")
            else:
                self.client = Client(address, timeout=f"{self.TIMEOUT}s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise UserError(f"cannot connect to the Dask scheduler ({exc})", address) from None
        self.name = f"Dask {address}"

    progress = False

    def map(self, fn, items, *args, desc: str = "", shared=None, helped: bool = False):
        if shared is not None:
            args = (*args, self.client.scatter(shared, broadcast=True))
        futures = [self.client.submit(fn, it, *args, pure=False) for it in items]
        bar = _bar(len(futures), desc, self.progress)
        if bar is not None:
            from distributed import as_completed as dask_completed  # optional extra: only with --dask

            for _ in dask_completed(futures):
                _tick(bar)
            _done(bar)
        return self.client.gather(futures)

    def close(self, **_):
        if self.client is not None:
            self.client.close()
            self.client = None


Executor = Serial | Local | Dask  # one interface: map(fn, items, *args, desc, shared, helped), close(final=...)


def executor(jobs: int | None = None, dask: str | None = None, progress: bool = False) -> Executor:
    """The executor for the per-report stages; ``progress`` shows a bar per stage (several reports)."""
    ex: Executor
    if dask:
        ex = Dask(dask)
    else:
        jobs = default_jobs() if jobs is None or jobs <= 0 else jobs
        # -j 1 is one worker process too: the main process then holds only the model and the
        # reports' small results (not the retained heap of every report's stage C); in-process
        # for debuggers and profilers
        ex = Serial() if jobs == 1 and (environment().in_process or being_traced()) else Local(jobs)
    ex.progress = progress
    return ex
