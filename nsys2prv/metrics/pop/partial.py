"""A report's (or time slice's) part of the POP inputs: its GPU intervals spilled per GPU, its host
calls' unions, its tasks' first and last rows, NVTX ranges and MPI calls (``collect_partial``), and
the slices of a report joined (``join_slices``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd

from nsys2prv.core import columns as C
from nsys2prv.core.columns import Frame
from nsys2prv.core.packed import Packed
from nsys2prv.core.writes import save_array
from nsys2prv.metrics import on_cpu
from nsys2prv.metrics.measures import (
    mask_durations,
)
from nsys2prv.model.align.clock import Clock
from nsys2prv.nsys.ids import pid_of
from nsys2prv.translate.context import Context

# The normalised tables the metrics read, whatever -t translates (the trace): GPU activity, the host
# calls of the host tree, and NVTX ranges when --region/--iterations need them.
KINDS = ("kernels", "memcpy", "memset", "cuda_api", "mpi")
REGION_KINDS = ("nvtx",)
ALL_KINDS = KINDS + REGION_KINDS + on_cpu.KINDS  # (on_cpu.KINDS: the scheduling data, whatever -t too)
# the columns ``collect_partial`` (and ``on_cpu.partial``) read of the intervals it measures (``cut``)
CUT_COLUMNS = ("start", "end", "tid", "gpid", "gpu", "nccl", "sched_in")

# device interval classes (bits of the sweep masks)
KERNEL, MEMOP, NCCL = 0, 1, 2
# host interval classes
MPI, CUDA_API = 0, 1


# ----------------------------------------------------------------------------------------------------
# collection
def _tasks_of(ctx: Context, ids) -> np.ndarray:
    """POP's task of each row's process (``Model.pop``; -1: unknown), mapping only the unique pids."""
    pids = pid_of(np.asarray(ids, np.int64))
    if not len(pids):
        return np.zeros(0, np.int64)
    if pids.min() == pids.max():  # (one process: most reports)
        return np.repeat(ctx.model.pop.task_of(ctx.report, pids[:1]), len(pids))
    uniq, inv = np.unique(pids, return_inverse=True)
    return ctx.model.pop.task_of(ctx.report, uniq)[inv]


def aligned_lifetimes(lifetimes: list[dict | None], clocks: list[Clock], clips: list) -> list[dict]:
    """Per report, pid -> aligned (first, last) activity, cut to the report's -f window (raw times;
    None: no window); a process with no activity inside the window is left out."""
    out = []
    for spans, clock, win in zip(lifetimes, clocks, clips):
        mine = {}
        for pid, (lo, hi) in (spans or {}).items():
            if win is not None:
                lo, hi = max(lo, win[0]), min(hi, win[1])
                if hi < lo:
                    continue
            mine[int(pid)] = (clock.apply_one(int(lo)), clock.apply_one(int(hi)))
        out.append(mine)
    return out


def task_spans(tabs: dict, ctx: Context) -> tuple:
    """(task, first start, last end) of each task's rows over the tables (aligned)."""
    t, s, e = [], [], []
    for df in tabs.values():
        if df is None or not len(df) or "start" not in df or "end" not in df:
            continue
        ids = df["gpid"] if "gpid" in df else df["tid"] if "tid" in df else None
        if ids is None:
            continue
        t.append(_tasks_of(ctx, ids))
        s.append(df["start"].to_numpy(np.int64))
        e.append(df["end"].to_numpy(np.int64))
    z = np.zeros(0, np.int64)
    if not t:
        return z, z, z
    task, start, end = np.concatenate(t), np.concatenate(s), np.concatenate(e)
    ok = task >= 0
    if ok.all() and len(task) and task.min() == task.max():  # (one task: most reports)
        lo, hi = np.array([start.min()], np.int64), np.array([end.max()], np.int64)
        return task[:1].copy(), ctx.clock.apply(lo), ctx.clock.apply(hi)
    tasks, g = np.unique(task[ok], return_inverse=True)
    lo = np.full(len(tasks), np.iinfo(np.int64).max, np.int64)
    hi = np.full(len(tasks), np.iinfo(np.int64).min, np.int64)
    np.minimum.at(lo, g, start[ok])
    np.maximum.at(hi, g, end[ok])
    return tasks, ctx.clock.apply(lo), ctx.clock.apply(hi)


@dataclass
class DeviceSpill:
    """The GPU intervals of one report (or time slice), as its worker leaves them in the run's work
    directory: per (GPU id, task, class) the union of its intervals, the rows of each (GPU id, task)
    together."""

    path: str  # .npy: (5, n) int64 rows GPU id, task, class, start, end (aligned)
    runs: np.ndarray  # (k, 4) int64: GPU id, task, first row, end row


@dataclass
class PopPartial:
    """What one report (or time slice) contributes to the POP inputs: its GPU intervals (reduced in
    the main process a GPU at a time: ``measure_devices``), per (task, class) the *union* of its
    host calls (unions keep every measure of the sweeps exact), each task's first and last row, which
    host kinds it has, its NVTX ranges (only the named ones) and MPI calls.  When only the trace
    window is measured (no --region/--iterations), the host calls are reduced to their mask durations
    here, in the worker (a task's calls are all in its report)."""

    spans: tuple  # (task, first start, last end) arrays, aligned
    dev: list[DeviceSpill]
    host: tuple  # (task, cls, start, end) arrays, unions
    has: dict
    nvtx: pd.DataFrame
    host_pre: tuple | None = None  # (tasks, mask durations (k, 4)): trace window only
    mpi_calls: pd.DataFrame | None = None  # (task, thread, start, end, name, root, comm), aligned: for the replay
    # (task, cls, start, end) unions: metrics.on_cpu (scheduling data only), in a file of the run's work
    # directory when the partial was given one (``on_cpu.Spill``)
    on_cpu: on_cpu.Spill | tuple | None = None

    def rest_rows(self) -> int:
        """The size of its share of the reduction after the devices are measured (host and scheduling
        intervals, MPI calls, NVTX ranges), in rows (``pipeline.pop_run.rest_rows``)."""
        cpu = self.on_cpu
        n = cpu.rows if isinstance(cpu, on_cpu.Spill) else len(cpu[0]) if cpu is not None else 0
        return n + len(self.host[0]) + len(self.nvtx) + (len(self.mpi_calls) if self.mpi_calls is not None else 0)

    def packed(self) -> Packed[PopPartial]:
        """This partial as its pickle (the main process holds it so until the reduction), its
        ``rest_rows`` recorded beside."""
        return Packed(self, self.rest_rows())


def _unions(keys: list[np.ndarray], start: np.ndarray, end: np.ndarray) -> tuple:
    """Per distinct key tuple, the union of its intervals: (keys..., start, end) arrays."""
    if len(start) == 0:
        z = np.zeros(0, np.int64)
        return (*[z] * len(keys), z, z)
    order = np.lexsort((start, *reversed(keys)))
    ks = [k[order] for k in keys]
    s, e = start[order], end[order]
    change = np.zeros(len(s), bool)
    change[0] = True
    for k in ks:
        change[1:] |= k[1:] != k[:-1]
    bounds = np.append(np.flatnonzero(change), len(s))
    out_s, out_e, out_i = [], [], []
    for a, b in zip(bounds[:-1], bounds[1:]):  # one union per key (a few per report)
        cm = np.maximum.accumulate(e[a:b])
        new = np.empty(b - a, bool)
        new[0] = True
        new[1:] = s[a + 1 : b] > cm[:-1]
        first = np.flatnonzero(new)
        last = np.append(first[1:] - 1, b - a - 1)
        out_s.append(s[a:b][first])
        out_e.append(cm[last])
        out_i.append(np.full(len(first), a, np.int64))
    idx = np.concatenate(out_i)
    return (*[k[idx] for k in ks], np.concatenate(out_s), np.concatenate(out_e))


def spill_devices(dev_id, task, cls, start, end, path: str | None) -> list[DeviceSpill]:
    """The GPU intervals' unions per (GPU id, task, class), written to ``path`` (.npy) with the rows
    of each (GPU id, task); [] without any interval (``path`` unused)."""
    if not len(start):
        return []
    assert path is not None, "GPU intervals need a file"
    data = np.stack(_unions([dev_id, task, cls], start, end))
    first = np.flatnonzero(np.concatenate([[True], (data[0, 1:] != data[0, :-1]) | (data[1, 1:] != data[1, :-1])]))
    runs = np.stack([data[0, first], data[1, first], first, np.append(first[1:], data.shape[1])], axis=1)
    save_array(path, data)
    return [DeviceSpill(path, runs)]


def collect_partial(
    ctx: Context,
    names=None,
    whole_run: bool = False,
    spill: str | None = None,
    cut: dict | None = None,
) -> PopPartial:
    """One report's (or time slice's) PopPartial, of the rows ``ctx.tables`` (``ctx.model.pop.task_of``
    gives each row's task; ``ctx.clock``, ``ctx.comms`` as translators have them; ``names``:
    NVTX range names kept, None = all; ``whole_run``: no --region/--iterations window will be
    measured, the host calls are reduced here unless the report traced MPI (the steady-state
    window); ``spill``: the .npy file the GPU intervals go to (None: ``tabs`` has no GPU activity), its
    name ending in .cpu.npy instead that of the scheduling data's intervals (``on_cpu.spill``)).
    A GPU is an activity's ``gpu`` column (stage A's GPU id of the process's CUDA ordinal,
    ``pipeline.report.read_kind``), so that ranks each given one GPU as ordinal 0 do not share it.

    ``tabs`` are the rows the partial owns: each task's first and last row, the NVTX ranges and the
    MPI calls are theirs; the GPU and host intervals measured are those of ``cut`` (a time slice:
    the intervals running in its time, cut to it; None: ``tabs``)."""
    tabs, clock, report = ctx.tables, ctx.clock, ctx.report
    measured = tabs if cut is None else cut
    d = []
    for kind in ("kernels", "memcpy", "memset"):
        df: Frame[C.GpuActivity] | None = measured.get(kind)  # (the kinds' declared columns: mypy checks them)
        if df is None or df.empty:
            continue
        task = _tasks_of(ctx, df["gpid"])
        if kind == "kernels":
            cls = np.where(cast("Frame[C.Kernels]", df)["nccl"].to_numpy(bool), NCCL, KERNEL)
        else:
            cls = np.full(len(df), MEMOP)
        dev_id = df["gpu"].to_numpy(np.int64)
        d.append(
            (
                task,
                dev_id,
                cls.astype(np.int64),
                clock.apply(df["start"].to_numpy(np.int64)),
                clock.apply(df["end"].to_numpy(np.int64)),
            )
        )
    z = np.zeros(0, np.int64)
    task, dev_id, cls, s, e = (np.concatenate(x) for x in zip(*d)) if d else (z, z, z, z, z)
    ok = task >= 0
    dev = spill_devices(dev_id[ok], task[ok], cls[ok], s[ok], e[ok], spill)
    del d, task, dev_id, cls, s, e, ok
    has = {}
    h = []
    for kind, code in (("mpi", MPI), ("cuda_api", CUDA_API)):
        calls: Frame[C.OnCpu] | None = measured.get(kind)
        if calls is None:  # not traced (or not translated with -t)
            continue
        has[kind] = True  # traced, even if no call falls in the analysed time
        if calls.empty:
            continue
        h.append(
            (
                _tasks_of(ctx, calls["tid"]),
                np.full(len(calls), code, np.int64),
                clock.apply(calls["start"].to_numpy(np.int64)),
                clock.apply(calls["end"].to_numpy(np.int64)),
            )
        )
    host_pre = None
    if h and whole_run and not has.get("mpi"):  # a task's calls are all in its report: reduce them here
        # (not with MPI: the steady-state column, MPI_Init..MPI_Finalize, may be measured too)
        task, c, s, e = (np.concatenate(x) for x in zip(*h))
        ok = task >= 0
        tasks, g = np.unique(task[ok], return_inverse=True)
        host_pre = (tasks, mask_durations(g.astype(np.int64), s[ok], e[ok], c[ok], len(tasks), 2))
        host = (z, z, z, z)
    elif h:
        task, c, s, e = (np.concatenate(x) for x in zip(*h))
        ok = task >= 0
        host = _unions([task[ok], c[ok]], s[ok], e[ok])
    else:
        host = _unions([z] * 2, z, z)
    mpi_calls = None
    mpi: Frame[C.Mpi] | None = tabs.get("mpi")
    if mpi is not None and len(mpi):
        comm, root = ctx.comms.resolve(report, mpi) if ctx.comms is not None else (mpi["comm"], mpi["peer"])
        mpi_calls = pd.DataFrame(
            {
                "task": _tasks_of(ctx, mpi["tid"]),
                "thread": mpi["tid"].to_numpy(np.int64),  # (the replay replays each thread on its own)
                "start": clock.apply(mpi["start"].to_numpy(np.int64)),
                "end": clock.apply(mpi["end"].to_numpy(np.int64)),
                "name": mpi["name"].astype(str),
                "root": np.asarray(root, np.int64),  # (world ranks; comm: the run's communicator ids)
                "comm": np.asarray(comm, np.int64),
                "peers": (mpi["source"] == "tables").to_numpy(),
            }
        )
        mpi_calls = mpi_calls[mpi_calls["task"] >= 0]
    ranges: Frame[C.Nvtx] | None = tabs.get("nvtx")
    if ranges is None or ranges.empty:
        nvtx = pd.DataFrame({"start": [], "end": [], "name": []})
    else:
        rng = ranges[ranges["kind"] != "mark"]
        if names is not None:
            rng = rng[rng["name"].isin(list(names))]
        nvtx = pd.DataFrame(
            {
                "start": clock.apply(rng["start"].to_numpy(np.int64)),
                "end": clock.apply(rng["end"].to_numpy(np.int64)),
                "name": rng["name"].to_numpy(),
            }
        )
    cpu = on_cpu.spill(
        on_cpu.partial(measured, lambda ids: _tasks_of(ctx, ids), clock.apply, _unions),
        None if spill is None else spill.removesuffix(".pop.npy") + ".cpu.npy",
    )
    return PopPartial(
        task_spans({k: tabs.get(k) for k in KINDS}, ctx),
        dev,
        host,
        has,
        nvtx,
        host_pre,
        mpi_calls,
        cpu,
    )


def _cat(rows: list[tuple], n: int) -> tuple:
    z = np.zeros(0, np.int64)
    return tuple(np.concatenate(x) for x in zip(*rows)) if rows else (z,) * n


def join_slices(parts: list[PopPartial]) -> PopPartial:
    """The PopPartial of a report translated in time slices (``pipeline/slices.py``): each slice's
    holds the POP intervals inside its time (disjoint times: their measures add up, as those of
    several reports do in ``combine``) and its own rows' first and last row, ranges and calls; side
    by side, the ranges and calls in slice order."""
    hpre = [p.host_pre for p in parts if p.host_pre is not None]
    calls = [p.mpi_calls for p in parts if p.mpi_calls is not None]
    return PopPartial(
        _cat([p.spans for p in parts], 3),  # (each slice's spans: ``task_lifetimes`` takes the extremes)
        [sp for p in parts for sp in p.dev],
        _cat([p.host for p in parts], 4),
        {k: True for p in parts for k in p.has},
        pd.concat([p.nvtx for p in parts], ignore_index=True),
        (np.concatenate([h[0] for h in hpre]), np.concatenate([h[1] for h in hpre])) if hpre else None,
        pd.concat(calls, ignore_index=True) if calls else None,
        on_cpu.join([p.on_cpu for p in parts]),
    )
