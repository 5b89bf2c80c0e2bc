"""Bulk formatting of Paraver records into ':'-joined text lines (numba): the merge's compact chunk
records (``write_compact``).

The kernel has a numpy twin (``_format_compact_np``: the same bytes, a few times slower) that formats
small outputs while the kernel is not compiled yet (``core/jit.py``): a first conversion of a small run
does not wait for the compiler."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from nsys2prv.core.jit import kernel

# records written by one writer: the numpy twin (2-3 times slower) formats fewer until the kernel is compiled
LIMIT = 200_000


_POW10 = 10 ** np.arange(1, 19, dtype=np.int64)


def _text(vals: np.ndarray, last: np.ndarray, buf: np.ndarray) -> int:
    """``vals`` as decimal text into ``buf``, each followed by '\\n' where ``last`` else ':'; the
    number of bytes written (numpy: every digit position is one vectorised step)."""
    if len(vals) == 0:
        return 0
    neg = vals < 0
    mag = np.abs(vals)
    nd = np.searchsorted(_POW10, mag, side="right") + 1
    end = np.cumsum(nd + neg + 1)
    n = int(end[-1])
    buf[end - 1] = np.where(last, 10, 58)
    buf[(end - nd - 2)[neg]] = 45  # '-'
    pos = end - 2  # the last digit of each
    while len(mag):
        buf[pos] = 48 + mag % 10
        mag //= 10
        more = mag > 0
        if not more.all():
            mag, pos = mag[more], pos[more]
        pos -= 1
    return n


def _ends(counts: np.ndarray) -> np.ndarray:
    """Per value of records of ``counts`` values each: is it its record's last."""
    last = np.zeros(int(counts.sum()), bool)
    last[np.cumsum(counts)[counts > 0] - 1] = True
    return last


def _format_compact_np(
    thread, time, sig, tail, offs, perm, lo, hi, cpu, task, thr, width, first, rbase, types, dyn, remap, buf, vals=None
):
    """``_format_compact`` in numpy: the values of every record laid out in one array, then ``_text``
    (``vals``, the kernel's scratch, is not used)."""
    r = perm[lo:hi]
    g, s, o = thread[r], sig[r].astype(np.int64), offs[r]
    kr = np.where(s == 0, 1, np.where(s == 1, 3, 2))
    w = width[s].astype(np.int64)
    counts = 6 + np.where(kr == 2, 2 * w, np.where(kr == 3, w + 3, w))
    base = np.cumsum(counts) - counts
    vals = np.empty(int(counts.sum()), np.int64)
    for k, v in enumerate((kr, cpu[g], 1, task[g], thr[g], time[r])):
        vals[base + k] = v
    ev, st, cm = kr == 2, kr == 1, kr == 3
    for f in range(int(w.max()) if len(w) else 0):
        e = ev & (w > f)
        if e.any():
            q = first[s[e]] + f
            v = tail[o[e] + f]
            d = dyn[q]
            v[d] = remap[rbase[s[e]][d] + v[d]]
            vals[base[e] + 6 + 2 * f] = types[q]
            vals[base[e] + 7 + 2 * f] = v
        e = st & (w > f)
        vals[base[e] + 6 + f] = tail[o[e] + f]
        e = cm & (w > f)
        if f == 1:  # the receiving thread: cpu:1:task:thread
            peer = tail[o[e] + 1]
            for k, v in enumerate((cpu[peer], 1, task[peer], thr[peer])):
                vals[base[e] + 7 + k] = v
        else:
            vals[base[e] + 6 + f + (3 if f > 1 else 0)] = tail[o[e] + f]
    return _text(vals, _ends(counts), buf)


def expect_records(n: int, load: bool = True) -> None:
    """``write_compact`` is about to format ``n`` records in several calls: formatted by the numpy
    twin or compiled according to ``n``, not to each call's share (compiled, or loaded from the
    cache, now: processes forked after this inherit it; ``load`` False: each process that formats
    loads it itself)."""
    _format_compact.plan(n)
    if load and n >= _format_compact.interpret_below:
        _format_compact(*probe_compact())


def probe_compact() -> tuple:
    """Arguments of one tiny valid ``_format_compact`` call, of the types the writers pass (chunk
    threads and signatures int32, the rest int64, value flags bool)."""
    z, z32, b = np.zeros(1, np.int64), np.zeros(1, np.int32), np.zeros(1, np.bool_)
    return (
        z32,
        z,
        z32,
        np.array([0, 0]),
        z,
        z,
        0,
        1,
        z,
        z,
        z,
        np.array([2]),
        z,
        z,
        z,
        b,
        z,
        np.empty(256, np.uint8),
        np.empty(10, np.int64),
    )


class Tables(NamedTuple):
    """What the compact formatter looks up (``merge.sig_tables``): per global thread its cpu, task
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


_PAIRS = np.frombuffer("".join(f"{i:02d}" for i in range(100)).encode(), np.uint8)  # "00" ... "99"


@kernel(interpret_below=LIMIT, size=lambda a: len(a[5]), python=_format_compact_np)
def _format_compact(
    thread, time, sig, tail, offs, perm, lo, hi, cpu, task, thr, width, first, rbase, types, dyn, remap, buf, vals
):
    """Records of chunks (see chunks.py): kind:cpu:1:task:thread:time, then per signature the
    tail: a state's end and state; a communication's fields with the receiving thread expanded to
    cpu:1:task:thread; an event's type:value pairs (local name codes numbered through ``remap``).
    Each record's values are laid out in ``vals`` (scratch, ``fields_per_record``), then written by
    the one digit loop: one function, no helpers, no allocation (numba compiles it in about half
    the time of a kernel calling helpers per field)."""
    pos = 0
    for k in range(lo, hi):
        r = perm[k]
        g = thread[r]
        s = sig[r]
        kr = 1 if s == 0 else (3 if s == 1 else 2)
        vals[0] = kr
        vals[1] = cpu[g]
        vals[2] = 1  # appl 1
        vals[3] = task[g]
        vals[4] = thr[g]
        vals[5] = time[r]
        nv = 6
        o = offs[r]
        if kr == 2:
            q = first[s]
            for f in range(width[s]):
                v = tail[o + f]
                if dyn[q + f]:
                    v = remap[rbase[s] + v]
                vals[nv] = types[q + f]
                vals[nv + 1] = v
                nv += 2
        else:
            for f in range(width[s]):
                v = tail[o + f]
                if kr == 3 and f == 1:  # the receiving thread: cpu:1:task:thread
                    vals[nv] = cpu[v]
                    vals[nv + 1] = 1
                    vals[nv + 2] = task[v]
                    vals[nv + 3] = thr[v]
                    nv += 4
                else:
                    vals[nv] = v
                    nv += 1
        for f in range(nv):  # each value in decimal, then ':' (the record's last: '\n')
            v = vals[f]
            if v < 0:
                buf[pos] = 45  # '-'
                pos += 1
                v = -v
            nd = 1  # (digits counted first, then written from the last ones, two at a time from
            x = v  # ``_PAIRS``: half the divisions, no scratch digits)
            while x >= 100:
                x //= 100
                nd += 2
            if x >= 10:
                nd += 1
            end = pos + nd
            i = end
            while v >= 100:
                q = v // 100
                r2 = 2 * (v - 100 * q)
                i -= 2
                buf[i] = _PAIRS[r2]
                buf[i + 1] = _PAIRS[r2 + 1]
                v = q
            if v >= 10:
                buf[i - 2] = _PAIRS[2 * v]
                buf[i - 1] = _PAIRS[2 * v + 1]
            else:
                buf[i - 1] = 48 + v
            buf[end] = 58
            pos = end + 1
        buf[pos - 1] = 10
    return pos


def fields_per_record(width: np.ndarray) -> np.ndarray:
    """Scratch for ``_format_compact``: room for the values of its longest record."""
    return np.empty(6 + max(2 * int(width.max(initial=0)), int(width.max(initial=0)) + 3), np.int64)


def write_compact(fh, thread, time, sig, tail, offs, perm, tables: Tables, chunk: int = 1 << 15) -> None:
    """Write chunk records ``perm[i]`` in order, ``chunk`` records at a time (the text buffer is
    sized for the longest fields: ~7 MB for 32k records)."""
    vals = fields_per_record(tables.width)
    for lo in range(0, len(perm), chunk):
        hi = min(lo + chunk, len(perm))
        s = sig[perm[lo:hi]]
        fields = 6 * (hi - lo) + 2 * int(tables.width[s].sum()) + 3 * int((s == 1).sum())
        buf = np.empty(fields * 21 + (hi - lo), np.uint8)  # a field: up to 20 characters and ':'
        n = _format_compact(thread, time, sig, tail, offs, perm, lo, hi, *tables, buf, vals)
        fh.write(buf[:n].data)


def warmup_probes() -> list[tuple]:
    """Every kernel of this module with arguments of the types the conversion calls it with (one
    element each): what ``pipeline.warmup`` loads (or compiles) before worker processes fork."""
    return [(_format_compact, probe_compact())]
