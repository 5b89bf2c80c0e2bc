"""Which device activities are communication: one small, shareable name test."""

from __future__ import annotations

import numpy as np

from nsys2prv.core.names import per_name

NCCL_SUBSTRING = "nccl"


def is_nccl(names) -> np.ndarray:
    """True where a kernel name contains "nccl" (case-insensitive).

    BSC nsys2prv 0.5.8 uses a case-sensitive test; we ignore case so that e.g.
    ``NCCLKernel`` or ``ncclDevKernel_AllReduce`` are both caught.  Missing names are False.
    """
    return per_name(names, lambda n: NCCL_SUBSTRING in n.lower())


__all__ = ["is_nccl", "NCCL_SUBSTRING"]
