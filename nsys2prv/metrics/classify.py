"""Which device activities are communication: one small, shareable name test."""

from __future__ import annotations

import numpy as np
import pandas as pd

NCCL_SUBSTRING = "nccl"


def is_nccl(names) -> np.ndarray:
    """True where a kernel name contains "nccl" (case-insensitive).

    BSC nsys2prv 0.5.8 uses a case-sensitive test; we ignore case so that e.g.
    ``NCCLKernel`` or ``ncclDevKernel_AllReduce`` are both caught.  Missing names are False.
    """
    s = pd.Series(names, dtype=object)
    if s.empty:
        return np.zeros(0, dtype=bool)
    return s.str.contains(NCCL_SUBSTRING, case=False, regex=False).fillna(False).to_numpy(dtype=bool)


__all__ = ["is_nccl", "NCCL_SUBSTRING"]
