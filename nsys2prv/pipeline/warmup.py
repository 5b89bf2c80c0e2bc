"""Load numba and every compiled kernel of nsys2prv once, early (before worker processes are
forked, so that they inherit it instead of paying for it again).

Numba's start-up probes BLAS by importing ``scipy.linalg`` when SciPy is installed;
nsys2prv's kernels never use BLAS, so a process that owns its numba (the command line and its
local workers) can skip that probe with ``skip_blas_probe=True``.
"""

from __future__ import annotations

import os
import sys

from nsys2prv.core.paths import user_cache_dir

_done = False


def first_compilation() -> bool:
    """No compiled kernel of nsys2prv is cached yet (``core/jit.py``): this run compiles them."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return False
    return not any((user_cache_dir() / "numba").glob("*/*.nbi"))


def warm_numba(skip_blas_probe: bool = False, say=None) -> None:
    """``say(text)``, when given, is told once when the kernels are compiled rather than loaded."""
    global _done
    if _done:
        return
    if say is not None and first_compilation():
        say("nsys2prv: compiling its numba kernels (first run only; cached in "
            f"{user_cache_dir() / 'numba'}) ...")
    block = (skip_blas_probe and "scipy.linalg" not in sys.modules
             and "numba.np.arraymath" not in sys.modules)
    if block:
        sys.modules["scipy.linalg"] = None        # numba's optional BLAS probe fails fast
    try:
        # after the BLAS probe is blocked above: importing these loads numba
        import numpy as np

        from nsys2prv.core.intervals import (
            innermost_enclosing,
            nesting_depth,
            overlap_lanes,
            paint_states,
        )
        from nsys2prv.metrics.measures import mask_durations
        from nsys2prv.paraver.format import _format, _format_compact

        z, one = np.zeros(1, np.int64), np.ones(1, np.int64)
        paint_states(z, z, one, z, z, z, 2)
        nesting_depth(z, z, one)
        overlap_lanes(z, z, one)
        innermost_enclosing(z, z, one, z, z)
        mask_durations(z, z, one, z, 1, 1)
        _format(z, z, one, z, 0, 1, np.empty(64, np.uint8))
        z32, b = np.zeros(1, np.int32), np.zeros(1, np.bool_)       # chunk threads and signatures: int32
        _format_compact(z32, z, z32, one, z, z, 0, 1, one, one, one, one, z, z, z, b, z, np.empty(256, np.uint8))
    finally:
        if block and sys.modules.get("scipy.linalg", 0) is None:
            del sys.modules["scipy.linalg"]
    _done = True
