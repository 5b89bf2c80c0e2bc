"""Per-GPU activity records: POP's device classification of a GPU's timeline, as events of type
GPU_ACTIVITY on the GPU's row (``Model.device_rows``).

From the union intervals the POP partials carry per (process, device, class) -- compute kernels,
memory operations, NCCL kernels -- every GPU's timeline over the run [t0, t1] is cut where its state
changes: useful while a compute kernel runs on any of its streams (NCCL kernels too with --nccl-as
useful), data movement while only memory operations or NCCL kernels run, idle otherwise, and 0
(outside the run) from t1 on.  So a histogram of the value per row gives OUT.pop.json's per-GPU
useful, data movement and idle times exactly, whoever shares the GPU.  Columnar: one sort and two
cumulative sums over the interval ends, no loop over rows or intervals.
"""

from __future__ import annotations

import numpy as np

from nsys2prv.core import registry as R
from nsys2prv.core.choices import NcclAs
from nsys2prv.metrics.pop import KERNEL, NCCL
from nsys2prv.translate.records import PUNCTUAL_ORDER, EventBatch


def activity_events(
    rows: np.ndarray,
    cls: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    t0: int,
    t1: int,
    nccl_as: NcclAs,
    idle_rows=(),
) -> EventBatch:
    """The GPU_ACTIVITY events of the GPU rows ``rows`` (global thread of each interval's GPU) from their
    intervals, and of ``idle_rows`` (rows with no interval: idle over the whole run)."""
    rows, cls = np.asarray(rows, np.int64), np.asarray(cls, np.int64)
    s = np.clip(np.asarray(start, np.int64), t0, t1)
    e = np.clip(np.asarray(end, np.int64), t0, t1)
    keep = e > s
    if not keep.all():
        rows, cls, s, e = rows[keep], cls[keep], s[keep], e[keep]
    del keep
    useful = ((cls == KERNEL) | ((cls == NCCL) & (nccl_as == "useful"))).astype(np.int8)
    every = np.union1d(np.unique(rows), np.asarray(idle_rows, np.int64))
    n, k = len(s), len(every)
    # interval ends as counter steps (+1 at a start, -1 at an end) per class, then the run's bounds:
    # idle at t0 (overridden by a change at t0) and "outside the run" at t1 (overriding everything)
    # (one array at a time, the steps as int8: the memory of a GPU's ten million intervals)
    z8 = np.zeros(k, np.int8)
    t = np.concatenate([np.full(k, t0, np.int64), s, e, np.full(k, t1, np.int64)])
    del s, e
    rank = np.concatenate([z8, np.ones(2 * n, np.int8), np.full(k, 2, np.int8)])
    r = np.concatenate([every, rows, rows, every])
    del rows
    order = np.lexsort((rank, t, r))
    r = r[order]
    t = t[order]
    # the state after each step as a small code (0 idle, 1 data movement, 2 useful, 3 outside the run),
    # its value only for the steps kept (fewer and smaller temporaries: a GPU's steps are many)
    code = (np.concatenate([z8, 1 - useful, useful - 1, z8])[order].cumsum(dtype=np.int32) > 0).view(np.int8)
    code[np.concatenate([z8, useful, -useful, z8])[order].cumsum(dtype=np.int32) > 0] = 2
    code[rank[order] == 2] = 3
    del order, useful, rank
    # (each row's steps sum to 0: no reset needed between rows)
    last = np.ones(len(r), bool)  # the state after every step at one (row, time)
    last[:-1] = (r[1:] != r[:-1]) | (t[1:] != t[:-1])
    r, t, code = r[last], t[last], code[last]
    changed = np.ones(len(r), bool)  # only where the row's value changes
    changed[1:] = (r[1:] != r[:-1]) | (code[1:] != code[:-1])
    r, t = r[changed], t[changed]
    value = np.array([R.GPU_IDLE, R.GPU_DATA_MOVEMENT, R.GPU_USEFUL, R.END_VALUE], np.int64)[code[changed]]
    return EventBatch(t, r, np.full(len(t), PUNCTUAL_ORDER, np.int64), [(R.GPU_ACTIVITY.id, value)])
