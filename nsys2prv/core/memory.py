"""Give freed memory back to the operating system between the reports a process handles.

A worker converts several reports one after the other; each leaves tens of MB of freed but
still mapped heap behind (glibc keeps freed chunks of its main arena and raises its mmap
threshold after large frees, so later large arrays come from the heap too).  ``release()``
asks glibc to return free pages (``malloc_trim``, cheap); elsewhere it does nothing.  No
``gc.collect()``: the arrays are freed by reference counting, and a full collection is costly
in a process that has loaded pandas and numba.

A worker process of stage C may keep some of it instead (``keep_heap``): every page given back is
faulted in again by the next job, and on a virtual machine the faults cost as much CPU as the work
(the 8-rank benchmark's stage C: 80k faults, half its CPU, in system time).
"""

from __future__ import annotations

import ctypes
import multiprocessing
from typing import Any, Callable

_probed = False
_trim: Callable[[int], int] | None = None  # glibc's malloc_trim, once probed (None: not there)
_libc: Any = None

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (glibc's malloc.h)
KEPT_ARRAYS = 32 << 20  # arrays up to this size come from the heap (glibc's own largest dynamic threshold)
KEPT_FREE = 256 << 20  # free heap a worker keeps for its next job (more: given back)
_kept = 0  # this process's KEPT_FREE once ``keep_heap`` set it up (0: not, or not glibc)


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _malloc_trim() -> Callable[[int], int] | None:
    global _probed, _trim, _libc
    if not _probed:
        _probed = True
        try:
            # the process's own symbols (dlopen(NULL)), libc's among them: ``find_library("c")`` runs
            # ldconfig in a subprocess (as ``workers.init_worker``)
            _libc = ctypes.CDLL(None)
            trim = _libc.malloc_trim
            trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
            _trim = trim
        except (OSError, AttributeError):
            _trim = None
    return _trim


def _free_heap() -> int | None:
    """Bytes of free memory glibc holds (``mallinfo2().fordblks``; None: unknown)."""
    try:
        info = _libc.mallinfo2
    except AttributeError:  # (glibc < 2.33)
        return None
    info.restype = _Mallinfo2
    return int(info().fordblks)


def keep_heap() -> int:
    """In a worker process (not the main one), once: arrays up to ``KEPT_ARRAYS`` from the heap and
    freed memory kept (no automatic trim below ``KEPT_FREE``), so that its next job reuses the pages
    this one touched.  Returns the free heap to keep between jobs (``release(keep)``; 0: nothing kept
    -- the main process, or no glibc)."""
    global _kept
    if _kept or multiprocessing.parent_process() is None or _malloc_trim() is None or _free_heap() is None:
        return _kept
    try:
        mallopt = _libc.mallopt
        mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
        if mallopt(M_MMAP_THRESHOLD, KEPT_ARRAYS) and mallopt(M_TRIM_THRESHOLD, KEPT_FREE):
            _kept = KEPT_FREE
    except AttributeError:
        pass
    return _kept


def release(keep: int = 0) -> None:
    """Give free memory back to the system; ``keep``: unless glibc holds at most that much free."""
    trim = _malloc_trim()
    if trim is None:
        return
    if keep:
        free = _free_heap()
        if free is not None and free <= keep:
            return
    trim(0)
