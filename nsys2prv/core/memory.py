"""Give freed memory back to the operating system between the reports a process handles.

A worker converts several reports one after the other; each leaves tens of MB of freed but
still mapped heap behind (glibc keeps freed chunks of its main arena and raises its mmap
threshold after large frees, so later large arrays come from the heap too).  ``release()``
asks glibc to return free pages (``malloc_trim``, cheap); elsewhere it does nothing.  No
``gc.collect()``: the arrays are freed by reference counting, and a full collection is costly
in a process that has loaded pandas and numba.

A worker process of stage C may keep it instead (``keep_heap``): every page given back is faulted
in again by the next job, and on a virtual machine the faults cost as much CPU as the work (the
8-rank benchmark's stage C: 80k faults, half its CPU, in system time).  What bounds a kept heap is
the worker's resident size, not glibc's count of free bytes: that count includes free chunks whose
pages are no longer resident (a 10M-row report's slices: 340-530 MB "free" in a worker of 490 MB).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
from typing import Callable

from nsys2prv.core import libc

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (glibc's malloc.h)
KEPT_ARRAYS = 32 << 20  # arrays up to this size come from the heap (glibc's own largest dynamic threshold)
KEPT_RESIDENT = 768 << 20  # a worker keeps its free heap for its next job while it is resident in at
# most this much memory (more: given back; issue 40's bound on any process is 1 GB)
_kept = 0  # this process's KEPT_RESIDENT once ``keep_heap`` set it up (0: not, or not glibc)


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim`` (None: not there), looked up once (``core.libc``)."""
    return libc.function("malloc_trim", [ctypes.c_size_t], ctypes.c_int)


def _resident() -> int | None:
    """This process's resident size in bytes (``/proc/self/statm``; None: unknown)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _mallopt(mmap_threshold: int, trim_threshold: int) -> bool:
    """glibc's mmap and trim thresholds set; whether both were (False: no glibc ``mallopt``)."""
    mallopt = libc.function("mallopt", [ctypes.c_int, ctypes.c_int], ctypes.c_int)
    return mallopt is not None and bool(
        mallopt(M_MMAP_THRESHOLD, mmap_threshold) and mallopt(M_TRIM_THRESHOLD, trim_threshold)
    )


def keep_heap() -> int:
    """In a worker process (not the main one), once: arrays up to ``KEPT_ARRAYS`` from the heap and
    freed memory kept (no automatic trim below ``KEPT_RESIDENT``), so that its next job reuses the
    pages this one touched.  Returns the resident size up to which the free heap is kept between
    jobs (``release(keep)``; 0: nothing kept -- the main process, or no glibc)."""
    global _kept
    if _kept or multiprocessing.parent_process() is None or _malloc_trim() is None or _resident() is None:
        return _kept
    if _mallopt(KEPT_ARRAYS, KEPT_RESIDENT):
        _kept = KEPT_RESIDENT
    return _kept


MAIN_TRIM = 64 << 20  # stage A's processes give back free heap past this much at its top (glibc's
# default: twice the dynamic threshold, 64 MB once arrays of 32 MB were freed)
SETTLED = (KEPT_ARRAYS, 16 << 20)  # the mmap and trim thresholds after stage A (the main process then
# holds the run's state: less kept; glibc's first ones, 128 KB each, faulted 0.3M pages more at r10m)
USER_MALLOC = ("GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")
_main_set = False  # ``main_heap`` set this process's thresholds (``settle_heap`` then sets SETTLED)


def main_heap() -> bool:
    """In the main process, at start, for stage A: arrays up to ``KEPT_ARRAYS`` from the heap from the
    first one on, and free heap kept up to ``MAIN_TRIM``; the processes it forks meanwhile inherit it
    (stage A's readers, the launch match).  glibc starts with a 128 KB threshold and raises it only
    once an array above it is freed, so every large temporary of the first reads was mapped, faulted
    in page by page and unmapped: r10m's processes took 590-600k page faults instead of 720-770k.
    ``settle_heap`` ends it.  Not when the user set glibc's malloc (environment or tunables), nor
    without glibc.  Returns whether it was set."""
    global _main_set
    if any(k in os.environ for k in USER_MALLOC) or _malloc_trim() is None:
        return False
    _main_set = _mallopt(KEPT_ARRAYS, MAIN_TRIM)
    return _main_set


def settle_heap() -> None:
    """Stage A done (the model built, before the workers fork): the free heap given back, and, where
    ``main_heap`` set them, the thresholds of ``SETTLED`` -- the main process holds the run's state
    from here on and the merge's writers are forked from it: with thousands of reports, 64 MB of free
    heap kept made them the largest processes (3,000 ranks: 309 MB instead of 287)."""
    global _main_set
    if _main_set:
        _main_set = not _mallopt(*SETTLED)
    release()


def release(keep: int = 0) -> None:
    """Give free memory back to the system; ``keep``: unless this process is resident in at most that
    many bytes (its free heap then serves its next job)."""
    trim = _malloc_trim()
    if trim is None:
        return
    if keep:
        resident = _resident()
        if resident is not None and resident <= keep:
            return
    trim(0)
