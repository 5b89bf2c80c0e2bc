"""Normalised tables -> Paraver record batches.  The table below is the whole dispatch:
one translator per normalised table kind, plus the cross-table launch links."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from nsys2prv.core.intervals import paint_states
from nsys2prv.model.resources import Model
from nsys2prv.core import registry as R
from nsys2prv.translate import cuda, gpu_links, gpu_metrics, graphs, host, openacc
from nsys2prv.translate.context import Context
from nsys2prv.translate.records import StateIntervals, Translation


@dataclass(frozen=True)
class Translator:
    kind: str                                                   # normalised table it reads
    fn: Callable[[pd.DataFrame, Context, Translation], int]     # returns rows translated
    count: str = ""                                             # summary category (default: kind)


TRANSLATORS: tuple[Translator, ...] = (
    Translator("cuda_api", cuda.cuda_api),
    Translator("kernels", cuda.kernels),
    Translator("kernels", cuda.nccl_kernels, "nccl_kernels"),
    Translator("memcpy", cuda.memcpy),
    Translator("memset", cuda.memset),
    Translator("nvtx", host.nvtx),
    Translator("nccl_ranges", host.nccl_ranges),
    Translator("mpi", host.mpi),
    Translator("osrt", host.osrt),
    Translator("gpu_metrics", gpu_metrics.gpu_metrics),
    Translator("graph_exec", graphs.graph_exec),
    Translator("graph_api", graphs.graph_api),
    Translator("openacc", openacc.openacc),
)
OPTIONAL_COUNTS = ("launch_links", "nccl_kernels", "nccl_payloads", "nvtx_on_gpu")
# Cross-table links: host call -> GPU activity (name, function)
LINKERS = (("launch_links", cuda.launch_links), ("nccl_payloads", gpu_links.nccl_payloads),
           ("nvtx_on_gpu", gpu_links.nvtx_on_gpu))


def translate_report(ctx: Context, out: Translation) -> None:
    def run(kind: str, fn) -> None:
        existed = kind in out.counts
        n_events, n_comms = len(out.events), len(out.comms)
        rows = fn()
        records = sum(len(b) for b in out.events[n_events:]) + sum(len(c) for c in out.comms[n_comms:])
        count = out.count(kind)
        count.translated_rows += rows
        count.records += records
        if not existed and kind in OPTIONAL_COUNTS and not (rows or records or count.source_rows or count.dropped):
            del out.counts[kind]   # a link or split with nothing to do: not a summary line

    for tr in TRANSLATORS:
        df = ctx.tables.get(tr.kind)
        if df is not None:                  # an empty table: its summary line, no translator run
            run(tr.count or tr.kind, (lambda: tr.fn(df, ctx, out)) if len(df) else (lambda: 0))
    for kind, fn in LINKERS:
        run(kind, lambda: fn(ctx, out))


def trace_end(out: Translation) -> int:
    ends = [int(b.time.max()) for b in out.events if len(b)]
    ends += [int(s.end.max()) for s in out.states if len(s.end)]
    ends += [int(max(c.log_recv.max(), c.phys_recv.max(), c.phys_send.max())) for c in out.comms if len(c)]
    return max(ends, default=0)


def paint(out: Translation, model: Model, t_end: int, lanes: np.ndarray | None = None) -> StateIntervals:
    """The final gap-free state timeline of every thread (or of the global threads ``lanes``).

    CPU threads: Running between their first and last event, Not created outside,
    Synchronization / MPI states inside those calls.  GPU streams: Idle, Running
    during kernels, Memory transfer during copies and memsets.
    """
    n_threads = len(model.threads)
    lanes = np.arange(n_threads, dtype=np.int64) if lanes is None else np.asarray(lanes, np.int64)
    local = np.full(n_threads, -1, np.int64)
    local[lanes] = np.arange(len(lanes))
    is_cpu = np.array([t.kind == "cpu" for t in model.threads], bool)[lanes]
    first = np.full(n_threads, np.iinfo(np.int64).max, np.int64)
    last = np.full(n_threads, -1, np.int64)
    for b in out.events:
        if len(b):
            np.minimum.at(first, b.thread, b.time)
            np.maximum.at(last, b.thread, b.time)
    first, last = first[lanes], last[lanes]
    span = np.flatnonzero(is_cpu & (last >= 0))
    parts = [StateIntervals(span, first[span], last[span], np.full(len(span), R.RUNNING, np.int64),
                            np.full(len(span), R.STATE_PRIORITY[R.RUNNING], np.int64)),
             *(StateIntervals(local[s.thread], s.start, s.end, s.state, s.prio) for s in out.states)]
    cat = lambda f: np.concatenate([getattr(p, f) for p in parts]).astype(np.int64)  # noqa: E731
    default = np.where(is_cpu, R.NOT_CREATED, R.IDLE).astype(np.int64)
    thread = cat("thread")
    mine = thread >= 0
    lane, begin, end, state = paint_states(thread[mine], cat("start")[mine], cat("end")[mine], cat("state")[mine],
                                           cat("prio")[mine], default, t_end)
    return StateIntervals(lanes[lane], begin, end, state, np.zeros(len(lane), np.int64))
