"""Where the per-report stages run: this process, local worker processes (``--jobs N``) or a
Dask cluster (``--dask ADDRESS|SCHEDULER_FILE``, optional extra ``nsys2prv[dask]``).

Every executor maps a module-level function over picklable jobs and returns the results in
job order; an exception in a job is re-raised here (UserError keeps its message).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from nsys2prv.errors import UserError


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


class Serial:
    name = "serial"

    def map(self, fn, items, *args):
        return [fn(it, *args) for it in items]

    def close(self):
        pass


class Local:
    """A process pool, started on first use (fork on Linux: workers share the loaded modules)."""

    def __init__(self, jobs: int):
        self.jobs, self.pool = jobs, None
        self.name = f"{jobs} local processes"

    def map(self, fn, items, *args):
        items = list(items)
        if len(items) <= 1:
            return [fn(it, *args) for it in items]
        if self.pool is None:
            ctx = mp.get_context("fork" if sys.platform.startswith("linux") else "spawn")
            self.pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=ctx)
        futures = [self.pool.submit(fn, it, *args) for it in items]
        return [f.result() for f in futures]

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)   # workers exit while the merge runs
            self.pool = None


class Dask:
    # seconds to wait for the scheduler (NSYS2PRV_DASK_TIMEOUT overrides; tests use a short one)
    TIMEOUT = os.environ.get("NSYS2PRV_DASK_TIMEOUT", "30")

    def __init__(self, address: str):
        try:
            from distributed import Client
        except ImportError:
            raise UserError("--dask needs the optional extra: pip install 'nsys2prv[dask]'") from None
        try:
            if Path(address).is_file():
                self.client = Client(scheduler_file=address, timeout=f"{self.TIMEOUT}s")
            else:
                self.client = Client(address, timeout=f"{self.TIMEOUT}s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise UserError(f"cannot connect to the Dask scheduler ({exc})", address) from None
        self.name = f"Dask {address}"

    def map(self, fn, items, *args):
        futures = [self.client.submit(fn, it, *args, pure=False) for it in items]
        return self.client.gather(futures)

    def close(self):
        if self.client is not None:
            self.client.close()
            self.client = None


def executor(jobs: int | None = None, dask: str | None = None):
    if dask:
        return Dask(dask)
    jobs = default_jobs() if jobs is None or jobs <= 0 else jobs
    return Serial() if jobs == 1 else Local(jobs)
