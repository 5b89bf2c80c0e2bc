"""Load numba and every cached compiled kernel of nsys2prv once, early (before worker processes are
forked, so that they inherit them instead of loading them again).  Nothing is compiled here: a
kernel not yet cached runs interpreted on small inputs and is compiled when an input needs it
(``core/jit.py``), with a line on stderr when the command line shows progress.

Numba's start-up probes BLAS by importing ``scipy.linalg`` when SciPy is installed;
nsys2prv's kernels never use BLAS, so a process that owns its numba (the command line and its
local workers) can skip that probe with ``skip_blas_probe=True``.
"""

from __future__ import annotations

import sys

_done = False


def _probes():
    """Every kernel with arguments of the types the conversion calls it with (one element each)."""
    # here, not at the top: importing these loads numba (warm_numba blocks its BLAS probe first)
    from nsys2prv.core import intervals
    from nsys2prv.metrics import measures, replay
    from nsys2prv.paraver import format as paraver_format

    return [
        *intervals.warmup_probes(),
        *measures.warmup_probes(),
        *replay.warmup_probes(),
        *paraver_format.warmup_probes(),
    ]


def warm_numba(skip_blas_probe: bool = False, say=None, load: bool = True) -> None:
    """``say(text)``, when given, is told when a kernel is compiled (once per kernel and machine);
    ``load`` False: the cached kernels are not loaded here (each process that runs one loads it)."""
    global _done
    if _done:
        return
    block = skip_blas_probe and "scipy.linalg" not in sys.modules and "numba.np.arraymath" not in sys.modules
    if block:
        sys.modules["scipy.linalg"] = None  # type: ignore[assignment]  # import's "not importable": numba's BLAS probe fails fast
    try:
        # after the BLAS probe is blocked above: importing these loads numba
        from nsys2prv.core.jit import Kernel

        Kernel.announce = say
        for k, args in _probes() if load else ():
            k.load(*args)
    finally:
        if block and sys.modules.get("scipy.linalg", 0) is None:
            del sys.modules["scipy.linalg"]
    _done = True


def expect_rows(rows: int) -> None:
    """Before the workers fork: each will run up to ``rows`` rows through the kernels every
    conversion uses (states, POP sweeps); where that is large enough to compile them, compile (or
    load) them once here so that the workers inherit them instead of each compiling its own."""
    for k, args in _probes():
        if k.__name__ in ("_paint", "_sweep") and rows >= k.interpret_below:
            k.plan(rows)
            k(*args)
