"""Functions of the C library that Python's ``os`` lacks (``renameat2`` for ``dirs.exchange``,
``fallocate`` for ``paraver.holes``, ``prctl`` for ``workers.init_worker``, glibc's ``malloc_trim`` and
``mallopt`` for ``memory``), looked up once per process: Linux only, from the process's own
symbols (``dlopen(NULL)``: libc's among them; ``find_library("c")`` runs ldconfig in a subprocess), with
``errno`` kept for ``ctypes.get_errno``."""

from __future__ import annotations

import ctypes
import sys
from typing import Any

_found: dict[str, Any] = {}  # name -> the function, or None where there is none


def function(name: str, argtypes: list, restype: Any = ctypes.c_int) -> Any:
    """The C library's function ``name`` with these argument and result types, or None (not Linux,
    or a C library without it)."""
    if name not in _found:
        fn = None
        if sys.platform.startswith("linux"):
            try:
                fn = getattr(ctypes.CDLL(None, use_errno=True), name)
                fn.argtypes, fn.restype = argtypes, restype
            except (OSError, AttributeError):
                fn = None
        _found[name] = fn
    return _found[name]
