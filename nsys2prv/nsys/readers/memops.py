"""CUDA memory copies and memsets (CUPTI_ACTIVITY_KIND_MEMCPY / _MEMSET).

Normalised columns, both: start, end, gpid, device, context, stream, corr, bytes;
memcpy adds copy_kind (ENUM_CUDA_MEMCPY_OPER ids), src_kind, dst_kind,
src_device, dst_device; memset adds value, mem_kind.
"""

from __future__ import annotations

from nsys2prv.nsys.database import Report
from nsys2prv.nsys.readers.base import (
    GPU_ACTIVITY_COLUMNS,
    Reader,
    ReadResult,
    read_gpu_activity,
)

MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"


def _read(report: Report, table: str, extra: dict[str, str]) -> ReadResult | None:
    got = read_gpu_activity(report, table, {"bytes": "bytes", **extra}, numeric=("bytes", *extra))
    if got is None:
        return None
    df, res = got
    res.table = df[["start", "end", *GPU_ACTIVITY_COLUMNS, "bytes", *extra]]
    return res


def read_memcpy(report: Report) -> ReadResult | None:
    return _read(
        report,
        MEMCPY,
        {
            "copy_kind": "copyKind",
            "src_kind": "srcKind",
            "dst_kind": "dstKind",
            "src_device": "srcDeviceId",
            "dst_device": "dstDeviceId",
        },
    )


def read_memset(report: Report) -> ReadResult | None:
    return _read(report, MEMSET, {"value": "value", "mem_kind": "memKind"})


MEMCPY_READER = Reader((MEMCPY,), read_memcpy, as_exported=True)
MEMSET_READER = Reader((MEMSET,), read_memset, as_exported=True)
