#!/usr/bin/env python3
"""Scale the CPU-sampling fixture (tests/data/cpu23/compute.sqlite, our own program profiled with nsys
2023.4) to a report with many CPU samples, to measure memory and speed on large sampling tables.

Usage: make_many_samples.py OUT.sqlite [--samples 10000000]

The fixture's samples (COMPOSITE_EVENTS) and their call stacks (SAMPLING_CALLCHAINS) are repeated,
copy k shifted by k times the fixture's span in time and by k times its largest sample id; every other
table is the fixture's.  The copies are made by SQLite itself (INSERT ... SELECT over a counter), so
the script holds no rows in memory.  Prints the report's sample and frame counts.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "data" / "cpu23" / "compute.sqlite"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--samples", type=int, default=10_000_000)
    args = ap.parse_args()
    if args.out.exists():
        ap.error(f"{args.out} exists")
    shutil.copyfile(FIXTURE, args.out)
    con = sqlite3.connect(args.out)
    try:
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("PRAGMA synchronous=OFF")
        n, top, lo, hi = con.execute(
            "SELECT count(*), max(id), min(start), max(start) FROM COMPOSITE_EVENTS"
        ).fetchone()
        copies = -(-args.samples // n)  # the fixture's samples included
        span = hi - lo + 1_000_000
        cols = [r[1] for r in con.execute("PRAGMA table_info(SAMPLING_CALLCHAINS)")]
        fcols = ", ".join(cols)
        fsel = ", ".join(f"c.id + k.k * {top}" if c == "id" else f"c.{c}" for c in cols)
        counter = f"WITH RECURSIVE k(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM k WHERE k < {copies - 1})"
        con.execute(
            f"INSERT INTO COMPOSITE_EVENTS (id, start, cpu, threadState, globalTid, cpuCycles) {counter} "
            f"SELECT e.id + k.k * {top}, e.start + k.k * {span}, e.cpu, e.threadState, e.globalTid, e.cpuCycles "
            f"FROM k, COMPOSITE_EVENTS e WHERE e.id <= {top} ORDER BY k.k, e.id"
        )
        con.execute(
            f"INSERT INTO SAMPLING_CALLCHAINS ({fcols}) {counter} "
            f"SELECT {fsel} FROM k, SAMPLING_CALLCHAINS c WHERE c.id <= {top} ORDER BY k.k, c.id, c.stackDepth"
        )
        con.commit()
        samples = con.execute("SELECT count(*) FROM COMPOSITE_EVENTS").fetchone()[0]
        frames = con.execute("SELECT count(*) FROM SAMPLING_CALLCHAINS").fetchone()[0]
    finally:
        con.close()
    print(f"{args.out}: {samples} samples, {frames} call-stack frames")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
