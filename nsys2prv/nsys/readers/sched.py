"""Thread scheduling (SCHED_EVENTS: each thread in and out of a CPU); category ``sched``.

Normalised columns: start, end, tid, cpu, sched_in (bool), sorted by thread, then time (sched-outs
before sched-ins at one instant).  A sched-out's ``end`` is the thread's next sched-in (its off-CPU
interval: a row that runs across a time slice's border like any interval), else its start; a
sched-in's is its start.  Every row is translated: the CPU a thread runs on as an event, the off-CPU
intervals as states (``translate.cpu_side.sched``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsys2prv.nsys.database import Report
from nsys2prv.nsys.readers.base import Reader, ReadResult, int64

TABLE = "SCHED_EVENTS"


def read(report: Report) -> ReadResult | None:
    if not report.has(TABLE, "start", "cpu", "isSchedIn", "globalTid"):
        return None
    df = report.query(f"SELECT start, cpu, isSchedIn, globalTid AS tid FROM {TABLE}")
    res = ReadResult(table=df, source_rows=len(df))
    tid = int64(df["tid"], fill=-1)
    bad = (tid < 0) | df["start"].isna().to_numpy()
    res.drop("scheduling event without a thread or a time", int(bad.sum()))
    df = df[~bad]
    start, tid = int64(df["start"]), tid[~bad]
    cpu = int64(df["cpu"], fill=-1)
    sched_in = int64(df["isSchedIn"], fill=0) != 0
    order = np.lexsort((sched_in, start, tid))
    start, tid, cpu, sched_in = start[order], tid[order], cpu[order], sched_in[order]
    end = start.copy()
    gap = np.flatnonzero(~sched_in[:-1] & sched_in[1:] & (tid[:-1] == tid[1:]))
    end[gap] = start[gap + 1]

    res.table = pd.DataFrame(
        {
            "start": start,
            "end": end,
            "tid": tid,
            "cpu": cpu,
            "sched_in": sched_in,
        }
    )
    return res


READER = Reader((TABLE,), read)
