"""CUDA graphs, both export shapes (docs/nsys-schema.md); the shape is told by columns, not names.

- ``graph_exec``: whole-graph executions on streams, ``CUPTI_ACTIVITY_KIND_GRAPH_TRACE``
  (``--cuda-graph-trace=graph``).  Columns: start, end, gpid, device, context, stream, corr,
  graph_id, exec_id.
- ``graph_api``: graph API events on CPU threads: graph-level ``CUDA_GRAPH_EVENTS`` (graphId,
  graphExecId; newer shape) and node creation (``CUDA_GRAPH_NODE_EVENTS``, or ``CUDA_GRAPH_EVENTS``
  with graphNodeId in <= 3.0.0).  Columns: start, end, tid, name, graph_id, exec_id, node_id
  (0 = not applicable).

Node-level execution (``--cuda-graph-trace=node``) needs no table here: kernels, memcpys and
memsets carry ``graphNodeId`` (written as type 63000102 on kernels).
"""

from __future__ import annotations

import pandas as pd

from nsys2prv.nsys.database import Report
from nsys2prv.nsys.readers.base import (
    GPU_ACTIVITY_COLUMNS,
    Reader,
    ReadResult,
    host_rows,
    read_gpu_activity,
    text_names,
    to_int64,
)

TRACE, EVENTS, NODES = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE", "CUDA_GRAPH_EVENTS", "CUDA_GRAPH_NODE_EVENTS"


def read_exec(report: Report) -> ReadResult | None:
    got = read_gpu_activity(
        report, TRACE, {"graph_id": "graphId", "exec_id": "graphExecId"}, numeric=("graph_id", "exec_id")
    )
    if got is None:
        return None
    df, res = got
    res.table = df[["start", "end", *GPU_ACTIVITY_COLUMNS, "graph_id", "exec_id"]]
    return res


def _api_table(report: Report, table: str) -> pd.DataFrame | None:
    if not report.has(table, "start", "end", "globalTid", "nameId"):
        return None
    optional = ", ".join(
        report.col_or_null(table, col, alias)
        for col, alias in (("graphId", "graph_id"), ("graphExecId", "exec_id"), ("graphNodeId", "node_id"))
    )
    return report.query(f"SELECT start, end, globalTid AS tid, nameId, {optional} FROM {table}")


def read_api(report: Report) -> ReadResult | None:
    got = host_rows([_api_table(report, EVENTS), _api_table(report, NODES)])
    if got is None:
        return None
    df, res = got
    for col in ("graph_id", "exec_id", "node_id"):
        to_int64(df, col)
    df["name"] = text_names(report, df["nameId"], strip_suffix=True)
    res.table = df[["start", "end", "tid", "name", "graph_id", "exec_id", "node_id"]]
    return res


EXEC_READER = Reader((TRACE,), read_exec, as_exported=True)
API_READER = Reader((EVENTS, NODES), read_api)
