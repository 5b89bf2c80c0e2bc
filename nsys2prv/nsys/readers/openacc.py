"""OpenACC events (CUPTI_ACTIVITY_KIND_OPENACC_DATA / _LAUNCH / _OTHER, docs/nsys-schema.md).

Normalised columns: start, end, tid, table ('data' | 'launch' | 'other'), name (event name),
event_kind (ENUM_OPENACC_EVENT_KIND id), function (``func@file:line``), bytes (data events, else 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsys2prv.nsys.database import Report
from nsys2prv.nsys.readers.base import (
    Reader,
    ReadResult,
    host_rows,
    int64,
    text_names,
    to_int64,
)

TABLES = {
    "data": "CUPTI_ACTIVITY_KIND_OPENACC_DATA",
    "launch": "CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH",
    "other": "CUPTI_ACTIVITY_KIND_OPENACC_OTHER",
}


def read(report: Report) -> ReadResult | None:
    parts = []
    for kind, table in TABLES.items():
        if not report.has(table, "start", "end", "globalTid", "nameId"):
            continue
        optional = ", ".join(
            report.col_or_null(table, col, alias)
            for col, alias in (
                ("eventKind", "event_kind"),
                ("lineNo", "line"),
                ("srcFile", None),
                ("funcName", None),
                ("bytes", None),
            )
        )
        df = report.query(f"SELECT start, end, globalTid AS tid, nameId, {optional} FROM {table}")
        parts.append(df.assign(table=kind))
    got = host_rows(parts)
    if got is None:
        return None
    df, res = got
    to_int64(df, "event_kind")
    df["bytes"] = np.maximum(int64(df["bytes"]), 0)
    df["name"] = text_names(report, df["nameId"])
    func = pd.Series(report.lookup(df["funcName"])).fillna("<unknown function>").astype(str)
    src = pd.Series(report.lookup(df["srcFile"])).fillna("<unknown file>").astype(str)
    line = pd.Series(int64(df["line"])).astype(str)
    df["function"] = (func + "@" + src + ":" + line).to_numpy(object)
    res.table = df[["start", "end", "tid", "table", "name", "event_kind", "function", "bytes"]]
    return res


READER = Reader(tuple(TABLES.values()), read)
