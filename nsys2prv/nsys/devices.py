"""Which physical GPU a process's CUDA device ordinal is.

``device_map`` gives, per process, CUDA device ordinal -> GPU id (``TARGET_INFO_CUDA_DEVICE``
when present, else ``TARGET_INFO_GPU.cuDevice`` -> ``id``, else the ordinal itself); ``gpu_of``
applies it.  A *degenerate* table -- one ordinal of a process naming several GPUs, or several
ordinals one GPU (old exports, nsys 2021.x, write ``cuDevice`` 0 on every ``TARGET_INFO_GPU`` row) --
is not used: the next source is, down to the ordinal itself (``degenerate_tables`` says which).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsys2prv.nsys.database import Report
from nsys2prv.nsys.readers.base import int64

SOURCES = (
    (
        "TARGET_INFO_CUDA_DEVICE",
        ("gpuId", "cudaId", "pid"),
        "SELECT pid, cudaId AS device, gpuId AS gpu FROM TARGET_INFO_CUDA_DEVICE",
    ),
    ("TARGET_INFO_GPU", ("id", "cuDevice"), "SELECT -1 AS pid, cuDevice AS device, id AS gpu FROM TARGET_INFO_GPU"),
)


def degenerate(m: pd.DataFrame) -> bool:
    """A map that cannot tell the GPUs apart: within one process (pid -1: any), an ordinal with
    several GPUs or a GPU with several ordinals."""
    m = m.drop_duplicates()
    return bool(m.duplicated(["pid", "device"]).any() or m.duplicated(["pid", "gpu"]).any())


def degenerate_tables(report: Report) -> list[str]:
    """The device tables of ``report`` that ``device_map`` skipped as degenerate."""
    return [t for t, cols, sql in SOURCES if report.has(t, *cols) and degenerate(_read(report, sql))]


def _read(report: Report, sql: str) -> pd.DataFrame:
    df = report.query(sql)
    return pd.DataFrame({c: int64(df[c], -1) for c in ("pid", "device", "gpu")})


def device_map(report: Report) -> pd.DataFrame:
    """Columns pid, device (CUDA ordinal in that process; -1 = any process), gpu; empty: every
    ordinal is its own GPU id."""
    for table, cols, sql in SOURCES:
        if report.has(table, *cols):
            out = _read(report, sql)
            if len(out) and not degenerate(out):
                return out.drop_duplicates(["pid", "device"]).reset_index(drop=True)
    return pd.DataFrame({c: np.zeros(0, np.int64) for c in ("pid", "device", "gpu")})


def gpu_of(devmap: pd.DataFrame, pid: np.ndarray, device: np.ndarray) -> np.ndarray:
    """GPU id of (pid, CUDA ordinal) pairs; unmapped pairs keep their ordinal."""
    pid, device = np.asarray(pid, np.int64), np.asarray(device, np.int64)
    if not len(pid):
        return device.copy()
    exact: dict[tuple[int, int], int] = {}  # the first row of a key wins (device_map dedups anyway)
    anyp: dict[int, int] = {}
    for p, d, g in zip(*(devmap[c].to_numpy(np.int64).tolist() for c in ("pid", "device", "gpu"))):
        exact.setdefault((p, d), g)
        if p == -1:
            anyp.setdefault(d, g)
    if pid.min() >= 0 and pid.max() < 1 << 31 and device.min() >= 0 and device.max() < 1 << 32:
        # the pairs as one int64 each, numbered by hashing (np.unique over rows sorts them: 10x slower)
        inv, packed = pd.factorize((pid << 32) | device)
        pairs = np.stack([packed >> 32, packed & 0xFFFFFFFF], axis=1)
    else:
        pairs, inv = np.unique(np.stack([pid, device], axis=1), axis=0, return_inverse=True)
    mapped = np.array([exact.get((p, d), anyp.get(d, d)) for p, d in pairs.tolist()], np.int64)
    return mapped[inv.reshape(-1)]
