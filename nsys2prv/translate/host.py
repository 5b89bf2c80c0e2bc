"""Host-side ranges and calls: NVTX (per domain), NCCL ranges, MPI calls, OS runtime calls."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsys2prv.core import registry as R
from nsys2prv.core.names import Names
from nsys2prv.translate.context import Context
from nsys2prv.translate.records import (
    PUNCTUAL_ORDER,
    EventBatch,
    Pair,
    StateIntervals,
    Translation,
    Values,
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
    callers = [(t, f"caller{k}") for k, t in R.OSRT_CALLER.items() if f"caller{k}" in df]
    if not callers:
        out.events += interval_events(start, end, threads, pairs)
        return len(df)
    optional: list[tuple[int, Values, np.ndarray]] = [
        (t.id, Names.of(df[c]), df[c].notna().to_numpy()) for t, c in callers
    ]
    out.events += sparse_interval_events(start, end, threads, pairs, optional)
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
    zeros = np.zeros(len(df), np.int64)

    # Known functions: Extrae's value; collectives also carry Extrae's global-op sizes at entry.
    coll = known & (etype == R.extrae_mpi.MPITYPE_COLLECTIVE) & (df["source"] == "tables").to_numpy()
    plain = known & ~coll
    out.events += interval_events(start[plain], end[plain], threads[plain], [(etype[plain], value[plain])])
    if coll.any():
        rank_of_thread = np.array(
            [
                ctx.model.tasks[t.task].rank if ctx.model.tasks[t.task].rank is not None else -2
                for t in ctx.model.threads
            ],
            np.int64,
        )
        is_root = (df["peer"].to_numpy(np.int64)[coll] == rank_of_thread[threads[coll]]).astype(np.int64)
        out.events += interval_events(
            start[coll],
            end[coll],
            threads[coll],
            [
                (etype[coll], value[coll]),
                (R.MPI_SEND_SIZE.id, df["size"].to_numpy(np.int64)[coll]),
                (R.MPI_RECV_SIZE.id, df["recv_size"].to_numpy(np.int64)[coll]),
                (R.MPI_ROOT.id, is_root),
                (R.MPI_COMM.id, np.maximum(df["comm"].to_numpy(np.int64)[coll], 0)),
            ],
            end_pairs=[(etype[coll], zeros[coll])],
        )
    # Functions Extrae has no code for: labelled by name in "MPI Other".
    unk = ~known
    if unk.any():
        out.events += interval_events(start[unk], end[unk], threads[unk], [(R.MPI_OTHER_TYPE, names[unk])])
    out.states.append(StateIntervals(threads, start, end, state, np.full(len(df), R.MPI_STATE_PRIORITY, np.int64)))
    return len(df)
