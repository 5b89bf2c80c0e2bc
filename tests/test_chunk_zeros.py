"""Events whose values are all 0 (the ends of ranges) are written without their values: a signature
of zeros (``paraver/chunks.py``), formatted as a 0 for each of its types (``paraver/format.py``)."""

from __future__ import annotations

import numpy as np

from nsys2prv.core.names import Names
from nsys2prv.core.registry import EventType
from nsys2prv.paraver.chunks import HEADER, write_chunk
from nsys2prv.translate.records import EventBatch, StateIntervals, Translation


def _batch(time, pairs):
    n = len(time)
    return EventBatch(np.array(time, np.int64), np.zeros(n, np.int64), np.arange(n, dtype=np.int64), pairs)


def test_a_batch_of_zeros_has_no_values_in_the_chunk(tmp_path):
    i64 = lambda *x: np.array(x, np.int64)  # noqa: E731
    names = Names(np.array([0, 1], np.int32), np.array(["a", "b"], object))
    out = Translation(
        events=[
            _batch([10, 30], [(700, names), (701, i64(5, 6))]),
            _batch([20, 40], [(700, i64(0, 0)), (701, i64(0, 0))]),  # the ends: zeros
            _batch([25], [(701, i64(0))]),  # a type's end alone
            _batch([35, 45], [(701, i64(0, 9))]),  # not all zeros: values kept
        ]
    )
    types = {700: EventType(700, "name", "dynamic"), 701: EventType(701, "size")}
    none = np.zeros(0, np.int64)
    painted = (StateIntervals(none, none, none, none, none), 100, 50)
    meta = write_chunk(out, None, 0, types, str(tmp_path / "c"), painted=painted)
    assert meta.sigs == [((700, 701), (True, False)), ((700, 701), ()), ((701,), ()), ((701,), (False,))]
    assert meta.widths().tolist() == [2, 6, 2, 0, 0, 1]
    header = np.fromfile(tmp_path / "c", np.int64, HEADER)
    assert header[:2].tolist() == [7, 2 * 2 + 2]  # 7 records, 6 values: the zeros' 5 are not written
