#!/usr/bin/env python3
"""The floor a conversion is measured against: what reading the same rows and writing the same bytes
cost on this machine, without any translation.

Usage: bench_floor.py [--no-bytecode] OUT.prv REPORT.sqlite...

Prints one JSON line:
- import_s: a fresh interpreter importing the stack a conversion loads (pandas, pyarrow with Parquet, numba,
  the ADBC SQLite driver; named here, not through ``nsys2prv.pipeline``, whose imports are lazy) -- paid by
  every run; import_cpu_s its CPU seconds (user + system); like ``bench_convert.py``'s conversions, from a
  private ``PYTHONPYCACHEPREFIX`` warmed once by the same import (``bench_bytecode.py``; "bytecode" says
  which; ``--no-bytecode``: the environment as it is);
- read_s: every row of the event tables nsys2prv reads (and StringIds) as Arrow tables through the ADBC
  SQLite driver, one report after the other (``read_s_per_core``: divided by the cores, the reads of a
  conversion run in parallel), its SQLite in the mode the command line sets (``nsys/sqlite_mode.py``:
  multi-thread, no mutex per value; "sqlite_multithread" says whether it was);
- write_s: writing as many bytes as OUT.prv holds, 1 MiB at a time, to a file next to it (then removed);
- rows, bytes: what was read and written.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from bench_bytecode import bytecode

TABLES = (
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "OSRT_API",
    "NVTX_EVENTS",
    "MPI_P2P_EVENTS",
    "MPI_COLLECTIVES_EVENTS",
    "MPI_OTHER_EVENTS",
    "StringIds",
)


def read_all(paths: list[str]) -> tuple[float, int, bool]:
    import adbc_driver_sqlite.dbapi as dbapi

    from nsys2prv.nsys import sqlite_mode
    from nsys2prv.nsys.schema import open_readonly

    sqlite_mode.claim()  # (this process is the benchmark's: as the command line's)
    multithread = sqlite_mode.multithread()
    uris = []
    for p in paths:  # (each report's URI as the readers open it: escaped, immutable without a WAL file)
        conn, uri = open_readonly(Path(p))
        conn.close()
        uris.append(uri)
    rows = 0
    t = time.perf_counter()
    for uri in uris:
        with dbapi.connect(uri) as con:
            cur = con.cursor()
            cur.execute("SELECT name FROM sqlite_master WHERE type='table'")
            have = {r[0] for r in cur.fetchall()}
            for table in TABLES:
                if table in have:
                    cur.execute(f'SELECT * FROM "{table}"')
                    rows += cur.fetch_arrow_table().num_rows
            cur.close()
    return time.perf_counter() - t, rows, multithread


def write_bytes(prv: Path) -> tuple[float, int]:
    size = prv.stat().st_size
    block = os.urandom(1 << 20)
    target = prv.with_name(prv.name + ".floor")
    t = time.perf_counter()
    with open(target, "wb") as fh:
        left = size
        while left > 0:
            fh.write(block[: min(left, len(block))])
            left -= len(block)
    took = time.perf_counter() - t
    target.unlink()
    return took, size


STACK = "import pandas, pyarrow, pyarrow.parquet, numba, adbc_driver_sqlite.dbapi"


def main() -> None:
    argv = sys.argv[1:]
    compiled = not (argv and argv[0] == "--no-bytecode")
    argv = argv if compiled else argv[1:]
    if len(argv) < 2:
        sys.exit(__doc__)
    prv, reports = Path(argv[0]), argv[1:]
    importing = [sys.executable, "-c", STACK]
    with bytecode(compiled, importing) as how:
        r0, t = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        subprocess.run(importing, check=True)
        import_s, r1 = time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN)
    import_cpu_s = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    read_s, rows, multithread = read_all(reports)
    write_s, size = write_bytes(prv)
    cores = len(os.sched_getaffinity(0))
    print(
        json.dumps(
            {
                "reports": len(reports),
                "rows": rows,
                "bytes": size,
                "import_s": round(import_s, 3),
                "import_cpu_s": round(import_cpu_s, 3),
                "read_s": round(read_s, 3),
                "read_s_per_core": round(read_s / cores, 3),
                "sqlite_multithread": multithread,
                "write_s": round(write_s, 3),
                "cores": cores,
                "bytecode": how,
            }
        )
    )


if __name__ == "__main__":
    main()
