#!/usr/bin/env python3
"""Time the clock fit on generated sync points: RANKS x POINTS with offsets, drift and noise.

Usage: bench_align.py [--ranks 1000] [--points 2000]
Prints seconds and the largest offset error (ns) against the generated truth.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from nsys2prv.model.align.fit import P2P, fit_clocks
from nsys2prv.model.align.syncpoints import SyncPoints


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=1000)
    ap.add_argument("--points", type=int, default=2000)
    args = ap.parse_args()
    rng = np.random.default_rng(3)
    n_rank, n_pt = args.ranks, args.points
    true_t = np.cumsum(rng.uniform(1e6, 3e6, n_pt))
    c = rng.uniform(-1e6, 1e6, n_rank)
    k = rng.uniform(-1e-5, 1e-5, n_rank)
    c[0] = k[0] = 0
    x_true = true_t[None, :] + rng.exponential(2e3, (n_rank, n_pt))
    e_true = np.minimum(x_true - rng.uniform(1e4, 1e6, (n_rank, n_pt)), true_t[None, :] - 1)

    def to_local(t):
        return np.rint(t - c[:, None] - k[:, None] * t).astype(np.int64)

    sp = SyncPoints(
        np.arange(n_rank),
        np.arange(n_rank),
        [f"p#{i}" for i in range(n_pt)],
        to_local(e_true),
        to_local(x_true),
        np.ones(n_pt, bool),
        np.ones(n_pt, bool),
        ["mpi"],
    )
    t0 = time.perf_counter()
    res = fit_clocks(sp, P2P.empty(), np.zeros(n_rank, np.int64), 0)
    dt = time.perf_counter() - t0
    aligned = sp.exit + res.offsets[:, None] + np.rint(res.drift[:, None] * (sp.exit - res.t_ref[:, None]))
    err = np.median(aligned - x_true, axis=1)
    err -= err[0]
    print(
        f"fit of {n_rank} ranks x {n_pt} points: {dt:.2f} s, max |offset error| {np.abs(err).max():.0f} ns, "
        f"{res.violations_after} constraint(s) violated"
    )


if __name__ == "__main__":
    main()
