"""OpenACC events on CPU threads: event name per table type, region (event kind), function
(``func@file:line``) and, for data events, the size in bytes."""

from __future__ import annotations

import numpy as np

from nsys2prv.core import columns as C
from nsys2prv.core import registry as R
from nsys2prv.core.columns import Frame
from nsys2prv.core.names import Names
from nsys2prv.translate.context import Context
from nsys2prv.translate.records import Translation, sparse_interval_events


def openacc(df: Frame[C.OpenAcc], ctx: Context, out: Translation) -> int:
    count = out.count("openacc")
    df, threads = ctx.on_cpu(df, count)
    start, end = ctx.times(df["start"]), ctx.times(df["end"])
    kind = df["event_kind"].to_numpy(np.int64)
    for table, etype in R.OPENACC_TABLE_TYPES.items():
        sel = (df["table"] == table).to_numpy()
        if not sel.any():
            continue
        sub = df[sel]
        optional = [(R.OPENACC_REGION.id, kind[sel], kind[sel] > 0)]
        if table == "data":
            optional.append((R.OPENACC_DATA_SIZE.id, sub["bytes"].to_numpy(np.int64), sub["bytes"].to_numpy() > 0))
        out.events += sparse_interval_events(
            start[sel],
            end[sel],
            threads[sel],
            [(etype.id, Names.of(sub["name"])), (R.OPENACC_FUNCTION.id, Names.of(sub["function"]))],
            optional,
        )
    return len(df)
