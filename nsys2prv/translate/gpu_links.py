"""Host ranges -> GPU activity, through the launch call inside the range (same thread) and its
correlation id: NCCL payloads on NCCL kernels, and NVTX push/pop ranges projected onto streams."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsys2prv.core import registry as R
from nsys2prv.core.intervals import innermost_enclosing
from nsys2prv.core.names import Names, contains
from nsys2prv.translate.context import Context
from nsys2prv.translate.launches import ACTIVITIES, of_tables
from nsys2prv.translate.records import (
    Translation,
    interval_events,
    sparse_interval_events,
)


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


def _launch_ranges(ctx: Context, kind: str, act: pd.DataFrame, enclosing_range: np.ndarray) -> np.ndarray:
    """Per activity of ``act``, the range enclosing its launch call (``enclosing_range``: per row of
    ``ctx.calls``, -1 none); -1 where it has no launch call or the call no range."""
    launches = ctx.launches if ctx.launches is not None else of_tables(ctx.calls, ctx.tables)
    assert launches is not None
    call = launches.of(kind, len(act))
    return np.where(call >= 0, enclosing_range[np.maximum(call, 0)] if len(enclosing_range) else -1, -1)


def _enclosing_calls(ranges: pd.DataFrame, calls: pd.DataFrame, sel: np.ndarray) -> np.ndarray:
    """Per row of ``calls``, the innermost range of ``ranges`` enclosing its start if ``sel`` (-1: none)."""
    out = np.full(len(calls), -1, np.int64)
    out[sel] = enclosing(ranges, calls[sel])
    return out


def nccl_payloads(ctx: Context, out: Translation) -> int:
    """Each NCCL kernel launched inside an NCCL range gets the range's operation and payload fields."""
    ranges, calls, kern = ctx.tables.get("nccl"), ctx.calls, ctx.tables.get("kernels")
    if ranges is None or calls is None or kern is None or "nccl" not in ctx.categories:
        return 0
    count = out.count("nccl_payloads")
    ranges = ranges[ranges["kind"] != "mark"].reset_index(drop=True)
    launch = contains(calls["name"], "Launch") & (calls["corr"] >= 0).to_numpy()
    idx = _enclosing_calls(ranges, calls, launch)
    inside = int((idx >= 0).sum())
    count.source_rows += inside
    r = _launch_ranges(ctx, "kernels", kern, idx)
    m = kern[r >= 0].assign(_range=r[r >= 0])
    count.drop("launch call inside an NCCL range: no kernel with its correlation id", inside - len(m))
    m, threads = ctx.on_gpu(m, count)
    rng = ranges.iloc[m["_range"].to_numpy()].reset_index(drop=True)
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
    linked = (calls["corr"] >= 0).to_numpy()
    n = 0
    for domain, ranges in pp.groupby("domain", sort=True):
        ranges = ranges.reset_index(drop=True)
        idx = _enclosing_calls(ranges, calls, linked)
        type_id = R.NVTX_BASE + R.NVTX_DOMAIN_STRIDE * ctx.nvtx_domains[domain] + R.NVTX_OFFSETS["gpu"]
        for kind in ACTIVITIES:
            act = ctx.tables.get(kind)
            if act is None or act.empty or not (idx >= 0).any():
                continue
            r = _launch_ranges(ctx, kind, act, idx)
            m = act[r >= 0].assign(_name=ranges["name"].to_numpy(object)[r[r >= 0]])
            count.source_rows += len(m)
            m, threads = ctx.on_gpu(m, count)
            out.events += interval_events(
                ctx.times(m["start"]), ctx.times(m["end"]), threads, [(type_id, Names.of(m["_name"]))]
            )
            n += len(m)
    return n
