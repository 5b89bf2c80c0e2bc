"""CUDA kernels (CUPTI_ACTIVITY_KIND_KERNEL).

Normalised columns: start, end, gpid, device, context, stream, corr, name (short
name), demangled, grid_x/y/z, block_x/y/z, registers, static_smem, dynamic_smem,
local_mem, graph_node (0 = none).
"""

from __future__ import annotations

import numpy as np

from nsys2prv.nsys.readers.base import ReadResult, Reader, int64, interval_frame, text_names
from nsys2prv.nsys.schema import Report

TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
NUMERIC = {  # normalised name -> export column
    "grid_x": "gridX", "grid_y": "gridY", "grid_z": "gridZ",
    "block_x": "blockX", "block_y": "blockY", "block_z": "blockZ",
    "registers": "registersPerThread", "static_smem": "staticSharedMemory",
    "dynamic_smem": "dynamicSharedMemory", "local_mem": "localMemoryPerThread",
    "graph_node": "graphNodeId",
}


def read(report: Report) -> ReadResult | None:
    if not report.has(TABLE, "start", "end", "deviceId", "streamId", "globalPid"):
        return None
    cols = [report.col_or_null(TABLE, c, n) for n, c in NUMERIC.items()]
    df = report.query(
        f"SELECT start, end, globalPid AS gpid, deviceId AS device, "
        f"{report.col_or_null(TABLE, 'contextId', 'context')}, streamId AS stream, "
        f"{report.col_or_null(TABLE, 'correlationId', 'corr')}, "
        f"{report.col_or_null(TABLE, 'shortName')}, {report.col_or_null(TABLE, 'demangledName')}, "
        + ", ".join(cols) + f" FROM {TABLE}")
    res = ReadResult(table=df, source_rows=len(df))
    df = interval_frame(df, res)
    for c in ("gpid", "device", "context", "stream"):
        df[c] = int64(df[c])
    df["corr"] = int64(df["corr"], fill=-1)
    for c in NUMERIC:
        df[c] = int64(df[c])
    short = df["shortName"] if df["shortName"].notna().any() else df["demangledName"]
    df["name"] = text_names(report, short)
    dem = df["demangledName"].where(df["demangledName"].notna(), short)
    df["demangled"] = text_names(report, dem)
    res.table = df[["start", "end", "gpid", "device", "context", "stream", "corr", "name", "demangled",
                    *NUMERIC]]
    return res


READER = Reader("kernels", ("gpu",), (TABLE,), read, "CUDA kernels")
