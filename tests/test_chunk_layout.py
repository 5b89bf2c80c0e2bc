"""A chunk's tail is laid out a slice of sorted records at a time (``paraver/chunks.py`` ``_slices``):
each source in runs of rows that keep their order (views), or, past MAX_RUNS runs, its rows put in
order and taken.  Every way gives the tail of the records in time order, checked here against the
records themselves (all times distinct: the sorted order is the times' order)."""

from __future__ import annotations

import numpy as np
import pytest

from nsys2prv.core.registry import EventType
from nsys2prv.paraver import chunks
from nsys2prv.paraver.chunks import HEADER, sections, write_chunk
from nsys2prv.paraver.format import OPEN_END
from nsys2prv.translate.records import CommBatch, EventBatch, StateIntervals, Translation

T_OPEN = 10**9  # a thread's final state ends here (written as OPEN_END)


def _records(seed: int):
    """A translation of states on 3 threads (thread-major: one run each), 3 event batches (one of
    zeros, one out of time order) and communications out of order; every time distinct.  Returns it,
    the painted states, and the expected tail (time -> its fields)."""
    rng = np.random.default_rng(seed)
    times = iter(rng.permutation(np.arange(1, 5000, dtype=np.int64) * 10))
    take = lambda n: np.array([next(times) for _ in range(n)], np.int64)  # noqa: E731
    expect: dict[int, list[int]] = {}
    th, st, en, sv = [], [], [], []
    for t in range(3):
        s = np.sort(take(40 + 13 * t))
        e = np.r_[s[1:], T_OPEN]
        th += [t] * len(s)
        st.append(s)
        en.append(e)
        sv.append(rng.integers(1, 9, len(s)))
    start, end, state = (np.concatenate(x) for x in (st, en, sv))
    thread = np.array(th, np.int64)
    for a, b, c in zip(start, end, state):
        expect[int(a)] = [OPEN_END if b == T_OPEN else int(b), int(c)]
    states = StateIntervals(thread, start, end, state, np.zeros(len(start), np.int64))
    events = []
    for k, (n, ordered, zero) in enumerate(((120, True, False), (90, True, True), (70, False, False))):
        t = take(n)
        if ordered:
            t = np.sort(t)
        a = np.zeros(n, np.int64) if zero else rng.integers(-5, 10**12, n)
        b = np.zeros(n, np.int64) if zero else rng.integers(0, 100, n)
        events.append(EventBatch(t, np.full(n, k % 3, np.int64), np.zeros(n, np.int64), [(701, a), (702, b)]))
        for i in range(n):
            expect[int(t[i])] = [] if zero else [int(a[i]), int(b[i])]
    n = 60
    log_send = take(n)  # (not in time order: one run per row)
    f = {x: rng.integers(0, 3 if x == "recv_thread" else 10**6, n) for x in chunks.COMM_TAIL}
    comms = CommBatch(send_thread=rng.integers(0, 3, n), log_send=log_send, **f)
    for i in range(n):
        expect[int(log_send[i])] = [int(f[x][i]) for x in chunks.COMM_TAIL]
    return Translation(events=events, comms=[comms]), states, expect


def _tail(path: str) -> tuple[np.ndarray, np.ndarray]:
    """The record times and the tail fields of a chunk file."""
    hdr = np.fromfile(path, np.int64, HEADER)
    nrec, nfields, keyless = (int(x) for x in hdr[:3])
    *_, (_, dtype, at) = sections(nrec, bool(keyless))
    raw = np.fromfile(path, np.uint8)
    time = raw[HEADER * 8 : HEADER * 8 + 8 * nrec].view(np.int64)
    tail_at = at + dtype.itemsize * nrec
    return time, raw[tail_at : tail_at + 8 * nfields].view(np.int64)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize(
    ("one_up_to", "slice_", "max_runs"), [(1 << 18, 1 << 16, 1 << 10), (0, 7, 1 << 10), (0, 7, 0), (0, 1, 2)]
)
def test_a_chunks_tail_is_its_records_fields_in_time_order(tmp_path, monkeypatch, seed, one_up_to, slice_, max_runs):
    monkeypatch.setattr(chunks, "ONE_SLICE_UP_TO", one_up_to)
    monkeypatch.setattr(chunks, "LAYOUT_SLICE", slice_)
    monkeypatch.setattr(chunks, "MAX_RUNS", max_runs)
    out, states, expect = _records(seed)
    types = {701: EventType(701, "a"), 702: EventType(702, "b")}
    path = str(tmp_path / "c")
    meta = write_chunk(out, None, 0, types, path, painted=(states, T_OPEN, T_OPEN))
    time, tail = _tail(path)
    assert meta.records == len(expect) and time.tolist() == sorted(expect)
    assert tail.tolist() == [v for t in sorted(expect) for v in expect[t]]
