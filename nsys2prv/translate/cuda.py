"""CUDA: API calls on CPU threads, kernels and memory operations on stream threads,
and launch -> activity communications."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsys2prv.nsys.ids import process_key
from nsys2prv.metrics.classify import is_nccl
from nsys2prv.names import Names, contains
from nsys2prv.paraver import registry as R
from nsys2prv.translate.context import Context
from nsys2prv.translate.records import CommBatch, StateIntervals, Translation, interval_events

SYNC_CALL = r"Synchronize"   # cudaDeviceSynchronize, cudaStreamSynchronize, cuCtxSynchronize, ...


def _states(threads, start, end, state: int) -> StateIntervals:
    n = len(threads)
    return StateIntervals(threads, start, end, np.full(n, state, np.int64),
                          np.full(n, R.STATE_PRIORITY[state], np.int64))


def cuda_api(df: pd.DataFrame, ctx: Context, out: Translation) -> int:
    count = out.count("cuda_api")
    df, threads = ctx.on_cpu(df, count)
    start, end = ctx.times(df["start"]), ctx.times(df["end"])
    corr = np.maximum(df["corr"].to_numpy(np.int64), 0)
    out.events += interval_events(start, end, threads, [(R.CUDA_API.id, Names.of(df["name"])),
                                                        (R.CORRELATION.id, corr)])
    sync = contains(df["name"], SYNC_CALL)
    out.states.append(_states(threads[sync], start[sync], end[sync], R.SYNCHRONIZATION))
    return len(df)


def kernels(df: pd.DataFrame, ctx: Context, out: Translation) -> int:
    """Compute kernels: type 63000006, state Running.  NCCL kernels go to ``nccl_kernels``."""
    nccl = is_nccl(df["name"])
    out.count("kernels").source_rows -= int(nccl.sum())      # counted in nccl_kernels instead
    return _kernels(df[~nccl], ctx, out, "kernels", R.CUDA_KERNEL.id, R.RUNNING)


def nccl_kernels(df: pd.DataFrame, ctx: Context, out: Translation) -> int:
    """NCCL kernels: type 63000007 and state Group Communication (registry.NCCL_KERNEL_STATE)."""
    nccl = is_nccl(df["name"])
    out.count("nccl_kernels").source_rows += int(nccl.sum())
    return _kernels(df[nccl], ctx, out, "nccl_kernels", R.NCCL_KERNEL.id, R.NCCL_KERNEL_STATE)


def _kernels(df: pd.DataFrame, ctx: Context, out: Translation, kind: str, name_type: int, state: int) -> int:
    count = out.count(kind)
    df, threads = ctx.on_gpu(df, count)
    start, end = ctx.times(df["start"]), ctx.times(df["end"])
    pairs = [(name_type, Names.of(df["name"])),
             (R.CUDA_KERNEL_FULL.id, Names.of(df["demangled"])),
             (R.CORRELATION.id, np.maximum(df["corr"].to_numpy(np.int64), 0))]
    pairs += [(t.id, np.maximum(df[col].to_numpy(np.int64), 0)) for col, t in R.KERNEL_PARAMS.items()]
    graph = df["graph_node"].to_numpy(np.int64) > 0   # the graph node id only where there is one
    for sel, extra in ((~graph, []), (graph, [(R.GRAPH_NODE.id, df["graph_node"].to_numpy(np.int64))])):
        if sel.any():
            out.events += interval_events(start[sel], end[sel], threads[sel], [(t, v[sel]) for t, v in pairs + extra])
    out.states.append(_states(threads, start, end, state))
    return len(df)


def _memop(df: pd.DataFrame, ctx: Context, out: Translation, kind: str, values: np.ndarray) -> int:
    count = out.count(kind)
    df, threads = ctx.on_gpu(df.assign(_v=values), count)
    start, end = ctx.times(df["start"]), ctx.times(df["end"])
    out.events += interval_events(start, end, threads, [
        (R.MEMOP.id, df["_v"].to_numpy(np.int64)), (R.MEMOP_SIZE.id, np.maximum(df["bytes"].to_numpy(np.int64), 0)),
        (R.CORRELATION.id, np.maximum(df["corr"].to_numpy(np.int64), 0))])
    out.states.append(_states(threads, start, end, R.MEMORY_TRANSFER))
    return len(df)


def memcpy(df: pd.DataFrame, ctx: Context, out: Translation) -> int:
    kind = df["copy_kind"].to_numpy(np.int64)
    values = np.where(np.isin(kind, list(R.MEMCPY_KIND_LABELS)), kind, R.MEMCPY_UNKNOWN)
    return _memop(df, ctx, out, "memcpy", values)


def memset(df: pd.DataFrame, ctx: Context, out: Translation) -> int:
    return _memop(df, ctx, out, "memset", np.full(len(df), R.MEMSET_VALUE, np.int64))


LINKS = (("kernels", R.TAG_KERNEL_LAUNCH, False), ("memcpy", R.TAG_MEMORY_OP, True),
         ("memset", R.TAG_MEMORY_OP, True), ("graph_exec", R.TAG_KERNEL_LAUNCH, False))


def launch_links(ctx: Context, out: Translation) -> int:
    """One communication per API call -> the GPU activity it started (same process, correlationId)."""
    api = ctx.tables.get("cuda_api")
    if api is None or api.empty or "cuda_api" not in ctx.categories:
        return 0
    count = out.count("launch_links")
    calls = pd.DataFrame({"key": process_key(api["tid"].to_numpy(np.int64)), "corr": api["corr"].to_numpy(np.int64),
                          "cstart": api["start"].to_numpy(np.int64), "tid": api["tid"].to_numpy(np.int64)})
    calls = calls[calls["corr"] >= 0]
    dup = calls.duplicated(["key", "corr"]).to_numpy()
    count.note("API calls sharing a correlation id (the first is linked)", int(dup.sum()))
    calls = calls[~dup]
    n = 0
    for kind, tag, sized in LINKS:
        act = ctx.tables.get(kind)
        if act is None or act.empty:
            continue
        if "bytes" not in act:
            act = act.assign(bytes=0)
        m = act.merge(calls, left_on=["gpid", "corr"], right_on=["key", "corr"], how="left")
        count.source_rows += len(m)
        found = m["cstart"].notna().to_numpy()
        count.drop("no API call with its correlation id (call not traced or not requested)", int((~found).sum()))
        m = m[found]
        m["tid"] = m["tid"].astype(np.int64)
        m["cstart"] = m["cstart"].astype(np.int64)
        send = ctx.model.cpu_threads(ctx.report, m["tid"].to_numpy(np.int64))
        recv = ctx.model.gpu_threads(ctx.report, m["gpid"].to_numpy(np.int64), m["device"].to_numpy(np.int64),
                                     m["stream"].to_numpy(np.int64))
        ok = (send >= 0) & (recv >= 0)
        count.drop("call or activity thread not in the model", int((~ok).sum()))
        m, send, recv = m[ok], send[ok], recv[ok]
        ts, tr = ctx.times(m["cstart"]), ctx.times(m["start"])
        size = np.maximum(m["bytes"].to_numpy(np.int64), 0) if sized else np.zeros(len(m), np.int64)
        out.comms.append(CommBatch(send, recv, ts, ts, tr, tr, size, np.full(len(m), tag, np.int64)))
        n += len(m)
    return n
