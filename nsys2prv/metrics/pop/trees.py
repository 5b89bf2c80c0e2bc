"""The two POP trees: the device tree and the host tree, from mask durations."""

from __future__ import annotations

import numpy as np

from nsys2prv.core.choices import NcclAs

_M3 = np.arange(8)  # the masks of the device classes (KERNEL, MEMOP, NCCL bits)
_M2 = np.arange(4)  # ... of the host classes (MPI, CUDA_API bits)


def _ratio(num: float, den: float) -> float:
    """num/den with 0/0 := 1 (nothing to lose, nothing lost)."""
    if den == 0:
        return 1.0 if num == 0 else float("nan")
    return float(num) / float(den)


def device_tree(dur: np.ndarray, T: int, nccl_as: NcclAs, labels: list[str] | None = None) -> dict:
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
