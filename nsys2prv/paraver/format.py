"""Bulk formatting of Paraver records into ':'-joined text lines (numba): rows of integers
(``write_records``, the in-memory writer) and compact chunk records (``write_compact``, the merge)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _num(buf, pos, v):
    """Write integer ``v`` at ``buf[pos:]`` (digits counted first, then written from the last one:
    no scratch array -- twice as fast as collecting them in one); return the position after it."""
    if v < 0:
        buf[pos] = 45  # '-'
        pos += 1
        v = -v
    nd = 1
    x = v
    while x >= 10:
        x //= 10
        nd += 1
    end = pos + nd
    i = end - 1
    while True:
        buf[i] = 48 + v % 10
        v //= 10
        i -= 1
        if v == 0:
            break
    return end


@njit(cache=True)
def _format(flat, offs, lens, perm, lo, hi, buf):
    pos = 0
    for k in range(lo, hi):
        r = perm[k]
        o = offs[r]
        for f in range(lens[r]):
            if f:
                buf[pos] = 58  # ':'
                pos += 1
            pos = _num(buf, pos, flat[o + f])
        buf[pos] = 10  # '\n'
        pos += 1
    return pos


def write_records(fh, flat: np.ndarray, offs: np.ndarray, lens: np.ndarray, perm: np.ndarray,
                  chunk: int = 1 << 18) -> None:
    """Write records ``perm[i]`` (fields ``flat[offs:offs+lens]``) in order, one per line."""
    for lo in range(0, len(perm), chunk):
        hi = min(lo + chunk, len(perm))
        size = int(lens[perm[lo:hi]].sum()) * 21 + (hi - lo)
        buf = np.empty(size, np.uint8)
        n = _format(flat, offs, lens, perm, lo, hi, buf)
        fh.write(memoryview(buf[:n]))


@njit(cache=True)
def _format_compact(kind, thread, time, tail, offs, lens, perm, lo, hi, cpu, task, thr, buf):
    """Records of a chunk (see chunks.py): kind:cpu:1:task:thread:time, then the record's tail
    fields; a communication's tail holds the receiving thread, expanded to cpu:1:task:thread."""
    pos = 0
    for k in range(lo, hi):
        r = perm[k]
        g = thread[r]
        kr = kind[r]
        pos = _num(buf, pos, kr)
        buf[pos] = 58
        pos = _num(buf, pos + 1, cpu[g])
        buf[pos] = 58
        buf[pos + 1] = 49  # appl 1
        buf[pos + 2] = 58
        pos = _num(buf, pos + 3, task[g])
        buf[pos] = 58
        pos = _num(buf, pos + 1, thr[g])
        buf[pos] = 58
        pos = _num(buf, pos + 1, time[r])
        o = offs[r]
        n = lens[r]
        for f in range(n):
            v = tail[o + f]
            buf[pos] = 58
            if kr == 3 and f == 1:            # the receiving thread
                pos = _num(buf, pos + 1, cpu[v])
                buf[pos] = 58
                buf[pos + 1] = 49
                buf[pos + 2] = 58
                pos = _num(buf, pos + 3, task[v])
                buf[pos] = 58
                pos = _num(buf, pos + 1, thr[v])
            else:
                pos = _num(buf, pos + 1, v)
        buf[pos] = 10
        pos += 1
    return pos


def write_compact(fh, kind, thread, time, tail, offs, lens, perm, objs, chunk: int = 1 << 18) -> None:
    """Write chunk records ``perm[i]`` in order (``objs``: cpu, task, thread-in-task per global thread)."""
    cpu, task, thr = objs
    for lo in range(0, len(perm), chunk):
        hi = min(lo + chunk, len(perm))
        sel = perm[lo:hi]
        size = (int(lens[sel].sum()) + 3 * int((kind[sel] == 3).sum())) * 22 + (hi - lo) * (6 * 22 + 1)
        buf = np.empty(int(size), np.uint8)
        n = _format_compact(kind, thread, time, tail, offs, lens, perm, lo, hi, cpu, task, thr, buf)
        fh.write(memoryview(buf[:n]))
