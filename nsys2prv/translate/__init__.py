"""Normalised tables -> Paraver record batches.

One module per area (``cuda``, ``host``, ``graphs``, ``openacc``, ``gpu_metrics``, the links in
``gpu_links``); which translator reads which table is declared in ``kinds.py``.  Here: the end
of the trace and the painting of the final state timelines, which the writers share.
"""

from __future__ import annotations

import numpy as np

from nsys2prv.core import registry as R
from nsys2prv.core.intervals import paint_states
from nsys2prv.model.resources import Model
from nsys2prv.translate.records import StateIntervals, Translation


def trace_end(out: Translation) -> int:
    ends = [int(b.time.max()) for b in out.events if len(b)]
    ends += [int(s.end.max()) for s in out.states if len(s.end)]
    ends += [int(max(c.log_recv.max(), c.phys_recv.max(), c.phys_send.max())) for c in out.comms if len(c)]
    return max(ends, default=0)


def paint(out: Translation, model: Model, t_end: int, threads: np.ndarray | None = None) -> StateIntervals:
    """The final gap-free state timeline of every thread (or of the global threads ``threads``).

    CPU threads: Running between their first and last event (a process's first CPU thread: its whole
    lifetime, ``Task.life``), Not created outside,
    Synchronization / MPI states inside those calls.  GPU streams: Idle, Running
    during kernels, Memory transfer during copies and memsets.
    """
    n_threads = len(model.threads)
    threads = np.arange(n_threads, dtype=np.int64) if threads is None else np.asarray(threads, np.int64)
    first, last = event_spans(out, model, threads)
    return paint_spans(out.states, model, threads, first, last, t_end)


def event_spans(out: Translation, model: Model, threads: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First and last event time of each of the global threads ``threads`` (int64 max and -1 where a
    thread has none): arrays of those threads only (a report's chunk paints its own threads, and nothing
    here may cost the run's thread count per report)."""
    local = np.full(len(model.threads), -1, np.int64)
    local[threads] = np.arange(len(threads))
    first = np.full(len(threads), np.iinfo(np.int64).max, np.int64)
    last = np.full(len(threads), -1, np.int64)
    for b in out.events:
        if len(b):
            # a batch's rows come in runs of one thread (most batches: one run): each run's first and
            # last time, then those per thread (``ufunc.at`` over the runs, not over every row)
            at = local[b.thread]
            head = np.flatnonzero(np.concatenate(([True], at[1:] != at[:-1])))
            at, lo, hi = at[head], np.minimum.reduceat(b.time, head), np.maximum.reduceat(b.time, head)
            mine = at >= 0
            np.minimum.at(first, at[mine], lo[mine])
            np.maximum.at(last, at[mine], hi[mine])
    return first, last


def paint_spans(
    states: list[StateIntervals], model: Model, threads: np.ndarray, first: np.ndarray, last: np.ndarray, t_end: int
) -> StateIntervals:
    """``paint`` from the threads' first and last event times (``event_spans``) and the prioritised
    intervals ``states``: segments covering [0, t_end) on every thread of ``threads``."""
    n_threads = len(model.threads)
    local = np.full(n_threads, -1, np.int64)
    local[threads] = np.arange(len(threads))
    first, last = first.copy(), last.copy()
    is_cpu = model.is_cpu[threads]
    tasks = range(len(model.tasks)) if len(threads) == n_threads else np.unique(model.task_of[threads] - 1).tolist()
    for ti in tasks:
        task = model.tasks[ti]
        # a process is alive (Running outside its calls) from its first to its last activity in its
        # report (model.Task.life), translated or not: its first CPU row shows that whole lifetime
        if task.life is not None and task.threads and model.is_cpu[task.threads[0]]:
            g = local[task.threads[0]]
            if g >= 0:
                first[g], last[g] = min(first[g], task.life[0]), max(last[g], task.life[1])
    span = np.flatnonzero(is_cpu & (last >= 0))
    parts = [
        StateIntervals(
            span,
            first[span],
            last[span],
            np.full(len(span), R.RUNNING, np.int64),
            np.full(len(span), R.STATE_PRIORITY[R.RUNNING], np.int64),
        ),
        *(StateIntervals(local[s.thread], s.start, s.end, s.state, s.prio) for s in states),
    ]
    cat = lambda f: np.concatenate([getattr(p, f) for p in parts]).astype(np.int64)  # noqa: E731
    default = np.where(is_cpu, R.NOT_CREATED, R.IDLE).astype(np.int64)
    thread = cat("thread")
    mine = thread >= 0
    row, begin, end, state = paint_states(
        thread[mine], cat("start")[mine], cat("end")[mine], cat("state")[mine], cat("prio")[mine], default, t_end
    )
    return StateIntervals(threads[row], begin, end, state, np.zeros(len(row), np.int64))
