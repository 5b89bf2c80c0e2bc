"""Per-report sorted record chunks and their k-way merge into the .prv body.

Stage C (one report, any worker): the report's translation is painted (its threads only), laid
out as compact records, dynamic names encoded with report-local codes, sorted by the global sort
key and written to one binary file:

    header (8 int64) | time[n] int64 | key[n] int64 | thread[n] int32 | sig[n] int32 | tail[...] int64

A record is its time, sort key, global thread, signature and tail.  The signature says what the
tail holds: 0 a state (end, state; end -1: the thread's final state, closed at the trace's END),
1 a communication (physical send, receiving thread, logical and physical receive, size, tag),
2 and up an event whose (type ids, which values are local name codes) are entry sig - 2 of the
chunk's ``ChunkMeta.sigs``: the tail holds only the values.  The rest of a Paraver record (cpu,
appl, task, thread, and the receiver's) comes from the model when the merge formats it
(``format.write_compact``): the chunk files are about as large as the text they become.

Stage D (the main process): the files are merged in bounded rounds -- from every report take
the records up to the smallest of the reports' window maxima, sort that small set, close the final
state of every thread at the trace's END, format (numbering local name codes with the trace's
values) and write -- so memory is O(reports x window), not O(events).

The sort key is (time, key) with key = kind << 61 | order << 38 | x, where x is the global thread
for states and the report index for events and communications; ties (same report, equal key)
keep the report's record order.  This is exactly the order of the reference writer's stable
lexsort by (time, kind, order) over [painted states by thread, events and communications in
report order] (``tests/reference_writer.py``), so both write identical bytes.
"""

from __future__ import annotations

import errno
import os
import shutil
import sys
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields

import numpy as np
from tqdm import tqdm

from nsys2prv.core.names import is_names
from nsys2prv.core.workers import forked
from nsys2prv.model.resources import Model
from nsys2prv.paraver.fields import Fields
from nsys2prv.paraver.format import Tables, expect_records, write_compact
from nsys2prv.paraver.labels import ValueLabels
from nsys2prv.translate import paint, trace_end
from nsys2prv.translate.records import (
    CommBatch,
    EventBatch,
    StateIntervals,
    Translation,
)

KIND_SHIFT, ORDER_SHIFT = 61, 38
ORDER_LIMIT, X_LIMIT = 1 << (KIND_SHIFT - ORDER_SHIFT), 1 << ORDER_SHIFT
STATE_SIG, COMM_SIG, EVENT_SIG0 = 0, 1, 2  # record signatures (see above)
STATE_WIDTH, COMM_WIDTH = 2, 6  # their tail fields
OPEN_END = -1  # a state's end: the thread's final state (closed at END in the merge)
HEADER = 8
SECTIONS = (("time", np.int64), ("key", np.int64), ("thread", np.int32), ("sig", np.int32))
STRIDE = 64  # a chunk's index keeps the time of every STRIDE-th record
ROUND_PER_CHUNK = 96  # a merge round reads at least this many records per chunk (on average)
LAYOUT_SLICE = 1 << 16  # records laid out at a time when a chunk of more than
ONE_SLICE_UP_TO = 1 << 18  # records is written (smaller chunks: at once, without per-slice copies)


def sort_key(kind: int, order: np.ndarray, x) -> np.ndarray:
    order = np.asarray(order, np.int64)
    x = np.asarray(x, np.int64)
    if len(order) and (order.min() < 0 or order.max() >= ORDER_LIMIT):
        raise AssertionError("event order outside the sort key's range")
    if x.size and (x.min() < 0 or x.max() >= X_LIMIT):
        raise AssertionError("thread or report index outside the sort key's range")
    return (np.int64(kind) << KIND_SHIFT) | (order << ORDER_SHIFT) | x


@dataclass
class ChunkMeta:
    path: str
    records: int
    states: int
    events: int
    comms: int
    end: int  # the report's own trace end (max time of its records)
    names: list[tuple[int, list[str]]] = field(default_factory=list)  # local code space, in order
    types_used: set[int] = field(default_factory=set)
    index: np.ndarray | None = None  # time of every STRIDE-th record (the merge's map; set
    # by write_chunk, required by the merge)
    sigs: list[tuple[tuple[int, ...], tuple[bool, ...]]] = field(default_factory=list)
    fields: np.ndarray | None = None  # the tail position of every STRIDE-th record

    def __setstate__(self, state: dict) -> None:
        # unpickled (a worker's result): one string per distinct name, however many reports (the
        # main process holds every report's meta until the merge; ranks share most names)
        state["names"] = [(t, [sys.intern(n) if type(n) is str else n for n in ns]) for t, ns in state["names"]]
        self.__dict__.update(state)

    def widths(self) -> np.ndarray:
        """Tail fields of a record of each local signature."""
        return np.array([STATE_WIDTH, COMM_WIDTH] + [len(t) for t, _ in self.sigs], np.int64)


def _tofile(a: np.ndarray, fh, path) -> None:
    """``a.tofile(fh)``; numpy reports a short write (a full disk, a file size limit) as an OSError
    without errno or path: give it both."""
    try:
        a.tofile(fh)
    except OSError as exc:
        if exc.errno is not None:
            raise
        raise OSError(
            errno.ENOSPC, "could not write all bytes (no space left on device, or a file size limit)", str(path)
        ) from None


def write_chunk(
    out: Translation,
    model: Model,
    report: int,
    types: dict,
    path: str,
    consume: bool = False,
    painted: tuple[StateIntervals, int, int] | None = None,
) -> ChunkMeta:
    """Write the report's chunk file; ``consume``: empty ``out``'s batches once written.  The
    report's threads are painted here, unless ``painted`` gives the states to write instead, with
    the time that marks a thread's final state and the chunk's end (a sliced report:
    ``pipeline/slices.py``)."""

    if painted is None:
        mine = [model.tasks[i] for i in model.report_tasks(report)]
        lanes = model.report_threads(report)
        end = max([trace_end(out), *(t.life[1] for t in mine if t.life is not None)])
        t_open = end + 1  # every lane's final segment ends here: closed at END in the merge
        states = paint(out, model, t_open, lanes)
    else:
        states, t_open, end = painted
        end = max(end, trace_end(out))

    labels = ValueLabels(types)
    labels.collect(out.events)
    used = {int(t) for b in out.events for t, _ in b.pairs for t in np.unique(np.asarray(t))}
    missing = used - set(types)
    if missing:
        raise AssertionError(f"event types without a definition: {sorted(missing)}")
    names, code = [], 0
    for t in sorted(labels.names):
        labels.base[t] = code  # local codes: one code space for all types of this report
        names.append((t, list(labels.names[t])))
        code += len(labels.names[t])

    # Every record's sort key and width first; then the fields are laid out in sorted order, one
    # slice of LAYOUT_SLICE records at a time: for the records of a slice, the rows of each source
    # (states, event batches, communications) are taken and their columns scattered into the
    # slice, which goes to the file -- never all fields of the report at once.
    n_states = len(states.thread)
    batches = [b for b in out.events if len(b)]
    comms = [c for c in out.comms if len(c)]
    table: dict = {}
    sigs = [STATE_SIG] + [_event_sig(b, table) for b in batches] + [COMM_SIG] * len(comms)
    batches = [
        EventBatch(b.time, b.thread, b.order, [(t, labels.encode(t, v)) for t, v in b.pairs]) for b in batches
    ]  # name columns numbered once, not per slice
    sources = [states, *batches, *comms]
    times = [states.start] + [b.time for b in batches] + [c.log_send for c in comms]
    keys = (
        [sort_key(1, np.zeros(n_states, np.int64), states.thread)]
        + [sort_key(2, b.order, np.full(len(b), report)) for b in batches]
        + [sort_key(3, np.zeros(len(c), np.int64), np.full(len(c), report)) for c in comms]
    )
    widths = [STATE_WIDTH] + [len(b.pairs) for b in batches] + [COMM_WIDTH] * len(comms)
    sizes = [len(t) for t in times]
    starts = np.cumsum([0] + sizes)  # each source's first record (input order)
    time = np.concatenate(times).astype(np.int64, copy=False)
    key = np.concatenate(keys).astype(np.int64, copy=False)
    del times, keys
    perm = np.lexsort((key, time))
    time, key = time[perm], key[perm]
    thread = np.concatenate([states.thread] + [b.thread for b in batches] + [c.send_thread for c in comms]).astype(
        np.int32
    )[perm]
    sig = np.concatenate([np.broadcast_to(np.asarray(g, np.int32), (n,)) for g, n in zip(sigs, sizes)])[perm]
    lens = np.repeat(np.asarray(widths, np.int64), sizes)
    offs = np.zeros(len(time) + 1, np.int64)
    np.cumsum(lens[perm], out=offs[1:])
    del lens
    nrec, nfields = len(time), int(offs[-1])
    n_events, n_comms = sum(len(b) for b in batches), sum(len(c) for c in comms)
    hdr = np.zeros(HEADER, np.int64)
    hdr[:2] = nrec, nfields
    with open(path, "wb") as fh:
        for a in (hdr, time, key, thread, sig):
            _tofile(a, fh, path)
        del thread, sig
        for lo, hi, groups in _slices(perm, offs, starts):
            base = int(offs[lo])
            flat = np.empty(int(offs[hi]) - base, np.int64)
            for sid, rows, dst in groups:
                for j, col in enumerate(_tail_of(sources[sid], sid, rows, t_open)):
                    flat[dst + j] = col
            _tofile(flat, fh, path)
    del perm, sources, batches, comms
    if consume:
        out.events, out.states, out.comms = [], [], []
    return ChunkMeta(
        path,
        nrec,
        n_states,
        n_events,
        n_comms,
        end,
        names,
        used,
        time[::STRIDE].copy(),
        sorted(table, key=lambda sig: table[sig]),
        offs[:nrec:STRIDE].copy(),
    )


def _event_sig(b: EventBatch, table: dict):
    """The signature id of every row of an event batch (one int when its types are the same on
    every row); ``table``: (types, dynamic flags) -> id, extended with new signatures."""
    dyn = tuple(is_names(v) for _, v in b.pairs)
    if all(np.ndim(t) == 0 for t, _ in b.pairs):
        return table.setdefault((tuple(int(t) for t, _ in b.pairs), dyn), EVENT_SIG0 + len(table))
    cols = np.stack([np.broadcast_to(np.asarray(t, np.int64), (len(b),)) for t, _ in b.pairs], axis=1)
    uniq, inv = np.unique(cols, axis=0, return_inverse=True)
    ids = np.array([table.setdefault((tuple(int(x) for x in u), dyn), EVENT_SIG0 + len(table)) for u in uniq], np.int32)
    return ids[inv.ravel()]


def _slices(perm: np.ndarray, offs: np.ndarray, starts: np.ndarray):
    """(lo, hi, groups) per slice [lo, hi) of the sorted records; groups: (source, rows of the source
    in the slice or None for all of them, their first fields' positions relative to the slice)."""
    nrec = len(perm)
    if nrec <= ONE_SLICE_UP_TO:  # one slice: every source whole, in its own order (no copies)
        where = np.empty(nrec, np.int64)
        where[perm] = offs[:-1]
        yield 0, nrec, [(sid, None, where[a:b]) for sid, (a, b) in enumerate(zip(starts[:-1], starts[1:])) if b > a]
        return
    for lo in range(0, nrec, LAYOUT_SLICE):
        hi = min(nrec, lo + LAYOUT_SLICE)
        rec = perm[lo:hi]
        src = np.searchsorted(starts, rec, "right") - 1
        small = src.astype(np.int16) if len(starts) < (1 << 15) else src  # 16-bit: a radix sort
        by_src = np.argsort(small, kind="stable")
        cut = np.flatnonzero(np.diff(src[by_src])) + 1
        yield (
            lo,
            hi,
            [
                (int(src[sel[0]]), rec[sel] - starts[src[sel[0]]], offs[lo + sel] - offs[lo])
                for sel in np.split(by_src, cut)
            ],
        )


def _subset(source, sid: int, rows: np.ndarray | None):
    """Rows ``rows`` (None: all) of one source of a chunk (source 0: the states)."""
    if rows is None:
        return source
    if sid == 0:
        s = source
        return StateIntervals(s.thread[rows], s.start[rows], s.end[rows], s.state[rows], s.prio[rows])
    if isinstance(source, EventBatch):
        return EventBatch(
            source.time[rows],
            source.thread[rows],
            source.order[rows],
            [(t if np.ndim(t) == 0 else np.asarray(t)[rows], v[rows]) for t, v in source.pairs],
        )
    return CommBatch(*(getattr(source, f.name)[rows] for f in dataclass_fields(CommBatch)))


def _tail_of(source, sid: int, rows: np.ndarray | None, t_open: int) -> list:
    """The tail columns of rows ``rows`` of a source (event values already numbered)."""
    x = _subset(source, sid, rows)
    if sid == 0:
        return [np.where(x.end == t_open, OPEN_END, x.end), x.state]
    if isinstance(x, EventBatch):
        return [v for _, v in x.pairs]
    return [x.phys_send, x.recv_thread, x.log_recv, x.phys_recv, x.size, x.tag]


class _Reader:
    """Sections of one chunk file, read by slices through one open handle (or reopened per read
    when there are more chunks than allowed open files)."""

    def __init__(self, meta: ChunkMeta, t_lo: int | None = None, t_hi: int | None = None, keep_open=True):
        self.path, self.n = meta.path, meta.records
        self.fh = open(meta.path, "rb", buffering=0) if keep_open else None
        self.where = {"header": (0, np.dtype(np.int64))}
        self.nfields = int(self.read("header", 0, 2)[1])
        at = HEADER * 8
        for name, dtype in SECTIONS:
            self.where[name] = (at, np.dtype(dtype))
            at += np.dtype(dtype).itemsize * self.n
        self.where["tail"] = (at, np.dtype(np.int64))
        assert meta.index is not None and meta.fields is not None  # (set by write_chunk)
        self.index: np.ndarray = meta.index
        self.widths = meta.widths()
        # the records with t_lo <= time < t_hi
        self.first = self._find(t_lo) if t_lo is not None else 0
        self.stop = self._find(t_hi) if t_hi is not None else self.n
        k = self.first // STRIDE  # the tail position of record ``first``
        self.field = (
            int(meta.fields[k]) + int(self.widths[self.read("sig", k * STRIDE, self.first)].sum())
            if self.first < self.n
            else self.nfields
        )

    def _find(self, t: int) -> int:
        """First record with time >= t (the index narrows it to one STRIDE of times)."""
        k = int(np.searchsorted(self.index, t, "left"))
        lo, hi = max(0, (k - 1) * STRIDE), min(self.n, k * STRIDE)
        return lo + int(np.searchsorted(self.read("time", lo, hi), t, "left"))

    def read(self, what: str, lo: int, hi: int) -> np.ndarray:
        base, dtype = self.where[what]
        if self.fh is not None:
            self.fh.seek(base + lo * dtype.itemsize)
            return np.fromfile(self.fh, dtype, hi - lo)
        with open(self.path, "rb") as fh:
            fh.seek(base + lo * dtype.itemsize)
            return np.fromfile(fh, dtype, hi - lo)

    def take(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Key, thread, signature and tail of records [lo, hi), the next ones of this reader."""
        sig = self.read("sig", lo, hi)
        nf = int(self.widths[sig].sum())
        tail = self.read("tail", self.field, self.field + nf)
        self.field += nf
        return self.read("key", lo, hi), self.read("thread", lo, hi), sig, tail

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()
            self.fh = None


def _open_files_for(n: int) -> bool:
    """Whether ``n`` more files may stay open (raising the soft limit when the hard one allows)."""
    try:
        import resource  # Unix only: elsewhere a fixed cautious limit
    except ImportError:
        return n < 200
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = n + 64
    if soft == resource.RLIM_INFINITY or want <= soft:
        return True
    if hard == resource.RLIM_INFINITY or want <= hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            return True
        except (ValueError, OSError):
            pass
    return False


@dataclass
class MergeStats:
    states: int = 0
    events: int = 0
    comms: int = 0


def merge(
    chunks: list[ChunkMeta],
    values: list[np.ndarray],
    end_ns: int,
    fh,
    budget: int = 1 << 16,
    write=None,
    progress=False,
    t_lo: int | None = None,
    t_hi: int | None = None,
    objs: tuple = (),
) -> MergeStats:
    """Write the records of ``chunks`` (in report order) to ``fh`` in the global order.

    ``values[i]``: local name code of chunk i -> the trace's value; ``budget``: records read per
    round over all chunks (memory bound); ``t_lo``/``t_hi``: only the records with
    t_lo <= time < t_hi (one part of a split merge); ``progress``: True (a bar of its own) or a bar;
    ``objs``: cpu, task and thread-in-task of every global thread (``object_columns``).

    Each round takes, from every chunk, the records with time < LIM: they precede every record
    left.  LIM comes from the chunks' indexes (``_Limits``) so that a round reads at most
    max(``budget``, ROUND_PER_CHUNK x chunks) + STRIDE x chunks records (memory: a constant plus
    O(chunks)), and chunks with nothing before LIM are not touched."""
    keep_open = _open_files_for(len(chunks))
    sig_base, tables = sig_tables(chunks, values, objs)
    readers = [_Reader(c, t_lo, t_hi, keep_open) for c in chunks]
    if write is None:  # the formatter runs round by round: it is compiled by the total (core/jit.py)
        expect_records(sum(r.stop - r.first for r in readers))
    try:
        return _merge(readers, sig_base, end_ns, fh, budget, write or write_compact, progress, t_hi, tables)
    finally:
        for r in readers:
            r.close()


class _Limits:
    """The rounds' time limits, from every chunk's index merged into one sorted list of (time,
    chunk): walking it, each entry raises its chunk's upper bound of the records before the limit
    (STRIDE x its entries so far, minus what was taken); a round's limit is the time of the first
    entry that would grow the sum of the bounds by more than the budget (a round reads at most
    budget + STRIDE records per chunk).  The walk is one pass over the index entries for the whole
    merge (records / STRIDE steps), taken a window of entries at a time with numpy."""

    def __init__(self, readers, budget: int):
        idx = [r.index for r in readers]
        times = np.concatenate(idx) if idx else np.zeros(0, np.int64)
        sizes = [len(x) for x in idx]
        owner = np.repeat(np.arange(len(idx)), sizes)
        nth = np.arange(len(times)) - np.repeat(np.cumsum([0] + sizes[:-1]), sizes).astype(np.int64)
        order = np.argsort(times, kind="stable")
        # nth: the entry's place in its chunk
        self.times, self.owner, self.nth = times[order], owner[order], nth[order]
        self.stop = np.array([r.stop for r in readers], np.int64)
        self.j, self.budget = 0, budget
        self.window = max(1024, 2 * budget // STRIDE)

    def next(self, cur: np.ndarray, top: int) -> int:
        # the records left in blocks already walked (< STRIDE per chunk) are read first anyway:
        # the budget is for what the walk adds to them
        grown, j, n = 0, self.j, len(self.owner)
        while j < n:
            hi = min(n, j + self.window)
            o, c = self.owner[j:hi], self.nth[j:hi]
            stop, at = self.stop[o], cur[o]
            grow = np.maximum(0, np.minimum(stop, STRIDE * (c + 1)) - at) - np.maximum(
                0, np.minimum(stop, STRIDE * c) - at
            )
            total = grown + np.cumsum(grow)
            over = np.flatnonzero((total > self.budget) & (total - grow > 0))
            if len(over):
                j += int(over[0])
                break
            grown, j = int(total[-1]), hi
        self.j = j
        return min(int(self.times[j]), top) if j < n else top


def object_columns(model: Model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """cpu, task (1-based) and thread within its task (1-based) of every global thread."""
    f = Fields(model)
    return f.cpu, f.task, f.thr


def sig_tables(chunks: list[ChunkMeta], values: list[np.ndarray], objs: tuple) -> tuple[np.ndarray, Tables]:
    """One signature space for all chunks: chunk i's event signature s is global signature
    ``sig_base[i] + s``.  Returns sig_base and the formatter's tables: ``objs`` (cpu, task,
    thread-in-task per global thread), then per global signature its tail width, first entry in
    the type/dynamic lists and the chunk's first position in ``remap``, the type ids, the dynamic
    flags, and ``remap`` (every chunk's local name code -> the trace's value, one after another)."""
    width, first, rbase = [STATE_WIDTH, COMM_WIDTH], [0, 0], [0, 0]
    types: list[int] = []
    dyn: list[bool] = []
    sig_base = np.zeros(len(chunks), np.int32)
    at = 0
    for i, (c, v) in enumerate(zip(chunks, values)):
        sig_base[i] = len(width) - EVENT_SIG0
        for t, d in c.sigs:
            width.append(len(t))
            first.append(len(types))
            rbase.append(at)
            types += t
            dyn += d
        at += len(v)
    remap = np.concatenate(values).astype(np.int64) if values else np.zeros(0, np.int64)
    cpu, task, thr = objs or (np.zeros(0, np.int64),) * 3
    arr = lambda x, d=np.int64: np.array(x, d) if len(x) else np.zeros(0, d)
    return sig_base, Tables(cpu, task, thr, arr(width), arr(first), arr(rbase), arr(types), arr(dyn, np.bool_), remap)


def _merge(readers, sig_base, end_ns, fh, budget, write, progress, t_hi, tables) -> MergeStats:
    cur = np.array([r.first for r in readers], np.int64)
    stop = np.array([r.stop for r in readers], np.int64)
    limits = _Limits(readers, max(budget, ROUND_PER_CHUNK * len(readers)))
    top = np.iinfo(np.int64).max if t_hi is None else t_hi
    stats = MergeStats()
    head = np.full(len(readers), np.iinfo(np.int64).min, np.int64)  # a lower bound of the next time
    bar = None if progress is False else progress
    if progress is True:
        bar = tqdm(total=int((stop - cur).sum()), desc="write", unit="record", unit_scale=True, leave=False)
    while (cur < stop).any():
        active = np.flatnonzero(cur < stop)
        lim = limits.next(cur, top)
        floor = int(head[active].min())
        if lim <= floor:  # (many records of one time) at least every record of the first time
            lim = floor + 1
        times, keys, threads, sigs, tails = [], [], [], [], []
        for i in active:
            if head[i] >= lim:
                continue
            r = readers[i]
            lo = int(cur[i])
            k = int(np.searchsorted(r.index, lim, "left"))
            ub = min(int(stop[i]), k * STRIDE)
            if ub <= lo:  # record ``lo`` is already at or after LIM: learn its time
                head[i] = r.read("time", lo, lo + 1)[0]
                continue
            win = r.read("time", lo, min(int(stop[i]), ub + 1))
            hi = lo + int(np.searchsorted(win[: ub - lo], lim, "left"))
            head[i] = win[hi - lo] if hi - lo < len(win) else np.iinfo(np.int64).max
            if hi == lo:
                continue
            t = win[: hi - lo]
            k_, th, sg, tail = r.take(lo, hi)
            if sig_base[i]:
                sg[sg >= EVENT_SIG0] += sig_base[i]
            times.append(t)
            keys.append(k_)
            threads.append(th)
            sigs.append(sg)
            tails.append(tail)
            cur[i] = hi
        if not times:
            continue
        time, key, sig = np.concatenate(times), np.concatenate(keys), np.concatenate(sigs)
        tail, thread = np.concatenate(tails), np.concatenate(threads)
        del times, keys, sigs, tails, threads  # (the pieces would live through the write)
        w = tables.width[sig]
        offs = np.cumsum(w) - w  # each record's first tail field
        del w
        st = np.flatnonzero(sig == STATE_SIG)
        opn = st[tail[offs[st]] == OPEN_END]  # a thread's final state: closed at END
        tail[offs[opn]] = end_ns
        perm = np.lexsort((key, time)).astype(np.int64)
        late = opn[time[opn] >= end_ns]  # a final state starting at END: not written
        if len(late):
            dropped = np.zeros(len(time), bool)
            dropped[late] = True
            perm = perm[~dropped[perm]]
        kinds = np.bincount(np.minimum(sig[perm], EVENT_SIG0), minlength=3)
        stats.states += int(kinds[STATE_SIG])
        stats.comms += int(kinds[COMM_SIG])
        stats.events += int(kinds[EVENT_SIG0])
        write(fh, thread, time, sig, tail, offs, perm, tables)
        if bar is not None:
            bar.update(len(time))
        del time, key, sig, tail, thread, offs, perm
    if progress is True and bar is not None:
        bar.close()
    return stats


def split_times(chunks: list[ChunkMeta], parts: int) -> list[int]:
    """``parts - 1`` increasing times that cut the records of every chunk into parts of about equal
    size (records of one time always fall in one part, so each part is a plain merge)."""
    allt = np.sort(np.concatenate([c.index for c in chunks])) if chunks else np.zeros(0, np.int64)
    if parts < 2 or len(allt) < parts:
        return []
    cuts = np.unique(allt[(np.arange(1, parts) * len(allt)) // parts])
    return [int(t) for t in cuts if t > allt[0]]


def _merge_part(chunks, values, end_ns, path, budget, t_lo, t_hi, objs) -> MergeStats:
    """One part of a split merge, in a forked process: its records into a file of their own."""
    with open(path, "wb", buffering=1 << 20) as fh:
        return merge(chunks, values, end_ns, fh, budget, t_lo=t_lo, t_hi=t_hi, objs=objs)


def merge_split(
    chunks: list[ChunkMeta],
    values: list[np.ndarray],
    end_ns: int,
    fh,
    budget: int,
    parts: int,
    work_dir,
    progress: bool = False,
    objs: tuple = (),
    here: bool = True,
) -> MergeStats:
    """``merge`` cut by time into ``parts`` parts run at once: the first in this process, straight
    into ``fh``; the others in forked processes, into files appended to ``fh`` in order (the same
    bytes as one merge: each part is the sorted run of the records of its time range).  ``here``
    False: every part runs in a forked process (this one keeps no merge buffers: many ranks)."""

    cuts = split_times(chunks, parts)
    if not cuts and here:
        return merge(chunks, values, end_ns, fh, budget, progress=progress, objs=objs)
    bounds = [None, *cuts, None]
    away = range(1 if here else 0, len(bounds) - 1)  # the parts run in forked processes
    paths = [os.path.join(str(work_dir), f"part{p}.prv") for p in away]
    bar = None
    if progress:
        bar = tqdm(total=sum(c.records for c in chunks), desc="write", unit="record", unit_scale=True, leave=False)
    stats = MergeStats()
    # the chunks' indexes and name tables reach the processes by fork, not pickled through a pipe
    # (tens of MB at a thousand ranks, and a pickled copy in this process while it is sent)
    calls = [
        (_merge_part, (chunks, values, end_ns, path, budget, bounds[p], bounds[p + 1], objs))
        for p, path in zip(away, paths)
    ]
    with forked(calls) as futures:
        first = (
            merge(
                chunks,
                values,
                end_ns,
                fh,
                budget,
                progress=bar if bar is not None else False,
                t_hi=bounds[1],
                objs=objs,
            )
            if here
            else MergeStats()
        )
        results = [f.result() for f in futures]
    for m in [first, *results]:
        stats.states += m.states
        stats.events += m.events
        stats.comms += m.comms
    for m, path in zip(results, paths):
        with open(path, "rb") as src:
            shutil.copyfileobj(src, fh, 1 << 22)
        os.unlink(path)
        if bar is not None:
            bar.update(m.states + m.events + m.comms)
    if bar is not None:
        bar.close()
    return stats
