"""Useful time on the CPU (issue 37): where the reports have the scheduler's data (SCHED_EVENTS, read
for the metrics whatever -t translates, as the other POP kinds), the host tree gains an ``on_cpu`` block
that counts a process's useful time only while its main thread is on a CPU.

The host tree's useful time (BasicAnalysis's: a process's lifetime outside its MPI and CUDA API calls)
stays as it is; ``on_cpu`` subtracts from it the time the process's main thread (thread id = process
id) was descheduled outside those calls: ``useful_on_cpu_i = useful_i - |off-CPU_i minus (MPI_i union
CUDA_i)|``, within the process's lifetime and the measured window.  Off-CPU time inside a call is the
call's already (MPI or offload), so it is not counted twice.  A process whose main thread has no
scheduling data (a report without it, beside others with it) keeps its useful time whole and the block
names it.  Sources: docs/pop-metrics.md.

The hooks: ``partial`` (per report or time slice, from ``pop.collect_partial``), ``gather`` (the run's,
in ``pop.combine``), ``durations`` and ``tree`` (per window, in ``pop.evaluate``).
"""

from __future__ import annotations

import numpy as np

from nsys2prv.core import columns as C
from nsys2prv.core.columns import Frame
from nsys2prv.metrics.measures import clip_to_windows, mask_durations
from nsys2prv.nsys.ids import pid_of, tid_of

KINDS = ("sched",)  # the tables read (with the host calls: pop.KINDS), whatever -t (pipeline.prepare)
CALL, OFF = 0, 1  # interval classes (bits of the sweep masks)
SEEN = 2  # not an interval: a task whose main thread has scheduling data (``partial`` -> ``gather``)
_OFF_ONLY = 1 << OFF  # the mask: off CPU, in no call
NO_DATA = -1  # ``durations`` of a process whose main thread has no scheduling data


def partial(tabs: dict, tasks_of, at, unions) -> tuple | None:
    """Per (task, class) the union of the main threads' off-CPU intervals and of the host calls, aligned
    (None: no scheduling data).  ``tasks_of(ids)``: task index per global id; ``at``: report time ->
    aligned; ``unions``: ``pop._unions``."""
    sched: Frame[C.Sched] | None = tabs.get("sched")  # (declared columns: mypy checks them)
    if sched is None or sched.empty:
        return None
    tid = sched["tid"].to_numpy(np.int64)
    start, end = sched["start"].to_numpy(np.int64), sched["end"].to_numpy(np.int64)
    main = tid_of(tid) == pid_of(tid)
    off = ~sched["sched_in"].to_numpy(bool) & (end > start) & main
    rows = [(tasks_of(tid[off]), np.full(int(off.sum()), OFF, np.int64), at(start[off]), at(end[off]))]
    seen = np.unique(tasks_of(tid[main]))  # (the processes this report has scheduling data of)
    zero = np.zeros(len(seen), np.int64)
    rows.append((seen, np.full(len(seen), SEEN, np.int64), zero, zero))
    for kind in ("mpi", "cuda_api"):
        calls: Frame[C.OnCpu] | None = tabs.get(kind)
        if calls is not None and len(calls):
            s, e = calls["start"].to_numpy(np.int64), calls["end"].to_numpy(np.int64)
            rows.append((tasks_of(calls["tid"]), np.full(len(calls), CALL, np.int64), at(s), at(e)))
    task, cls, s, e = (np.concatenate(x) for x in zip(*rows))
    ok = task >= 0
    return unions([task[ok], cls[ok]], s[ok], e[ok])


def gather(parts: list[tuple | None], proc_index: np.ndarray, life: tuple) -> tuple | None:
    """The run's intervals (process, start, end, class), each cut to its process's lifetime ``life``
    (lo, hi arrays per host process), and per host process whether its main thread has scheduling data;
    None when no report had scheduling data."""
    got = [p for p in parts if p is not None]
    if not got:
        return None
    task, cls, s, e = (np.concatenate(x) for x in zip(*got))
    pi = proc_index[task]
    ok = pi >= 0
    pi, cls, s, e = pi[ok], cls[ok], s[ok], e[ok]
    lo, hi = (np.asarray(x, np.int64) for x in life)
    covered = np.zeros(len(lo), bool)
    covered[pi[cls == SEEN]] = True
    pi, cls, s, e = (x[cls != SEEN] for x in (pi, cls, s, e))
    s, e = np.maximum(s, lo[pi]), np.minimum(e, hi[pi])
    keep = e > s
    return pi[keep], s[keep], e[keep], cls[keep], covered


def durations(intervals: tuple, n_procs: int, lo, hi, per_window: bool) -> np.ndarray:
    """(windows or 1, H): each process's off-CPU time outside its calls inside the windows (``NO_DATA``
    for a process whose main thread has no scheduling data: ``intervals``' fifth array, all if absent)."""
    group, s, e, c = intervals[:4]
    row, win, cs, ce = clip_to_windows(s, e, lo, hi)
    g = group[row]
    if per_window:
        d = mask_durations(win * n_procs + g, cs, ce, c[row], n_procs * len(lo), 2)
        out = d.reshape(len(lo), n_procs, 4)[:, :, _OFF_ONLY]
    else:
        out = mask_durations(g, cs, ce, c[row], n_procs, 2)[None, :, _OFF_ONLY]
    if len(intervals) > 4:
        out[:, ~np.asarray(intervals[4], bool)] = NO_DATA
    return out


def tree(host: dict, off_outside: np.ndarray, T: int) -> dict | None:
    """The ``on_cpu`` block of a host tree (None: the tree has no useful time).  A process without
    scheduling data (``NO_DATA``) keeps its useful time whole, its off-CPU time is None, and the block
    names it (``without_scheduling_data``)."""
    useful = host.get("useful_time_ns")
    if not useful or T <= 0:
        return None
    labels = list(useful)
    u = np.array([useful[k] for k in labels], np.int64)
    have = off_outside != NO_DATA
    on = np.where(have, np.maximum(u - off_outside, 0), u)
    H = len(labels)
    out = {
        "useful_on_cpu_time_ns": {k: int(v) for k, v in zip(labels, on)},
        "off_cpu_outside_calls_ns": {k: int(v) if h else None for k, v, h in zip(labels, off_outside, have)},
        "useful_on_cpu_time_total_ns": int(on.sum()),
        "on_cpu_share_of_useful": float(on.sum() / u.sum()) if u.sum() else None,
        "on_cpu_parallel_efficiency": float(on.sum()) / (H * T),
    }
    if not have.all():
        out["without_scheduling_data"] = [k for k, h in zip(labels, have) if not h]
    return out


DEFINITION = (
    "host.on_cpu (reports with the scheduler's data, SCHED_EVENTS): useful_on_cpu_i = UsefulHost_i - "
    "|off-CPU time of process i's main thread outside its MPI and CUDA API calls| (within its lifetime); "
    "on_cpu_parallel_efficiency = sum_i useful_on_cpu_i / (H*T). The other host metrics are BasicAnalysis's."
)


__all__ = ["DEFINITION", "KINDS", "durations", "gather", "partial", "tree"]
