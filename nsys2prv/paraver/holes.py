"""What a relayed merge (``merge._relay``) has read of the chunk files, given back as it goes: a hole
punched in each section up to the records every process has taken (``fallocate`` with
PUNCH_HOLE | KEEP_SIZE: the file keeps its size, its page-cache pages and disk blocks are freed).  The
.prv's writes then reuse pages the merge has just freed instead of faulting in fresh ones, and the run's
scratch space shrinks as the .prv grows instead of holding both until the end (r10m: 1.1 GB of chunks
beside the 1.5 GB .prv).

When the process that formatted block k has received block k's offset, blocks 0 .. k - 1 are written,
so read, and block k is read: every record before block k's end (each reader's ``stop``) is taken.  A
section is punched up to 2 x STRIDE records before the STRIDE-aligned record at or before that point
(a later block's first reads, ``_Reader.narrow``, look its border up from at most STRIDE records before
that record: one STRIDE more is kept), the tail up to the field its next record starts at, both rounded
down to a page and up from the section's start (a punch of part of a page would zero it: it may hold
another section).  A section is punched once MIN_BYTES more of it are read (few system calls; a small
chunk never).  Where the file system or the platform cannot punch holes, nothing is done: the chunk
files are removed after the merge as before."""

from __future__ import annotations

import ctypes
import os
from typing import Any

from nsys2prv.core import libc
from nsys2prv.paraver.chunks import STRIDE

MIN_BYTES = 4 << 20  # a section punched once this much more of it is read
_MODE = 0x01 | 0x02  # FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE (linux/falloc.h)
SECTIONS = ("time", "key", "thread", "sig", "tail")  # (the header and the trailer are read throughout)


def _fallocate():
    """libc's ``fallocate``, or None (not Linux, or not found)."""
    return libc.function("fallocate", [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64])


def can_punch() -> bool:
    """Whether this platform has ``fallocate`` (whether a file system punches holes, it tells)."""
    return _fallocate() is not None


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class Holes:
    """The readers' chunk files (``merge._Reader``: ``path``, ``where`` -- section -> (first byte, dtype)
    --, ``n``, and after each block ``stop`` and ``field``), punched as the blocks are taken
    (``taken``); only files with MIN_BYTES or more of records."""

    def __init__(self, readers) -> None:
        self.call = _fallocate()
        self.files: list[tuple[Any, int, dict[str, int]]] = []  # (reader, descriptor, section -> punched up to)
        if self.call is None:
            return
        for r in readers:
            first = r.where["time"][0]
            if r.where["index"][0] - first < MIN_BYTES:
                continue
            try:
                fd = os.open(r.path, os.O_WRONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
            except OSError:
                continue  # (not punched: removed after the merge as the others)
            self.files.append((r, fd, {s: _up(r.where[s][0]) for s in SECTIONS if s in r.where}))

    def taken(self) -> None:
        """Every record before each reader's ``stop`` is taken (this process has its block's offset):
        free what no block reads any more."""
        for r, fd, done in self.files:
            safe = max(0, (r.stop // STRIDE - 2) * STRIDE)  # (records: a block's border looked up
            for s, at in done.items():  #                      from STRIDE records before it)
                base, dtype = r.where[s]
                end = base + dtype.itemsize * (r.field if s == "tail" else safe)
                end -= end % _PAGE
                if end - at >= MIN_BYTES:
                    if self.call(fd, _MODE, at, end - at) != 0:  # (the file system cannot: stop trying)
                        self.close()
                        return
                    done[s] = end

    def close(self) -> None:
        for _, fd, _ in self.files:
            os.close(fd)
        self.files = []


def _up(at: int) -> int:
    """``at`` rounded up to a page."""
    return -(-at // _PAGE) * _PAGE
