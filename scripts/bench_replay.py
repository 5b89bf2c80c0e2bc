#!/usr/bin/env python3
"""Time the ideal-network replay (nsys2prv/metrics/replay.py) on a generated run.

Usage: bench_replay.py [--ranks 1000] [--calls 10000]
Each rank repeats: work, MPI_Sendrecv with its right neighbour (message from the left one), work,
MPI_Allreduce -- CALLS calls in all per rank.  Prints the replay's seconds and calls per second.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from nsys2prv.metrics.replay import replay


def make(ranks: int, calls: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    rounds = calls // 2
    work = rng.integers(1_000, 10_000, (rounds, 2, ranks)).astype(np.int64)
    t = np.zeros(ranks, np.int64)
    rows = {"rank": [], "start": [], "end": [], "name": []}
    sends = {"send_rank": [], "send_start": [], "recv_rank": [], "recv_end": []}
    for k in range(rounds):
        s = t + work[k, 0]
        e = np.maximum(s, np.roll(s, 1)) + 500  # the message from the left arrives
        rows["rank"].append(np.arange(ranks))
        rows["start"].append(s)
        rows["end"].append(e)
        rows["name"].append(np.full(ranks, "MPI_Sendrecv"))
        sends["send_rank"].append(np.roll(np.arange(ranks), 1))
        sends["send_start"].append(np.roll(s, 1))
        sends["recv_rank"].append(np.arange(ranks))
        sends["recv_end"].append(e)
        a = e + work[k, 1]
        leave = a.max() + 800
        rows["rank"].append(np.arange(ranks))
        rows["start"].append(a)
        rows["end"].append(np.full(ranks, leave))
        rows["name"].append(np.full(ranks, "MPI_Allreduce"))
        t = np.full(ranks, leave)
    calls_df = pd.DataFrame({k: np.concatenate(v) for k, v in rows.items()})
    calls_df["root"] = -1
    calls_df["comm"] = 1
    msgs = pd.DataFrame({k: np.concatenate(v) for k, v in sends.items()})
    life = np.stack([np.zeros(ranks, np.int64), t + 1000], axis=1)
    return calls_df, msgs, life


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=10000)
    args = ap.parse_args()
    calls, msgs, life = make(args.ranks, args.calls)
    replay(calls.head(1000), life, msgs.head(0))  # compile (cached after the first run)
    t0 = time.perf_counter()
    rep = replay(calls, life, msgs)
    dt = time.perf_counter() - t0
    print(
        f"replay of {args.ranks} ranks x {args.calls} calls ({len(calls):,} calls, {len(msgs):,} messages): "
        f"{dt:.2f} s, {len(calls) / dt / 1e6:.2f}M calls/s; T = {int(life[:, 1].max()):,} ns, "
        f"T_ideal = {rep.elapsed:,} ns, unresolved {rep.unresolved}"
    )


if __name__ == "__main__":
    main()
