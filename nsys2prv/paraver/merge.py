"""Stage D of the records: the reports' sorted chunks (``paraver/chunks.py``) merged in bounded rounds
into the .prv body -- from every report take the records up to the smallest of the reports' window
maxima, merge those sorted runs, closing the final state of every thread at the trace's END, and
format them (numbering local name codes with the trace's values) in one pass (``format.write_compact``:
one kernel, BUFFER bytes of text per call) -- so
memory is O(reports x window), not O(events); ``merge_split``: the body in time parts, in parallel."""

from __future__ import annotations

import os
import shutil
from concurrent.futures import FIRST_EXCEPTION, wait
from dataclasses import dataclass

import numpy as np

from nsys2prv.core.workers import forked
from nsys2prv.model.resources import Model
from nsys2prv.paraver.chunks import (
    COMM_WIDTH,
    EVENT_SIG0,
    STATE_WIDTH,
    STRIDE,
    ChunkMeta,
    sections,
    state_keys_into,
    tail_width,
    trailer_offset,
)
from nsys2prv.paraver.fields import Fields
from nsys2prv.paraver.format import Runs, Tables, expect_records, text_buffer, write_compact
from nsys2prv.paraver.holes import Holes
from nsys2prv.paraver.placement import BlockText, Ring, plain_file

# records of a block of a relayed merge (about 3 MB of text: formatted, then written while in the cache);
# at least BLOCK_ROUNDS merge rounds of every chunk (a block reads each chunk's index around its borders)
BLOCK_RECORDS, BLOCK_ROUNDS = 1 << 16, 4
ROUND_PER_CHUNK = 96  # a merge round reads at least this many records per chunk (on average)


class _Round:
    """A merge round's records, read straight into arrays reused (and grown) from round to round:
    no array per read, no concatenation."""

    def __init__(self, records: int):
        self.time = np.empty(records, np.int64)
        self.key = np.empty(records, np.int64)
        self.thread = np.empty(records, np.int32)
        self.sig = np.empty(records, np.int32)
        self.tail = np.empty(3 * records, np.int64)  # (grown when records have more fields)
        self.records = self.fields = 0  # filled so far
        self.start: list[int] = []
        self.fstart: list[int] = []
        self.sbase: list[int] = []

    def reserve(self, records: int, fields: int) -> None:
        """Room for ``records`` and ``fields`` more (arrays grown by half at least, contents kept)."""
        for names, used, more in (
            (("time", "key", "thread", "sig"), self.records, records),
            (("tail",), self.fields, fields),
        ):
            for name in names:
                a = getattr(self, name)
                if used + more > len(a):
                    b = np.empty(max(used + more, len(a) + len(a) // 2), a.dtype)
                    b[:used] = a[:used]
                    setattr(self, name, b)

    def runs(self) -> Runs:
        n, f = self.records, self.fields
        return Runs(
            self.time[:n],
            self.key[:n],
            self.thread[:n],
            self.sig[:n],
            self.tail[:f],
            np.array([*self.start, n], np.int64),
            np.array(self.fstart, np.int64),
            np.array(self.sbase, np.int64),
        )

    def clear(self) -> None:
        self.records = self.fields = 0
        self.start, self.fstart, self.sbase = [], [], []


def _read_at(path: str, at: int, out: np.ndarray, fh=None) -> None:
    """``out`` filled from byte ``at`` of the chunk file ``path`` (through ``fh`` if open): all of it, a
    short file is an error naming it."""
    view = out.data.cast("B")
    f = fh if fh is not None else open(path, "rb", buffering=0)
    try:
        got = 0
        while got < len(view):
            f.seek(at + got)
            n = f.readinto(view[got:])
            if not n:
                raise OSError(f"{path}: chunk file shorter than its records (truncated)")
            got += n
    finally:
        if f is not fh:
            f.close()


class _Reader:
    """Sections of one chunk file, read by slices through one open handle (or reopened per read
    when there are more chunks than allowed open files)."""

    def __init__(self, meta: ChunkMeta, t_lo: int | None = None, t_hi: int | None = None, keep_open=True):
        self.path, self.n = meta.path, meta.records
        self.fh = open(meta.path, "rb", buffering=0) if keep_open else None
        self.where = {"header": (0, np.dtype(np.int64))}
        _, self.nfields, keyless = (int(x) for x in self.read("header", 0, 3))
        self.keyless = keyless == 1  # (states only: their keys derived from their threads)
        for name, dtype, at in sections(self.n, self.keyless):
            self.where[name] = (at, dtype)
        self.where["tail"] = (trailer_offset(self.n, 0, self.keyless), np.dtype(np.int64))  # (after the sections)
        assert meta.trailer >= 0  # (set by write_chunk)
        if keyless not in (0, 1) or meta.trailer != trailer_offset(self.n, self.nfields, self.keyless):
            raise OSError(f"{self.path}: chunk file damaged (its header does not match its records)")
        m = meta.entries()  # the trailer: the index, then every STRIDE-th record's tail position
        size = os.fstat(self.fh.fileno()).st_size if self.fh is not None else os.stat(self.path).st_size
        if size != meta.trailer + 16 * m:
            raise OSError(
                f"{self.path}: chunk file "
                + ("shorter than its records (truncated)" if size < meta.trailer + 16 * m else "damaged (too long)")
            )
        self.where["index"] = (meta.trailer, np.dtype(np.int64))
        self.where["fields"] = (meta.trailer + 8 * m, np.dtype(np.int64))
        self.full: np.ndarray = self.read("index", 0, m)
        self.widths = meta.widths()
        self.narrow(t_lo, t_hi)

    def narrow(self, t_lo: int | None, t_hi: int | None) -> None:
        """Read the records with t_lo <= time < t_hi next (one part or block of a split merge)."""
        self.first = self._find(t_lo) if t_lo is not None else 0
        self.stop = self._find(t_hi) if t_hi is not None else self.n
        # ``index``: the entries of those records only, entry k0 first (the others would not move a
        # round's limit nor what a round reads: _Limits, _merge)
        self.k0 = self.first // STRIDE
        self.index = self.full[self.k0 : max(self.k0, -(-self.stop // STRIDE))]
        k = self.first // STRIDE  # the tail position of record ``first``
        self.field = (
            int(self.read("fields", k, k + 1)[0]) + int(self.widths[self.read("sig", k * STRIDE, self.first)].sum())
            if self.first < self.n
            else self.nfields
        )

    def _find(self, t: int) -> int:
        """First record with time >= t (the index narrows it to one STRIDE of times)."""
        k = int(np.searchsorted(self.full, t, "left"))
        lo, hi = max(0, (k - 1) * STRIDE), min(self.n, k * STRIDE)
        return lo + int(np.searchsorted(self.read("time", lo, hi), t, "left"))

    def read(self, what: str, lo: int, hi: int) -> np.ndarray:
        out = np.empty(hi - lo, self.where[what][1])
        self.read_into(what, lo, out)
        return out

    def read_into(self, what: str, lo: int, out: np.ndarray) -> None:
        """Elements lo, lo + 1, ... of a section into ``out`` (all of it: a short file is an error)."""
        base, dtype = self.where[what]
        _read_at(self.path, base + lo * dtype.itemsize, out, self.fh)

    def take_into(self, lo: int, hi: int, into: _Round) -> None:
        """Key, thread, signature and tail of records [lo, hi), the next ones of this reader, as the
        round's next run (its times are already in place: ``_merge``)."""
        at, n = into.records, hi - lo
        sig = into.sig[at : at + n]
        self.read_into("sig", lo, sig)
        thread = into.thread[at : at + n]
        self.read_into("thread", lo, thread)
        if self.keyless:
            state_keys_into(into.key[at : at + n], thread)
        else:
            self.read_into("key", lo, into.key[at : at + n])
        nf = int(self.widths[sig].sum())
        into.reserve(0, nf)
        self.read_into("tail", self.field, into.tail[into.fields : into.fields + nf])
        self.field += nf
        into.records, into.fields = at + n, into.fields + nf

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

    def add(self, other: MergeStats) -> None:
        self.states += other.states
        self.events += other.events
        self.comms += other.comms


def merge(
    chunks: list[ChunkMeta],
    values: list[np.ndarray],
    end_ns: int,
    fh,
    budget: int = 1 << 16,
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
    # the formatter runs round by round: it is compiled by the total (core/jit.py)
    expect_records(sum(r.stop - r.first for r in readers))
    try:
        return _merge(readers, sig_base, end_ns, fh, budget, progress, t_hi, tables)
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
        nth = np.arange(len(times)) - np.repeat(np.cumsum([0] + sizes[:-1]) - [r.k0 for r in readers], sizes).astype(
            np.int64
        )
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
    thread-in-task per global thread), then per global signature its tail width and pairs, first entry in
    the type/dynamic lists and the chunk's first position in ``remap``, the type ids, the dynamic
    flags, and ``remap`` (every chunk's local name code -> the trace's value, one after another;
    chunks given the same array of values share its place)."""
    width, first, rbase = [STATE_WIDTH, COMM_WIDTH], [0, 0], [0, 0]
    pairs = list(width)
    types: list[int] = []
    dyn: list[bool] = []
    sig_base = np.zeros(len(chunks), np.int32)
    at = 0
    place: dict[int, int] = {}  # id of a values array -> its first position in remap
    distinct = []
    for i, (c, v) in enumerate(zip(chunks, values)):
        sig_base[i] = len(width) - EVENT_SIG0
        if id(v) not in place:
            place[id(v)] = at
            distinct.append(v)
            at += len(v)
        for t, d in c.sigs:
            width.append(tail_width(d))
            pairs.append(len(t))
            first.append(len(types))
            rbase.append(place[id(v)])
            types += t
            dyn += d or (False,) * len(t)  # (a signature of zeros: no name codes)
    remap = np.concatenate(distinct).astype(np.int64) if distinct else np.zeros(0, np.int64)
    cpu, task, thr = objs or (np.zeros(0, np.int64),) * 3
    arr = lambda x, d=np.int64: np.array(x, d) if len(x) else np.zeros(0, d)
    return sig_base, Tables(
        cpu, task, thr, arr(width), arr(pairs), arr(first), arr(rbase), arr(types), arr(dyn, np.bool_), remap
    )


def _merge(readers, sig_base, end_ns, fh, budget, progress, t_hi, tables) -> MergeStats:
    cur = np.array([r.first for r in readers], np.int64)
    stop = np.array([r.stop for r in readers], np.int64)
    limits = _Limits(readers, max(budget, ROUND_PER_CHUNK * len(readers)))
    top = np.iinfo(np.int64).max if t_hi is None else t_hi
    counts = np.zeros(3, np.int64)  # states, communications and events written
    buf = text_buffer(tables)
    rnd = _Round(max(budget, ROUND_PER_CHUNK * len(readers)) + (STRIDE + 1) * len(readers))
    head = np.full(len(readers), np.iinfo(np.int64).min, np.int64)  # a lower bound of the next time
    bar = None if progress is False else progress
    if progress is True:
        from tqdm import tqdm  # (here: a run without progress bars does not load it)

        bar = tqdm(total=int((stop - cur).sum()), desc="write", unit="record", unit_scale=True, leave=False)
    while (cur < stop).any():
        active = np.flatnonzero(cur < stop)
        lim = limits.next(cur, top)
        floor = int(head[active].min())
        if lim <= floor:  # (many records of one time) at least every record of the first time
            lim = floor + 1
        rnd.clear()
        for i in active:
            if head[i] >= lim:
                continue
            r = readers[i]
            lo = int(cur[i])
            k = r.k0 + int(np.searchsorted(r.index, lim, "left"))
            ub = min(int(stop[i]), k * STRIDE)
            if ub <= lo:  # record ``lo`` is already at or after LIM: learn its time
                head[i] = r.read("time", lo, lo + 1)[0]
                continue
            at, n = rnd.records, min(int(stop[i]), ub + 1) - lo
            rnd.reserve(n, 0)
            win = rnd.time[at : at + n]
            r.read_into("time", lo, win)
            hi = lo + int(np.searchsorted(win[: ub - lo], lim, "left"))
            head[i] = win[hi - lo] if hi - lo < len(win) else np.iinfo(np.int64).max
            if hi == lo:
                continue
            rnd.start.append(at)
            rnd.fstart.append(rnd.fields)
            rnd.sbase.append(int(sig_base[i]))
            r.take_into(lo, hi, rnd)
            cur[i] = hi
        if not rnd.records:
            continue
        runs = rnd.runs()
        write_compact(fh, runs, tables, end_ns, counts, buf)
        if bar is not None:
            bar.update(len(runs.time))
        del runs
    if progress is True and bar is not None:
        bar.close()
    return MergeStats(int(counts[0]), int(counts[2]), int(counts[1]))


def chunk_index(meta: ChunkMeta) -> np.ndarray:
    """The time of every STRIDE-th record of a chunk, read from its file's trailer (a short file is an
    error naming it)."""
    out = np.empty(meta.entries(), np.int64)
    _read_at(meta.path, meta.trailer, out)
    return out


def split_times(chunks: list[ChunkMeta], parts: int, first_less: int = 0) -> list[int]:
    """``parts - 1`` increasing times that cut the records of every chunk into parts of about equal
    size (records of one time always fall in one part, so each part is a plain merge); ``first_less``:
    the first part's process has other work worth that many records, its part is that much smaller
    (the work shared by all parts; the first part at least a quarter of an equal share)."""
    allt = np.sort(np.concatenate([chunk_index(c) for c in chunks])) if chunks else np.zeros(0, np.int64)
    if parts < 2 or len(allt) < parts:
        return []
    n = len(allt)
    if first_less <= 0:
        at = (np.arange(1, parts) * n) // parts
    else:
        extra = first_less / max(1, sum(c.records for c in chunks))  # (in the records' unit: 1 = all)
        # the first part plus the extra work costs what each other part costs
        first = max((1 - (parts - 1) * extra) / parts, 1 / (4 * parts))
        at = (n * (first + np.arange(parts - 1) * (1 - first) / (parts - 1))).astype(np.int64)
    cuts = np.unique(allt[at])
    return [int(t) for t in cuts if t > allt[0]]


def _relay(chunks, values, end_ns, budget, blocks, objs, ring: Ring, p: int, spill: str) -> tuple[MergeStats, int]:
    """Process ``p`` of a relayed merge (forked): blocks p, p + P, p + 2P, ... of ``blocks`` (time
    ranges), each formatted into memory (beyond SPILL_BYTES: into the file ``spill``), then written
    where the block before it ended (``placement``).  Its stats, and the bytes it wrote."""
    keep_open = _open_files_for(len(chunks))
    sig_base, tables = sig_tables(chunks, values, objs)
    readers = [_Reader(c, keep_open=keep_open) for c in chunks]
    stats, size = MergeStats(), 0
    text = BlockText(2 * len(text_buffer(tables)), spill)  # (grown to the largest block, up to SPILL_BYTES)
    holes = Holes(readers if keep_open else [])  # (what every process has read, freed; not where files run short)
    try:
        expect_records(sum(r.n for r in readers))
        for lo, hi in blocks[p :: len(ring.pipes)]:
            for r in readers:
                r.narrow(lo, hi)
            stats.add(_merge(readers, sig_base, end_ns, text, budget, False, hi, tables))
            at, n = ring.receive(p), text.size()
            text.land(ring.out, at)
            ring.send(p, at + n)  # (after the write: two writers of one file contend for its lock)
            size += n
            holes.taken()
    finally:
        holes.close()
        text.close()
        for r in readers:
            r.close()
    return stats, size


def block_times(chunks: list[ChunkMeta], parts: int) -> list[int]:
    """The times cutting a relayed merge into blocks (``split_times``), at least ``parts``: of about
    BLOCK_RECORDS records each, or BLOCK_ROUNDS merge rounds of every chunk when there are many
    (each block looks every chunk's borders up: 3,000 reports, blocks of 1.2M records)."""
    size = max(BLOCK_RECORDS, BLOCK_ROUNDS * ROUND_PER_CHUNK * len(chunks))
    return split_times(chunks, max(parts, -(-sum(c.records for c in chunks) // size)))


def _relayed(chunks, values, end_ns, fh, budget, parts, cuts, work_dir, bar, objs, beside) -> tuple[MergeStats, int]:
    """The merge in blocks (cut at ``cuts``: ``block_times``), taken in turn by ``parts`` forked
    processes that write them into ``fh`` (a plain file) at their offsets (a large block's text
    spilled to a file in ``work_dir`` first); ``beside()`` here meanwhile.  The stats, and the bytes
    written."""
    bounds = [None, *cuts, None]
    blocks = list(zip(bounds[:-1], bounds[1:]))
    ring = Ring(fh.fileno(), min(parts, len(blocks)))
    calls = [
        (_relay, (chunks, values, end_ns, budget, blocks, objs, ring, p, os.path.join(str(work_dir), f"block{p}.prv")))
        for p in range(len(ring.pipes))
    ]
    fh.flush()
    start = fh.tell()
    try:
        with forked(calls) as futures:
            ring.start(start)
            if beside is not None:
                beside()
            for f in wait(futures, return_when=FIRST_EXCEPTION).done:
                f.result()  # (a failed process first: the others may wait for its offsets)
            results = [f.result() for f in futures]
    finally:
        ring.close()
    stats = MergeStats()
    for m, _ in results:
        stats.add(m)
        if bar is not None:
            bar.update(m.states + m.events + m.comms)
    size = sum(n for _, n in results)
    fh.seek(start + size)
    return stats, size


def _merge_part(chunks, values, end_ns, path, budget, t_lo, t_hi, objs) -> MergeStats:
    """One part of a split merge into a stream (gzip), in a forked process: its records into a file
    of their own, appended by the caller."""
    with open(path, "wb", buffering=1 << 20) as fh:
        return merge(chunks, values, end_ns, fh, budget, t_lo=t_lo, t_hi=t_hi, objs=objs)


def _append(path: str, fh) -> None:
    """The file ``path`` appended to ``fh`` (a stream: read and written)."""
    with open(path, "rb") as src:
        shutil.copyfileobj(src, fh, 1 << 22)


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
    beside=None,
    beside_records: int = 0,
) -> MergeStats:
    """``merge`` cut by time and run in ``parts`` processes at once (the same bytes as one merge: each
    block or part is the sorted run of the records of its time range).  Into a plain file: relayed
    (``_relayed``: blocks taken in turn by forked processes, each written at its offset by the process
    that formatted it), this process doing ``beside()`` meanwhile.  Into a stream (gzip): the first
    part in this process (``here``; else forked too: many ranks, this process keeps no merge buffers),
    smaller by ``beside_records`` (``split_times``' first_less), ``beside()`` after it; the others in
    forked processes, into files appended in order (left in ``work_dir``, which the conversion
    removes).  With nothing to cut, ``here``: ``beside()`` then one merge in this process."""

    bar = None
    if progress:
        from tqdm import tqdm  # (here: a run without progress bars does not load it)

        bar = tqdm(total=sum(c.records for c in chunks), desc="write", unit="record", unit_scale=True, leave=False)
    try:
        relayed = plain_file(fh)
        if relayed:
            cuts = block_times(chunks, parts)
        else:
            cuts = split_times(chunks, parts, beside_records if here and beside is not None else 0)
        if not cuts and here:
            if beside is not None:
                beside()
            return merge(chunks, values, end_ns, fh, budget, progress=bar if bar is not None else False, objs=objs)
        if relayed:
            return _relayed(chunks, values, end_ns, fh, budget, parts, cuts, work_dir, bar, objs, beside)[0]
        return _streamed(chunks, values, end_ns, fh, budget, cuts, work_dir, bar, objs, here, beside)
    finally:
        if bar is not None:
            bar.close()


def _streamed(chunks, values, end_ns, fh, budget, cuts, work_dir, bar, objs, here, beside) -> MergeStats:
    """The merge cut at ``cuts`` into parts, into a stream: the first here (``here``), the others
    forked into files appended in order; ``beside()`` after this process's part."""
    bounds = [None, *cuts, None]
    away = range(1 if here else 0, len(bounds) - 1)  # the parts run in forked processes
    paths = [os.path.join(str(work_dir), f"part{p}.prv") for p in away]
    # the chunks' metas and name tables reach the processes by fork, not pickled through a pipe
    # (tens of MB at a thousand ranks, and a pickled copy in this process while it is sent); each
    # process reads the chunks' indexes from their files
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
        if beside is not None:
            beside()
        results = [f.result() for f in futures]
    stats = MergeStats()
    for m in [first, *results]:
        stats.add(m)
    for m, path in zip(results, paths):
        _append(path, fh)  # (the file stays: ``work_dir`` is the caller's, removed off the critical path)
        if bar is not None:
            bar.update(m.states + m.events + m.comms)
    return stats
