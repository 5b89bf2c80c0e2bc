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

The hooks: ``partial`` (per report or time slice, from ``pop.collect_partial``; ``spill``: left in the
run's work directory by the worker, so that the main process holds a file name per report, not its
intervals), ``gather`` (the run's, in ``pop.combine``), ``durations`` and ``tree`` (per window, in
``pop.evaluate``).  ``durations`` reads the reports' files a batch of reports at a time: a process's
intervals are all in its report, and the sweep measures each process on its own, so the batches'
measures add up to those of one sweep over the run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nsys2prv.core import columns as C
from nsys2prv.core.columns import Frame
from nsys2prv.core.writes import save_array
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


@dataclass
class Spill:
    """A report's ``partial`` as its worker leaves it in the run's work directory: .npy files (its
    time slices', in slice order) of (4, n) int64 rows task, class, start, end."""

    paths: list[str]
    rows: int

    def load(self) -> tuple:
        data = [np.load(p, allow_pickle=False) for p in self.paths]
        return tuple(np.concatenate([d[i] for d in data]) for i in range(4))


def spill(unions: tuple | None, path: str | None) -> Spill | tuple | None:
    """``partial``'s result written to ``path`` (None: kept as it is, or nothing to write)."""
    if unions is None or path is None:
        return unions
    save_array(path, np.stack(unions))
    return Spill([path], len(unions[0]))


def join(parts: list) -> Spill | tuple | None:
    """The time slices' partials of one report, side by side in slice order."""
    got = [p for p in parts if p is not None]
    if not got:
        return None
    if all(isinstance(p, Spill) for p in got):
        return Spill([path for p in got for path in p.paths], sum(p.rows for p in got))
    loaded = [p.load() if isinstance(p, Spill) else p for p in got]
    return tuple(np.concatenate(x) for x in zip(*loaded))


@dataclass
class Intervals:
    """The run's intervals for ``durations``: the reports' partials (a ``Spill`` or in memory), read
    a batch of reports at a time (``batches``), and per host process whether its main thread has
    scheduling data (``covered``)."""

    parts: list
    proc_index: np.ndarray  # task -> host process index (-1: not a host process)
    life: tuple  # (lo, hi) arrays per host process
    covered: np.ndarray

    BATCH_ROWS = 1 << 18  # intervals measured at a time (8 MB of them; the sweep takes about 5 times that)

    def cut(self, part) -> tuple:
        """One report's intervals (process, start, end, class), each cut to its process's lifetime,
        and the processes whose main thread has scheduling data."""
        task, cls, s, e = part.load() if isinstance(part, Spill) else part
        pi = self.proc_index[task]
        ok = pi >= 0
        pi, cls, s, e = pi[ok], cls[ok], s[ok], e[ok]
        seen = pi[cls == SEEN]
        pi, cls, s, e = (x[cls != SEEN] for x in (pi, cls, s, e))
        lo, hi = self.life
        s, e = np.maximum(s, lo[pi]), np.minimum(e, hi[pi])
        keep = e > s
        return (pi[keep], s[keep], e[keep], cls[keep]), seen

    def batches(self):
        """(process, start, end, class) arrays of a batch of reports at a time, in report order."""
        batch: list = []
        rows = 0
        for part in self.parts:
            batch.append(self.cut(part)[0])
            rows += len(batch[-1][0])
            if rows >= self.BATCH_ROWS:
                yield tuple(np.concatenate(x) for x in zip(*batch))
                batch, rows = [], 0
        if batch or not self.parts:
            z = np.zeros(0, np.int64)
            yield tuple(np.concatenate(x) for x in zip(*batch)) if batch else (z, z, z, z)


def gather(parts: list, proc_index: np.ndarray, life: tuple) -> Intervals | None:
    """The run's intervals (process, start, end, class), each to be cut to its process's lifetime
    ``life`` (lo, hi arrays per host process), and per host process whether its main thread has
    scheduling data; None when no report had scheduling data."""
    got = [p for p in parts if p is not None]
    if not got:
        return None
    lo, hi = (np.asarray(x, np.int64) for x in life)
    out = Intervals(got, proc_index, (lo, hi), np.zeros(len(lo), bool))
    for part in got:  # (a report at a time: only the processes seen are kept)
        out.covered[out.cut(part)[1]] = True
    return out


def durations(intervals, n_procs: int, lo, hi, per_window: bool) -> np.ndarray:
    """(windows or 1, H): each process's off-CPU time outside its calls inside the windows (``NO_DATA``
    for a process whose main thread has no scheduling data: ``covered`` of an ``Intervals``, or the
    fifth array of a tuple (process, start, end, class[, covered]); all have it if absent)."""
    covered: np.ndarray | None
    if isinstance(intervals, Intervals):
        batches = [_durations(b, n_procs, lo, hi, per_window) for b in intervals.batches()]
        out, covered = np.sum(batches, axis=0), intervals.covered
    else:
        out = _durations(intervals[:4], n_procs, lo, hi, per_window)
        covered = intervals[4] if len(intervals) > 4 else None
    if covered is not None:
        out[:, ~np.asarray(covered, bool)] = NO_DATA
    return out


def _durations(intervals: tuple, n_procs: int, lo, hi, per_window: bool) -> np.ndarray:
    group, s, e, c = intervals
    row, win, cs, ce = clip_to_windows(s, e, lo, hi)
    g = group[row]
    if per_window:
        d = mask_durations(win * n_procs + g, cs, ce, c[row], n_procs * len(lo), 2)
        return d.reshape(len(lo), n_procs, 4)[:, :, _OFF_ONLY]
    return mask_durations(g, cs, ce, c[row], n_procs, 2)[None, :, _OFF_ONLY]


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


__all__ = ["DEFINITION", "KINDS", "Intervals", "Spill", "durations", "gather", "join", "partial", "spill", "tree"]
