"""Useful time on the CPU (issue 37): where the reports have the scheduler's data (SCHED_EVENTS, read
for the metrics whatever -t translates, as the other POP kinds), the host tree gains an ``on_cpu`` block
that counts a process's useful time only while its main thread is on a CPU.

The host tree's useful time (BasicAnalysis's: a process's lifetime outside its MPI and CUDA API calls)
stays as it is; ``on_cpu`` subtracts from it the time the process's main thread (thread id = process
id) was descheduled outside those calls: ``useful_on_cpu_i = useful_i - |off-CPU_i minus (MPI_i union
CUDA_i)|``, within the process's lifetime and the measured window.  Off-CPU time inside a call is the
call's already (MPI or offload), so it is not counted twice.  Sources: docs/pop-metrics.md.

The hooks: ``partial`` (per report or time slice, from ``pop.collect_partial``), ``gather`` (the run's,
in ``pop.combine``), ``durations`` and ``tree`` (per window, in ``pop.evaluate``).
"""

from __future__ import annotations

import numpy as np

from nsys2prv.metrics.measures import clip_to_windows, mask_durations
from nsys2prv.nsys.ids import pid_of, tid_of

KINDS = ("sched",)  # the tables read (with the host calls: pop.KINDS), whatever -t (pipeline.prepare)
CALL, OFF = 0, 1  # interval classes (bits of the sweep masks)
_OFF_ONLY = 1 << OFF  # the mask: off CPU, in no call


def partial(tabs: dict, tasks_of, at, unions) -> tuple | None:
    """Per (task, class) the union of the main threads' off-CPU intervals and of the host calls, aligned
    (None: no scheduling data).  ``tasks_of(ids)``: task index per global id; ``at``: report time ->
    aligned; ``unions``: ``pop._unions``."""
    sched = tabs.get("sched")
    if sched is None or sched.empty:
        return None
    tid = sched["tid"].to_numpy(np.int64)
    start, end = sched["start"].to_numpy(np.int64), sched["end"].to_numpy(np.int64)
    off = ~sched["sched_in"].to_numpy(bool) & (end > start) & (tid_of(tid) == pid_of(tid))
    rows = [(tasks_of(tid[off]), np.full(int(off.sum()), OFF, np.int64), at(start[off]), at(end[off]))]
    for kind in ("mpi", "cuda_api"):
        df = tabs.get(kind)
        if df is not None and len(df):
            s, e = df["start"].to_numpy(np.int64), df["end"].to_numpy(np.int64)
            rows.append((tasks_of(df["tid"]), np.full(len(df), CALL, np.int64), at(s), at(e)))
    task, cls, s, e = (np.concatenate(x) for x in zip(*rows))
    ok = task >= 0
    return unions([task[ok], cls[ok]], s[ok], e[ok])


def gather(parts: list[tuple | None], proc_index: np.ndarray, life: tuple) -> tuple | None:
    """The run's intervals (process, start, end, class), each cut to its process's lifetime ``life``
    (lo, hi arrays per host process); None when no report had scheduling data."""
    got = [p for p in parts if p is not None]
    if not got:
        return None
    task, cls, s, e = (np.concatenate(x) for x in zip(*got))
    pi = proc_index[task]
    ok = pi >= 0
    pi, cls, s, e = pi[ok], cls[ok], s[ok], e[ok]
    lo, hi = (np.asarray(x, np.int64) for x in life)
    s, e = np.maximum(s, lo[pi]), np.minimum(e, hi[pi])
    keep = e > s
    return pi[keep], s[keep], e[keep], cls[keep]


def durations(intervals: tuple, n_procs: int, lo, hi, per_window: bool) -> np.ndarray:
    """(windows or 1, H): each process's off-CPU time outside its calls inside the windows."""
    group, s, e, c = intervals
    row, win, cs, ce = clip_to_windows(s, e, lo, hi)
    g = group[row]
    if per_window:
        d = mask_durations(win * n_procs + g, cs, ce, c[row], n_procs * len(lo), 2)
        return d.reshape(len(lo), n_procs, 4)[:, :, _OFF_ONLY]
    return mask_durations(g, cs, ce, c[row], n_procs, 2)[None, :, _OFF_ONLY]


def tree(host: dict, off_outside: np.ndarray, T: int) -> dict | None:
    """The ``on_cpu`` block of a host tree (None: the tree has no useful time)."""
    useful = host.get("useful_time_ns")
    if not useful or T <= 0:
        return None
    labels = list(useful)
    u = np.array([useful[k] for k in labels], np.int64)
    on = np.maximum(u - off_outside, 0)
    H = len(labels)
    return {
        "useful_on_cpu_time_ns": {k: int(v) for k, v in zip(labels, on)},
        "off_cpu_outside_calls_ns": {k: int(v) for k, v in zip(labels, off_outside)},
        "useful_on_cpu_time_total_ns": int(on.sum()),
        "on_cpu_share_of_useful": float(on.sum() / u.sum()) if u.sum() else None,
        "on_cpu_parallel_efficiency": float(on.sum()) / (H * T),
    }


DEFINITION = (
    "host.on_cpu (reports with the scheduler's data, SCHED_EVENTS): useful_on_cpu_i = UsefulHost_i - "
    "|off-CPU time of process i's main thread outside its MPI and CUDA API calls| (within its lifetime); "
    "on_cpu_parallel_efficiency = sum_i useful_on_cpu_i / (H*T). The other host metrics are BasicAnalysis's."
)


__all__ = ["DEFINITION", "KINDS", "durations", "gather", "partial", "tree"]
