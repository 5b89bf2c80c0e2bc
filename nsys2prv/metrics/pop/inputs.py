"""The run's POP inputs from the reports' partials (``combine``): the tasks' lifetimes, the run's
window, the devices measured over it, the host processes and the ideal-network replay of their MPI
calls."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsys2prv.core.choices import NCCL_AS, NCCL_AS_DEFAULT, NcclAs
from nsys2prv.core.errors import UserError
from nsys2prv.metrics import on_cpu
from nsys2prv.metrics.pop.devices import DeviceIntervals, gather_devices, measure_devices
from nsys2prv.metrics.pop.partial import PopPartial
from nsys2prv.metrics.replay import Replay, replay
from nsys2prv.model.resources import Processes
from nsys2prv.nsys.ids import tid_of


@dataclass
class PopInputs:
    """Device and host intervals of one run on the aligned timeline, ready for any window."""

    t0: int
    t1: int
    nccl_as: NcclAs
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
    on_cpu: on_cpu.Intervals | tuple | None = None  # metrics.on_cpu.gather (scheduling data only)
    steady: tuple | None = None  # (end of the last MPI_Init, start of the first MPI_Finalize), aligned


def task_lifetimes(
    parts: list[PopPartial], model: Processes, lifetimes: list[dict] | None
) -> tuple[np.ndarray, np.ndarray]:
    """Per task of ``model`` (POP's processes, ``Model.pop``): aligned [first, last] activity -- its
    process's lifetime in its report (``aligned_lifetimes``), widened to the task's own rows (a report
    without the lifetime, rows outside it); start > end where a task has none."""
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


@dataclass
class RunDevices:
    """The first part of ``combine``: the tasks' lifetimes, the run's window and its GPUs measured over
    it (``measure_run``) -- all the GPU activity rows need, so that the rest of the reduction can run
    beside the merge."""

    life: tuple[np.ndarray, np.ndarray]  # per task: aligned first and last activity (``task_lifetimes``)
    t0: int
    t1: int
    devices: list[dict]
    notes: list[str]
    dev: DeviceIntervals
    dev_run: np.ndarray  # (D, 8) mask durations over [t0, t1]
    first_kernel: np.ndarray
    first_nccl: np.ndarray


def check_nccl_as(nccl_as: str) -> None:
    if nccl_as not in NCCL_AS:
        raise UserError(f"--nccl-as must be one of {', '.join(NCCL_AS)} (got '{nccl_as}')")


def measure_run(
    parts: list[PopPartial], model: Processes, lifetimes: list[dict] | None = None, on_devices=None
) -> RunDevices:
    """The run's window and its GPUs -- key (node index, GPU id) -- measured over it a GPU at a time;
    ``on_devices(t0, t1)``: returns a callback given each GPU's intervals, (task, GPU id, class,
    start, end) arrays, a GPU at a time (the GPU activity rows)."""
    life_lo, life_hi = task_lifetimes(parts, model, lifetimes)
    t0, t1 = run_window(life_lo, life_hi, lifetimes)
    devices, notes, dev = gather_devices(parts, model)
    dev_run, first_k, first_n = measure_devices(
        dev, [t0], [t1], on_gpu=None if on_devices is None else on_devices(t0, t1)
    )
    return RunDevices((life_lo, life_hi), t0, t1, devices, notes, dev, dev_run[0], first_k, first_n)


def combine(
    parts: list[PopPartial],
    model: Processes,
    nccl_as: NcclAs = NCCL_AS_DEFAULT,
    lifetimes: list[dict] | None = None,
    messages: pd.DataFrame | None = None,
    on_devices=None,
    measured: RunDevices | None = None,
) -> PopInputs:
    """The run's PopInputs from the reports' partial results (a cheap reduction).  ``model``: the POP
    processes (``Model.pop``: those with rows of the POP kinds, whatever -t); ``lifetimes``: per report, pid ->
    aligned (first, last) activity (``aligned_lifetimes``); ``on_devices``: as ``measure_run``'s;
    ``measured``: ``measure_run``'s result of the same parts, when it ran first (then ``on_devices``
    is not used)."""
    check_nccl_as(nccl_as)
    m = measured if measured is not None else measure_run(parts, model, lifetimes, on_devices)
    (life_lo, life_hi), t0, t1 = m.life, m.t0, m.t1
    devices, notes, dev = m.devices, list(m.notes), m.dev

    # -- host intervals: processes owning GPU streams ----------------------------------------------------
    gpu_tasks = [i for i, t in enumerate(model.tasks) if t.pop_gpu]
    counted = gpu_tasks or list(range(len(model.tasks)))
    if not gpu_tasks and model.tasks:
        notes.append("no process owns a GPU stream: the host tree counts every process")
    others = sum(int((model.task_of(r, list(spans)) < 0).sum()) for r, spans in enumerate(lifetimes or []))
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
        m.dev_run,
        m.first_kernel,
        m.first_nccl,
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
            | {  # the calls' threads (OS thread ids, as the calls' below): found on their thread
                f"{side}_thread": messages[f"{side}_tid"].to_numpy(np.int64)
                for side in ("send", "recv")
                if f"{side}_tid" in messages
            }
        )
        msg = msg[(msg["send_rank"] >= 0) & (msg["recv_rank"] >= 0)]
    calls = calls[["rank", "thread", "start", "end", "name", "root", "comm"]].assign(thread=tid_of(calls["thread"]))
    return replay(calls, np.stack([lo, hi], axis=1), msg)
