"""CUDA runtime and driver API calls (CUPTI_ACTIVITY_KIND_RUNTIME).

Normalised columns: start, end, tid (globalTid), name (no ``_vNNNN`` suffix),
corr (correlationId); where the report has call stacks (CUDA_CALLCHAINS:
``nsys profile --cudabacktrace``, the calls longer than its threshold) also caller1..callerN
(``callchains.callers``), as the OS runtime calls have them.
"""

from __future__ import annotations

import pandas as pd

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

TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
CHAINS = "CUDA_CALLCHAINS"


def read(report: Report) -> ReadResult | None:
    if not report.has(TABLE, "start", "end", "globalTid", "nameId"):
        return None
    # the calls' stack ids only where the report has stacks (most have none: a column less to read)
    stacks = report.has(CHAINS, "id", "symbol", "module", "stackDepth") and report.count(CHAINS)
    df = report.query(
        f"SELECT start, end, globalTid AS tid, {report.col_or_null(TABLE, 'correlationId', 'corr', warn=True)}, "
        "nameId" + (f", {report.col_or_null(TABLE, 'callchainId', 'chain')}" if stacks else "") + f" FROM {TABLE}"
    )
    res = ReadResult(table=df, source_rows=len(df))
    if pd.api.types.is_integer_dtype(df["tid"].dtype):
        res.as_exported = (TABLE, "globalTid", "tid")
    df = interval_frame(df, res)
    to_int64(df, "tid")
    to_int64(df, "corr", fill=-1)
    df["name"] = text_names(report, df["nameId"], strip_suffix=True)
    res.table = df[["start", "end", "tid", "corr", "name"]]
    if stacks:
        res.table = res.table.assign(**callers(report, CHAINS, int64(df["chain"], fill=0), res, "CUDA API"))
    return res


READER = Reader((TABLE, CHAINS), read, as_exported=True)
