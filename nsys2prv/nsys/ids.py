"""Serialized Nsight Systems ids: globalTid / globalPid (docs/nsys-schema.md).

bits 63..56 hardware id, 55..48 VM id, 47..24 PID, 23..0 TID.
"""

from __future__ import annotations

import numpy as np

PID_SHIFT = 24
ID_MASK = 0xFFFFFF
PROCESS_KEY_MASK = np.int64(-(1 << 24))  # 0xFFFFFFFFFF000000 as int64


def pid_of(global_id) -> np.ndarray:
    g = np.asarray(global_id, dtype=np.int64)
    return (g >> PID_SHIFT) & ID_MASK


def tid_of(global_tid) -> np.ndarray:
    g = np.asarray(global_tid, dtype=np.int64)
    return g & ID_MASK


def process_key(global_tid) -> np.ndarray:
    """The globalPid of a globalTid (TID bits cleared, hw/vm kept)."""
    return np.asarray(global_tid, dtype=np.int64) & PROCESS_KEY_MASK
