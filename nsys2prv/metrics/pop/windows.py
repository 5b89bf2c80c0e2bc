"""The metrics over windows (the trace's, a region's, iterations') and the run's result
(``compute``), with the definitions of every choice."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nsys2prv import __version__
from nsys2prv.core.choices import NcclAs
from nsys2prv.core.errors import UserError
from nsys2prv.metrics import on_cpu
from nsys2prv.metrics.advice import advise
from nsys2prv.metrics.measures import (
    clip_to_windows,
    mask_durations,
    union,
)
from nsys2prv.metrics.pop.devices import measure_devices, measure_scopes
from nsys2prv.metrics.pop.inputs import PopInputs
from nsys2prv.metrics.pop.trees import device_tree, host_tree

SCHEMA = "nsys2prv-pop/1"


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
    other: NcclAs = "useful" if inp.nccl_as == "communication" else "communication"
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


def definitions(nccl_as: NcclAs, region=None, iterations=None, warmup: int = 0) -> dict:
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
