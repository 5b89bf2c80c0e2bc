"""Findings derived from the numbers, each with its evidence.  Thresholds: POP's 80% for
"low" factors; 90% for the straggler / exposed-communication findings; 10% of T for idle
lead-in and for processes starting late or ending early.  Every item: kind, message, evidence
(numbers)."""

from __future__ import annotations

from typing import Any, Mapping, TypeVar

GOOD = 0.80
FLAG = 0.90
LEAD_IN = 0.10
LATE = 0.10  # a process starting (ending) this fraction of T after (before) the first (last) one

FACTORS = [  # (tree, key, label, what a low value means)
    (
        "device",
        "load_balance",
        "Device load balance",
        "GPUs do unequal amounts of useful work: the busiest GPU sets the pace",
    ),
    (
        "device",
        "communication_efficiency",
        "Device communication efficiency",
        "data movement (memcpy/memset, NCCL) not hidden behind compute kernels",
    ),
    (
        "device",
        "orchestration_efficiency",
        "Device orchestration efficiency",
        "GPUs idle (neither computing nor moving data): launch latency, host work, synchronisation, lead-in",
    ),
    ("host", "mpi_load_balance", "MPI load balance", "ranks spend unequal time outside MPI"),
    (
        "host",
        "mpi_communication_efficiency",
        "MPI communication efficiency",
        "time in MPI on the most loaded rank (see serialisation and transfer efficiency: waiting for partners "
        "vs the network)",
    ),
    (
        "host",
        "device_offload_efficiency",
        "Device offload efficiency",
        "host time spent inside CUDA API calls (launches, copies, synchronisation)",
    ),
]

K = TypeVar("K")


def _seconds(ns: float) -> str:
    """``ns`` nanoseconds as seconds with three decimals ("1.234 s")."""
    return f"{ns / 1e9:.3f} s"


def _percent(fraction: float | None) -> str:
    """``fraction`` as a percentage with one decimal ("81.5%"); "n/a" for a factor that is not defined
    (a device load balance without compute kernels under ``--nccl-as data-movement``)."""
    return "n/a" if fraction is None else f"{100 * fraction:.1f}%"


def _key_of_max(values: Mapping[K, Any]) -> K:
    """The key whose value is the largest (the first such key on a tie)."""
    return max(values, key=lambda k: values[k])


def _key_of_min(values: Mapping[K, Any]) -> K:
    """The key whose value is the smallest (the first such key on a tie)."""
    return min(values, key=lambda k: values[k])


def focus(res: dict) -> tuple[dict, str | None]:
    """The column the factor findings are about: the one the user asked for (the --iterations
    steady state, else the first --region; the steady-state column nsys2prv shows by itself when
    start-up dominates), else the whole run.  Returns (scope, its name or None for the run)."""
    regions = res.get("regions") or []
    for kind in ("iterations", "region", "steady"):
        for reg in regions:
            if reg.get("kind") == kind:
                return reg, reg["name"]
    return res, None


def advise(res: dict) -> list[dict]:
    out: list[dict] = []
    scope, name = focus(res)
    dev, host = scope["device"], scope["host"]
    T = res["elapsed_ns"]
    where = f"In '{name}': " if name else ""
    tag = {"scope": name or "trace"}
    vals = [
        (label, tree, key, scope[tree].get(key), why)
        for tree, key, label, why in FACTORS
        if isinstance(scope[tree].get(key), float)
    ]
    if vals:
        label, tree, key, v, why = min(vals, key=lambda x: x[3])
        out.append(
            {
                "kind": "lowest_factor",
                "message": f"{where}Lowest factor: {label} = {_percent(v)}"
                + (f" (below POP's {_percent(GOOD)}): {why}." if v < GOOD else " (acceptable)."),
                "evidence": {
                    **tag,
                    "metric": f"{tree}.{key}",
                    "value": v,
                    "all": {f"{t}.{k}": x for _, t, k, x, _ in vals},
                },
            }
        )
    U = dev.get("useful_time_ns") or {}
    if len(U) > 1 and isinstance(dev.get("load_balance"), float) and dev["load_balance"] < FLAG:
        hi = _key_of_max(U)
        lo = _key_of_min(U)
        mean = sum(U.values()) / len(U)
        out.append(
            {
                "kind": "straggling_gpu",
                "message": f"{where}GPU {hi} has the most useful time ({_seconds(U[hi])}, "
                f"mean {_seconds(mean)}); GPU {lo} the least ({_seconds(U[lo])}): "
                f"device load balance {_percent(dev['load_balance'])}.",
                "evidence": {
                    **tag,
                    "device": hi,
                    "useful_ns": U[hi],
                    "mean_useful_ns": mean,
                    "least_device": lo,
                    "least_useful_ns": U[lo],
                    "load_balance": dev["load_balance"],
                },
            }
        )
    O = host.get("outside_mpi_time_ns") or {}
    if len(O) > 1 and isinstance(host.get("mpi_load_balance"), float) and host["mpi_load_balance"] < FLAG:
        hi = _key_of_max(O)
        mean = sum(O.values()) / len(O)
        out.append(
            {
                "kind": "straggling_rank",
                "message": f"{where}{hi} spends the most time outside MPI ({_seconds(O[hi])}, "
                f"mean {_seconds(mean)}): the other ranks wait for it "
                f"(MPI load balance {_percent(host['mpi_load_balance'])}).",
                "evidence": {
                    **tag,
                    "process": hi,
                    "outside_mpi_ns": O[hi],
                    "mean_outside_mpi_ns": mean,
                    "mpi_load_balance": host["mpi_load_balance"],
                },
            }
        )
    out += _lifetimes(res, name)
    lead = {k: v for k, v in (res["device"].get("idle_before_first_kernel_ns") or {}).items() if v is not None}
    if lead and T > 0 and max(lead.values()) > LEAD_IN * T:
        d = _key_of_max(lead)
        out.append(
            {
                "kind": "idle_before_first_kernel",
                "message": f"GPU {d} is idle for {_seconds(lead[d])} ({_percent(lead[d] / T)} of the whole run's "
                "T) before its first kernel: initialisation counts as orchestration loss in the "
                "whole-run column; "
                + (
                    f"the '{name}' column leaves it out."
                    if name
                    else "analyse the steady state with --region or --iterations/--warmup."
                ),
                "evidence": {"device": d, "idle_before_first_kernel_ns": lead[d], "elapsed_ns": T, "all_ns": lead},
            }
        )
    A = dev.get("active_time_ns") or {}
    X = dev.get("data_movement_time_ns") or {}
    if A and isinstance(dev.get("communication_efficiency"), float) and dev["communication_efficiency"] < FLAG:
        d = dev.get("max_active_device") or _key_of_max(A)
        nccl = (dev.get("nccl_exposed_time_ns") or {}).get(d, 0)
        out.append(
            {
                "kind": "exposed_communication",
                "message": f"{where}GPU {d} (longest active time {_seconds(A[d])}) moves data for "
                f"{_seconds(X[d])} without overlapping compute"
                + (f", {_seconds(nccl)} of it in NCCL kernels" if nccl else "")
                + f": device communication efficiency {_percent(dev['communication_efficiency'])}.",
                "evidence": {
                    **tag,
                    "device": d,
                    "active_ns": A[d],
                    "exposed_data_movement_ns": X[d],
                    "exposed_nccl_ns": nccl,
                    "communication_efficiency": dev["communication_efficiency"],
                },
            }
        )
    alt = dev.get("other_nccl_rule") or {}
    if any((dev.get("nccl_time_ns") or {}).values()) and alt.get("load_balance") is not None:
        out.append(
            {
                "kind": "nccl_rule",
                "message": f"NCCL kernels present: with --nccl-as {alt['nccl_as']} the device factors would be "
                f"LB {_percent(alt['load_balance'])}, CommE {_percent(alt['communication_efficiency'])}"
                f", OrchE {_percent(alt['orchestration_efficiency'])} "
                f"(now LB {_percent(dev['load_balance'])}, "
                f"CommE {_percent(dev['communication_efficiency'])}); state the rule in tables.",
                "evidence": {"nccl_as": dev.get("nccl_as"), "other": alt},
            }
        )
    return out


def _lifetimes(res: dict, name: str | None = None) -> list[dict]:
    """Processes that start late or end early in the whole run: their time outside their lifetime is
    not useful (``name``: the column the user analyses instead, said rather than suggested)."""
    cure = (
        f"the '{name}' column, where all processes run, leaves it out."
        if name
        else "analyse the part where all processes run with --region or --iterations/--warmup."
    )
    T = res["elapsed_ns"]
    procs = [p for p in res.get("processes", []) if p.get("start_ns") is not None and p.get("end_ns") is not None]
    if len(procs) < 2 or T <= 0:
        return []
    out = []
    first = min(procs, key=lambda p: p["start_ns"])
    late = {p["label"]: p["start_ns"] - first["start_ns"] for p in procs}
    worst = _key_of_max(late)
    if late[worst] > LATE * T:
        n = sum(v > LATE * T for v in late.values())
        out.append(
            {
                "kind": "late_start",
                "message": f"{worst} started {_seconds(late[worst])} ({_percent(late[worst] / T)} of the whole "
                "run's T) "
                f"after {first['label']}"
                + (f" ({n} processes start more than {_percent(LATE)} of T late)" if n > 1 else "")
                + ": time before a process starts is not useful (host.not_alive_time_ns), which "
                "lowers MPI load balance and parallel efficiency in the whole-run column; the "
                "others may wait for it in MPI_Init; " + cure,
                "evidence": {
                    "process": worst,
                    "start_delay_ns": late[worst],
                    "first_process": first["label"],
                    "elapsed_ns": T,
                    "all_ns": late,
                },
            }
        )
    last = max(procs, key=lambda p: p["end_ns"])
    early = {p["label"]: last["end_ns"] - p["end_ns"] for p in procs}
    worst = _key_of_max(early)
    if early[worst] > LATE * T:
        out.append(
            {
                "kind": "early_end",
                "message": f"{worst} ended {_seconds(early[worst])} ({_percent(early[worst] / T)} of the whole "
                "run's T) "
                f"before {last['label']}: time after a process ends is not useful "
                "(host.not_alive_time_ns) in the whole-run column; " + cure,
                "evidence": {
                    "process": worst,
                    "end_advance_ns": early[worst],
                    "last_process": last["label"],
                    "elapsed_ns": T,
                    "all_ns": early,
                },
            }
        )
    return out


__all__ = ["advise"]
