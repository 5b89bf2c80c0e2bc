"""Give freed memory back to the operating system between the reports a process handles.

A worker converts several reports one after the other; each leaves tens of MB of freed but
still mapped heap behind (glibc keeps freed chunks of its main arena and raises its mmap
threshold after large frees, so later large arrays come from the heap too).  ``release()``
asks glibc to return free pages (``malloc_trim``, cheap); elsewhere it does nothing.  No
``gc.collect()``: the arrays are freed by reference counting, and a full collection is costly
in a process that has loaded pandas and numba.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Callable

_probed = False
_trim: Callable[[int], int] | None = None  # glibc's malloc_trim, once probed (None: not there)


def _malloc_trim() -> Callable[[int], int] | None:
    global _probed, _trim
    if not _probed:
        _probed = True
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            trim = libc.malloc_trim
            trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
            _trim = trim
        except (OSError, AttributeError):
            _trim = None
    return _trim


def release() -> None:
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
