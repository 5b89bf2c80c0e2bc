"""Thread scheduling (SCHED_EVENTS: each thread in and out of a CPU); category ``sched``.

Normalised columns: start, end (= start: a scheduling event is an instant), tid, cpu, sched_in (bool),
sorted by thread, then time (sched-outs before sched-ins at one instant).  Every row is translated:
the CPU a thread runs on as an event, and the time between a sched-out and the thread's next
sched-in as off-CPU time (``translate.host.sched``).
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

    res.table = pd.DataFrame(
        {
            "start": start[order],
            "end": start[order],
            "tid": tid[order],
            "cpu": cpu[order],
            "sched_in": sched_in[order],
        }
    )
    return res


READER = Reader((TABLE,), read)
