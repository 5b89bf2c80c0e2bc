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

# the record signatures of chunk files and a final state's end (defined here, where the compiled merge reads
# them; chunks.py, which writes them, imports them: this module must load without pandas, pipeline/warmup.py)
STATE_SIG, COMM_SIG, EVENT_SIG0, OPEN_END = 0, 1, 2, -1
BUFFER = 1 << 22  # bytes of text formatted per kernel call


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
    time,
    key,
    thread,
    sig,
    tail,
    run,
    sbase,
    cur,
    fcur,
    heap,
    end_ns,
    counts,
    cpu,
    task,
    thr,
    width,
    pairs,
    first,
    rbase,
    types,
    dyn,
    remap,
    buf,
    vals,
):
    """``_format_compact`` in numpy: the records left ordered by one stable lexsort, as many as surely
    fit in ``buf`` taken, their values laid out in one array, then ``_text`` (``heap`` is not used)."""
    left = run[1:] - cur
    owner = np.repeat(np.arange(len(cur)), left)
    before = np.cumsum(left) - left
    rec = np.arange(len(owner)) - np.repeat(before - cur, left)  # run by run, in order: a stable sort's ties
    s = sig[rec].astype(np.int64)
    s[s >= EVENT_SIG0] += sbase[owner[s >= EVENT_SIG0]]
    w = width[s].astype(np.int64)
    per_run = np.zeros(len(cur), np.int64)
    np.add.at(per_run, owner, w)
    offs = np.cumsum(w) - w - np.repeat(np.cumsum(per_run) - per_run - fcur, left)
    take = np.lexsort((key[rec], time[rec]))[: max(1, len(buf) // (21 * len(vals) + 1))]
    np.add.at(cur, owner[take], 1)
    np.add.at(fcur, owner[take], w[take])
    r, s, o = rec[take], s[take], offs[take]
    opn = s == STATE_SIG  # a thread's final state: closed at END ...
    opn[opn] = tail[o[opn]] == OPEN_END  # (only states read: an event of zeros may end the tail)
    keep = ~opn | (time[r] < end_ns)  # ... unless it starts there: not written
    if opn.any():
        tail = tail.copy()
        tail[o[opn & keep]] = end_ns
    r, s, o = r[keep], s[keep], o[keep]
    counts += np.bincount(np.minimum(s, EVENT_SIG0), minlength=3)  # states, communications, events
    g = thread[r]
    kr = np.where(s == 0, 1, np.where(s == 1, 3, 2))
    w = width[s].astype(np.int64)
    p = np.where(kr == 2, pairs[s], w)  # (an event's pairs: its tail's values, or zeros when it has none)
    nvals = 6 + np.where(kr == 2, 2 * p, np.where(kr == 3, w + 3, w))
    base = np.cumsum(nvals) - nvals
    vals = np.empty(int(nvals.sum()), np.int64)
    for k, v in enumerate((kr, cpu[g], 1, task[g], thr[g], time[r])):
        vals[base + k] = v
    ev, st, cm = kr == 2, kr == 1, kr == 3
    for f in range(int(p.max()) if len(p) else 0):
        e = ev & (p > f)
        if e.any():
            q = first[s[e]] + f
            v = np.zeros(int(e.sum()), np.int64)  # (a signature of zeros: no values in the tail)
            has = w[e] > f
            v[has] = tail[o[e][has] + f]
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
    return _text(vals, _ends(nvals), buf)


def expect_records(n: int, load: bool = True) -> None:
    """``write_compact`` is about to format ``n`` records in several calls: formatted by the numpy
    twin or compiled according to ``n``, not to each call's share (compiled, or loaded from the
    cache, now: processes forked after this inherit it; ``load`` False: each process that formats
    loads it itself)."""
    _format_compact.plan(n)
    if load and n >= _format_compact.interpret_below:
        _format_compact(*probe_compact())


def probe_compact() -> tuple:
    """Arguments of one tiny valid ``_format_compact`` call (one state record), of the types the
    writers pass (chunk threads and signatures int32, the rest int64, value flags bool)."""
    z, z32, b = np.zeros(1, np.int64), np.zeros(1, np.int32), np.zeros(1, np.bool_)
    i64 = lambda *x: np.array(x, np.int64)  # noqa: E731
    return (
        *(i64(0), i64(0), z32, z32.copy(), i64(0, 0)),  # time, key, thread, sig, tail
        *(i64(0, 1), i64(0), i64(0), i64(0), i64(0)),  # run, sbase, cur, fcur, heap
        1,  # end_ns
        np.zeros(3, np.int64),  # counts
        *(z, z, z, i64(2, 6), i64(2, 6), i64(0, 0), i64(0, 0), z, b, z),  # the Tables
        np.empty(512, np.uint8),
        np.empty(12, np.int64),
    )


class Tables(NamedTuple):
    """What the compact formatter looks up (``merge.sig_tables``): per global thread its cpu, task
    and thread in task; per record signature its tail width, its type:value pairs (an event's: as
    many as its width, or its signature is one of zeros: values all 0, none in the tail), first entry
    in ``types``/``dyn`` and first position in ``remap``; the event type ids and whether each value is
    a local name code; local name codes -> the trace's values."""

    cpu: np.ndarray
    task: np.ndarray
    thr: np.ndarray
    width: np.ndarray
    pairs: np.ndarray
    first: np.ndarray
    rbase: np.ndarray
    types: np.ndarray
    dyn: np.ndarray
    remap: np.ndarray


_PAIRS = np.frombuffer("".join(f"{i:02d}" for i in range(100)).encode(), np.uint8)  # "00" ... "99"


@kernel(interpret_below=LIMIT, size=lambda a: len(a[0]), python=_format_compact_np, allocates=False)
def _format_compact(
    time,
    key,
    thread,
    sig,
    tail,
    run,
    sbase,
    cur,
    fcur,
    heap,
    end_ns,
    counts,
    cpu,
    task,
    thr,
    width,
    pairs,
    first,
    rbase,
    types,
    dyn,
    remap,
    buf,
    vals,
):
    """Merge and format sorted runs of chunk records (see chunks.py): run a is records
    [run[a], run[a+1]) in (time, key) order, ``cur[a]`` its next record and ``fcur[a]`` that
    record's first tail field; its event signatures are ``sbase[a]`` + theirs.  The next record is
    the least (time, key, run) of the runs' next ones (a binary heap of runs in ``heap``, built per
    call): the order of a stable lexsort of the runs one after another.  Records are written while
    ``buf`` has room for the longest; ``cur``, ``fcur`` and ``counts`` (states, communications and
    events written) are updated; returns the bytes written.

    A record is kind:cpu:1:task:thread:time, then per signature the tail: a state's end and state
    (a final state, end OPEN_END, ends at ``end_ns``; one starting there is not written); a
    communication's fields with the receiving thread expanded to cpu:1:task:thread; an event's
    type:value pairs (local name codes numbered through ``remap``).  Each record's values are laid
    out in ``vals`` (scratch, ``fields_per_record``), then written by the one digit loop: one
    function, no helpers, no allocation (numba compiles it in about half the time of a kernel
    calling helpers per field)."""
    m = 0
    for a in range(len(cur)):  # the heap: runs with records left (made a heap by the first sifts)
        if cur[a] < run[a + 1]:
            heap[m] = a
            m += 1
    j = m // 2  # positions j - 1 ... 0 sifted down first (heapify), then position 0 after each record
    pos = 0
    room = len(buf) - 21 * len(vals) - 1  # (a value: up to 20 characters and its separator)
    while True:
        if j > 0:
            j -= 1
            i = j
            a = heap[j]
            r = -1
        else:
            if m == 0 or pos > room:
                break
            i = 0
            a = heap[0]  # the least run: its next record is written
            r = cur[a]
            o = fcur[a]
            s = sig[r]
            if s >= 2:
                s += sbase[a]
            cur[a] = r + 1
            fcur[a] = o + width[s]
            if r + 1 == run[a + 1]:  # the run is done: the heap's last run takes its place
                m -= 1
                a = heap[m]
        if m > 0:  # run a sinks from position i to its place
            ta = time[cur[a]]
            ka = key[cur[a]]
            while True:
                c = 2 * i + 1
                if c >= m:
                    break
                b = heap[c]
                tb = time[cur[b]]
                kb = key[cur[b]]
                if c + 1 < m:
                    b2 = heap[c + 1]
                    t2 = time[cur[b2]]
                    k2 = key[cur[b2]]
                    if t2 < tb or (t2 == tb and (k2 < kb or (k2 == kb and b2 < b))):
                        c += 1
                        b, tb, kb = b2, t2, k2
                if ta < tb or (ta == tb and (ka < kb or (ka == kb and a < b))):
                    break
                heap[i] = b
                i = c
            heap[i] = a
        if r < 0:
            continue
        kr = 1 if s == 0 else (3 if s == 1 else 2)
        g = thread[r]
        vals[0] = kr
        vals[1] = cpu[g]
        vals[2] = 1  # appl 1
        vals[3] = task[g]
        vals[4] = thr[g]
        vals[5] = time[r]
        nv = 6
        if kr == 2:
            q = first[s]
            zero = width[s] == 0  # (a signature of zeros: no values in the tail)
            for f in range(pairs[s]):
                v = 0 if zero else tail[o + f]
                if dyn[q + f]:
                    v = remap[rbase[s] + v]
                vals[nv] = types[q + f]
                vals[nv + 1] = v
                nv += 2
            counts[2] += 1
        elif kr == 1:
            v = tail[o]
            if v == -1:  # OPEN_END: a thread's final state
                if time[r] >= end_ns:
                    continue
                v = end_ns
            vals[6] = v
            vals[7] = tail[o + 1]
            nv = 8
            counts[0] += 1
        else:
            for f in range(width[s]):
                v = tail[o + f]
                if f == 1:  # the receiving thread: cpu:1:task:thread
                    vals[nv] = cpu[v]
                    vals[nv + 1] = 1
                    vals[nv + 2] = task[v]
                    vals[nv + 3] = thr[v]
                    nv += 4
                else:
                    vals[nv] = v
                    nv += 1
            counts[1] += 1
        for f in range(nv):  # each value in decimal, then ':' (the record's last: '\n')
            v = vals[f]
            if v < 0:
                buf[pos] = 45  # '-'
                pos += 1
                v = -v
            nd = 1  # (digits counted first, by comparisons, then written from the last ones, two
            while nd < 19 and v >= _POW10[nd - 1]:  # at a time from ``_PAIRS``: half the divisions)
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


def fields_per_record(pairs: np.ndarray) -> np.ndarray:
    """Scratch for ``_format_compact``: room for the values of its longest record (``pairs``: the
    Tables', each signature's pairs, or a state's or communication's fields)."""
    return np.empty(6 + max(2 * int(pairs.max(initial=0)), int(pairs.max(initial=0)) + 3), np.int64)


class Runs(NamedTuple):
    """A merge round's records: sorted runs (one per chunk) one after another.  Run a is records
    [start[a], start[a+1]); its tail fields start at ``fstart[a]``; its event signatures are
    ``sbase[a]`` + the chunk's (every array int64 but ``thread`` and ``sig``, int32)."""

    time: np.ndarray
    key: np.ndarray
    thread: np.ndarray
    sig: np.ndarray
    tail: np.ndarray
    start: np.ndarray
    fstart: np.ndarray
    sbase: np.ndarray


def text_buffer(tables: Tables) -> np.ndarray:
    """The text buffer of ``write_compact`` (BUFFER bytes, or room for a few of the longest records)."""
    return np.empty(max(BUFFER, 4 * (21 * len(fields_per_record(tables.pairs)) + 1)), np.uint8)


def write_compact(
    fh, runs: Runs, tables: Tables, end_ns: int, counts: np.ndarray, buf: np.ndarray | None = None
) -> None:
    """Write the records of ``runs`` merged into their global order, BUFFER bytes of text at a time
    (``buf``: from ``text_buffer``); ``counts`` += the states, communications and events written.
    ``fh`` with a ``room(n)`` method (``placement.BlockText``): formatted straight into the array it gives
    (at least ``n`` bytes), kept by ``advance``: no copy through ``buf``."""
    vals = fields_per_record(tables.pairs)
    buf = text_buffer(tables) if buf is None else buf
    room = getattr(fh, "room", None)
    stop = runs.start[1:]
    cur, fcur = runs.start[:-1].copy(), runs.fstart.copy()
    heap = np.empty(len(cur), np.int64)
    r = runs
    while (cur < stop).any():
        n = _format_compact(
            r.time,
            r.key,
            r.thread,
            r.sig,
            r.tail,
            r.start,
            r.sbase,
            cur,
            fcur,
            heap,
            end_ns,
            counts,
            *tables,
            dst := buf if room is None else room(len(buf)),
            vals,
        )
        if dst is buf:
            fh.write(buf[:n].data)
        else:
            fh.advance(n)


def warmup_probes() -> list[tuple]:
    """Every kernel of this module with arguments of the types the conversion calls it with (one
    element each): what ``pipeline.warmup`` loads (or compiles) before worker processes fork."""
    return [(_format_compact, probe_compact())]
