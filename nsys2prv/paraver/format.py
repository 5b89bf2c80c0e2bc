"""Bulk formatting of Paraver records into ':'-joined text lines (numba): rows of integers
(``write_records``, the in-memory writer) and compact chunk records (``write_compact``, the merge)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nsys2prv.core.jit import njit


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


class Tables(NamedTuple):
    """What the compact formatter looks up (``chunks.sig_tables``): per global thread its cpu, task
    and thread in task; per record signature its tail width, first entry in ``types``/``dyn`` and
    first position in ``remap``; the event type ids and whether each value is a local name code;
    local name codes -> the trace's values."""
    cpu: np.ndarray
    task: np.ndarray
    thr: np.ndarray
    width: np.ndarray
    first: np.ndarray
    rbase: np.ndarray
    types: np.ndarray
    dyn: np.ndarray
    remap: np.ndarray


@njit(cache=True)
def _object(buf, pos, g, cpu, task, thr):
    """``cpu:1:task:thread`` of global thread ``g`` at ``buf[pos:]``; the position after it."""
    pos = _num(buf, pos, cpu[g])
    buf[pos] = 58
    buf[pos + 1] = 49  # appl 1
    buf[pos + 2] = 58
    pos = _num(buf, pos + 3, task[g])
    buf[pos] = 58
    return _num(buf, pos + 1, thr[g])


@njit(cache=True)
def _format_compact(thread, time, sig, tail, offs, perm, lo, hi, cpu, task, thr, width, first, rbase,
                    types, dyn, remap, buf):
    """Records of chunks (see chunks.py): kind:cpu:1:task:thread:time, then per signature the
    tail: a state's end and state; a communication's fields with the receiving thread expanded to
    cpu:1:task:thread; an event's type:value pairs (local name codes numbered through ``remap``)."""
    pos = 0
    for k in range(lo, hi):
        r = perm[k]
        g = thread[r]
        s = sig[r]
        kr = 1 if s == 0 else (3 if s == 1 else 2)
        buf[pos] = 48 + kr
        buf[pos + 1] = 58
        pos = _object(buf, pos + 2, g, cpu, task, thr)
        buf[pos] = 58
        pos = _num(buf, pos + 1, time[r])
        o = offs[r]
        if kr == 2:
            q = first[s]
            for f in range(width[s]):
                buf[pos] = 58
                pos = _num(buf, pos + 1, types[q + f])
                v = tail[o + f]
                if dyn[q + f]:
                    v = remap[rbase[s] + v]
                buf[pos] = 58
                pos = _num(buf, pos + 1, v)
        else:
            for f in range(width[s]):
                v = tail[o + f]
                buf[pos] = 58
                if kr == 3 and f == 1:            # the receiving thread
                    pos = _object(buf, pos + 1, v, cpu, task, thr)
                else:
                    pos = _num(buf, pos + 1, v)
        buf[pos] = 10
        pos += 1
    return pos


def write_compact(fh, thread, time, sig, tail, offs, perm, tables: Tables, chunk: int = 1 << 18) -> None:
    """Write chunk records ``perm[i]`` in order."""
    for lo in range(0, len(perm), chunk):
        hi = min(lo + chunk, len(perm))
        s = sig[perm[lo:hi]]
        fields = 6 * (hi - lo) + 2 * int(tables.width[s].sum()) + 3 * int((s == 1).sum())
        buf = np.empty(fields * 21 + (hi - lo), np.uint8)     # a field: up to 20 characters and ':'
        n = _format_compact(thread, time, sig, tail, offs, perm, lo, hi, *tables, buf)
        fh.write(memoryview(buf[:n]))
