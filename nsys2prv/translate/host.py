"""Host-side ranges and calls: NVTX (per domain), NCCL ranges, MPI calls, OS runtime calls."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsys2prv.core import registry as R
from nsys2prv.core.names import Names
from nsys2prv.model.resources import Model
from nsys2prv.translate.communicators import global_comms
from nsys2prv.translate.context import Context
from nsys2prv.translate.records import (
    PUNCTUAL_ORDER,
    EventBatch,
    Pair,
    StateIntervals,
    Translation,
    caller_levels,
    interval_events,
    sparse_interval_events,
)


def _nvtx_type_ids(domains: pd.Series, ctx: Context, kind: str) -> np.ndarray:
    idx = domains.map(ctx.nvtx_domains).to_numpy(np.int64)
    return R.NVTX_BASE + R.NVTX_DOMAIN_STRIDE * idx + R.NVTX_OFFSETS[kind]


def nvtx(df: pd.DataFrame, ctx: Context, out: Translation) -> int:
    count = out.count("nvtx")
    wanted = []
    if "nvtx_pushpop" in ctx.categories:
        wanted += ["pushpop", "mark"]
    if "nvtx_startend" in ctx.categories:
        wanted += ["startend"]
    sel = df["kind"].isin(wanted).to_numpy()
    count.drop("NVTX kind not requested with -t", int((~sel).sum()))
    df, threads = ctx.on_cpu(df[sel], count)
    kind = df["kind"].to_numpy()
    names = Names.of(df["name"])
    start, end = ctx.times(df["start"]), ctx.times(df["end"])

    pp = kind == "pushpop"
    if pp.any():
        sub = df[pp]
        depth = sub["depth"].to_numpy(np.int64)
        t_range, t_depth = _nvtx_type_ids(sub["domain"], ctx, "pushpop"), _nvtx_type_ids(sub["domain"], ctx, "depth")
        out.events += interval_events(
            start[pp],
            end[pp],
            threads[pp],
            [(t_range, names[pp]), (t_depth, depth + 1)],
            depth,
            end_pairs=[(t_range, np.zeros(len(sub), np.int64)), (t_depth, depth)],
        )
        cat = sub["category_name"].notna().to_numpy()
        if cat.any():
            t_cat = _nvtx_type_ids(sub["domain"][cat], ctx, "category")
            out.events += interval_events(
                start[pp][cat],
                end[pp][cat],
                threads[pp][cat],
                [(t_cat, Names.of(sub["category_name"])[cat])],
                depth[cat],
            )
    se = kind == "startend"
    if se.any():
        t_se = _nvtx_type_ids(df["domain"][se], ctx, "startend")
        out.events += interval_events(start[se], end[se], threads[se], [(t_se, names[se])])
    mk = kind == "mark"
    if mk.any():
        t_mk = _nvtx_type_ids(df["domain"][mk], ctx, "mark")
        out.events.append(
            EventBatch(start[mk], threads[mk], np.full(int(mk.sum()), PUNCTUAL_ORDER, np.int64), [(t_mk, names[mk])])
        )
    return len(df)


def nccl_ranges(df: pd.DataFrame, ctx: Context, out: Translation) -> int:
    count = out.count("nccl")
    df = df[df["kind"] != "mark"]
    df, threads = ctx.on_cpu(df, count)
    out.events += interval_events(
        ctx.times(df["start"]),
        ctx.times(df["end"]),
        threads,
        [(R.NCCL_RANGE.id, Names.of(df["name"]))],
        df["depth"].to_numpy(np.int64),
    )
    return len(df)


def osrt(df: pd.DataFrame, ctx: Context, out: Translation) -> int:
    count = out.count("osrt")
    df, threads = ctx.on_cpu(df, count)
    start, end = ctx.times(df["start"]), ctx.times(df["end"])
    pairs: list[Pair] = [(R.OSRT.id, Names.of(df["name"]))]
    out.events += sparse_interval_events(start, end, threads, pairs, caller_levels(df))
    return len(df)


def mpi(df: pd.DataFrame, ctx: Context, out: Translation) -> int:
    count = out.count("mpi")
    df, threads = ctx.on_cpu(df, count)
    names = Names.of(df["name"])
    uniq, inv = names.names, names.codes
    codes = [R.mpi_code(u) for u in uniq]
    known_u = np.array([c is not None for c in codes], bool)
    type_u = np.array([c[0] if c else R.MPI_OTHER_TYPE for c in codes], np.int64)
    value_u = np.array([c[1] if c else 0 for c in codes], np.int64)
    state_u = np.array([c[2] if c else R.OTHERS for c in codes], np.int64)
    known, etype, value, state = known_u[inv], type_u[inv], value_u[inv], state_u[inv]
    start, end = ctx.times(df["start"]), ctx.times(df["end"])

    # Known functions: Extrae's value; collectives also carry Extrae's global-op fields at entry
    # (``_collective_events``), except a root-synchronising one whose root is unknown.
    coll = known & (etype == R.extrae_mpi.MPITYPE_COLLECTIVE)
    peer = df["peer"].to_numpy(np.int64)
    root_sync = np.isin(np.asarray(uniq, object), R.extrae_mpi.ROOT_SYNC_COLLECTIVES)[inv]
    coll &= ~(root_sync & (peer < 0))
    plain = known & ~coll
    out.events += interval_events(start[plain], end[plain], threads[plain], [(etype[plain], value[plain])])
    if coll.any():
        out.events += _collective_events(df, ctx, coll, start, end, threads, etype, value)
    # Functions Extrae has no code for: labelled by name in "MPI Other".
    unk = ~known
    if unk.any():
        out.events += interval_events(start[unk], end[unk], threads[unk], [(R.MPI_OTHER_TYPE, names[unk])])
    out.states.append(StateIntervals(threads, start, end, state, np.full(len(df), R.MPI_STATE_PRIORITY, np.int64)))
    return len(df)


def _collective_events(
    df: pd.DataFrame,
    ctx: Context,
    coll: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    threads: np.ndarray,
    etype: np.ndarray,
    value: np.ndarray,
) -> list[EventBatch]:
    """The collective calls ``coll`` as Extrae writes them: at entry the call's value with its send
    size (50100001), receive size (50100002), global communicator id (50100004,
    ``communicators.global_comms``) and, on the root's record only, root 1 (50100003); at exit
    the call type back to 0.  Sizes are 0 where the export has none (MPI as NVTX ranges)."""
    task_rank = np.array([t.rank if t.rank is not None else -2 for t in ctx.model.tasks], np.int64)
    rank_of_thread = task_rank[np.array([t.task for t in ctx.model.threads], np.int64)]
    comm, peer = global_comms(df, ctx)
    is_root = coll & (peer >= 0) & (peer == rank_of_thread[threads])
    size, recv_size = df["size"].to_numpy(np.int64), df["recv_size"].to_numpy(np.int64)
    batches = []
    for sel in (coll & ~is_root, is_root):
        n = int(sel.sum())
        if not n:
            continue
        pairs: list[Pair] = [
            (etype[sel], value[sel]),
            (R.MPI_SEND_SIZE.id, size[sel]),
            (R.MPI_RECV_SIZE.id, recv_size[sel]),
            (R.MPI_COMM.id, comm[sel]),
        ]
        if sel is is_root:
            pairs.append((R.MPI_ROOT.id, np.ones(n, np.int64)))
        batches += interval_events(
            start[sel], end[sel], threads[sel], pairs, end_pairs=[(etype[sel], np.zeros(n, np.int64))]
        )
    return batches


def application_events(model: Model) -> list[EventBatch]:
    """Each process's life on its first CPU thread as Extrae marks it (APPL_EV, 40000001): 1 at its
    start, 0 at its end (outermost at those times).  prv2dim ends a thread's last CPU burst there."""
    tasks = [t for t in model.tasks if t.life is not None and t.threads and model.is_cpu[t.threads[0]]]
    if not tasks:
        return []
    life = np.array([t.life for t in tasks], np.int64).reshape(-1, 2)
    thread = np.array([t.threads[0] for t in tasks], np.int64)
    return interval_events(life[:, 0], life[:, 1], thread, [(R.APPLICATION.id, np.ones(len(tasks), np.int64))], -1)
