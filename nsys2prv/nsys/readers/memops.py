"""CUDA memory copies and memsets (CUPTI_ACTIVITY_KIND_MEMCPY / _MEMSET).

Normalised columns, both: start, end, gpid, device, context, stream, corr, bytes;
memcpy adds copy_kind (ENUM_CUDA_MEMCPY_OPER ids), src_kind, dst_kind,
src_device, dst_device; memset adds value, mem_kind.
"""

from __future__ import annotations

from nsys2prv.nsys.readers.base import ReadResult, Reader, int64, interval_frame
from nsys2prv.nsys.schema import Report

MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
COMMON = ("gpid", "device", "context", "stream", "corr", "bytes")


def _read(report: Report, table: str, extra: dict[str, str]) -> ReadResult | None:
    if not report.has(table, "start", "end", "deviceId", "streamId", "globalPid"):
        return None
    cols = [report.col_or_null(table, c, n) for n, c in extra.items()]
    df = report.query(
        f"SELECT start, end, globalPid AS gpid, deviceId AS device, "
        f"{report.col_or_null(table, 'contextId', 'context')}, streamId AS stream, "
        f"{report.col_or_null(table, 'correlationId', 'corr')}, {report.col_or_null(table, 'bytes')}, "
        + ", ".join(cols) + f" FROM {table}")
    res = ReadResult(table=df, source_rows=len(df))
    df = interval_frame(df, res)
    for c in (*COMMON, *extra):
        df[c] = int64(df[c], fill=-1 if c == "corr" else 0)
    res.table = df[["start", "end", *COMMON, *extra]]
    return res


def read_memcpy(report: Report) -> ReadResult | None:
    return _read(report, MEMCPY, {"copy_kind": "copyKind", "src_kind": "srcKind", "dst_kind": "dstKind",
                                  "src_device": "srcDeviceId", "dst_device": "dstDeviceId"})


def read_memset(report: Report) -> ReadResult | None:
    return _read(report, MEMSET, {"value": "value", "mem_kind": "memKind"})


MEMCPY_READER = Reader("memcpy", ("gpu",), (MEMCPY,), read_memcpy, "CUDA memory copies")
MEMSET_READER = Reader("memset", ("gpu",), (MEMSET,), read_memset, "CUDA memsets")
