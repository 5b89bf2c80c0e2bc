"""A worker's large result handed to the process that waits for it in shared memory instead of
through the pool's results pipe (``handed``).

A result returned plainly is pickled whole in the worker (its arrays copied into the pickle),
written into the pipe and read out of it (copied by the kernel twice) and unpickled (copied again,
into pages the kernel zeroes first).  ``handed(result)`` pickles it with its arrays' buffers out of
band (pickle protocol 5; those under INBAND_BELOW stay in the pickle): they are written once into
an anonymous memory file (``memfd_create``, Linux; no file system, nothing another user can
open), whose descriptor goes to the receiving process over multiprocessing's resource sharer (a
Unix socket of the worker, authenticated with the pool's key).  The receiver maps each buffer on
its own and unpickles the arrays straight onto the mappings: no copy, and the memory held is that
of the arrays still in use (a column kept of a batch keeps that column's pages; each mapping
punches its part of the file out when it goes).  Stage A's helpers hand their batches so
(``pipeline/read_ahead.py``): r10m's 395 MB of batches, about 0.5 CPU s and 130 MB of the main
process's peak less (BENCHMARKS.md, tenth batch).

Where the memory file cannot be made (not Linux, out of descriptors or memory), the result is
pickled plainly, as without ``handed``: the same object arrives either way.
"""

from __future__ import annotations

import mmap
import os
import pickle
from multiprocessing import reduction
from typing import Any

from nsys2prv.core.writes import write_all

INBAND_BELOW = 64 << 10  # a buffer smaller than this stays in the pickle (not worth a mapping)
ALIGN = mmap.ALLOCATIONGRANULARITY  # each buffer's offset in the file: where a mapping can start
_PAD = memoryview(bytes(ALIGN))


def _padded(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


class _Mapped(mmap.mmap):
    """One buffer of a result, mapped from its memory file (shared: nothing else has the file); its
    pages freed from the file when it goes (``MADV_REMOVE``: a hole punched), so that the memory
    held is exactly the buffers still in use, as with arrays of their own."""

    def __del__(self):
        try:
            self.madvise(mmap.MADV_REMOVE)
        except (OSError, ValueError, AttributeError):  # (closed; a system without it: freed with the file)
            pass


def _taken(head: bytes, dup, sizes: list[int]) -> Any:
    """In the receiving process: the result, each of its buffers mapped from the memory file on its
    own (a part kept of one, such as a column, keeps only that part of the file)."""
    fd = dup.detach()
    buffers: list = []
    try:
        at = 0
        for n in sizes:
            buffers.append(memoryview(_Mapped(fd, n, flags=mmap.MAP_SHARED, offset=at)))  # (read and write)
            at += _padded(n)
    finally:
        os.close(fd)  # (the mappings hold the file)
    return pickle.loads(head, buffers=buffers)


class Handover:
    """``obj``, pickled by way of a memory file (``handed``)."""

    def __init__(self, obj: Any):
        self.obj = obj

    def __reduce__(self):
        buffers: list[pickle.PickleBuffer] = []

        def in_band(b: pickle.PickleBuffer) -> bool:
            if b.raw().nbytes < INBAND_BELOW:
                return True
            buffers.append(b)
            return False

        head = pickle.dumps(self.obj, protocol=5, buffer_callback=in_band)
        raws = [b.raw() for b in buffers]
        if not raws:
            return _plain, (head,)  # (nothing out of band: the head is the whole pickle)
        try:
            fd = os.memfd_create("nsys2prv-result", os.MFD_CLOEXEC)
        except (AttributeError, OSError):  # (not Linux; out of descriptors or memory)
            return _plain, (pickle.dumps(self.obj, protocol=5),)
        try:
            write_all(fd, [v for r in raws for v in (r, _PAD[: _padded(r.nbytes) - r.nbytes])])
            return _taken, (head, reduction.DupFd(fd), [r.nbytes for r in raws])
        except OSError:  # (out of memory for the file)
            return _plain, (pickle.dumps(self.obj, protocol=5),)
        finally:
            os.close(fd)  # (DupFd holds a duplicate until the receiver takes it)


def _plain(head: bytes) -> Any:
    return pickle.loads(head)


def handed(obj: Any) -> Handover:
    """``obj`` to return from a worker of a forked pool: it arrives as itself in the process that
    waits for it (module doc)."""
    return Handover(obj)
