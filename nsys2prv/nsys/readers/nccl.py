"""NCCL: the NVTX ranges of the "NCCL" domain with their payloads decoded (docs/nsys-schema.md).

Payload forms:
- JSON (``jsonText``/``jsonTextId``): an object of ``{"field name": value}``, possibly nested
  (leaves are flattened);
- binary (``binaryData``, newer exports with ``--include-blobs``): decoded with the schema the
  export describes in ``NVTX_PAYLOAD_SCHEMA_ENTRIES`` (entry names, NVTX payload entry types,
  offsets) and ``NVTX_PAYLOAD_ENUM_ENTRIES`` for enumerations.  The blob layout is not documented:
  we read a 32-byte header (u64 domainId, schemaId, payload size, header size, little endian) and
  the payload after it (the one third-party model known, docs/nsys-schema.md: unverified).

Normalised columns: those of the NVTX range table, plus one column per known field
(``registry.NCCL_FIELDS``): bytes, datatype, redop, root, comm, rank, nranks, peer, cuda_device
(NaN / None when absent).  Enumerations become their zero-based index; the communicator id stays a
64-bit hash, as a hex string.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np
import pandas as pd

from nsys2prv.core.registry import NCCL_DATATYPES, NCCL_REDOPS
from nsys2prv.nsys.database import Report
from nsys2prv.nsys.readers.base import Reader, ReadResult, int64
from nsys2prv.nsys.readers.nvtx import TABLE as NVTX_TABLE
from nsys2prv.nsys.readers.nvtx import load_nvtx, read_nccl_ranges

NCCL_BY_NAME = "NVTX domain without a name, recognised as NCCL by its range names (nccl*)"
SCHEMA_ENTRIES, ENUM_ENTRIES = "NVTX_PAYLOAD_SCHEMA_ENTRIES", "NVTX_PAYLOAD_ENUM_ENTRIES"
FIELD_NAMES = {  # lower-case payload entry name -> normalised column (NCCL's nvtx_payload_schemas.h names)
    "message size [bytes]": "bytes",
    "bytes": "bytes",
    "size": "bytes",
    "datatype": "datatype",
    "data type": "datatype",
    "reduction operation": "redop",
    "op": "redop",
    "redop": "redop",
    "root": "root",
    "nccl communicator id": "comm",
    "comm": "comm",
    "communicator": "comm",
    "rank": "rank",
    "no. of ranks": "nranks",
    "nranks": "nranks",
    "peer rank": "peer",
    "peer": "peer",
    "cuda device": "cuda_device",
}
FIELDS = ("bytes", "datatype", "redop", "root", "comm", "rank", "nranks", "peer", "cuda_device")
ENUMS = {"datatype": NCCL_DATATYPES, "redop": NCCL_REDOPS}
# NVTX payload entry types (nvToolsExtPayload.h) -> struct format (LP64 sizes)
ENTRY_FORMATS = {
    1: "b",
    2: "B",
    3: "h",
    4: "H",
    5: "i",
    6: "I",
    7: "q",
    8: "Q",
    9: "q",
    10: "Q",
    11: "b",
    12: "B",
    13: "h",
    14: "H",
    15: "i",
    16: "I",
    17: "q",
    18: "Q",
    19: "f",
    20: "d",
    22: "Q",
    23: "Q",
}
HEADER = struct.Struct("<QQQQ")


def _enum_index(field: str, value) -> float:
    """Zero-based index of an enumeration value given as a number or a name ("Sum", "ncclSum")."""
    if isinstance(value, str):
        names = [n.lower() for n in ENUMS[field]]
        v = value.strip().lower()
        for cand in (v, "nccl" + v):
            if cand in names:
                return float(names.index(cand))
        try:
            return float(int(v, 0))
        except ValueError:
            return np.nan
    return float(value)


def _normalise(fields: dict, unknown: dict) -> dict[str, str | float]:
    out: dict[str, str | float] = {}
    for name, value in fields.items():
        key = FIELD_NAMES.get(str(name).strip().lower())
        if key is None or value is None:
            unknown[str(name)] = unknown.get(str(name), 0) + 1
            continue
        if key == "comm":
            try:
                out[key] = f"0x{int(value, 0) if isinstance(value, str) else int(value) & (2**64 - 1):016x}"
            except (TypeError, ValueError):
                out[key] = str(value)
        elif key in ENUMS:
            out[key] = _enum_index(key, value)
        else:
            try:
                out[key] = float(value)
            except (TypeError, ValueError):
                unknown[str(name)] = unknown.get(str(name), 0) + 1
    return out


def _flatten(obj, into: dict) -> dict:
    for k, v in obj.items():
        if isinstance(v, dict):
            _flatten(v, into)
        else:
            into[k] = v
    return into


def _parse_json(text) -> dict | None:
    try:
        obj = json.loads(text)
    except (TypeError, ValueError):
        return None
    return _flatten(obj, {}) if isinstance(obj, dict) else None


class _Schemas:
    """Payload schemas and enums of one report, as the export describes them."""

    def __init__(self, report: Report):
        self.entries: dict[int, list[tuple]] = {}
        self.enums: dict[int, dict[int, str]] = {}
        if report.has(SCHEMA_ENTRIES, "schemaId", "idx", "type", "name"):
            e = report.query(
                f"SELECT schemaId, idx, type, name, {report.col_or_null(SCHEMA_ENTRIES, 'offset')} "
                f"FROM {SCHEMA_ENTRIES} ORDER BY schemaId, idx"
            )
            for sid, typ, name, offset in zip(
                int64(e["schemaId"]), int64(e["type"]), e["name"], pd.to_numeric(e["offset"], errors="coerce")
            ):
                self.entries.setdefault(int(sid), []).append(
                    (int(typ), str(name), None if pd.isna(offset) else int(offset))
                )
        if report.has(ENUM_ENTRIES, "schemaId", "name", "value"):
            e = report.query(f"SELECT schemaId, name, value FROM {ENUM_ENTRIES}")
            for sid, name, val in zip(int64(e["schemaId"]), e["name"], int64(e["value"])):
                self.enums.setdefault(int(sid), {})[int(val)] = str(name)

    def decode(self, blob) -> dict | None:
        if isinstance(blob, str):
            try:
                blob = bytes.fromhex(blob)
            except ValueError:
                blob = blob.encode("latin-1", errors="replace")
        if not isinstance(blob, (bytes, bytearray)) or len(blob) < HEADER.size:
            return None
        _, schema, size, hsize = HEADER.unpack_from(blob)
        entries = self.entries.get(int(schema))
        if entries is None:
            return None
        start = hsize if HEADER.size <= hsize <= len(blob) else HEADER.size
        payload = bytes(blob[start : start + size]) if size else bytes(blob[start:])
        out: dict[str, Any] = {}
        pos = 0
        for typ, name, offset in entries:
            fmt = ENTRY_FORMATS.get(typ, "i" if typ in self.enums else None)
            if fmt is None:
                return out or None  # unknown entry type: later offsets cannot be trusted
            n = struct.calcsize(fmt)
            pos = offset if offset is not None else -(-pos // n) * n  # natural alignment
            if pos + n > len(payload):
                break
            value = struct.unpack_from("<" + fmt, payload, pos)[0]
            pos += n
            out[name] = self.enums[typ].get(int(value), int(value)) if typ in self.enums else value
        return out


def read(report: Report) -> ReadResult | None:
    res = read_nccl_ranges(report)
    nv = load_nvtx(report)  # (cached: read by read_nccl_ranges)
    if res is None or nv is None:
        return None
    df = res.table
    res.note(NCCL_BY_NAME, nv.nccl_by_name)
    unknown: dict[str, int] = {}
    parsed: list[dict] = [{}] * len(df)
    has_json = df["json"].notna().to_numpy()
    if has_json.any():
        codes, uniq = pd.factorize(df["json"][has_json].astype(str))
        decoded = [_parse_json(u) for u in uniq]
        res.drop(
            "NCCL payload: JSON not parsable (range kept without payload)", int(sum(decoded[c] is None for c in codes))
        )
        idx = np.flatnonzero(has_json)
        for i, c in zip(idx, codes):
            parsed[i] = decoded[c] or {}
    has_bin = df["binaryData"].notna().to_numpy() & ~has_json
    if has_bin.any() and report.has(NVTX_TABLE, "binaryData"):
        schemas = _Schemas(report)
        idx = np.flatnonzero(has_bin)
        for i in idx:
            d = schemas.decode(df["binaryData"].iat[i])
            if d is None:
                res.note("NCCL payload: binary payload without a known schema (range kept without payload)", 1)
            parsed[i] = d or {}
    norm = [_normalise(p, unknown) if p else {} for p in parsed]
    for field in FIELDS:
        col = [n.get(field) for n in norm]
        df[field] = pd.Series(col, dtype=object if field == "comm" else float, index=df.index)
    for name, n in unknown.items():
        res.note(f"NCCL payload field without a Paraver type: {name}", n)
    res.table = df.drop(columns=["binaryData"])
    return res


READER = Reader((NVTX_TABLE, SCHEMA_ENTRIES, ENUM_ENTRIES, "NVTX_PAYLOAD_SCHEMAS", "NVTX_PAYLOAD_ENUMS"), read)
