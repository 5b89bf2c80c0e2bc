"""libc's calls, each looked up by ``core/libc.py`` in the process's own symbols (``ctypes.CDLL(None)``, no
``find_library`` subprocess): a worker's death signal armed (``core/workers.py``), glibc's ``malloc_trim``
found (``core/memory.py``)."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

import pytest

from nsys2prv.core import memory
from nsys2prv.core.workers import init_worker

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl and malloc_trim: Linux with glibc")
PR_GET_PDEATHSIG = 2


@linux
def test_a_worker_dies_with_its_parent():
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # (the worker: its exit code is the signal it gets when the parent dies)
        code = 1
        try:
            init_worker(parent)
            got = ctypes.c_int(0)
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(PR_GET_PDEATHSIG, ctypes.byref(got), 0, 0, 0) == 0:
                code = got.value
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == signal.SIGKILL


@linux
def test_malloc_trim_found():
    trim = memory._malloc_trim()
    assert trim is not None and trim(0) in (0, 1)
