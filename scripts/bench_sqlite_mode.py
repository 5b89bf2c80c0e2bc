#!/usr/bin/env python3
"""The ADBC driver's reading of one table in SQLite's serialized mode (the driver's default) and in
multi-thread mode (what the command line sets: ``nsys2prv/nsys/sqlite_mode.py``), alternately, each
read in a fresh interpreter (the mode can only be set before SQLite is initialised).

Usage: bench_sqlite_mode.py REPORT.sqlite [TABLE] [--rounds N]

Prints one JSON line per read (mode, rows, wall, user and system seconds of the read alone), then the
best user time of each mode.  TABLE defaults to CUPTI_ACTIVITY_KIND_KERNEL; every column is read
(``SELECT *``), 65,536 rows a batch, as the readers do.
"""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = """
import json, resource, sys, time
import adbc_driver_manager, adbc_driver_sqlite, pyarrow as pa
from nsys2prv.nsys import sqlite_mode
from pathlib import Path
from nsys2prv.nsys.connection import BATCH_ROWS
from nsys2prv.nsys.schema import open_readonly
path, table, multithread = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
if multithread:
    sqlite_mode.claim()
    assert sqlite_mode.multithread(), "multi-thread mode not set"
conn, uri = open_readonly(Path(path))  # (the URI the readers open; the stdlib's SQLite, not the driver's)
conn.close()
db = adbc_driver_sqlite.connect(uri)
conn = adbc_driver_manager.AdbcConnection(db)
st = adbc_driver_manager.AdbcStatement(conn)
st.set_options(**{"adbc.sqlite.query.batch_rows": str(BATCH_ROWS)})
st.set_sql_query('SELECT * FROM "' + table + '"')
r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
handle, _ = st.execute_query()
rows = pa.RecordBatchReader._import_from_c(handle.address).read_all().num_rows
t1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
st.close(); conn.close(); db.close()
print(json.dumps({"mode": "multi-thread" if multithread else "serialized", "rows": rows,
                  "wall_s": round(t1 - t0, 3), "user_s": round(r1.ru_utime - r0.ru_utime, 3),
                  "sys_s": round(r1.ru_stime - r0.ru_stime, 3)}))
"""


def main() -> None:
    args = sys.argv[1:]
    rounds = 3
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i : i + 2]
    if not args or len(args) > 2:
        sys.exit(__doc__)
    path, table = args[0], args[1] if len(args) > 1 else "CUPTI_ACTIVITY_KIND_KERNEL"
    best: dict[str, float] = {}
    for _ in range(rounds):
        for multithread in ("0", "1"):
            out = subprocess.run(
                [sys.executable, "-c", CHILD, path, table, multithread], capture_output=True, text=True, check=True
            ).stdout.strip()
            print(out, flush=True)
            res = json.loads(out)
            best[res["mode"]] = min(best.get(res["mode"], float("inf")), res["user_s"])
    print(
        json.dumps(
            {"best_user_s": best, "multi_thread_over_serialized": round(best["multi-thread"] / best["serialized"], 3)}
        )
    )


if __name__ == "__main__":
    main()
