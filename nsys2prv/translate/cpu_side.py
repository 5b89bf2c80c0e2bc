"""The CPU side as it ran: thread scheduling (states and the CPU a thread runs on) and CPU samples
with their call stacks."""

from __future__ import annotations

import numpy as np

from nsys2prv.core import columns as C
from nsys2prv.core import registry as R
from nsys2prv.core.columns import KERNEL_COLUMN, LEVEL_COLUMNS, Frame, optional
from nsys2prv.core.names import Names
from nsys2prv.translate.context import Context
from nsys2prv.translate.records import PUNCTUAL_ORDER, EventBatch, StateIntervals, Translation, end_order, start_order


def sched(df: Frame[C.Sched], ctx: Context, out: Translation) -> int:
    """Every scheduling event as the thread's CPU (``registry.EXECUTING_CPU``: CPU + 1 at a sched-in,
    0 at a sched-out) and the off-CPU time as ``registry.OFF_CPU_STATE`` under the call states."""
    count = out.count("sched")
    df, threads = ctx.on_cpu(df, count)
    time = ctx.times(df["start"])
    sched_in = df["sched_in"].to_numpy(bool)
    value = np.where(sched_in, df["cpu"].to_numpy(np.int64) + 1, 0)
    order = np.where(sched_in, start_order(0), end_order(0))
    out.events.append(EventBatch(time, threads, order, [(R.EXECUTING_CPU.id, value)]))
    off = ~sched_in & (df["end"].to_numpy(np.int64) > df["start"].to_numpy(np.int64))  # (reader: off-CPU rows)
    n = int(off.sum())
    out.states.append(
        StateIntervals(
            threads[off],
            time[off],
            ctx.times(df["end"])[off],
            np.full(n, R.OFF_CPU_STATE, np.int64),
            np.full(n, R.OFF_CPU_PRIORITY, np.int64),
        )
    )
    return len(df)


def samples(df: Frame[C.Samples], ctx: Context, out: Translation) -> int:
    """Each sample as punctual events at its time: the sampled function and its callers (one type per
    level, ``registry.SAMPLED``) and the innermost kernel-mode frame (``registry.SAMPLED_KERNEL``)."""
    count = out.count("samples")
    df, threads = ctx.on_cpu(df, count)
    time = ctx.times(df["start"])
    levels = [(R.SAMPLED[k].id, c) for k, c in enumerate(LEVEL_COLUMNS)] + [(R.SAMPLED_KERNEL.id, KERNEL_COLUMN)]
    shared = None  # the levels' dictionary (``Names.of``: one for every level with the same)
    for etype, col in levels:
        if (level := optional(df, col)) is None:
            continue
        sel = level.notna().to_numpy()
        if sel.any():
            shared = Names.of(level, share=shared)
            names = shared[sel]
            order = np.full(int(sel.sum()), PUNCTUAL_ORDER, np.int64)
            out.events.append(EventBatch(time[sel], threads[sel], order, [(etype, names)]))
    return len(df)
