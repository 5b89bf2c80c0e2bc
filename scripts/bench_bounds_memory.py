#!/usr/bin/env python3
"""Peak memory of the clock bounds (nsys2prv/model/align/bounds.py ``pair_bounds``) on a generated run.

Usage: bench_bounds_memory.py [--hosts 100] [--ranks-per-host 1] [--points 100000]
One clock per host, RANKS_PER_HOST ranks on each, POINTS synchronising collectives entered and left by
every rank (random times).  Prints the peak of the memory Python and numpy allocate during the call
(tracemalloc; the inputs, made before, are not counted), the inputs' size and the seconds it took.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from nsys2prv.model.align import bounds


def make(hosts: int, per_host: int, points: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    rows = hosts * per_host
    base = np.arange(points, dtype=np.int64) * 100_000
    e = base[None, :] + rng.integers(0, 40_000, (rows, points))
    x = base[None, :] + 50_000 + rng.integers(0, 40_000, (rows, points))
    rep = np.repeat(np.arange(hosts, dtype=np.int64), per_host)
    return e, x, rep


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--ranks-per-host", type=int, default=1)
    ap.add_argument("--points", type=int, default=100_000)
    args = ap.parse_args()
    e, x, rep = make(args.hosts, args.ranks_per_host, args.points)
    z = np.zeros(0, np.int64)
    tracemalloc.start()
    t0 = time.perf_counter()
    lo = bounds.pair_bounds(e, x, rep, z, z, z, z, args.hosts)
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(
        f"pair_bounds: {args.hosts} clocks x {args.points:,} points ({len(rep)} rows): peak {peak / 2**20:.1f} MiB "
        f"(inputs {(e.nbytes + x.nbytes) / 2**20:.1f} MiB), {seconds:.2f} s; finite bounds {int(np.isfinite(lo).sum())}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
