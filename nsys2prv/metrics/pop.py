"""The POP efficiency model (host and device trees), computed from the normalised tables.

Inputs are the per-report normalised tables of ``KINDS`` (read whatever -t translates), the POP
processes (a resource Model over those kinds), each process's lifetime (nsys/lifetimes.py) and the
per-report clocks (model/align: report time -> trace time) -- never the .prv text.  Sources and
formulas: docs/pop-metrics.md.

Everything that is a *choice* is written into the result's ``definitions``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from nsys2prv import __version__
from nsys2prv.core.errors import UserError
from nsys2prv.metrics import on_cpu
from nsys2prv.metrics.advice import advise
from nsys2prv.metrics.measures import (
    clip_to_windows,
    mask_durations,
    union,
)
from nsys2prv.metrics.replay import Replay, replay
from nsys2prv.model.communicators import Communicators
from nsys2prv.nsys.ids import pid_of

NCCL_RULES = ("communication", "useful")
SCHEMA = "nsys2prv-pop/1"
# The normalised tables the metrics read, whatever -t translates (the trace): GPU activity, the host
# calls of the host tree, and NVTX ranges when --region/--iterations need them.
KINDS = ("kernels", "memcpy", "memset", "cuda_api", "mpi")
REGION_KINDS = ("nvtx",)
ALL_KINDS = KINDS + REGION_KINDS + on_cpu.KINDS  # (on_cpu.KINDS: the scheduling data, whatever -t too)

# device interval classes (bits of the sweep masks)
KERNEL, MEMOP, NCCL = 0, 1, 2
# host interval classes
MPI, CUDA_API = 0, 1
_M3 = np.arange(8)
_M2 = np.arange(4)


@dataclass
class PopInputs:
    """Device and host intervals of one run on the aligned timeline, ready for any window."""

    t0: int
    t1: int
    nccl_as: str
    devices: list[dict]  # label, host, device, ranks
    dev: DeviceIntervals  # every GPU's intervals, read a GPU at a time
    procs: list[dict]  # label, rank, host, node
    host: tuple  # (group, start, end, cls) arrays
    has_mpi: bool
    has_cuda_api: bool
    excluded_processes: list[str]
    nvtx: list[pd.DataFrame]  # per report: aligned start, end, name (ranges only)
    notes: list[str] = field(default_factory=list)
    # the devices measured over the run [t0, t1] (``measure_devices``, in ``combine``): mask durations
    # (D, 8), each GPU's first kernel and first NCCL kernel start (int64 max: none)
    dev_run: np.ndarray | None = None
    first_kernel: np.ndarray | None = None
    first_nccl: np.ndarray | None = None
    # host measures the workers reduced for the trace window only (see PopPartial): (H, 4)
    host_pre: np.ndarray | None = None
    # per host process: aligned [first, last] activity (start == end: none in the analysed time);
    # None: every process alive over the whole window
    life: tuple | None = None
    replay: Replay | None = None  # the ideal-network replay of the host processes (MPI runs)
    on_cpu: tuple | None = None  # (process, start, end, cls): metrics.on_cpu (scheduling data only)
    steady: tuple | None = None  # (end of the last MPI_Init, start of the first MPI_Finalize), aligned


# ----------------------------------------------------------------------------------------------------
# collection
def task_lookup(model) -> dict[tuple[int, int], int]:
    return {(t.report, t.pid): i for i, t in enumerate(model.tasks)}


def _tasks_of(report: int, ids, lookup) -> np.ndarray:
    """Task index of each row's process (-1: unknown), mapping only the unique pids."""
    pids = pid_of(np.asarray(ids, np.int64))
    uniq, inv = np.unique(pids, return_inverse=True)
    mapped = np.array([lookup.get((report, int(p)), -1) for p in uniq], np.int64)
    return mapped[inv] if len(pids) else np.zeros(0, np.int64)


def _at(clock, t):
    """Aligned time of report time(s) ``t``: ``clock`` is the report's Clock (or a plain ns offset)."""
    if hasattr(clock, "apply"):
        return clock.apply(t) if np.ndim(t) else clock.apply_one(int(t))
    return t + clock


def aligned_lifetimes(lifetimes: list[dict | None], clocks: list, clips: list) -> list[dict]:
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
            mine[int(pid)] = (_at(clock, int(lo)), _at(clock, int(hi)))
        out.append(mine)
    return out


def task_spans(tabs: dict, report: int, lookup, clock) -> tuple:
    """(task, first start, last end) of each task's rows over the tables (aligned)."""
    t, s, e = [], [], []
    for df in tabs.values():
        if df is None or not len(df) or "start" not in df or "end" not in df:
            continue
        ids = df["gpid"] if "gpid" in df else df["tid"] if "tid" in df else None
        if ids is None:
            continue
        t.append(_tasks_of(report, ids, lookup))
        s.append(df["start"].to_numpy(np.int64))
        e.append(df["end"].to_numpy(np.int64))
    z = np.zeros(0, np.int64)
    if not t:
        return z, z, z
    task, start, end = np.concatenate(t), np.concatenate(s), np.concatenate(e)
    ok = task >= 0
    tasks, g = np.unique(task[ok], return_inverse=True)
    lo = np.full(len(tasks), np.iinfo(np.int64).max, np.int64)
    hi = np.full(len(tasks), np.iinfo(np.int64).min, np.int64)
    np.minimum.at(lo, g, start[ok])
    np.maximum.at(hi, g, end[ok])
    return tasks, _at(clock, lo), _at(clock, hi)


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
    on_cpu: tuple | None = None  # (task, cls, start, end) unions: metrics.on_cpu (scheduling data only)


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
    np.save(path, data)
    return [DeviceSpill(path, runs)]


def collect_partial(
    report: int,
    tabs: dict,
    lookup: dict,
    clock,
    names=None,
    whole_run: bool = False,
    spill: str | None = None,
    comms: Communicators | None = None,
) -> PopPartial:
    """One report's (or time slice's) PopPartial (``lookup``: (report, pid) -> task index; ``names``:
    NVTX range names kept, None = all; ``whole_run``: no --region/--iterations window will be
    measured, the host calls are reduced here unless the report traced MPI (the steady-state
    window); ``spill``: the .npy file the GPU intervals go to (None: ``tabs`` has no GPU activity)).
    A GPU is an activity's ``gpu`` column (stage A's GPU id of the process's CUDA ordinal,
    ``pipeline.stages.read_kind``), so that ranks each given one GPU as ordinal 0 do not share it."""
    d = []
    for kind in ("kernels", "memcpy", "memset"):
        df = tabs.get(kind)
        if df is None or df.empty:
            continue
        task = _tasks_of(report, df["gpid"], lookup)
        cls = np.where(df["nccl"].to_numpy(bool), NCCL, KERNEL) if kind == "kernels" else np.full(len(df), MEMOP)
        dev_id = df["gpu"].to_numpy(np.int64)
        d.append(
            (
                task,
                dev_id,
                cls.astype(np.int64),
                _at(clock, df["start"].to_numpy(np.int64)),
                _at(clock, df["end"].to_numpy(np.int64)),
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
        df = tabs.get(kind)
        if df is None:  # not traced (or not translated with -t)
            continue
        has[kind] = True  # traced, even if no call falls in the analysed time
        if df.empty:
            continue
        h.append(
            (
                _tasks_of(report, df["tid"], lookup),
                np.full(len(df), code, np.int64),
                _at(clock, df["start"].to_numpy(np.int64)),
                _at(clock, df["end"].to_numpy(np.int64)),
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
    df = tabs.get("mpi")
    if df is not None and len(df):
        comm, root = comms.resolve(report, df) if comms is not None else (df["comm"], df["peer"])
        mpi_calls = pd.DataFrame(
            {
                "task": _tasks_of(report, df["tid"], lookup),
                "thread": df["tid"].to_numpy(np.int64),  # (the replay replays each thread on its own)
                "start": _at(clock, df["start"].to_numpy(np.int64)),
                "end": _at(clock, df["end"].to_numpy(np.int64)),
                "name": df["name"].astype(str),
                "root": np.asarray(root, np.int64),  # (world ranks; comm: the run's communicator ids)
                "comm": np.asarray(comm, np.int64),
                "peers": (df["source"] == "tables").to_numpy(),
            }
        )
        mpi_calls = mpi_calls[mpi_calls["task"] >= 0]
    df = tabs.get("nvtx")
    if df is None or df.empty:
        nvtx = pd.DataFrame({"start": [], "end": [], "name": []})
    else:
        rng = df[df["kind"] != "mark"]
        if names is not None:
            rng = rng[rng["name"].isin(list(names))]
        nvtx = pd.DataFrame(
            {
                "start": _at(clock, rng["start"].to_numpy(np.int64)),
                "end": _at(clock, rng["end"].to_numpy(np.int64)),
                "name": rng["name"].to_numpy(),
            }
        )
    cpu = on_cpu.partial(tabs, lambda ids: _tasks_of(report, ids, lookup), lambda t: _at(clock, t), _unions)
    return PopPartial(
        task_spans({k: tabs.get(k) for k in KINDS}, report, lookup, clock),
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
    cpu = [p.on_cpu for p in parts if p.on_cpu is not None]
    return PopPartial(
        _cat([p.spans for p in parts], 3),  # (each slice's spans: ``task_lifetimes`` takes the extremes)
        [sp for p in parts for sp in p.dev],
        _cat([p.host for p in parts], 4),
        {k: True for p in parts for k in p.has},
        pd.concat([p.nvtx for p in parts], ignore_index=True),
        (np.concatenate([h[0] for h in hpre]), np.concatenate([h[1] for h in hpre])) if hpre else None,
        pd.concat(calls, ignore_index=True) if calls else None,
        _cat(cpu, 4) if cpu else None,
    )


@dataclass
class DeviceIntervals:
    """Every GPU's intervals over the run, where the workers left them (``spills``): ``pieces`` says
    which rows of which spill are GPU g's -- (GPU, spill, first row, end row), in GPU order -- so that
    each GPU's intervals are read alone (``each``)."""

    spills: list[DeviceSpill]
    pieces: np.ndarray
    count: int  # GPUs

    def each(self) -> Iterator[tuple[int, np.ndarray]]:
        """(GPU, its intervals: (5, n) rows GPU id, task, class, start, end), one GPU after the other:
        only one GPU's intervals in memory."""
        bounds = np.searchsorted(self.pieces[:, 0], np.arange(self.count + 1))
        for g in range(self.count):
            mine = self.pieces[bounds[g] : bounds[g + 1]]
            out = np.empty((5, int((mine[:, 3] - mine[:, 2]).sum())), np.int64)
            at = 0
            for k in np.unique(mine[:, 1]):  # (each file opened once per GPU)
                rows = np.load(self.spills[k].path, mmap_mode="r")
                for a, b in mine[mine[:, 1] == k][:, 2:]:
                    out[:, at : at + b - a] = rows[:, a:b]
                    at += b - a
                del rows
            yield g, out

    def discard(self) -> None:
        """Remove the spill files (the run is measured)."""
        for sp in self.spills:
            os.remove(sp.path)
        self.spills = []


def gather_devices(parts: list[PopPartial], model) -> tuple[list[dict], list[str], DeviceIntervals]:
    """The run's GPUs -- (node, GPU id) with intervals, in that order: label, host, GPU id and the
    processes using it --, a note per GPU several processes share, and where each GPU's intervals are
    (nothing is read)."""
    spills = [sp for p in parts for sp in p.dev]
    runs = np.concatenate([sp.runs for sp in spills] or [np.zeros((0, 4), np.int64)])
    which = np.repeat(np.arange(len(spills), dtype=np.int64), [len(sp.runs) for sp in spills])
    node_of = np.array([t.node for t in model.tasks] or [0], np.int64)
    ukeys, g = np.unique(node_of[runs[:, 1]] * (1 << 32) + runs[:, 0], return_inverse=True)
    g = g.reshape(-1).astype(np.int64)
    order = np.argsort(g, kind="stable")
    pieces = np.stack([g, which, runs[:, 2], runs[:, 3]], axis=1)[order]
    users = pd.DataFrame({"g": g, "task": runs[:, 1]}).drop_duplicates().groupby("g")["task"].agg(sorted).to_dict()
    devices, notes = [], []
    for i, k in enumerate(ukeys):
        n, d = int(k >> 32), int(k & 0xFFFFFFFF)
        ranks = [int(t) for t in users.get(i, [])]
        devices.append(
            {
                "label": f"{model.nodes[n]}:GPU{d}",
                "host": model.nodes[n],
                "device": d,
                "processes": [model.tasks[t].label for t in ranks],
            }
        )
        if len(ranks) > 1:
            notes.append(
                f"GPU {devices[-1]['label']} is used by {len(ranks)} processes "
                f"({', '.join(devices[-1]['processes'])}): their activity is united (the "
                "trace's GPU row and analysis/gpu_activity.cfg show it)"
            )
    return devices, notes, DeviceIntervals(spills, pieces, len(ukeys))


def measure_devices(dev: DeviceIntervals, lo, hi, per_window: bool = False, on_gpu=None) -> tuple:
    """The device reduction, one GPU at a time: the mask durations over the windows ((windows, D, 8)
    per window, else (1, D, 8) over their union, as ``_durations``), each GPU's first kernel and
    first NCCL kernel start (int64 max: none); ``on_gpu(task, GPU id, class, start, end)`` is given
    each GPU's intervals (the GPU activity rows)."""
    durs, first_k, first_n = measure_scopes(dev, [(lo, hi, per_window)], on_gpu)
    return durs[0], first_k, first_n


def measure_scopes(dev: DeviceIntervals, scopes: list[tuple], on_gpu=None) -> tuple:
    """``measure_devices`` over several scopes -- (lo, hi, per_window) each: its mask durations in
    ``durs`` -- in one read of every GPU's intervals."""
    scopes = [(np.asarray(lo, np.int64), np.asarray(hi, np.int64), per) for lo, hi, per in scopes]
    durs = [np.zeros((len(lo) if per else 1, dev.count, 8), np.int64) for lo, _, per in scopes]
    first = np.full((2, dev.count), np.iinfo(np.int64).max, np.int64)
    for g, (dev_id, task, cls, s, e) in dev.each():
        if on_gpu is not None:
            on_gpu(task, dev_id, cls, s, e)
        for i, c in enumerate((KERNEL, NCCL)):
            starts = s[cls == c]
            if len(starts):
                first[i, g] = starts.min()
        for dur, (lo, hi, per_window) in zip(durs, scopes):
            if len(lo) == 1 and (not len(s) or (s.min() >= lo[0] and e.max() <= hi[0])):
                dur[0, g] = mask_durations(np.zeros(len(s), np.int64), s, e, cls, 1, 3)[0]  # (nothing to cut)
            else:
                row, win, cs, ce = clip_to_windows(s, e, lo, hi)
                g_or_win = win if per_window else np.zeros(len(row), np.int64)
                dur[:, g] = mask_durations(g_or_win, cs, ce, cls[row], len(dur), 3)
    return durs, first[0], first[1]


def task_lifetimes(parts: list[PopPartial], model, lifetimes: list[dict] | None) -> tuple[np.ndarray, np.ndarray]:
    """Per task of ``model``: aligned [first, last] activity -- its process's lifetime in its report
    (``aligned_lifetimes``), widened to the task's own rows (a report without the lifetime, rows
    outside it); start > end where a task has none."""
    n = len(model.tasks)
    lo = np.full(n, np.iinfo(np.int64).max, np.int64)
    hi = np.full(n, np.iinfo(np.int64).min, np.int64)
    for i, t in enumerate(model.tasks):
        span = (lifetimes[t.report] if lifetimes is not None and t.report < len(lifetimes) else {}).get(t.pid)
        if span is not None:
            lo[i], hi[i] = span
    for p in parts:
        task, s, e = p.spans
        np.minimum.at(lo, task, s)
        np.maximum.at(hi, task, e)
    return lo, hi


def run_window(lo: np.ndarray, hi: np.ndarray, lifetimes: list[dict] | None) -> tuple[int, int]:
    """[t0, t1]: from the first start to the last end of the processes' lifetimes (the POP processes';
    without any, every process of the reports)."""
    alive = lo <= hi
    if alive.any():
        return int(lo[alive].min()), int(hi[alive].max())
    spans = [s for rep in (lifetimes or []) for s in rep.values()]
    return (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else (0, 0)


def combine(
    parts: list[PopPartial],
    model,
    nccl_as: str = "communication",
    lifetimes: list[dict] | None = None,
    messages: pd.DataFrame | None = None,
    on_devices=None,
) -> PopInputs:
    """The run's PopInputs from the reports' partial results (a cheap reduction).  ``model``: the POP
    processes (``pipeline``: built from the POP kinds, whatever -t); ``lifetimes``: per report, pid ->
    aligned (first, last) activity (``aligned_lifetimes``); ``on_devices(t0, t1)``: returns a callback
    given each GPU's intervals, (task, GPU id, class, start, end) arrays, a GPU at a time (the GPU
    activity rows)."""
    if nccl_as not in NCCL_RULES:
        raise UserError(f"--nccl-as must be one of {', '.join(NCCL_RULES)} (got '{nccl_as}')")
    life_lo, life_hi = task_lifetimes(parts, model, lifetimes)
    t0, t1 = run_window(life_lo, life_hi, lifetimes)

    # -- devices: key = (node index, GPU id), measured over the run a GPU at a time ------------------
    devices, notes, dev = gather_devices(parts, model)
    dev_run, first_k, first_n = measure_devices(
        dev, [t0], [t1], on_gpu=None if on_devices is None else on_devices(t0, t1)
    )

    # -- host intervals: processes owning GPU streams ----------------------------------------------------
    gpu_tasks = [i for i, t in enumerate(model.tasks) if any(model.threads[g].kind == "gpu" for g in t.threads)]
    counted = gpu_tasks or list(range(len(model.tasks)))
    if not gpu_tasks and model.tasks:
        notes.append("no process owns a GPU stream: the host tree counts every process")
    known = {(t.report, t.pid) for t in model.tasks}
    others = sum((r, pid) not in known for r, spans in enumerate(lifetimes or []) for pid in spans)
    if others:
        notes.append(
            f"{others} process(es) of the reports have activity (OS runtime, NVTX, scheduling, ...) but no "
            "GPU work, MPI or CUDA API call: they are not POP processes and are left out of the host tree "
            "and of T"
        )
    kept = set(counted)
    excluded = [model.tasks[i].label for i in range(len(model.tasks)) if i not in kept]
    proc_index = np.full(len(model.tasks) + 1, -1, np.int64)
    proc_index[counted] = np.arange(len(counted))
    has = {k: any(p.has.get(k, False) for p in parts) for k in ("mpi", "cuda_api")}
    if parts and any(len(p.host[0]) for p in parts):
        task, c, s, e = (np.concatenate(x) for x in zip(*[p.host for p in parts]))
        pi = proc_index[task]
        ok = pi >= 0
        host = (pi[ok], s[ok], e[ok], c[ok])
    else:
        z = np.zeros(0, np.int64)
        host = (z, z, z, z)
    host_pre = None
    hpre = [p.host_pre for p in parts if p.host_pre is not None]
    if hpre:
        host_pre = np.zeros((len(counted), 4), np.int64)
        for tasks, dur in hpre:
            pi = proc_index[tasks]
            np.add.at(host_pre, pi[pi >= 0], dur[pi >= 0])
    procs = []
    for i in counted:
        t, alive = model.tasks[i], bool(life_lo[i] <= life_hi[i])
        procs.append(
            {
                "label": t.label,
                "rank": t.rank,
                "host": t.host,
                "node": t.node,
                "start_ns": int(life_lo[i]) if alive else None,
                "end_ns": int(life_hi[i]) if alive else None,
            }
        )
    counted_lo = np.array([life_lo[i] if life_lo[i] <= life_hi[i] else t0 for i in counted], np.int64)
    counted_hi = np.array([life_hi[i] if life_lo[i] <= life_hi[i] else t0 for i in counted], np.int64)
    inputs = PopInputs(
        t0,
        t1,
        nccl_as,
        devices,
        dev,
        procs,
        host,
        has["mpi"],
        has["cuda_api"],
        excluded,
        [p.nvtx for p in parts],
        notes,
        dev_run[0],
        first_k,
        first_n,
        host_pre,
        (counted_lo, counted_hi),
    )
    inputs.on_cpu = on_cpu.gather([p.on_cpu for p in parts], proc_index, (counted_lo, counted_hi))
    calls = _host_calls(parts, proc_index)
    if calls is not None:
        inputs.steady = _steady_bounds(calls)
        inputs.replay = _replay(calls, proc_index, procs, counted_lo, counted_hi, messages)
    return inputs


INIT_CALLS = ("MPI_Init", "MPI_Init_thread")


def _host_calls(parts, proc_index) -> pd.DataFrame | None:
    """The host processes' MPI calls over the parts, with their ``rank`` (host process index); None
    without any MPI call."""
    frames = [p.mpi_calls for p in parts if p.mpi_calls is not None and len(p.mpi_calls)]
    if not frames:
        return None
    calls = pd.concat(frames, ignore_index=True)
    calls["rank"] = proc_index[calls["task"].to_numpy(np.int64)]
    return calls[calls["rank"] >= 0]


def _steady_bounds(calls: pd.DataFrame) -> tuple[int, int] | None:
    """(end of the first MPI_Init, start of the last MPI_Finalize) over the host processes' calls: the
    window TALP measures (each rank from the end of its MPI_Init to its MPI_Finalize, which TALP closes
    with a barrier, T = the longest), on one timeline: a rank still in MPI_Init, or already waiting in
    MPI_Finalize, is in MPI there (None: no MPI_Init or no MPI_Finalize in the analysed time, or they do
    not leave a positive window)."""
    name = calls["name"]
    init, fin = name.isin(INIT_CALLS).to_numpy(), (name == "MPI_Finalize").to_numpy()
    if not init.any() or not fin.any():
        return None
    lo, hi = int(calls["end"].to_numpy(np.int64)[init].min()), int(calls["start"].to_numpy(np.int64)[fin].max())
    return (lo, hi) if lo < hi else None


def _replay(calls, proc_index, procs, lo, hi, messages):
    """The ideal-network replay of the host processes' MPI calls (``_host_calls``)."""
    by_rank = {p["rank"]: i for i, p in enumerate(procs) if p["rank"] is not None}
    calls["root"] = calls["root"].map(lambda r: by_rank.get(int(r), -1)).astype(np.int64)
    msg = None
    if messages is None and calls["peers"].all():  # the export names peers, and no message matched
        messages = pd.DataFrame(
            {c: np.zeros(0, np.int64) for c in ("send_task", "send_start", "recv_task", "recv_end")}
        )
    if messages is not None:
        msg = pd.DataFrame(
            {
                "send_rank": proc_index[messages["send_task"].to_numpy(np.int64)],
                "send_start": messages["send_start"].to_numpy(np.int64),
                "recv_rank": proc_index[messages["recv_task"].to_numpy(np.int64)],
                "recv_end": messages["recv_end"].to_numpy(np.int64),
            }
        )
        msg = msg[(msg["send_rank"] >= 0) & (msg["recv_rank"] >= 0)]
    return replay(calls[["rank", "thread", "start", "end", "name", "root", "comm"]], np.stack([lo, hi], axis=1), msg)


# ----------------------------------------------------------------------------------------------------
# the two trees
def _ratio(num: float, den: float) -> float:
    """num/den with 0/0 := 1 (nothing to lose, nothing lost)."""
    if den == 0:
        return 1.0 if num == 0 else float("nan")
    return float(num) / float(den)


def device_tree(dur: np.ndarray, T: int, nccl_as: str, labels: list[str] | None = None) -> dict:
    """Device tree from per-device mask durations (D, 8) over classes KERNEL/MEMOP/NCCL."""
    D = dur.shape[0]
    useful_mask = (_M3 & 1) != 0
    if nccl_as == "useful":
        useful_mask = useful_mask | ((_M3 & 4) != 0)
    move_mask = ~useful_mask & (_M3 != 0)
    U = dur[:, useful_mask].sum(axis=1)
    X = dur[:, move_mask].sum(axis=1)
    A = U + X
    nccl_exposed = dur[:, ((_M3 & 4) != 0) & ~useful_mask].sum(axis=1)
    nccl_total = dur[:, (_M3 & 4) != 0].sum(axis=1)
    labels = labels or [f"GPU{i}" for i in range(D)]
    out = {"count": D, "nccl_as": nccl_as}
    if D == 0 or T <= 0:
        out.update(
            dict.fromkeys(
                (
                    "parallel_efficiency",
                    "load_balance",
                    "communication_efficiency",
                    "orchestration_efficiency",
                    "global_efficiency",
                )
            )
        )
        out["not_available"] = "no GPU activity in the analysed time" if D == 0 else "empty analysed time"
        out.update({"useful_time_ns": {}, "data_movement_time_ns": {}, "active_time_ns": {}})
        return out
    umax, amax = int(U.max()), int(A.max())
    pe = float(U.sum()) / (D * T)
    out.update(
        {
            "parallel_efficiency": pe,
            "load_balance": _ratio(U.sum() / D, umax),
            "communication_efficiency": _ratio(umax, amax),
            "orchestration_efficiency": amax / T,
            "computation_scalability": None,
            "global_efficiency": pe,
            "useful_time_ns": {l: int(u) for l, u in zip(labels, U)},
            "data_movement_time_ns": {l: int(x) for l, x in zip(labels, X)},
            "nccl_exposed_time_ns": {l: int(x) for l, x in zip(labels, nccl_exposed)},
            "nccl_time_ns": {l: int(x) for l, x in zip(labels, nccl_total)},
            "active_time_ns": {l: int(a) for l, a in zip(labels, A)},
            "useful_time_total_ns": int(U.sum()),
            "max_useful_device": labels[int(np.argmax(U))],
            "max_active_device": labels[int(np.argmax(A))],
        }
    )
    idle = [l for l, u in zip(labels, U) if u == 0]
    if idle:
        out["devices_without_useful_time"] = idle
    if not U.any() and A.any():  # copies only: no useful time to measure against (not "fully inefficient")
        what = "kernel" if nccl_as == "useful" else "compute kernel (NCCL kernels count as data movement)"
        why = (
            f"no {what} ran on any GPU in the analysed time, only data movement (memcpy/memset"
            + (", NCCL" if nccl_as == "communication" and nccl_total.any() else "")
            + "): there is no useful device time to measure efficiency against"
        )
        keys = ("parallel_efficiency", "load_balance", "communication_efficiency", "global_efficiency")
        out.update(dict.fromkeys(keys))
        out["not_available"] = dict.fromkeys(keys, why)
    return out


def host_tree(
    dur: np.ndarray,
    T: int,
    nodes: np.ndarray,
    has_mpi: bool,
    has_api: bool,
    labels: list[str] | None = None,
    alive: np.ndarray | None = None,
    t_ideal: int | None = None,
    replayed=None,
    cpu_only: bool = False,
) -> dict:
    """Host tree from per-process mask durations (H, 4) over classes MPI/CUDA_API and the time each
    process is alive in the analysed time (``alive``, (H,); None: all of T); ``t_ideal``: the analysed
    time replayed on an ideal network (``metrics.replay``), for serialisation and transfer efficiency;
    ``cpu_only``: no GPU activity and no CUDA API calls in the run -- the tree has no offload factor
    (host parallel efficiency = MPI parallel efficiency)."""
    H = dur.shape[0]
    labels = labels or [f"P{i}" for i in range(H)]
    keys = (
        "parallel_efficiency",
        "mpi_parallel_efficiency",
        "mpi_load_balance",
        "mpi_load_balance_in",
        "mpi_load_balance_out",
        "mpi_communication_efficiency",
        "serialization_efficiency",
        "transfer_efficiency",
        "device_offload_efficiency",
        "computation_scalability",
        "global_efficiency",
    )
    out: dict = {"count": H, **dict.fromkeys(keys)}
    na = {"computation_scalability": "single run (see `nsys2prv pop` for several runs)"}
    if t_ideal is None:
        na["serialization_efficiency"] = na["transfer_efficiency"] = "no MPI calls to replay"
    if H == 0 or T <= 0 or not (has_mpi or has_api):
        na["all"] = (
            "no MPI or CUDA API calls of GPU-owning processes in the reports (trace them with nsys: --trace mpi,cuda)"
            if T > 0
            else "empty analysed time"
        )
        out["not_available"] = na
        return out
    mpi = dur[:, (_M2 & 1) != 0].sum(axis=1)
    offload = dur[:, _M2 == 2].sum(axis=1)
    alive = np.full(H, T, np.int64) if alive is None else np.asarray(alive, np.int64)
    outside = alive - mpi
    useful = outside - offload
    omax = int(outside.max())
    node_ids = np.unique(nodes)
    node_mean = np.array([outside[nodes == n].mean() for n in node_ids])  # loop over nodes, not rows
    if has_mpi:
        out.update(
            {
                "mpi_parallel_efficiency": float(outside.sum()) / (H * T),
                "mpi_load_balance": _ratio(outside.mean(), omax),
                "mpi_load_balance_in": _ratio(node_mean.max(), omax),
                "mpi_load_balance_out": _ratio(outside.mean(), node_mean.max()),
                "mpi_communication_efficiency": omax / T,
            }
        )
        if t_ideal is not None and t_ideal > 0:
            out.update(
                {
                    "serialization_efficiency": omax / t_ideal,
                    "transfer_efficiency": t_ideal / T,
                    "ideal_elapsed_ns": int(t_ideal),
                }
            )
            if replayed is not None and replayed.notes:
                out["replay_notes"] = list(replayed.notes)
    else:
        for k in (
            "mpi_parallel_efficiency",
            "mpi_load_balance",
            "mpi_load_balance_in",
            "mpi_load_balance_out",
            "mpi_communication_efficiency",
        ):
            na[k] = "no MPI calls in the reports (MPI not traced by nsys)"
    if has_api:
        out["device_offload_efficiency"] = _ratio(useful.sum(), outside.sum())
        out["parallel_efficiency"] = float(useful.sum()) / (H * T)
        out["global_efficiency"] = out["parallel_efficiency"]
    elif cpu_only and has_mpi:
        out["parallel_efficiency"] = out["mpi_parallel_efficiency"]
        out["global_efficiency"] = out["parallel_efficiency"]
        na["device_offload_efficiency"] = (
            "CPU-only run (no GPU activity, no CUDA API calls): no offload factor; "
            "host parallel efficiency = MPI parallel efficiency"
        )
    else:
        for k in ("device_offload_efficiency", "parallel_efficiency", "global_efficiency"):
            na[k] = "no CUDA API calls in the reports (CUDA not traced by nsys)"
    out.update(
        {
            "useful_time_ns": {l: int(u) for l, u in zip(labels, useful)},
            "mpi_time_ns": {l: int(m) for l, m in zip(labels, mpi)},
            "offload_time_ns": {l: int(o) for l, o in zip(labels, offload)},
            "outside_mpi_time_ns": {l: int(o) for l, o in zip(labels, outside)},
            "alive_time_ns": {l: int(a) for l, a in zip(labels, alive)},
            "not_alive_time_ns": {l: int(T - a) for l, a in zip(labels, alive)},
            "useful_time_total_ns": int(useful.sum()),
            "max_outside_mpi_process": labels[int(np.argmax(outside))],
            "not_available": na,
        }
    )
    return out


# ----------------------------------------------------------------------------------------------------
# windows (trace, region, iterations)
def _durations(arrays, n_groups: int, n_cls: int, lo, hi, per_window: bool) -> np.ndarray:
    group, s, e, c = arrays
    row, win, cs, ce = clip_to_windows(s, e, lo, hi)
    g = group[row]
    if per_window:
        g = win * n_groups + g
        d = mask_durations(g, cs, ce, c[row], n_groups * len(lo), n_cls)
        return d.reshape(len(lo), n_groups, 1 << n_cls)
    return mask_durations(g, cs, ce, c[row], n_groups, n_cls)[None]


def _alive(inp: PopInputs, lo, hi, per_window: bool) -> np.ndarray | None:
    """(windows or 1, H): each host process's lifetime inside the windows (None: no lifetimes known)."""
    if inp.life is None:
        return None
    H = len(inp.procs)
    s, e = inp.life
    row, win, cs, ce = clip_to_windows(np.asarray(s, np.int64), np.asarray(e, np.int64), lo, hi)
    out = np.zeros((len(lo) if per_window else 1, H), np.int64)
    np.add.at(out, (win if per_window else np.zeros(len(row), np.int64), row), ce - cs)
    return out


def evaluate(inp: PopInputs, lo, hi, per_window: bool = False, ddur: np.ndarray | None = None) -> list[dict]:
    """Metrics over windows: one result over their union (per_window False; windows must be
    disjoint and sorted) or one per window; ``ddur``: the devices already measured over them
    (``measure_scopes``)."""
    lo = np.asarray(lo, np.int64)
    hi = np.asarray(hi, np.int64)
    D, H = len(inp.devices), len(inp.procs)
    if ddur is None:
        if inp.dev_run is not None and not per_window and len(lo) == 1 and (lo[0], hi[0]) == (inp.t0, inp.t1):
            ddur = inp.dev_run[None]  # (measured in ``combine``)
        else:
            ddur = measure_devices(inp.dev, lo, hi, per_window)[0]
    hdur = _durations(inp.host, H, 2, lo, hi, per_window)
    alive = _alive(inp, lo, hi, per_window)
    off_cpu = None if inp.on_cpu is None else on_cpu.durations(inp.on_cpu, H, lo, hi, per_window)
    if inp.host_pre is not None:
        if per_window or len(lo) != 1 or (lo[0], hi[0]) != (inp.t0, inp.t1):
            raise AssertionError("POP partials reduced in the workers measure the trace window only")
        hdur[0] += inp.host_pre
    Ts = (hi - lo) if per_window else np.array([int((hi - lo).sum())])
    dlabels = [d["label"] for d in inp.devices]
    plabels = [p["label"] for p in inp.procs]
    nodes = np.array([p["node"] for p in inp.procs], np.int64)
    other = "useful" if inp.nccl_as == "communication" else "communication"
    ideal: list[int | None]
    if inp.replay is None:
        ideal = [None] * len(Ts)
    elif per_window:
        ideal = [inp.replay.window(int(a), int(b)) for a, b in zip(lo, hi)]
    else:
        ideal = [sum(inp.replay.window(int(a), int(b)) for a, b in zip(lo, hi))]
    res = []
    for k, T in enumerate(Ts):
        dev = device_tree(ddur[k], int(T), inp.nccl_as, dlabels)
        host = host_tree(
            hdur[k],
            int(T),
            nodes,
            inp.has_mpi,
            inp.has_cuda_api,
            plabels,
            None if alive is None else alive[k],
            ideal[k],
            inp.replay,
            cpu_only=D == 0 and not inp.has_cuda_api,
        )
        if off_cpu is not None and (cpu := on_cpu.tree(host, off_cpu[k], int(T))) is not None:
            host["on_cpu"] = cpu
        alt = device_tree(ddur[k], int(T), other, dlabels)
        dev["other_nccl_rule"] = {
            key: alt.get(key)
            for key in (
                "nccl_as",
                "parallel_efficiency",
                "load_balance",
                "communication_efficiency",
                "orchestration_efficiency",
            )
        }
        res.append(
            {
                "elapsed_ns": int(T),
                "device": dev,
                "host": host,
            }
        )
    return res


def occurrence_windows(inp: PopInputs, name: str, option: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """k-th occurrence windows of NVTX range ``name``: per report, occurrences in start order;
    window k = [earliest start, latest end] of the k-th occurrences over the reports."""
    ks, ss, es, counts = [], [], [], []
    for df in inp.nvtx:
        hit = df[df["name"] == name].sort_values("start", kind="stable")
        counts.append(len(hit))
        ks.append(np.arange(len(hit)))
        ss.append(hit["start"].to_numpy(np.int64))
        es.append(hit["end"].to_numpy(np.int64))
    k = np.concatenate(ks) if ks else np.zeros(0, np.int64)
    if len(k) == 0:
        raise UserError(
            f"NVTX range '{name}' ({option}) not found in any report (push/pop or start/end "
            "ranges of any domain but MPI/NCCL)"
        )
    s, e = np.concatenate(ss), np.concatenate(es)
    n = int(k.max()) + 1
    lo = np.full(n, np.iinfo(np.int64).max, np.int64)
    hi = np.full(n, np.iinfo(np.int64).min, np.int64)
    np.minimum.at(lo, k, s)
    np.maximum.at(hi, k, e)
    notes = []
    nested = sum(bool(len(x) > 1 and np.any(x[1:] < np.maximum.accumulate(y)[:-1])) for x, y in zip(ss, es))
    if nested:
        notes.append(
            f"NVTX range '{name}' overlaps itself (nested or on several threads) in {nested} report(s): "
            "occurrence k is the k-th to start"
        )
    present = [c for c in counts if c]
    if len(set(present)) > 1:
        notes.append(
            f"NVTX range '{name}' occurs {min(present)}..{max(present)} times depending on the report: "
            "occurrence k is matched by its order in each report"
        )
    return lo, hi, notes


OVERLAP_NOTED = 0.10  # consecutive windows overlapping by more than this part of the shorter: said


def _overlap_note(lo, hi, name: str) -> str | None:
    """A note when consecutive iteration windows overlap by much: ranks leaving a collective a few
    microseconds apart make iteration k+1 start on one rank before k ends on another (the windows
    span every rank), which is no clock problem and is not said."""
    if len(lo) < 2:
        return None
    over = hi[:-1] - lo[1:]
    shorter = np.minimum(hi[:-1] - lo[:-1], hi[1:] - lo[1:])
    big = over > OVERLAP_NOTED * shorter
    if not big.any():
        return None
    return (
        f"{int(big.sum())} iteration(s) of '{name}' overlap the next by more than {OVERLAP_NOTED:.0%} of their "
        f"length (up to {int(over[big].max()) / 1e6:.3f} ms): ranks are far out of step, or their clocks are "
        "(see the clock alignment); each iteration is measured in its own window, the steady-state column "
        "over their union"
    )


def compute(
    inp: PopInputs,
    region: str | Sequence[str] | None = None,
    iterations: str | None = None,
    warmup: int = 0,
    label: str = "",
    filter_nvtx: str | None = None,
) -> dict:
    """The whole POP result (JSON-ready): trace scope, optional region/iterations scopes, advice.
    ``filter_nvtx``: the -f range the inputs were cut to (stated in the scope)."""

    if warmup < 0:
        raise UserError("--warmup must be >= 0")
    if warmup and not iterations:
        raise UserError("--warmup needs --iterations NAME")
    notes = list(inp.notes)
    top = evaluate(inp, [inp.t0], [inp.t1])[0]
    result = {
        "schema": SCHEMA,
        "tool": f"nsys2prv {__version__}",
        "label": label,
        "nccl_as": inp.nccl_as,
        "scope": {
            "kind": "trace",
            "start_ns": inp.t0,
            "end_ns": inp.t1,
            **({"filter_nvtx": filter_nvtx} if filter_nvtx else {}),
        },
        **top,
        "devices": inp.devices,
        "processes": inp.procs,
        "excluded_processes": inp.excluded_processes,
        "regions": [],
        "iterations": None,
    }
    # device idle before its first useful kernel (whole trace)
    assert inp.first_kernel is not None and inp.first_nccl is not None, "combine measures the run's devices"
    first = inp.first_kernel if inp.nccl_as != "useful" else np.minimum(inp.first_kernel, inp.first_nccl)
    result["device"]["idle_before_first_kernel_ns"] = {
        d["label"]: (int(f - inp.t0) if f != np.iinfo(np.int64).max else None) for d, f in zip(inp.devices, first)
    }

    regions = region_names(region)
    steady = steady_state(inp, result, always=STEADY_REGION in regions)
    if steady is not None:
        result["regions"].append(steady)
    elif STEADY_REGION in regions:
        raise UserError(
            f"--region {STEADY_REGION}: the reports have no MPI_Init followed by an MPI_Finalize in the analysed time"
        )
    for name in regions:
        if name == STEADY_REGION:
            continue
        lo, hi, n = occurrence_windows(inp, name, "--region")
        notes += n
        ulo, uhi = union(lo, hi)
        r = evaluate(inp, ulo, uhi)[0]
        result["regions"].append(
            {
                "name": name,
                "kind": "region",
                "occurrences": int(len(lo)),
                "windows_ns": [[int(a), int(b)] for a, b in zip(ulo, uhi)],
                **r,
            }
        )
    if iterations:
        lo, hi, n = occurrence_windows(inp, iterations, "--iterations")
        notes += n
        if warmup >= len(lo):
            raise UserError(f"--warmup {warmup} leaves no iteration ('{iterations}' occurs {len(lo)} times)")
        lo, hi = lo[warmup:], hi[warmup:]
        note = _overlap_note(lo, hi, iterations)
        if note:
            notes.append(note)
        ulo, uhi = union(lo, hi)
        (dper, dsteady), _, _ = measure_scopes(inp.dev, [(lo, hi, True), (ulo, uhi, False)])  # (one read)
        per = evaluate(inp, lo, hi, per_window=True, ddur=dper)
        steady = evaluate(inp, ulo, uhi, ddur=dsteady)[0]
        result["regions"].append(
            {
                "name": f"{iterations} (iterations {warmup + 1}..{warmup + len(lo)})",
                "kind": "iterations",
                "occurrences": int(len(lo)),
                "windows_ns": [[int(a), int(b)] for a, b in zip(ulo, uhi)],
                **steady,
            }
        )
        result["iterations"] = {
            "name": iterations,
            "warmup": warmup,
            "count": int(len(lo)),
            "table": [
                {"index": warmup + i + 1, "start_ns": int(a), "end_ns": int(b), **m}
                for i, (a, b, m) in enumerate(zip(lo, hi, per))
            ],
        }
    result["definitions"] = definitions(inp.nccl_as, regions, iterations, warmup)
    if inp.on_cpu is not None:
        result["definitions"]["host_on_cpu"] = on_cpu.DEFINITION
    if steady is not None:
        result["definitions"]["steady_state"] = STEADY_DEFINITION
    result["notes"] = notes
    result["advice"] = advise(result)
    return result


def region_names(region: str | Sequence[str] | None) -> tuple[str, ...]:
    """The --region names, in the order given (one column each); a name given twice is an error."""
    names = (region,) if isinstance(region, str) else tuple(region or ())
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UserError(f"--region {twice[0]} is given twice (each --region adds one column)")
    return names


STEADY_SHOWN = 0.10  # start-up + shutdown beyond this part of T: the steady-state column is shown
STEADY_NAME = STEADY_REGION = "MPI_Init..MPI_Finalize"  # its column, and --region NAME asking for it
STEADY_DEFINITION = (
    f"the '{STEADY_NAME}' column: from the end of MPI_Init to MPI_Finalize, as TALP measures its global "
    "region (each rank from the end of its MPI_Init to its MPI_Finalize, closed by a barrier; T = the "
    "longest rank's): here one window, from the end of the first MPI_Init to the start of the last "
    "MPI_Finalize over the processes, a rank still in MPI_Init or already waiting in MPI_Finalize being "
    f"in MPI there. Shown by default when start-up and shutdown outside it take more than {STEADY_SHOWN:.0%} "
    f"of T (its 'reason' says how much), always with --region {STEADY_REGION}; the whole-run column "
    "stays the whole run"
)


def steady_state(inp: PopInputs, result: dict, always: bool = False) -> dict | None:
    """The steady-state column (MPI_Init's end to MPI_Finalize), measured, when start-up or shutdown --
    a late rank, a slow MPI_Init -- take more than STEADY_SHOWN of T (``always``: asked for), with the
    reason; else None (and when the workers reduced the host calls to the whole run: a run without MPI)."""
    if inp.steady is None or inp.host_pre is not None:
        return None
    lo, hi = max(inp.steady[0], inp.t0), min(inp.steady[1], inp.t1)
    T = inp.t1 - inp.t0
    if hi <= lo or T <= 0 or (not always and T - (hi - lo) <= STEADY_SHOWN * T):
        return None
    startup, shutdown = lo - inp.t0, inp.t1 - hi
    reason = (
        f"start-up to the end of the first MPI_Init takes {startup / 1e9:.3f} s and shutdown from the last "
        f"MPI_Finalize {shutdown / 1e9:.3f} s: {(startup + shutdown) / T:.1%} of the whole run's T is outside "
        "the MPI program"
    )
    procs = [p for p in result["processes"] if p.get("start_ns") is not None]
    if len(procs) > 1:
        first = min(procs, key=lambda p: p["start_ns"])
        last = max(procs, key=lambda p: p["start_ns"])
        late = last["start_ns"] - first["start_ns"]
        if late > STEADY_SHOWN * T:
            reason += (
                f"; {last['label']} started {late / 1e9:.3f} s after {first['label']} (launch stagger or a "
                "slow start), and the others waited for it in MPI_Init"
            )
    return {
        "name": STEADY_NAME,
        "kind": "steady",
        "occurrences": 1,
        "windows_ns": [[int(lo), int(hi)]],
        "definition": STEADY_DEFINITION,
        "reason": reason,
        **evaluate(inp, [lo], [hi])[0],
    }


def definitions(nccl_as: str, region=None, iterations=None, warmup: int = 0) -> dict:
    nccl = (
        "NCCL kernels count as data movement (communication), as BasicAnalysis does with nsys2prv traces"
        if nccl_as == "communication"
        else "NCCL kernels count as useful device time, as TALP's CUPTI backend does"
    )
    d: dict[str, Any] = {
        "source": "POP metrics computed from the normalised Nsight Systems tables (not from the .prv); "
        "formulas follow BasicAnalysis 06_metrics / TALP perf_metrics.c (host and device trees)",
        "elapsed_time": "T = the run's elapsed time: from the earliest start to the latest end of the lifetimes "
        "of the POP processes (process_lifetime; processes owning GPU activity or making MPI or "
        "CUDA API calls; without any, every process of the reports), on the aligned timeline. "
        "It does not depend on -t, which only chooses what goes into the Paraver trace: the "
        "metrics read the GPU activity, MPI and CUDA API calls (and NVTX ranges for --region/"
        "--iterations) of the reports whatever -t selects. With -f/--filter-nvtx, the part of "
        "that time inside the -f window. For a region: the total length of the union of its "
        "windows. All activity is clipped to the windows. The Paraver trace spans exactly T "
        "(its time 0 is the start of T, its END the end of T), unless records lie outside "
        "(processes that are not POP processes), -f is given (time 0 = the window start) or "
        "--time-origin session (time 0 = the earliest session start).",
        "process_lifetime": "a process's lifetime = [first, last] timestamp of any of its activity in its report, "
        "over every event table of the export with a thread or process id, translated or "
        "not: scheduling, CPU samples, OS runtime, CUDA API, GPU activity, NVTX, MPI... but "
        "not nsys's own PROFILER_OVERHEAD rows (profiler start-up inside the process, which "
        "an unprofiled run does not spend; they count only for a process with nothing else) "
        "(processes[].start_ns/end_ns, aligned; null: no activity in the analysed time)",
        "physical_device": "one GPU = (host name, GPU id of the report's device map: TARGET_INFO_CUDA_DEVICE, "
        "else TARGET_INFO_GPU.cuDevice, else the CUDA ordinal; a table that cannot tell GPUs "
        "apart -- an ordinal naming several GPUs or a GPU several ordinals, as nsys 2021.x's "
        "cuDevice 0 on every row -- is skipped for the next); all streams, and all processes "
        "of that host using that GPU, are flattened by interval union",
        "nccl_kernels": f"{nccl} (--nccl-as {nccl_as}); a kernel is NCCL when its short name contains "
        "'nccl' (case-insensitive). Both rules' device factors are in device.other_nccl_rule.",
        "useful_device_time": "U_d = |union of useful kernel intervals on GPU d|",
        "data_movement_time": "X_d = |(union of memcpy, memset"
        + (", NCCL kernels" if nccl_as == "communication" else "")
        + " on d) minus (union of useful kernels on d)|",
        "active_device_time": "A_d = U_d + X_d; idle = T - A_d",
        "device_parallel_efficiency": "sum_d U_d / (D*T), D = physical GPUs with any activity in the trace",
        "device_load_balance": "mean_d U_d / max_d U_d",
        "device_communication_efficiency": "max_d U_d / max_d A_d (both maxima over GPUs, independently)",
        "device_orchestration_efficiency": "max_d A_d / T; LB x CommE x OrchE = parallel efficiency",
        "host_processes": "processes owning at least one GPU stream (BasicAnalysis); CPU-only processes are "
        "listed in excluded_processes. One host unit per process (t_i = 1).",
        "host_times": "per process, the calls of all its threads are united: Alive_i = |lifetime_i within the "
        "analysed time| (alive_time_ns), NotAlive_i = T - Alive_i (not started yet or already "
        "ended: not_alive_time_ns, never useful), MPI_i = |union of MPI calls|, offload_i = |union "
        "of CUDA API calls minus MPI_i|, OutsideMPI_i = Alive_i - MPI_i, UsefulHost_i = "
        "OutsideMPI_i - offload_i (an upper bound: time of a living process outside any traced "
        "call counts as useful)",
        "host_availability": "MPI factors need MPI data and offload factors CUDA API data in the reports (traced "
        "by nsys; whatever -t translates), even if no call falls in the analysed time",
        "mpi_parallel_efficiency": "sum_i OutsideMPI_i / (H*T) (time a process is not alive is lost here, like "
        "time in MPI)",
        "mpi_load_balance": "mean_i OutsideMPI_i / max_i OutsideMPI_i = LB_in x LB_out",
        "mpi_load_balance_in_out": "LB_in = max_node(mean OutsideMPI on node) / max_i OutsideMPI_i; "
        "LB_out = mean_i OutsideMPI_i / max_node(mean OutsideMPI on node) (TALP)",
        "mpi_communication_efficiency": "max_i OutsideMPI_i / T",
        "serialization_efficiency": "max_i OutsideMPI_i / T_ideal, where T_ideal is the analysed time of the run "
        "replayed on an ideal network (zero latency, infinite bandwidth): computation "
        "bursts keep their durations, MPI calls only wait for their partners "
        "(synchronising collectives for the last member, rooted ones for the root, "
        "receives and waits for the matching send to start; sends are eager); every "
        "process starts at the start of its life (nsys2prv's own replay, "
        "metrics/replay.py; without MPI peers in the export only collectives wait)",
        "transfer_efficiency": "T_ideal / T; serialization x transfer = MPI communication efficiency",
        "device_offload_efficiency": "sum_i UsefulHost_i / sum_i OutsideMPI_i (BasicAnalysis = TALP hybrid-v2 "
        "without OpenMP)",
        "host_parallel_efficiency": "sum_i UsefulHost_i / (H*T) = MPI PE x device offload efficiency; a CPU-only "
        "run (no GPU activity, no CUDA API calls) has no offload factor: host PE = "
        "MPI PE",
        "global_efficiency": "single run: computation scalability is not available and global efficiency = "
        "parallel efficiency; host and device global efficiencies are separate trees and "
        "are never multiplied together",
        "zero_over_zero": "0/0 is taken as 1 in LB, CommE and DOE (e.g. no useful time anywhere)",
        "values": "efficiencies are fractions in [0, 1]; times in ns",
    }
    named = {}
    for name in region_names(region):
        if name != STEADY_REGION:
            named[name] = (
                f"--region {name}: each occurrence k (k-th in start order in each report) spans from the "
                "earliest start to the latest end of its k-th occurrences; metrics over the union"
            )
    if named:
        d["region"] = named
    if iterations:
        d["iterations"] = (
            f"--iterations {iterations}: iteration k = the k-th occurrences' span over reports; "
            f"the first {warmup} excluded (--warmup); one table per iteration and a steady-state "
            "column over their union. Each window is global (one window for every rank, as BasicAnalysis "
            "measures a trace cut; a TALP region is per rank instead, T its longest rank's). Consecutive "
            "iterations overlap where ranks leave one at different times (each spans every rank): each is "
            "then measured in its own window; an overlap beyond 10% of an iteration is noted"
        )
    return d


__all__ = ["compute", "evaluate", "device_tree", "host_tree", "definitions", "PopInputs", "NCCL_RULES"]
