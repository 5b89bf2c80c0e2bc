"""CUDA: API calls on CPU threads, kernels and memory operations on stream threads,
and launch -> activity communications."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsys2prv.core import registry as R
from nsys2prv.core.names import Names, contains
from nsys2prv.nsys.ids import process_key
from nsys2prv.translate.context import Context
from nsys2prv.translate.records import (
    CommBatch,
    Pair,
    StateIntervals,
    Translation,
    caller_levels,
    interval_events,
    sparse_interval_events,
)

SYNC_CALL = r"Synchronize"  # cudaDeviceSynchronize, cudaStreamSynchronize, cuCtxSynchronize, ...


def _states(threads, start, end, state: int) -> StateIntervals:
    n = len(threads)
    return StateIntervals(
        threads, start, end, np.full(n, state, np.int64), np.full(n, R.STATE_PRIORITY[state], np.int64)
    )


def cuda_api(df: pd.DataFrame, ctx: Context, out: Translation) -> int:
    count = out.count("cuda_api")
    df, threads = ctx.on_cpu(df, count)
    start, end = ctx.times(df["start"]), ctx.times(df["end"])
    corr = np.maximum(df["corr"].to_numpy(np.int64), 0)
    pairs: list[Pair] = [(R.CUDA_API.id, Names.of(df["name"])), (R.CORRELATION.id, corr)]
    out.events += sparse_interval_events(start, end, threads, pairs, caller_levels(df))
    sync = contains(df["name"], SYNC_CALL)
    out.states.append(_states(threads[sync], start[sync], end[sync], R.SYNCHRONIZATION))
    return len(df)


def kernels(df: pd.DataFrame, ctx: Context, out: Translation) -> int:
    """Compute kernels: type 63000006, state Running.  NCCL kernels (column ``nccl``, set by the
    reader) go to ``nccl_kernels``."""
    nccl = df["nccl"].to_numpy(bool)
    out.count("kernels").source_rows -= int(nccl.sum())  # counted in nccl_kernels instead
    return _kernels(df[~nccl], ctx, out, "kernels", R.CUDA_KERNEL.id, R.RUNNING)


def nccl_kernels(df: pd.DataFrame, ctx: Context, out: Translation) -> int:
    """NCCL kernels: type 63000007 and state Group Communication (registry.NCCL_KERNEL_STATE)."""
    nccl = df["nccl"].to_numpy(bool)
    out.count("nccl_kernels").source_rows += int(nccl.sum())
    return _kernels(df[nccl], ctx, out, "nccl_kernels", R.NCCL_KERNEL.id, R.NCCL_KERNEL_STATE)


def _kernels(df: pd.DataFrame, ctx: Context, out: Translation, kind: str, name_type: int, state: int) -> int:
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
        (t.id, np.maximum(df[col].to_numpy(np.int64), 0)) for col, t in R.KERNEL_PARAMS.items() if col in df
    ]  # (a parameter the export lacks: not written)
    graph = df["graph_node"].to_numpy(np.int64) > 0  # the graph node id only where there is one
    for sel, extra in ((~graph, []), (graph, [(R.GRAPH_NODE.id, df["graph_node"].to_numpy(np.int64))])):
        if sel.any():
            out.events += interval_events(start[sel], end[sel], threads[sel], [(t, v[sel]) for t, v in pairs + extra])
    out.states.append(_states(threads, start, end, state))
    return len(df)


def _memop(df: pd.DataFrame, ctx: Context, out: Translation, kind: str, values: np.ndarray) -> int:
    count = out.count(kind)
    df, threads = ctx.on_gpu(df.assign(_v=values), count, activity=True)
    start, end = ctx.times(df["start"]), ctx.times(df["end"])
    out.events += interval_events(
        start,
        end,
        threads,
        [
            (R.MEMOP.id, df["_v"].to_numpy(np.int64)),
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


def memcpy(df: pd.DataFrame, ctx: Context, out: Translation) -> int:
    return _memop(df, ctx, out, "memcpy", memcpy_values(df["copy_kind"].to_numpy(np.int64)))


def memset(df: pd.DataFrame, ctx: Context, out: Translation) -> int:
    return _memop(df, ctx, out, "memset", np.full(len(df), R.MEMSET_VALUE, np.int64))


UNIFIED_MEMORY_KINDS = (11, 12, 13)  # Unified HtoD / DtoH / DtoD: page migrations (correlation id 0)
MIGRATION = "unified memory migration: no API call"
LINKS = (
    ("kernels", R.TAG_KERNEL_LAUNCH, False),
    ("memcpy", R.TAG_MEMORY_OP, True),
    ("memset", R.TAG_MEMORY_OP, True),
    ("graph_exec", R.TAG_KERNEL_LAUNCH, False),
)


def pair_codes(k1: np.ndarray, k2: np.ndarray) -> np.ndarray:
    """One int64 per (k1, k2) pair, equal exactly when both are equal."""
    c1, u1 = pd.factorize(k1)  # few distinct values (processes): hashed
    c1 = c1.astype(np.int64)
    lo = int(k2.min()) if len(k2) else 0
    span = (int(k2.max()) - lo + 1) if len(k2) else 1
    if len(u1) * span < (1 << 62):
        return c1 * span + (k2 - lo)
    return np.unique(np.stack([c1, k2], axis=1), axis=0, return_inverse=True)[1].ravel()


def first_match(left: np.ndarray, right: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """For each code of ``left``, the position of the first equal code in ``right`` (-1: none);
    ``order``: ``right``'s stable argsort, when known."""
    if order is None:
        order = np.argsort(right, kind="stable")
    srt = right[order]
    pos = np.minimum(np.searchsorted(srt, left), max(len(srt) - 1, 0))
    hit = (srt[pos] == left) if len(srt) else np.zeros(len(left), bool)
    return np.where(hit, order[pos] if len(srt) else -1, -1)


def launch_links(ctx: Context, out: Translation) -> int:
    """One communication per API call -> the GPU activity it started (same process, correlationId)."""
    api = ctx.tables.get("cuda_api")
    if api is None or api.empty or "cuda_api" not in ctx.categories:
        return 0
    count = out.count("launch_links")
    corr = api["corr"].to_numpy(np.int64)
    ok = corr >= 0
    tid, corr, cstart = api["tid"].to_numpy(np.int64)[ok], corr[ok], api["start"].to_numpy(np.int64)[ok]
    found_tables = [(kind, tag, sized, ctx.tables.get(kind)) for kind, tag, sized in LINKS]
    acts = [(kind, tag, sized, a) for kind, tag, sized, a in found_tables if a is not None and not a.empty]
    # one code space for the (process, correlation id) pairs of the calls and of every activity
    k1 = [process_key(tid)] + [a["gpid"].to_numpy(np.int64) for *_, a in acts]
    k2 = [corr] + [a["corr"].to_numpy(np.int64) for *_, a in acts]
    codes = pair_codes(np.concatenate(k1), np.concatenate(k2))
    cut = np.cumsum([len(k) for k in k1])
    call_codes = codes[: cut[0]]
    order = np.argsort(call_codes, kind="stable")
    srt = call_codes[order]
    count.note("API calls sharing a correlation id (the first is linked)", int((srt[1:] == srt[:-1]).sum()))
    n = 0
    for (kind, tag, sized, act), lo, hi in zip(acts, cut[:-1], cut[1:]):
        call = first_match(codes[lo:hi], call_codes, order)
        count.source_rows += len(act)
        found = call >= 0
        migration = (
            ~found & np.isin(act["copy_kind"].to_numpy(np.int64), UNIFIED_MEMORY_KINDS)
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
            act["lane"].to_numpy(np.int64)[rows] if "lane" in act else None,
        )
        ok = (send >= 0) & (recv >= 0)
        count.drop("call or activity thread not in the model", int((~ok).sum()))
        rows, call, send, recv = rows[ok], call[ok], send[ok], recv[ok]
        ts = ctx.clock.apply(cstart[call])
        tr = ctx.clock.apply(act["start"].to_numpy(np.int64)[rows])
        size = (
            np.maximum(act["bytes"].to_numpy(np.int64)[rows], 0)
            if sized and "bytes" in act
            else np.zeros(len(rows), np.int64)
        )
        out.comms.append(CommBatch(send, recv, ts, ts, tr, tr, size, np.full(len(rows), tag, np.int64)))
        n += len(rows)
    return n
