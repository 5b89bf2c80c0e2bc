"""Host ranges -> GPU activity, through the launch call inside the range (same thread) and its
correlation id: NCCL payloads on NCCL kernels, and NVTX push/pop ranges projected onto streams."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsys2prv.core import registry as R
from nsys2prv.core.intervals import innermost_enclosing
from nsys2prv.core.names import Names, contains
from nsys2prv.nsys.ids import process_key
from nsys2prv.translate.context import Context
from nsys2prv.translate.records import (
    Translation,
    interval_events,
    sparse_interval_events,
)

GPU_ACTIVITY = ("kernels", "memcpy", "memset", "graph_exec")


def enclosing(ranges: pd.DataFrame, calls: pd.DataFrame) -> np.ndarray:
    """Index (row position in ``ranges``) of the innermost range enclosing each call's start on the
    call's thread; -1 where none."""
    return innermost_enclosing(
        ranges["tid"].to_numpy(np.int64),
        ranges["start"].to_numpy(np.int64),
        ranges["end"].to_numpy(np.int64),
        calls["tid"].to_numpy(np.int64),
        calls["start"].to_numpy(np.int64),
    )


def _activity_of(calls: pd.DataFrame, act: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``act`` joined to the call that launched them (same process, correlation id);
    keeps every column of both (call columns prefixed ``call_``)."""
    c = calls.add_prefix("call_")
    c["_key"] = process_key(calls["tid"].to_numpy(np.int64))
    return act.merge(c, left_on=["gpid", "corr"], right_on=["_key", "call_corr"], how="inner")


def nccl_payloads(ctx: Context, out: Translation) -> int:
    """Each NCCL kernel launched inside an NCCL range gets the range's operation and payload fields."""
    ranges, calls, kern = ctx.tables.get("nccl"), ctx.calls, ctx.tables.get("kernels")
    if ranges is None or calls is None or kern is None or "nccl" not in ctx.categories:
        return 0
    count = out.count("nccl_payloads")
    ranges = ranges[ranges["kind"] != "mark"].reset_index(drop=True)
    launch = calls[contains(calls["name"], "Launch") & (calls["corr"] >= 0).to_numpy()]
    idx = enclosing(ranges, launch)
    inside = launch[idx >= 0].assign(_range=idx[idx >= 0])
    count.source_rows += len(inside)
    m = _activity_of(inside, kern)
    count.drop("launch call inside an NCCL range: no kernel with its correlation id", len(inside) - len(m))
    m, threads = ctx.on_gpu(m, count)
    rng = ranges.iloc[m["call__range"].to_numpy()].reset_index(drop=True)
    start, end = ctx.times(m["start"]), ctx.times(m["end"])
    optional = []
    for field, etype in R.NCCL_FIELDS.items():
        col = rng[field]
        present = col.notna().to_numpy()
        if field == "comm":
            values = col.fillna("").astype(str).to_numpy(object)
        else:
            values = col.fillna(0).to_numpy(float).astype(np.int64) + (1 if field in R.NCCL_PLUS_ONE else 0)
        optional.append((etype.id, values, present))
    out.events += sparse_interval_events(start, end, threads, [(R.NCCL_OPERATION.id, Names.of(rng["name"]))], optional)
    return len(m)


def nvtx_on_gpu(ctx: Context, out: Translation) -> int:
    """Every GPU activity carries, per NVTX domain, the innermost push/pop range that enclosed its
    launch call on the launching thread (type 9600 + 100·d + 5)."""
    nvtx, calls = ctx.tables.get("nvtx"), ctx.calls
    if nvtx is None or calls is None or "nvtx_pushpop" not in ctx.categories:
        return 0
    count = out.count("nvtx_on_gpu")
    pp = nvtx[nvtx["kind"] == "pushpop"]
    calls = calls[(calls["corr"] >= 0).to_numpy()]
    n = 0
    for domain, ranges in pp.groupby("domain", sort=True):
        ranges = ranges.reset_index(drop=True)
        idx = enclosing(ranges, calls)
        inside = calls[idx >= 0].assign(_name=ranges["name"].to_numpy(object)[idx[idx >= 0]])
        type_id = R.NVTX_BASE + R.NVTX_DOMAIN_STRIDE * ctx.nvtx_domains[domain] + R.NVTX_OFFSETS["gpu"]
        for kind in GPU_ACTIVITY:
            act = ctx.tables.get(kind)
            if act is None or act.empty or inside.empty:
                continue
            m = _activity_of(inside, act)
            count.source_rows += len(m)
            m, threads = ctx.on_gpu(m, count)
            out.events += interval_events(
                ctx.times(m["start"]), ctx.times(m["end"]), threads, [(type_id, Names.of(m["call__name"]))]
            )
            n += len(m)
    return n
