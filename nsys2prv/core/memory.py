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

_trim = False


def _malloc_trim():
    global _trim
    if _trim is False:
        _trim = None
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _trim = libc.malloc_trim
            _trim.argtypes, _trim.restype = [ctypes.c_size_t], ctypes.c_int
        except (OSError, AttributeError):
            _trim = None
    return _trim


def release() -> None:
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
