"""Per-report sorted record chunks (their k-way merge into the .prv body: ``paraver/merge.py``).

Stage C (one report, any worker): the report's translation is painted (its threads only), laid
out as compact records, dynamic names encoded with report-local codes, sorted by the global sort
key and written to one binary file:

    header (8 int64) | time[n] int64 | key[n] int64 | thread[n] int32 | sig[n] int32 | tail[...] int64
    | index[m] int64 | fields[m] int64

(m = ceil(n / STRIDE): the time and the first tail field of every STRIDE-th record, the merge's map
of the file; ``ChunkMeta.trailer`` is where they start: the main process holds no per-record array.)
A chunk of states only (a sliced report's painted states) has no key section (header field 2 is 1):
a state's key follows from its thread (``state_keys_into``), so the merge derives it when it reads
the records.  Chunk files live only during the run that writes them (removed once merged), so no
file of another layout is ever read.

A record is its time, sort key, global thread, signature and tail.  The signature says what the
tail holds: 0 a state (end, state; end -1: the thread's final state, closed at the trace's END),
1 a communication (physical send, receiving thread, logical and physical receive, size, tag),
2 and up an event whose (type ids, which values are local name codes) are entry sig - 2 of the
chunk's ``ChunkMeta.sigs``: the tail holds only the values.  A batch of events whose values are all
0 (the ends of ranges: half of a run's kernels, calls and copies) has signatures of zeros, whose
flags are empty (``tail_width``): no value in the tail, a 0 for each type when formatted.  The rest
of a Paraver record (cpu, appl, task, thread, and the receiver's) comes from the model when the
merge formats it (``format.write_compact``): the chunk files are about as large as the text they
become.

Stage D (the main process, ``paraver/merge.py``): the files are merged in bounded rounds -- from
every report take the records up to the smallest of the reports' window maxima, sort that small set,
close the final state of every thread at the trace's END, format (numbering local name codes with the
trace's values) and write -- so memory is O(reports x window), not O(events).

The sort key is (time, key) with key = kind << 61 | order << 38 | x, where x is the global thread
for states and the report index for events and communications; ties (same report, equal key)
keep the report's record order.  This is exactly the order of the reference writer's stable
lexsort by (time, kind, order) over [painted states by thread, events and communications in
report order] (``tests/reference_writer.py``), so both write identical bytes.
"""

from __future__ import annotations

import os
import sys
import weakref
from dataclasses import dataclass, field

import numpy as np

from nsys2prv.core.names import is_names
from nsys2prv.core.writes import write_all
from nsys2prv.model.resources import Model
from nsys2prv.paraver.format import COMM_SIG, EVENT_SIG0, OPEN_END, STATE_SIG  # the formatter's, defined once
from nsys2prv.paraver.labels import ValueLabels
from nsys2prv.paraver.pcf import LISTED_AS_USED
from nsys2prv.translate import paint, trace_end
from nsys2prv.translate.records import (
    EventBatch,
    StateIntervals,
    Translation,
)

KIND_SHIFT, ORDER_SHIFT = 61, 38
STATE_KIND, EVENT_KIND, COMM_KIND = 1, 2, 3  # the sort key's kind of each record
ORDER_LIMIT, X_LIMIT = 1 << (KIND_SHIFT - ORDER_SHIFT), 1 << ORDER_SHIFT
STATE_WIDTH, COMM_WIDTH = 2, 6  # their tail fields
COMM_TAIL = ("phys_send", "recv_thread", "log_recv", "phys_recv", "size", "tag")  # a communication's, in order
HEADER = 8
SECTIONS = (("time", np.int64), ("key", np.int64), ("thread", np.int32), ("sig", np.int32))
STRIDE = 64  # a chunk's index keeps the time of every STRIDE-th record
LAYOUT_SLICE = 1 << 16  # records laid out at a time when a chunk of more than
ONE_SLICE_UP_TO = 1 << 18  # records is written (smaller chunks: at once, without per-slice copies)
MAX_RUNS = 1 << 10  # a source in more runs of sorted order than this (not a thread's states) is sorted


def _sort_key_into(out: np.ndarray, kind: int, order, x) -> None:
    """The sort key ``kind << KIND_SHIFT | order << ORDER_SHIFT | x`` of some records, written into
    ``out`` (``order``, ``x``: int64 arrays as long as it, or one int each)."""
    order = order if np.ndim(order) == 0 else np.asarray(order, np.int64)
    x = x if np.ndim(x) == 0 else np.asarray(x, np.int64)
    for a, limit, what in ((order, ORDER_LIMIT, "event order"), (x, X_LIMIT, "thread or report index")):
        if np.size(a) and (np.min(a) < 0 or np.max(a) >= limit):
            raise AssertionError(f"{what} outside the sort key's range")
    const = np.int64(kind) << KIND_SHIFT  # (with the parts that are one int)
    const |= np.int64(order) << ORDER_SHIFT if np.ndim(order) == 0 else 0
    const |= np.int64(x) if np.ndim(x) == 0 else 0
    if np.ndim(order):
        np.left_shift(order, ORDER_SHIFT, out=out)
        if np.ndim(x):
            out |= x
        out |= const
    elif np.ndim(x):
        np.bitwise_or(x, const, out=out)
    else:
        out[:] = const


def state_keys_into(out: np.ndarray, thread: np.ndarray) -> None:
    """The sort keys of states of the global threads ``thread`` (int32), written into ``out``."""
    _sort_key_into(out, STATE_KIND, 0, thread)


def sections(records: int, keyless: bool) -> list[tuple[str, np.dtype, int]]:
    """The record sections of a chunk file of ``records`` records: (name, dtype, byte offset); a
    chunk of states only (``keyless``) has no key section."""
    out, at = [], HEADER * 8
    for name, dtype in SECTIONS:
        if not (keyless and name == "key"):
            out.append((name, np.dtype(dtype), at))
            at += np.dtype(dtype).itemsize * records
    return out


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
    sigs: list[tuple[tuple[int, ...], tuple[bool, ...]]] = field(default_factory=list)
    values: dict[int, set[int]] = field(default_factory=dict)  # the values of the types whose .pcf
    # lists only the values used (pcf.LISTED_AS_USED)
    trailer: int = -1  # byte offset in the file of the index (the time of every STRIDE-th record),
    # followed by the tail position of every STRIDE-th record (set by write_chunk, required by the merge)

    def __setstate__(self, state: dict) -> None:
        # unpickled (a worker's result): one string per distinct name and one list per distinct list
        # of a type's names, however many reports (the main process holds every report's meta until
        # the merge; ranks share most names)
        state["names"] = [(t, _shared_names(t, ns)) for t, ns in state["names"]]
        # (and one set of the types used and one list of signatures per distinct one: read only)
        state["types_used"] = _shared(_Types(state["types_used"]))
        state["sigs"] = _shared(_Sigs(state["sigs"]))
        self.__dict__.update(state)

    def entries(self) -> int:
        """Entries of the index (and of the tail positions) in the file's trailer."""
        return -(-self.records // STRIDE)

    def widths(self) -> np.ndarray:
        """Tail fields of a record of each local signature."""
        return _widths(self.sigs)


def tail_width(dyn: tuple[bool, ...]) -> int:
    """Tail fields of an event of a signature with these flags (one per type): its values, or none
    when the flags are empty (a signature of zeros: every value 0)."""
    return len(dyn)


def _widths(sigs: list) -> np.ndarray:
    """Tail fields of a record of each local signature (the states', communications', then ``sigs``')."""
    return np.array([STATE_WIDTH, COMM_WIDTH] + [tail_width(d) for _, d in sigs], np.int64)


class _Names(list):
    """A type's names of a chunk's meta as unpickled, the same object for every chunk with the same
    names (``_shared_names``)."""

    __slots__ = ("__weakref__",)


class _Types(frozenset):
    """A chunk's meta's types used as unpickled, one object per distinct set (``_shared``)."""

    __slots__ = ()


class _Sigs(list):
    """A chunk's meta's signatures as unpickled, one object per distinct list (``_shared``)."""

    __slots__ = ("__weakref__",)


_SHARED: weakref.WeakValueDictionary[tuple, _Names] = weakref.WeakValueDictionary()  # while a chunk holds one
_SHARED_META: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # _Types and _Sigs, the same


def _shared(value: _Types | _Sigs):
    """``value``, as the one equal object of this process while a chunk holds one."""
    key = (type(value), frozenset(value) if isinstance(value, frozenset) else tuple(value))  # (a copy: not the value)
    got = _SHARED_META.get(key)
    if got is None:
        got = _SHARED_META[key] = value
    return got


def _shared_names(t: int, names: list) -> list:
    """``names`` of type ``t``, interned, as the one list of this process with exactly these names."""
    key = (t, tuple(sys.intern(n) if type(n) is str else n for n in names))
    try:
        got = _SHARED.get(key)
        if got is None:
            got = _SHARED[key] = _Names(key[1])
    except TypeError:  # (an unhashable name: not shared)
        return list(key[1])
    return got


def _write(fd: int, arrays: list[np.ndarray], path) -> None:
    """``arrays`` (C-contiguous) written one after the other (``writes.write_all``)."""
    write_all(fd, [a.data.cast("B") for a in arrays], path)


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
    used, values = types_and_values(out.events, LISTED_AS_USED)
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
    zeros = [_all_zero(b) for b in batches]
    sigs = [STATE_SIG] + [_event_sig(b, table, z) for b, z in zip(batches, zeros)] + [COMM_SIG] * len(comms)
    batches = [
        EventBatch(b.time, b.thread, b.order, [] if z else [(t, labels.encode(t, v)) for t, v in b.pairs])
        for b, z in zip(batches, zeros)
    ]  # name columns numbered once, not per slice (a batch of zeros: no values)
    sources = [states, *batches, *comms]
    sizes = [n_states] + [len(b) for b in batches] + [len(c) for c in comms]
    starts = np.cumsum([0] + sizes)  # each source's first record (input order)
    nrec = int(starts[-1])
    # each column written once, source by source, into its array (no concatenation, no cast copy)
    time, key = np.empty(nrec, np.int64), np.empty(nrec, np.int64)
    thread, sig = np.empty(nrec, np.int32), np.empty(nrec, np.int32)
    columns: list[tuple[np.ndarray, np.ndarray, int, np.ndarray | int, np.ndarray | int]] = (  # each source's
        # time, thread and sort key (kind, order, x)
        [(states.start, states.thread, STATE_KIND, 0, states.thread)]
        + [(b.time, b.thread, EVENT_KIND, b.order, report) for b in batches]
        + [(c.log_send, c.send_thread, COMM_KIND, 0, report) for c in comms]
    )
    for (at, th, kind, order, x), g, a, b in zip(columns, sigs, starts[:-1], starts[1:]):
        time[a:b], thread[a:b], sig[a:b] = at, th, g
        _sort_key_into(key[a:b], kind, order, x)
    del columns
    perm = np.lexsort((key, time))
    time, key, thread, sig = time[perm], key[perm], thread[perm], sig[perm]
    event_sigs = sorted(table, key=lambda s: table[s])  # (types, dynamic flags) of signature EVENT_SIG0 + i
    offs = np.zeros(len(time) + 1, np.int64)  # each record's first tail field: its signature's width
    np.cumsum(_widths(event_sigs)[sig], out=offs[1:])
    nfields = int(offs[-1])
    n_events, n_comms = sum(len(b) for b in batches), sum(len(c) for c in comms)
    hdr = np.zeros(HEADER, np.int64)
    keyless = n_states == nrec  # (states only: their keys follow from their threads)
    hdr[:3] = nrec, nfields, keyless
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        head: list[np.ndarray] = [hdr, time, *([] if keyless else [key]), thread, sig]  # (written with the
        # first slice's fields: one writev)
        del thread, sig
        widths = [STATE_WIDTH] + [len(b.pairs) for b in batches] + [COMM_WIDTH] * len(comms)
        for lo, hi, groups in _slices(perm, offs, starts, widths):
            base = int(offs[lo])
            flat = np.empty(int(offs[hi]) - base, np.int64)
            for sid, rows, dst in groups:
                for j, col in enumerate(_tail_of(sources[sid], sid, rows, t_open)):
                    flat[dst if j == 0 else dst + j] = col
            _write(fd, [*head, flat], path)
            head = []
        # (head: left only if _slices yielded no slice, the header still written) and the trailer
        _write(fd, [*head, np.ascontiguousarray(time[::STRIDE]), np.ascontiguousarray(offs[:nrec:STRIDE])], path)
    finally:
        os.close(fd)
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
        event_sigs,
        values,
        trailer_offset(nrec, nfields, keyless),
    )


def trailer_offset(records: int, fields: int, keyless: bool = False) -> int:
    """Where a chunk file of ``records`` records and ``fields`` tail fields (``keyless``: states
    only, no key section) has its trailer (the index)."""
    *_, (_, dtype, at) = sections(records, keyless)
    return at + dtype.itemsize * records + 8 * fields


def types_and_values(batches: list[EventBatch], listed: frozenset[int]) -> tuple[set[int], dict[int, set[int]]]:
    """The event types of ``batches``, and for those in ``listed``, type -> the values the events give
    it (one pass: each pair's types found once)."""
    used: set[int] = set()
    values: dict[int, set[int]] = {}
    for b in batches:
        for t, v in b.pairs:
            one = np.ndim(t) == 0  # (most pairs: one type on every row, no array to look into)
            types = [int(t)] if one else np.unique(np.asarray(t)).tolist()
            used.update(types)
            if is_names(v) or not len(b):
                continue
            for u in types:
                if u in listed:
                    mine = np.asarray(v) if one else np.asarray(v)[np.asarray(t) == u]
                    values.setdefault(u, set()).update(np.unique(mine).tolist())
    return used, values


def _all_zero(b: EventBatch) -> bool:
    """Whether every value of an event batch is 0 (no name column): its signatures are of zeros."""
    return bool(b.pairs) and all(isinstance(v, np.ndarray) and not is_names(v) and not v.any() for _, v in b.pairs)


def _event_sig(b: EventBatch, table: dict, zero: bool = False):
    """The signature id of every row of an event batch (one int when its types are the same on
    every row); ``table``: (types, dynamic flags) -> id, extended with new signatures; ``zero``:
    every value is 0, the flags are empty (``tail_width``)."""
    dyn = () if zero else tuple(is_names(v) for _, v in b.pairs)
    if all(np.ndim(t) == 0 for t, _ in b.pairs):
        return table.setdefault((tuple(int(t) for t, _ in b.pairs), dyn), EVENT_SIG0 + len(table))
    cols = np.stack([np.broadcast_to(np.asarray(t, np.int64), (len(b),)) for t, _ in b.pairs], axis=1)
    uniq, inv = np.unique(cols, axis=0, return_inverse=True)
    ids = np.array([table.setdefault((tuple(int(x) for x in u), dyn), EVENT_SIG0 + len(table)) for u in uniq], np.int32)
    return ids[inv.ravel()]


def _slices(perm: np.ndarray, offs: np.ndarray, starts: np.ndarray, widths: list[int]):
    """(lo, hi, groups) per slice [lo, hi) of the sorted records (one slice for a chunk of up to
    ONE_SLICE_UP_TO records), ``widths`` the tail fields of each source (0: none, left out); groups:
    (source, its rows in the slice, their first fields' positions relative to the slice's first
    field).  Each source is cut where the slices' first fields fall among its records' first fields,
    found once.  A source is laid out by runs of rows that keep their order in the sorted records
    (an event batch or the communications: one run; the painted states: one per thread): the rows of
    a run in a slice are a ``slice``, laid out from views of the source's columns.  Only a source of
    more than MAX_RUNS runs has its rows put in order (by first field) and taken."""
    nrec = len(perm)
    step = nrec if nrec <= ONE_SLICE_UP_TO else LAYOUT_SLICE
    los = list(range(0, nrec, max(step, 1)))
    bounds = offs[[*los, nrec]]  # each slice's first field, and the end
    at = np.empty(nrec, np.int64)
    at[perm] = offs[:-1]  # each record's first field, in input order
    runs: list = []  # (source, its first row, its rows in sorted order or None: in order from there,
    #                  their first fields, where the slices cut them) per run of a source with a tail
    for sid, (a, b, width) in enumerate(zip(starts[:-1].tolist(), starts[1:].tolist(), widths)):
        if b == a or not width:  # (no tail field to lay out)
            continue
        pos = at[a:b]
        back = np.flatnonzero(pos[1:] < pos[:-1]) + 1  # where the order starts again (a thread's states)
        parts: list[tuple[int, np.ndarray | None, np.ndarray]]
        if len(back) > MAX_RUNS:
            order = np.argsort(pos, kind="stable")
            parts = [(0, order, pos[order])]
        else:
            parts = [(r, None, pos[r:e]) for r, e in zip([0, *back.tolist()], [*back.tolist(), b - a])]
        runs += [(sid, r, rows, p, np.searchsorted(p, bounds).tolist()) for r, rows, p in parts]
    for i, lo in enumerate(los):
        base = int(bounds[i])
        groups = []
        for sid, r, rows, pos, cuts in runs:
            r0, r1 = cuts[i], cuts[i + 1]
            if r1 > r0:
                groups.append((sid, slice(r + r0, r + r1) if rows is None else rows[r0:r1], pos[r0:r1] - base))
        yield lo, min(nrec, lo + step), groups


def _tail_of(source, sid: int, rows: slice | np.ndarray, t_open: int) -> list:
    """The tail columns of rows ``rows`` (a ``slice``: views) of one source of a chunk (source 0: the
    states; event values already numbered): only those columns are taken."""
    if sid == 0:
        end = source.end[rows]
        return [np.where(end == t_open, OPEN_END, end), source.state[rows]]
    if isinstance(source, EventBatch):
        return [v[rows] for _, v in source.pairs]
    return [getattr(source, f)[rows] for f in COMM_TAIL]
