"""OS runtime library calls (OSRT_API); opt-in category ``osrt``.

Normalised columns: start, end, tid, name; where the report has call stacks (OSRT_CALLCHAINS, the
calls longer than nsys's backtrace threshold) also caller1..callerN (``callchains.callers``, all of
them): the label of the stack's frame at that level (1 = the innermost), NULL where the call has none.
The "profiling started/finished" markers (eventClass 31/32, zero length on TID 0) are not calls and
are counted as dropped.
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
from nsys2prv.nsys.readers.callchains import callers

TABLE = "OSRT_API"
CHAINS = "OSRT_CALLCHAINS"
MARKER_CLASSES = (31, 32)


def read(report: Report) -> ReadResult | None:
    if not report.has(TABLE, "start", "end", "globalTid", "nameId"):
        return None
    df = report.query(
        f"SELECT start, end, globalTid AS tid, nameId, {report.col_or_null(TABLE, 'eventClass')}, "
        f"{report.col_or_null(TABLE, 'callchainId', 'chain')} FROM {TABLE}"
    )
    res = ReadResult(table=df, source_rows=len(df))
    marker = int64(df["eventClass"], fill=-1)
    is_marker = (marker == MARKER_CLASSES[0]) | (marker == MARKER_CLASSES[1])
    res.drop("profiling started/finished markers (not calls)", int(is_marker.sum()))
    df = interval_frame(df[~is_marker], res)
    to_int64(df, "tid")
    df["name"] = text_names(report, df["nameId"])
    res.table = df[["start", "end", "tid", "name"]]
    chain = int64(df["chain"], fill=0)
    if report.has(CHAINS, "id", "symbol", "module", "stackDepth") and report.count(CHAINS):
        res.table = res.table.assign(**callers(report, CHAINS, chain, res, "OS runtime"))
    return res


READER = Reader((TABLE, CHAINS), read)
