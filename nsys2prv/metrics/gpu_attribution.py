"""GPU metrics attributed to kernels and NVTX ranges: time-weighted means (``OUT.gpu_metrics.csv``).

A sample holds from its time until the next sample of the same GPU and metric (the last sample
of a series closes it, as NVIDIA's ``LEAD(timestamp)`` recipe does).  For an interval [a, b] on a
GPU, the mean of a metric is  ∫ value dt over [a, b] ∩ [first, last sample]  divided by the length
of that intersection; per (rank, device, kind, name) the integrals and covered times are summed
over the calls before dividing.  Integrals come from per-series cumulative sums and
``searchsorted`` (no per-interval loop).

- ``kernel``: every kernel (compute and NCCL) on the GPU it ran on;
- ``nvtx``: every NVTX push/pop or start/end range, projected onto each GPU its process used
  (the range's own time window on that GPU), named ``domain:name`` outside the default domain.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from nsys2prv.core import columns as C
from nsys2prv.core.columns import Frame
from nsys2prv.model.resources import Model
from nsys2prv.nsys.ids import pid_of

KEYS = ["rank", "device", "kind", "name"]


def _series_integral(t: np.ndarray, v: np.ndarray, x: np.ndarray) -> np.ndarray:
    """∫ from t[0] to x of the step function (t, v), x clipped to [t[0], t[-1]]."""
    cum = np.concatenate([[0.0], np.cumsum(v[:-1] * np.diff(t).astype(float))])
    x = np.clip(x, t[0], t[-1])
    k = np.clip(np.searchsorted(t, x, side="right") - 1, 0, len(t) - 1)
    return cum[k] + v[k] * (x - t[k])


def _intervals(tables: dict[str, pd.DataFrame], model: Model, report: int) -> pd.DataFrame:
    parts = []
    k: Frame[C.Kernels] | None = tables.get("kernels")  # (declared columns: mypy checks them)
    if k is not None and len(k):
        gpu = k["gpu"].to_numpy(np.int64)  # (stage A's GPU id: pipeline.report.read_kind)
        parts.append(
            pd.DataFrame(
                {
                    "pid": pid_of(k["gpid"].to_numpy(np.int64)),
                    "device": gpu,
                    "kind": "kernel",
                    "name": k["name"].to_numpy(object),
                    "start": k["start"].to_numpy(np.int64),
                    "end": k["end"].to_numpy(np.int64),
                }
            )
        )
    nv: Frame[C.Nvtx] | None = tables.get("nvtx")
    if nv is not None and len(nv):
        nv = nv[nv["kind"] != "mark"]
        dom = nv["domain"].astype(str)
        name = np.where(dom == "", nv["name"].astype(str), dom + ":" + nv["name"].astype(str))
        ranges = pd.DataFrame(
            {
                "pid": pid_of(nv["tid"].to_numpy(np.int64)),
                "kind": "nvtx",
                "name": name,
                "start": nv["start"].to_numpy(np.int64),
                "end": nv["end"].to_numpy(np.int64),
            }
        )
        gpus = pd.DataFrame(
            [(model.tasks[i].pid, int(g)) for i in model.report_tasks(report) for g in model.tasks[i].gpus],
            columns=["pid", "device"],
        )
        parts.append(ranges.merge(gpus, on="pid", how="inner"))
    if not parts:
        return pd.DataFrame(columns=["pid", "device", "kind", "name", "start", "end"])
    return pd.concat(parts, ignore_index=True)


def partial(r: int, tabs: dict[str, pd.DataFrame], model: Model) -> pd.DataFrame | None:
    """One report's sums per (rank, device, kind, name): calls, time_ns, and per metric its integral
    and covered time (``combine`` adds them up over the reports and divides)."""
    samples = tabs.get("gpu_metrics")
    if samples is None or samples.empty:
        return None
    iv = _intervals(tabs, model, r)
    if iv.empty:
        return None
    tasks = [model.tasks[i] if i >= 0 else None for i in model.tasks_of(r, iv["pid"].to_numpy(np.int64))]
    iv["rank"] = [t.rank if t is not None and t.rank is not None else -1 for t in tasks]
    a, b = iv["start"].to_numpy(np.int64), iv["end"].to_numpy(np.int64)
    dev = iv["device"].to_numpy(np.int64)
    cols: dict[str, np.ndarray] = {}
    for (gpu, metric), s in samples.sort_values("start", kind="stable").groupby(["gpu", "metric"], sort=True):
        t, v = s["start"].to_numpy(np.int64), s["value"].to_numpy(float)
        on = dev == gpu
        if len(t) < 2 or not on.any():
            continue
        integ = np.zeros(len(iv))
        cover = np.zeros(len(iv))
        integ[on] = _series_integral(t, v, b[on]) - _series_integral(t, v, a[on])
        cover[on] = np.clip(b[on], t[0], t[-1]) - np.clip(a[on], t[0], t[-1])
        cols[f"{metric}\0int"] = cols.get(f"{metric}\0int", 0) + integ
        cols[f"{metric}\0cov"] = cols.get(f"{metric}\0cov", 0) + cover
    df = iv[KEYS].assign(calls=1, time_ns=b - a, **cols)
    return df.groupby(KEYS, sort=True).sum(numeric_only=True).reset_index()


def combine(parts: list[pd.DataFrame | None], metrics: list[str]) -> pd.DataFrame | None:
    out = [p for p in parts if p is not None]
    if not metrics or not out:
        return None
    agg = pd.concat(out, ignore_index=True).groupby(KEYS, sort=True).sum(numeric_only=True).reset_index()
    res = agg[KEYS + ["calls", "time_ns"]].copy()
    for m in metrics:
        if f"{m}\0int" in agg:
            cov = agg[f"{m}\0cov"].to_numpy(float)
            with np.errstate(invalid="ignore", divide="ignore"):
                res[m] = np.where(cov > 0, agg[f"{m}\0int"].to_numpy(float) / np.where(cov > 0, cov, 1), np.nan)
        else:
            res[m] = np.nan
    return res


def write_csv(df: pd.DataFrame, path: Path) -> Path:
    df.to_csv(path, index=False, float_format="%.6g")
    return path
