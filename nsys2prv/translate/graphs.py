"""CUDA graphs: whole-graph executions on streams, graph API events on CPU threads."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsys2prv.core import columns as C
from nsys2prv.core import registry as R
from nsys2prv.core.columns import Frame
from nsys2prv.core.names import Names
from nsys2prv.translate.context import Context
from nsys2prv.translate.records import (
    StateIntervals,
    Translation,
    sparse_interval_events,
)


def _ids(cols: dict[int, pd.Series]) -> list:
    """Optional (type, value, present) pairs for the id columns (type -> column) that are set (> 0)."""
    return [(t, c.to_numpy(np.int64), c.to_numpy(np.int64) > 0) for t, c in cols.items()]


def graph_exec(df: Frame[C.GraphExec], ctx: Context, out: Translation) -> int:
    count = out.count("graph_exec")
    df, threads = ctx.on_gpu(df, count, activity=True)
    start, end = ctx.times(df["start"]), ctx.times(df["end"])
    names = Names.of("graph " + df["graph_id"].astype(str))
    out.events += sparse_interval_events(
        start,
        end,
        threads,
        [(R.GRAPH_EXEC.id, names), (R.CORRELATION.id, np.maximum(df["corr"].to_numpy(np.int64), 0))],
        _ids({R.GRAPH_ID.id: df["graph_id"], R.GRAPH_EXEC_ID.id: df["exec_id"]}),
    )
    n = len(df)
    out.states.append(
        StateIntervals(
            threads, start, end, np.full(n, R.RUNNING, np.int64), np.full(n, R.STATE_PRIORITY[R.RUNNING], np.int64)
        )
    )
    return n


def graph_api(df: Frame[C.GraphApi], ctx: Context, out: Translation) -> int:
    count = out.count("graph_api")
    df, threads = ctx.on_cpu(df, count)
    out.events += sparse_interval_events(
        ctx.times(df["start"]),
        ctx.times(df["end"]),
        threads,
        [(R.GRAPH_API.id, Names.of(df["name"]))],
        _ids({R.GRAPH_ID.id: df["graph_id"], R.GRAPH_EXEC_ID.id: df["exec_id"], R.GRAPH_NODE.id: df["node_id"]}),
    )
    return len(df)
