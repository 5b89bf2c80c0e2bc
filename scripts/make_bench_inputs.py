#!/usr/bin/env python3
"""Build N-rank benchmark inputs from one real export by replicating its activity.

Each rank is a copy of SOURCE in which:
- the CUDA activity (API calls, kernels, memcpy, memset, OS runtime) is repeated
  REPEAT times back to back (times shifted by the activity span, correlation ids
  made unique);
- pids/tids are made distinct per rank (pid and tid + 1000 * rank: a main thread keeps tid == pid);
- ranks are grouped 4 per host (Hostname = benchnodeK);
- the rank is written to the captured environment (PMI_RANK, SLURM_PROCID,
  OMPI_COMM_WORLD_RANK);
- the session start is moved by a small per-rank clock offset (rank * 137 us).

REPEAT may be fractional (3.75 = three copies plus the first 75% of the activity, by time);
--rows N instead picks the REPEAT that gives about N source rows over all ranks, so that
runs with different rank counts have the same total size.

--sizes makes the report-size series of BENCHMARKS.md in OUTDIR: one report of 0.6M, 2.5M, 10M and 20M
rows (OUTDIR/r0.6m ... OUTDIR/r20m) and the 10M and 20M rows spread over 8 reports (OUTDIR/e10m, e20m).

Usage: make_bench_inputs.py SOURCE.sqlite OUTDIR --ranks 8 --repeat 10
       make_bench_inputs.py SOURCE.sqlite OUTDIR --ranks 32 --rows 745000
       make_bench_inputs.py SOURCE.sqlite OUTDIR --ranks 1 --rows 20M
       make_bench_inputs.py SOURCE.sqlite OUTDIR --sizes
"""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path

TIME_TABLES = (
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "OSRT_API",
    "NVTX_EVENTS",
)
ID_COLUMNS = ("globalTid", "globalPid", "endGlobalTid")
TID_COLUMNS = ("globalTid", "endGlobalTid")  # (globalPid: TID bits 0)
RANK_VARS = ("PMI_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK")


def columns(con: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]


def tables(con: sqlite3.Connection) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def base_rows(source: Path) -> int:
    con = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    have = tables(con)
    n = sum(con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in TIME_TABLES if t in have)
    con.close()
    return n


def make_rank(source: Path, out: Path, rank: int, repeat: float, ranks_per_host: int = 4) -> None:
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    out.unlink(missing_ok=True)
    con = sqlite3.connect(out)
    src.backup(con)
    src.close()
    have = tables(con)
    present = [t for t in TIME_TABLES if t in have]
    bounds = [con.execute(f'SELECT min(start), max(coalesce("end", start)) FROM "{t}"').fetchone() for t in present]
    lo = min(b[0] for b in bounds if b[0] is not None)
    hi = max(b[1] for b in bounds if b[1] is not None)
    span = int(hi - lo) + 1000
    max_corr = 0
    for t in present:
        if "correlationId" in columns(con, t):
            max_corr = max(max_corr, con.execute(f'SELECT coalesce(max(correlationId), 0) FROM "{t}"').fetchone()[0])
    for t in present:
        cols = columns(con, t)
        base_rows = con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]
        copies = [(k, None) for k in range(1, int(repeat))]
        frac = repeat - int(repeat)
        if frac > 1e-9:  # a partial copy: the activity of the first `frac` of the span
            copies.append((int(repeat), lo + int(frac * span)))
        if int(repeat) == 0:
            raise SystemExit("--repeat must be >= 1")
        for k, cut in copies:
            exprs = []
            for c in cols:
                if c in ("start", "end"):
                    exprs.append(f'"{c}" + {k * span}')
                elif c == "correlationId":
                    exprs.append(f'"{c}" + {k * (max_corr + 1)}')
                elif c == "eventType" and t == "NVTX_EVENTS":
                    exprs.append(c)
                else:
                    exprs.append(f'"{c}"')
            where = " WHERE eventType IN (59, 60, 34)" if t == "NVTX_EVENTS" else ""
            con.execute(
                f'INSERT INTO "{t}" ({", ".join(chr(34) + c + chr(34) for c in cols)}) '
                f'SELECT {", ".join(exprs)} FROM "{t}" WHERE rowid <= {base_rows}'
                + (where.replace(" WHERE", " AND") if where else "")
                + (f" AND start < {cut}" if cut is not None else "")
            )
    # distinct pids/tids per rank: the PID bits (47..24) and, in thread ids, the TID bits (23..0) move by
    # the same 1000 * rank, so that a process's main thread keeps tid == pid as in a real report (the
    # metrics' host.on_cpu and the views read the main thread's scheduling data)
    shift = (1000 * rank) << 24
    for t in tables(con):
        for c in ID_COLUMNS:
            if c in columns(con, t):
                tid = (
                    f" + CASE WHEN (\"{c}\" & {0xFFFFFF}) != 0 THEN {1000 * rank} ELSE 0 END"
                    if c in TID_COLUMNS
                    else ""
                )
                con.execute(f'UPDATE "{t}" SET "{c}" = "{c}" + {shift}{tid} WHERE "{c}" IS NOT NULL AND "{c}" != 0')
    if "PROCESSES" in have:
        con.execute(f"UPDATE PROCESSES SET pid = pid + {1000 * rank}")
    if "TARGET_INFO_SYSTEM_ENV" in have:
        con.execute(
            "UPDATE TARGET_INFO_SYSTEM_ENV SET value = ? WHERE name = 'Hostname'",
            (f"benchnode{rank // ranks_per_host}",),
        )
    if "META_DATA_CAPTURE" in have:
        for var in RANK_VARS:
            con.execute("UPDATE META_DATA_CAPTURE SET value = ? WHERE value LIKE ?", (f'{var}="{rank}"', f"{var}=%"))
    if "TARGET_INFO_SESSION_START_TIME" in have:
        con.execute(f"UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = utcEpochNs + {rank * 137_000}")
    con.commit()
    con.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source", type=Path)
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--repeat", type=float, default=10)
    ap.add_argument("--rows", type=rows_arg, help="total source rows wanted (sets --repeat); 2.5M, 20M accepted")
    ap.add_argument("--sizes", action="store_true", help="the report-size series (see above)")
    args = ap.parse_args()
    if args.sizes:
        for name, ranks, rows in SIZES:
            make(args.source, args.outdir / name, ranks, rows_arg(rows) / (ranks * base_rows(args.source)))
        return
    if args.rows:
        args.repeat = max(1.0, args.rows / (args.ranks * base_rows(args.source)))
        print(f"--repeat {args.repeat:.4f}")
    make(args.source, args.outdir, args.ranks, args.repeat)


SIZES = (
    ("r0.6m", 1, "0.6M"),
    ("r2.5m", 1, "2.5M"),
    ("r10m", 1, "10M"),
    ("r20m", 1, "20M"),
    ("e10m", 8, "10M"),
    ("e20m", 8, "20M"),
)


def rows_arg(text: str) -> int:
    """Rows: an integer, or a number of millions ("2.5M")."""
    return round(float(text[:-1]) * 1e6) if text.upper().endswith("M") else int(text)


def make(source: Path, outdir: Path, ranks: int, repeat: float) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    for r in range(ranks):
        make_rank(source, outdir / f"rank{r}.sqlite", r, max(1.0, repeat))
        print(f"wrote {outdir / f'rank{r}.sqlite'}")


if __name__ == "__main__":
    main()
