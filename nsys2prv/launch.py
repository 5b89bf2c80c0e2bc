"""The console script: signals are caught before anything heavy is imported (pandas, numba: most of
the start-up), so that a Ctrl-C or a SIGTERM at any moment ends the command with one line."""

import os
import signal
import sys

from nsys2prv.core import collector, memory
from nsys2prv.core.errors import Interrupted, catch_signals

BLAS_THREADS = "OPENBLAS_NUM_THREADS"


def one_blas_thread() -> None:
    """numpy imported with one OpenBLAS thread (unless the user set ``OPENBLAS_NUM_THREADS``), the
    environment then as it was (the command's child processes see the user's).  OpenBLAS starts a
    thread per core when numpy is imported, which spins waiting for work for about 0.1 s: 0.03-0.07 s
    of a core while the command imports, the core the early processes scan and compile on (under
    real-time priority it held the main process off the CPU for 0.06 s).  nsys2prv's only BLAS call
    is the clock bounds' small linear solve (``model.align.bounds``), which OpenBLAS runs on one
    thread at that size anyway."""
    if BLAS_THREADS in os.environ:
        import numpy  # noqa: F401 - (as the user asked)

        return
    os.environ[BLAS_THREADS] = "1"  # (read once, when numpy loads OpenBLAS)
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ[BLAS_THREADS]


def entry() -> None:
    catch_signals()
    collector.hold()  # (until the command's imports are done: ``collector.release``)
    try:
        one_blas_thread()
        memory.main_heap()  # (before the first large array: glibc's threshold, see there)
        from nsys2prv.cli import entry as run  # after the handlers: this import loads everything
    except Interrupted as exc:
        print(
            f"nsys2prv: stopped by {signal.Signals(exc.signum).name}; nothing written (earlier outputs are kept)",
            file=sys.stderr,
        )
        raise SystemExit(128 + exc.signum) from None
    run()
