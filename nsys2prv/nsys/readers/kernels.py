"""CUDA kernels (CUPTI_ACTIVITY_KIND_KERNEL).

Normalised columns: start, end, gpid, device, context, stream, corr, name (short
name), demangled, grid_x/y/z, block_x/y/z, registers, static_smem, dynamic_smem,
local_mem, graph_node (0 = none), nccl (the kernel is NCCL communication: ``core.classify.is_nccl``
on its short name, the one place the rule is applied; translation, POP and the clock alignment read
this column).
"""

from __future__ import annotations

from nsys2prv.core.classify import is_nccl
from nsys2prv.nsys.database import Report
from nsys2prv.nsys.readers.base import (
    GPU_ACTIVITY_COLUMNS,
    Reader,
    ReadResult,
    read_gpu_activity,
    text_names,
)

TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
NUMERIC = {  # normalised name -> export column
    "grid_x": "gridX",
    "grid_y": "gridY",
    "grid_z": "gridZ",
    "block_x": "blockX",
    "block_y": "blockY",
    "block_z": "blockZ",
    "registers": "registersPerThread",
    "static_smem": "staticSharedMemory",
    "dynamic_smem": "dynamicSharedMemory",
    "local_mem": "localMemoryPerThread",
    "graph_node": "graphNodeId",
}
WARN = tuple(c for c in NUMERIC if c != "graph_node")  # (no graph node id: not in a graph)


def read(report: Report) -> ReadResult | None:
    got = read_gpu_activity(
        report,
        TABLE,
        {"shortName": "shortName", "demangledName": "demangledName", **NUMERIC},
        numeric=tuple(NUMERIC),
        warn=WARN,
    )
    if got is None:
        return None
    df, res = got
    short = df["shortName"] if df["shortName"].notna().any() else df["demangledName"]
    df["name"] = text_names(report, short)
    dem = df["demangledName"].where(df["demangledName"].notna(), short)
    df["demangled"] = text_names(report, dem)
    # a parameter the export lacks is no column (noted by the reader): no value is made up for it
    lacking = set(report.optional_missing.get(TABLE, ()))
    df["nccl"] = is_nccl(df["name"])
    res.table = df[
        [
            "start",
            "end",
            *GPU_ACTIVITY_COLUMNS,
            "name",
            "demangled",
            *(c for c in NUMERIC if c not in WARN or NUMERIC[c] not in lacking),
            "nccl",
        ]
    ]
    return res


READER = Reader((TABLE,), read, as_exported=True)
