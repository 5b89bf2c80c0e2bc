"""Stage times and memory on stderr (``NSYS2PRV_TIMING``): the benchmark script reads them.  Each line
also gives this process's CPU seconds so far (``time.process_time``; at the first stage's end: the
interpreter, the imports, the command line and numba's start-up)."""

from __future__ import annotations

import sys
import time

from nsys2prv.core.environment import environment


def _rss_mb(field: str = "VmRSS") -> float:
    try:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith(field + ":")) / 1024
    except (OSError, StopIteration):
        return 0.0


def _reset_peak() -> None:
    """Start a new VmHWM (peak RSS) period for this process (Linux; elsewhere a no-op)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


class Timer:
    """Stage times on stderr when NSYS2PRV_TIMING is set (the benchmark script sets it)."""

    def __init__(self):
        self.on, self.now, self.err = environment().timing, time.perf_counter, sys.stderr
        self.t = self.now()

    def __call__(self, stage: str) -> None:
        if self.on:
            t = self.now()
            self.err.write(
                f"nsys2prv timing: {stage} {t - self.t:.3f} s (rss {_rss_mb():.0f} MB, "
                f"peak {_rss_mb('VmHWM'):.0f} MB, cpu {time.process_time():.3f} s)\n"
            )
            _reset_peak()
            self.t = t
