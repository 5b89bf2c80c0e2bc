"""Bulk formatting of Paraver records: rows of integers -> ':'-joined text lines (numba)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _format(flat, offs, lens, perm, lo, hi, buf):
    pos = 0
    digits = np.empty(20, np.uint8)
    for k in range(lo, hi):
        r = perm[k]
        o = offs[r]
        for f in range(lens[r]):
            if f:
                buf[pos] = 58  # ':'
                pos += 1
            v = flat[o + f]
            if v < 0:
                buf[pos] = 45  # '-'
                pos += 1
                v = -v
            nd = 0
            while True:
                digits[nd] = 48 + v % 10
                nd += 1
                v //= 10
                if v == 0:
                    break
            for d in range(nd - 1, -1, -1):
                buf[pos] = digits[d]
                pos += 1
        buf[pos] = 10  # '\n'
        pos += 1
    return pos


def write_records(fh, flat: np.ndarray, offs: np.ndarray, lens: np.ndarray, perm: np.ndarray,
                  chunk: int = 1 << 18) -> None:
    """Write records ``perm[i]`` (fields ``flat[offs:offs+lens]``) in order, one per line."""
    for lo in range(0, len(perm), chunk):
        hi = min(lo + chunk, len(perm))
        size = int(lens[perm[lo:hi]].sum()) * 21 + (hi - lo)
        buf = np.empty(size, np.uint8)
        n = _format(flat, offs, lens, perm, lo, hi, buf)
        fh.write(memoryview(buf[:n]))

