"""A worker's large result handed over in shared memory (``core/handover.py``): it arrives as itself,
its arrays mapped (no copy) and writable, the memory held that of the arrays still in use, and a
worker that cannot make the memory file sends it plainly."""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle

import numpy as np
import pandas as pd
import pytest

from nsys2prv.core import handover
from nsys2prv.core.workers import WorkerPool

pytestmark = pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="memory files (memfd_create) are Linux's")

ROWS = 300_000  # 2.4 MB a column of int64: out of band


def _frame(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ints = rng.integers(-(1 << 62), 1 << 62, ROWS)
    return pd.DataFrame(
        {
            "start": ints,
            "dur": rng.random(ROWS),
            "stream": pd.array(np.where(ints % 7 == 0, None, ints % 13), dtype="Int64"),
            "name": pd.Categorical.from_codes(rng.integers(0, 3, ROWS), ["a", "b", "ccc"]),
            "text": np.array([f"t{i % 5}" for i in range(ROWS)], dtype=object),
            "small": np.arange(ROWS) % 2 == 0,  # (300 KB of bool: out of band too)
        }
    )


def _result(seed: int):
    """What a helper returns: a frame and its bookkeeping; an array, and a small one (in the pickle)."""
    return handover.handed((_frame(seed), {"kernels": {"gridX"}}, {1, 2}, np.arange(ROWS) * seed, np.arange(10)))


def _no_memfd(seed: int):
    def refused(*_a, **_k):
        raise OSError(24, "Too many open files")

    os.memfd_create = refused  # (this worker only: it is forked, and ends with the pool)
    return _result(seed)


def _memory_files() -> list[tuple[int, int]]:
    """The address ranges of this process mapped from result memory files."""
    out = []
    with open("/proc/self/maps") as fh:
        for line in fh:
            if "nsys2prv-result" in line:
                lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                out.append((lo, hi))
    return out


def _pool() -> WorkerPool:
    return WorkerPool(1, mp.get_context("fork"))


def _check(got, seed: int) -> None:
    df, missing, ok, big, small = got
    pd.testing.assert_frame_equal(df, _frame(seed))
    assert (missing, ok, small.tolist()) == ({"kernels": {"gridX"}}, {1, 2}, list(range(10)))
    np.testing.assert_array_equal(big, np.arange(ROWS) * seed)
    assert big.flags.writeable
    big[0] = 7  # (the arrays are the receiver's)


def test_a_result_arrives_as_itself_its_arrays_mapped_and_writable():
    before = _memory_files()
    with _pool() as pool:
        got = pool.submit(_result, 5).result()
    _check(got, 5)
    big = got[3]
    # the array and the frame's arrays over 64 KB, each mapped on its own (start, dur, stream's values
    # and mask, the category codes, small and what else pandas pickles: 9 in pandas 3)
    mapped = [m for m in _memory_files() if m not in before]
    assert big.ctypes.data % handover.ALIGN == 0
    assert (big.ctypes.data, big.ctypes.data + handover._padded(big.nbytes)) in mapped
    assert len(mapped) >= 7
    del got, big
    assert _memory_files() == before


def test_a_column_kept_keeps_only_its_own_pages():
    before = _memory_files()
    with _pool() as pool:
        df = pool.submit(_result, 6).result()[0]
    kept = df["dur"].to_numpy()
    del df
    left = [m for m in _memory_files() if m not in before]
    assert left == [(kept.ctypes.data, kept.ctypes.data + handover._padded(kept.nbytes))]
    np.testing.assert_array_equal(kept, _frame(6)["dur"].to_numpy())


def test_a_buffer_let_go_is_punched_out_of_the_file():
    """The pages of a buffer no longer used are freed at once (not when the last one goes)."""
    a, b = np.arange(ROWS, dtype=np.int64), np.arange(ROWS, dtype=np.float64)
    bufs: list = []
    head = pickle.dumps((a, b), protocol=5, buffer_callback=lambda x: bufs.append(x) or False)
    raws = [x.raw() for x in bufs]
    fd = os.memfd_create("nsys2prv-result-test")
    try:
        handover.write_all(fd, [v for r in raws for v in (r, handover._PAD[: handover._padded(r.nbytes) - r.nbytes])])

        class Dup:  # (what the resource sharer's DupFd gives: a descriptor of the file)
            def detach(self):
                return os.dup(fd)

        got_a, got_b = handover._taken(head, Dup(), [r.nbytes for r in raws])
        np.testing.assert_array_equal(got_a, a)
        np.testing.assert_array_equal(got_b, b)
        whole = os.fstat(fd).st_blocks * 512
        assert whole >= 2 * a.nbytes
        del got_a
        assert os.fstat(fd).st_blocks * 512 == handover._padded(b.nbytes)
        del got_b
        assert os.fstat(fd).st_blocks == 0
    finally:
        os.close(fd)


def test_a_worker_without_a_memory_file_sends_it_plainly():
    before = _memory_files()
    with _pool() as pool:
        got = pool.submit(_no_memfd, 8).result()
    _check(got, 8)
    assert _memory_files() == before


def test_a_result_of_small_arrays_only_is_one_plain_pickle():
    reduce = handover.handed({"a": np.arange(100), "b": "x"}).__reduce__()
    assert reduce[0] is handover._plain
    got = reduce[0](*reduce[1])
    assert got["b"] == "x" and got["a"].tolist() == list(range(100))
