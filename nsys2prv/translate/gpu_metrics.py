"""GPU metric samples -> punctual events on each GPU's metric row (one type per metric name)."""

from __future__ import annotations

import numpy as np

from nsys2prv.core import columns as C
from nsys2prv.core.columns import Frame
from nsys2prv.translate.context import Context
from nsys2prv.translate.records import PUNCTUAL_ORDER, EventBatch, Translation


def gpu_metrics(df: Frame[C.GpuMetrics], ctx: Context, out: Translation) -> int:
    count = out.count("gpu_metrics")
    threads = ctx.model.metric_threads(ctx.report, df["gpu"].to_numpy(np.int64))
    keep = threads >= 0
    count.drop("GPU without a metric row (the report has no process)", int((~keep).sum()))
    df, threads = df[keep], threads[keep]
    types = df["metric"].map(ctx.metric_types).to_numpy(np.int64)
    out.events.append(
        EventBatch(
            ctx.times(df["start"]),
            threads,
            np.full(len(df), PUNCTUAL_ORDER, np.int64),
            [(types, df["value"].to_numpy(np.int64))],
        )
    )
    return len(df)
