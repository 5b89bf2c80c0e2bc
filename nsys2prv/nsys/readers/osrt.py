"""OS runtime library calls (OSRT_API); opt-in category ``osrt``.

Normalised columns: start, end, tid, name.  The "profiling started/finished"
markers (eventClass 31/32, zero length on TID 0) are not calls and are counted
as dropped.
"""

from __future__ import annotations

from nsys2prv.nsys.database import Report
from nsys2prv.nsys.readers.base import (
    Reader,
    ReadResult,
    int64,
    interval_frame,
    text_names,
    to_int64,
)

TABLE = "OSRT_API"
MARKER_CLASSES = (31, 32)


def read(report: Report) -> ReadResult | None:
    if not report.has(TABLE, "start", "end", "globalTid", "nameId"):
        return None
    df = report.query(
        f"SELECT start, end, globalTid AS tid, nameId, {report.col_or_null(TABLE, 'eventClass')} FROM {TABLE}"
    )
    res = ReadResult(table=df, source_rows=len(df))
    marker = int64(df["eventClass"], fill=-1)
    is_marker = (marker == MARKER_CLASSES[0]) | (marker == MARKER_CLASSES[1])
    res.drop("profiling started/finished markers (not calls)", int(is_marker.sum()))
    df = interval_frame(df[~is_marker], res)
    to_int64(df, "tid")
    df["name"] = text_names(report, df["nameId"])
    res.table = df[["start", "end", "tid", "name"]]
    return res


READER = Reader((TABLE,), read)
