"""A chunk's metadata as the main process receives it from a worker (pickled): the value names of
every report are held until the merge, so equal names are one string however many reports."""

from __future__ import annotations

import os
import pickle
import re

import numpy as np

from nsys2prv.paraver.chunks import ChunkMeta


def _meta(report: int) -> ChunkMeta:
    # the names made afresh per report (as each worker makes its own): equal, not the same objects
    kernels = ["".join(["kernel_", str(k), "<double>"]) for k in range(300)]
    return ChunkMeta(f"r{report}.chunk", 10, 4, 5, 1, 99, [(63000006, kernels), (63000007, [f"fn{report}"])], {1})


def test_unpickled_chunk_metas_share_equal_names_and_keep_the_rest():
    sent = [_meta(r) for r in range(3)]
    sent[0].trailer = 64 + 24 * 10 + 8 * 20
    assert sent[0].names[0][1][5] is not sent[1].names[0][1][5]
    got = [pickle.loads(pickle.dumps(m)) for m in sent]
    assert [g.names for g in got] == [m.names for m in sent]
    assert all(a is b for a, b in zip(got[0].names[0][1], got[2].names[0][1]))  # one string per name
    assert got[1].names[1] == (63000007, ["fn1"])
    assert (got[0].path, got[0].records, got[0].end, got[0].types_used) == ("r0.chunk", 10, 99, {1})
    assert (got[0].trailer, got[1].trailer) == (464, -1)


def test_unpickled_chunk_metas_share_equal_lists_of_names_and_their_values(tmp_path):
    """The reports' equal lists of a type's names are one list in the main process, and the merge's
    table of values holds them once (``merge.sig_tables``): chunks 0 and 2 share theirs, chunk 1 not."""
    from nsys2prv.paraver.merge import sig_tables

    sent = [_meta(r) for r in range(3)]
    sent[2].names[1] = (63000007, ["fn0"])
    got = [pickle.loads(pickle.dumps(m)) for m in sent]
    assert got[0].names[0][1] is got[1].names[0][1] is got[2].names[0][1]
    assert got[0].names[1][1] is got[2].names[1][1] and got[1].names[1][1] is not got[0].names[1][1]
    assert got[1].names[1][1] == ["fn1"]
    for g in got:
        g.sigs = [((63000006, 63000007), (True, True))]
    shared = np.arange(301, dtype=np.int64)
    _, tables = sig_tables(got, [shared, np.arange(301, 602, dtype=np.int64), shared], ())
    assert tables.rbase.tolist() == [0, 0, 0, 301, 0]  # (states, communications, one event signature per chunk)
    assert tables.remap.tolist() == list(range(602))


def test_unpickled_chunk_metas_share_equal_sets_of_types_and_signatures():
    """The types used and the event signatures of every report's chunk are held until the merge too:
    equal ones (most reports of a run) are one object, read as before (a set, a list of signatures)."""
    sent = [_meta(r) for r in range(3)]
    for m, extra in zip(sent, (0, 0, 7)):
        m.types_used = {1, 63000006, extra}
        m.sigs = [((63000006,), (True,)), ((63000007, 70 + extra), (True, False))]
    got = [pickle.loads(pickle.dumps(m)) for m in sent]
    assert got[0].types_used is got[1].types_used and got[2].types_used is not got[0].types_used
    assert got[0].sigs is got[1].sigs and got[2].sigs is not got[0].sigs
    assert [sorted(g.types_used) for g in got] == [[0, 1, 63000006]] * 2 + [[1, 7, 63000006]]
    assert set().union(*[g.types_used for g in got]) == {0, 1, 7, 63000006}
    assert got[2].sigs == [((63000006,), (True,)), ((63000007, 77), (True, False))]
    assert got[0].widths().tolist() == [2, 6, 1, 2]


def test_a_chunk_file_shorter_than_its_records_is_an_error_naming_it(tmp_path):
    """The merge reads every section whole: a truncated chunk file is not read short silently."""
    import io

    import pytest
    from chunk_files import save_chunk

    from nsys2prv.paraver.chunks import EVENT_SIG0
    from nsys2prv.paraver.merge import merge

    n = 300
    path = tmp_path / "c0.chunk"
    meta = save_chunk(
        str(path),
        np.arange(n),
        np.zeros(n),
        np.zeros(n),
        np.full(n, EVENT_SIG0),
        np.arange(n),
        events=n,
        sigs=[((1,), (False,))],
    )
    objs = (np.ones(1, np.int64),) * 3
    fh = io.BytesIO()
    merge([meta], [np.zeros(0, np.int64)], n, fh, objs=objs)
    assert fh.getvalue().decode().splitlines()[-1] == f"2:1:1:1:1:{n - 1}:1:{n - 1}"  # whole, it is read
    os.truncate(path, os.path.getsize(path) - 8)  # the trailer's last entry gone
    with pytest.raises(OSError, match=f"{re.escape(str(path))}: chunk file shorter than its records"):
        merge([meta], [np.zeros(0, np.int64)], n, io.BytesIO(), objs=objs)
    os.truncate(path, meta.trailer - 8)  # the trailer and the last tail field gone
    with pytest.raises(OSError, match=f"{re.escape(str(path))}: chunk file shorter than its records"):
        merge([meta], [np.zeros(0, np.int64)], n, io.BytesIO(), objs=objs)


def test_the_merge_reads_a_chunks_index_from_its_file_and_the_meta_holds_no_array(tmp_path):
    """The time and first tail field of every STRIDE-th record are the chunk file's trailer, not arrays
    of the meta the main process holds: the merge's readers (and split_times) read them from the file."""
    from chunk_files import save_chunk

    from nsys2prv.paraver.chunks import EVENT_SIG0, STATE_SIG
    from nsys2prv.paraver.merge import _Reader, chunk_index

    n = 300
    sig = np.where(np.arange(n) % 3 == 0, EVENT_SIG0, STATE_SIG)  # widths 1 and 2
    nf = int(np.where(sig == EVENT_SIG0, 1, 2).sum())
    meta = save_chunk(
        str(tmp_path / "c0.chunk"),
        2 * np.arange(n),
        np.zeros(n),
        np.zeros(n),
        sig,
        np.arange(nf),
        sigs=[((1,), (False,))],
    )
    got = pickle.loads(pickle.dumps(meta))
    assert [k for k, v in vars(got).items() if isinstance(v, np.ndarray)] == []
    assert (nf, got.trailer, got.entries()) == (500, 64 + 24 * 300 + 8 * 500, 5)
    assert chunk_index(got).tolist() == [0, 128, 256, 384, 512]
    r = _Reader(got, t_lo=260)  # record 130: 44 records of 1 tail field and 86 of 2 before it
    assert (r.index.tolist(), r.k0, r.first, r.stop, r.field) == ([256, 384, 512], 2, 130, n, 216)
    r.close()
    r = _Reader(got, t_lo=2, t_hi=260)  # (a part of a split merge keeps its index entries only)
    assert (r.index.tolist(), r.k0, r.first, r.stop) == ([0, 128, 256], 0, 1, 130)
    r.close()
    with open(got.path, "r+b") as fh:  # the file's index is what the merge uses: a changed entry moves
        fh.seek(got.trailer + 2 * 8)  # the search (entry 2 says record 128 is at time 1000)
        np.array([1000], np.int64).tofile(fh)
    r = _Reader(got, t_lo=260)
    assert (r.index.tolist(), r.first) == ([1000, 384, 512], 128)
    r.close()


def test_a_chunk_of_states_only_is_merged_with_the_keys_its_threads_give(tmp_path):
    """A chunk of states only has no key section: the merge derives each state's key from its thread
    (kind 1, order 0, x the thread), so states of several threads tied at one time and events of two
    reports at that time come out in the order of the same states written with their keys."""
    import io

    from chunk_files import save_chunk

    from nsys2prv.paraver.chunks import EVENT_SIG0, STATE_SIG, state_keys_into
    from nsys2prv.paraver.merge import merge

    n = 200  # states of threads 3, 2, 1, 0 (sorted by thread at each time: the writer's order), 4 per time
    thread = np.tile(np.array([0, 1, 2, 3], np.int32), n // 4)
    time = np.repeat(np.arange(n // 4) * 10, 4)
    key = np.empty(n, np.int64)
    state_keys_into(key, thread)
    assert (key == (1 << 61) | thread.astype(np.int64)).all()
    tail = np.stack([time + 10, 1 + thread % 3]).T.ravel()  # end, state
    sig = np.full(n, STATE_SIG)
    events = []  # two reports' events at the states' times, their keys kind 2, x the report
    for r in (0, 1):
        te = np.arange(n // 4) * 10
        events.append(
            (
                te,
                np.full(len(te), (2 << 61) | r, np.int64),
                np.full(len(te), r, np.int32),
                np.full(len(te), EVENT_SIG0),
                te + r,
            )
        )
    outs = []
    for keyless in (False, True):
        metas = [
            save_chunk(str(tmp_path / f"s{keyless}"), time, key, thread, sig, tail, keyless, states=n),
            *(
                save_chunk(str(tmp_path / f"e{r}{keyless}"), *ev, events=len(ev[0]), sigs=[((1,), (False,))])
                for r, ev in enumerate(events)
            ),
        ]
        sizes = [os.path.getsize(m.path) for m in metas]
        assert sizes[0] == 64 + (16 if keyless else 24) * n + 8 * 2 * n + 16 * 4
        objs = (np.ones(4, np.int64), np.array([1, 1, 1, 1], np.int64), np.array([1, 2, 3, 4], np.int64))
        fh = io.BytesIO()
        merge(metas, [np.zeros(0, np.int64)] * 3, 2 * n, fh, objs=objs)
        outs.append(fh.getvalue())
    lines = outs[0].decode().splitlines()
    assert outs[1] == outs[0] and len(lines) == n + 2 * (n // 4)
    assert lines[:6] == [
        "1:1:1:1:1:0:10:1",
        "1:1:1:1:2:0:10:2",
        "1:1:1:1:3:0:10:3",
        "1:1:1:1:4:0:10:1",
        "2:1:1:1:1:0:1:0",
        "2:1:1:1:2:0:1:1",
    ]
