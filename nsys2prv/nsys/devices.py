"""Which physical GPU a process's CUDA device ordinal is.

``device_map`` gives, per process, CUDA device ordinal -> GPU id (``TARGET_INFO_CUDA_DEVICE``
when present, else ``TARGET_INFO_GPU.cuDevice`` -> ``id``, else the ordinal itself); ``gpu_of``
applies it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsys2prv.nsys.database import Report
from nsys2prv.nsys.readers.base import int64


def device_map(report: Report) -> pd.DataFrame:
    """Columns pid, device (CUDA ordinal in that process; -1 = any process), gpu."""
    if report.has("TARGET_INFO_CUDA_DEVICE", "gpuId", "cudaId", "pid"):
        df = report.query("SELECT pid, cudaId AS device, gpuId AS gpu FROM TARGET_INFO_CUDA_DEVICE")
    elif report.has("TARGET_INFO_GPU", "id", "cuDevice"):
        df = report.query("SELECT -1 AS pid, cuDevice AS device, id AS gpu FROM TARGET_INFO_GPU")
    else:
        return pd.DataFrame({c: np.zeros(0, np.int64) for c in ("pid", "device", "gpu")})
    out = pd.DataFrame({c: int64(df[c], -1) for c in ("pid", "device", "gpu")})
    return out.drop_duplicates(["pid", "device"]).reset_index(drop=True)


def gpu_of(devmap: pd.DataFrame, pid: np.ndarray, device: np.ndarray) -> np.ndarray:
    """GPU id of (pid, CUDA ordinal) pairs; unmapped pairs keep their ordinal."""
    pid, device = np.asarray(pid, np.int64), np.asarray(device, np.int64)
    if not len(pid):
        return device.copy()
    exact, anyp = {}, {}                    # the first row of a key wins (device_map dedups anyway)
    for p, d, g in zip(*(devmap[c].to_numpy(np.int64).tolist() for c in ("pid", "device", "gpu"))):
        exact.setdefault((p, d), g)
        if p == -1:
            anyp.setdefault(d, g)
    pairs, inv = np.unique(np.stack([pid, device], axis=1), axis=0, return_inverse=True)
    mapped = np.array([exact.get((p, d), anyp.get(d, d)) for p, d in pairs.tolist()], np.int64)
    return mapped[inv.reshape(-1)]
