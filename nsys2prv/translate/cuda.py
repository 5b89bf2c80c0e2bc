"""CUDA: API calls on CPU threads, kernels and memory operations on stream threads,
and launch -> activity communications."""

from __future__ import annotations

from typing import Callable, TypeVar, cast

import numpy as np

from nsys2prv.core import columns as C
from nsys2prv.core import registry as R
from nsys2prv.core.columns import Frame, optional
from nsys2prv.core.names import Names, contains
from nsys2prv.translate.context import Context
from nsys2prv.translate.launches import SHARED_NOTE, of_tables
from nsys2prv.translate.records import (
    CommBatch,
    Pair,
    StateIntervals,
    Translation,
    caller_levels,
    interval_events,
    sparse_interval_events,
)

M = TypeVar("M", bound="Frame[C.Memset]")  # a memory operation's rows
SYNC_CALL = r"Synchronize"  # cudaDeviceSynchronize, cudaStreamSynchronize, cuCtxSynchronize, ...


def _states(threads, start, end, state: int) -> StateIntervals:
    n = len(threads)
    return StateIntervals(
        threads, start, end, np.full(n, state, np.int64), np.full(n, R.STATE_PRIORITY[state], np.int64)
    )


def cuda_api(df: Frame[C.CudaApi], ctx: Context, out: Translation) -> int:
    count = out.count("cuda_api")
    df, threads = ctx.on_cpu(df, count)
    start, end = ctx.times(df["start"]), ctx.times(df["end"])
    corr = np.maximum(df["corr"].to_numpy(np.int64), 0)
    pairs: list[Pair] = [(R.CUDA_API.id, Names.of(df["name"])), (R.CORRELATION.id, corr)]
    out.events += sparse_interval_events(start, end, threads, pairs, caller_levels(df))
    sync = contains(df["name"], SYNC_CALL)
    out.states.append(_states(threads[sync], start[sync], end[sync], R.SYNCHRONIZATION))
    return len(df)


def kernels(df: Frame[C.Kernels], ctx: Context, out: Translation) -> int:
    """Compute kernels: type 63000006, state Running.  NCCL kernels (column ``nccl``, set by the
    reader) go to ``nccl_kernels``."""
    nccl = df["nccl"].to_numpy(bool)
    out.count("kernels").source_rows -= int(nccl.sum())  # counted in nccl_kernels instead
    return _kernels(df[~nccl], ctx, out, "kernels", R.CUDA_KERNEL.id, R.RUNNING)


def nccl_kernels(df: Frame[C.Kernels], ctx: Context, out: Translation) -> int:
    """NCCL kernels: type 63000007 and state Group Communication (registry.NCCL_KERNEL_STATE)."""
    nccl = df["nccl"].to_numpy(bool)
    out.count("nccl_kernels").source_rows += int(nccl.sum())
    return _kernels(df[nccl], ctx, out, "nccl_kernels", R.NCCL_KERNEL.id, R.NCCL_KERNEL_STATE)


def _kernels(df: Frame[C.Kernels], ctx: Context, out: Translation, kind: str, name_type: int, state: int) -> int:
    count = out.count(kind)
    if df.empty:  # e.g. no NCCL kernel among the kernels
        return 0
    df, threads = ctx.on_gpu(df, count, activity=True)
    start, end = ctx.times(df["start"]), ctx.times(df["end"])
    pairs = [
        (name_type, Names.of(df["name"])),
        (R.CUDA_KERNEL_FULL.id, Names.of(df["demangled"])),
        (R.CORRELATION.id, np.maximum(df["corr"].to_numpy(np.int64), 0)),
    ]
    pairs += [
        (t.id, np.maximum(v.to_numpy(np.int64), 0))
        for col, t in R.KERNEL_PARAMS.items()
        if (v := optional(df, col)) is not None
    ]  # (a parameter the export lacks: not written)
    graph = df["graph_node"].to_numpy(np.int64) > 0  # the graph node id only where there is one
    for sel, extra in ((~graph, []), (graph, [(R.GRAPH_NODE.id, df["graph_node"].to_numpy(np.int64))])):
        if sel.any():
            out.events += interval_events(start[sel], end[sel], threads[sel], [(t, v[sel]) for t, v in pairs + extra])
    out.states.append(_states(threads, start, end, state))
    return len(df)


def _memop(df: M, ctx: Context, out: Translation, kind: str, values: Callable[[M], np.ndarray]) -> int:
    count = out.count(kind)
    df, threads = ctx.on_gpu(df, count, activity=True)
    start, end = ctx.times(df["start"]), ctx.times(df["end"])
    out.events += interval_events(
        start,
        end,
        threads,
        [
            (R.MEMOP.id, values(df)),
            (R.MEMOP_SIZE.id, np.maximum(df["bytes"].to_numpy(np.int64), 0)),
            (R.CORRELATION.id, np.maximum(df["corr"].to_numpy(np.int64), 0)),
        ],
    )
    out.states.append(_states(threads, start, end, R.MEMORY_TRANSFER))
    return len(df)


_VALUE_OF_KIND = np.full(max(R.MEMCPY_VALUES) + 1, R.MEMCPY_UNKNOWN, np.int64)  # CUPTI copyKind -> value
_VALUE_OF_KIND[list(R.MEMCPY_VALUES)] = [v for v, _ in R.MEMCPY_VALUES.values()]


def memcpy_values(copy_kind) -> np.ndarray:
    """The trace's memory-operation values (type 63000001) of CUPTI copy kinds."""
    kind = np.asarray(copy_kind, np.int64)
    known = (kind >= 0) & (kind < len(_VALUE_OF_KIND))
    return np.where(known, _VALUE_OF_KIND[np.where(known, kind, 0)], R.MEMCPY_UNKNOWN)


def memcpy(df: Frame[C.Memcpy], ctx: Context, out: Translation) -> int:
    return _memop(df, ctx, out, "memcpy", lambda rows: memcpy_values(rows["copy_kind"].to_numpy(np.int64)))


def memset(df: Frame[C.Memset], ctx: Context, out: Translation) -> int:
    return _memop(df, ctx, out, "memset", lambda rows: np.full(len(rows), R.MEMSET_VALUE, np.int64))


UNIFIED_MEMORY_KINDS = (11, 12, 13)  # Unified HtoD / DtoH / DtoD: page migrations (correlation id 0)
MIGRATION = "unified memory migration: no API call"
LINKS = (
    ("kernels", R.TAG_KERNEL_LAUNCH, False),
    ("memcpy", R.TAG_MEMORY_OP, True),
    ("memset", R.TAG_MEMORY_OP, True),
    ("graph_exec", R.TAG_KERNEL_LAUNCH, False),
)


def launch_links(ctx: Context, out: Translation) -> int:
    """One communication per API call -> the GPU activity it started (same process, correlationId)."""
    api: Frame[C.CudaApi] | None = ctx.tables.get("cuda_api")  # (declared columns: mypy checks them)
    if api is None or api.empty or "cuda_api" not in ctx.categories:
        return 0
    count = out.count("launch_links")
    launches = ctx.launches if ctx.launches is not None else of_tables(api, ctx.tables)
    assert launches is not None
    tid, cstart = api["tid"].to_numpy(np.int64), api["start"].to_numpy(np.int64)
    count.note(SHARED_NOTE, launches.shared)
    acts: list[tuple[str, int, bool, Frame[C.GpuActivity]]] = [
        (kind, tag, sized, a) for kind, tag, sized in LINKS if (a := ctx.tables.get(kind)) is not None and not a.empty
    ]
    n = 0
    for kind, tag, sized, act in acts:
        call = launches.of(kind, len(act))
        count.source_rows += len(act)
        found = call >= 0
        migration = (
            ~found & np.isin(cast("Frame[C.Memcpy]", act)["copy_kind"].to_numpy(np.int64), UNIFIED_MEMORY_KINDS)
            if kind == "memcpy"
            else np.zeros(len(found), bool)
        )
        count.drop(MIGRATION, int(migration.sum()))
        count.drop(
            "no API call with its correlation id (call not traced or not requested)", int((~found & ~migration).sum())
        )
        rows, call = np.flatnonzero(found), call[found]
        send = ctx.model.cpu_threads(ctx.report, tid[call])
        recv = ctx.model.gpu_threads(
            ctx.report,
            act["gpid"].to_numpy(np.int64)[rows],
            act["device"].to_numpy(np.int64)[rows],
            act["stream"].to_numpy(np.int64)[rows],
            None if (lane := optional(act, "lane")) is None else lane.to_numpy(np.int64)[rows],
        )
        ok = (send >= 0) & (recv >= 0)
        count.drop("call or activity thread not in the model", int((~ok).sum()))
        rows, call, send, recv = rows[ok], call[ok], send[ok], recv[ok]
        ts = ctx.clock.apply(cstart[call])
        tr = ctx.clock.apply(act["start"].to_numpy(np.int64)[rows])
        size = (
            np.maximum(cast("Frame[C.Memset]", act)["bytes"].to_numpy(np.int64)[rows], 0)
            if sized
            else np.zeros(len(rows), np.int64)
        )
        out.comms.append(CommBatch(send, recv, ts, ts, tr, tr, size, np.full(len(rows), tag, np.int64)))
        n += len(rows)
    return n
