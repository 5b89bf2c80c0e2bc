"""Generate Nsight Systems-shaped SQLite exports with REAL DDL and known contents.

Four schema shapes (docs/nsys-schema.md, "the sheet"):

- ``"2.9.1"``  (nsys 2022.2): derived from the 3.0.0 DDL by explicit transformations (``_to_2_9_1``).
- ``"3.0.0"``  (nsys 2022.4): ``data/ddl/schema_3.0.0.sql``, a ``nsys export --lazy false`` of the local
  nsys 2022.4 (every table), and ``enums_3.0.0.sql``.
- ``"3.13.2"`` (nsys 2024.5): ``data/ddl/schema_3.13.2.sql``, the DDL of the cloverleaf export.  That
  export is *lazy*, so tables it had no data for are missing from it; the few this builder writes
  (NVTX_EVENTS, CUPTI_ACTIVITY_KIND_MEMSET, MPI_*, GENERIC_EVENTS*) are supplemented (``_to_3_13_2``).
- ``"3.22"``   (nsys 2025.x): the 3.13.2 shape plus the tables/columns the sheet documents for newer
  schemas (``_to_3_22``).

The builder records rows as dicts keyed by export column names; ``save()`` creates the tables from the
DDL, introspects each table's columns (``PRAGMA table_info``) and inserts only columns that exist,
filling NOT NULL columns that are not modelled with defaults (0 / '').
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

DDL_DIR = Path(__file__).parent / "data" / "ddl"
SCHEMAS = ("2.9.1", "3.0.0", "3.13.2", "3.22")
OLD_SCHEMAS = ("2.9.1", "3.0.0")  # MPI as the NVTX domain "MPI", EXPORT_META_DATA
MPI_TABLE_SCHEMAS = ("3.13.2", "3.22")  # MPI_* tables, META_DATA_EXPORT

# Per-shape metadata written to EXPORT_META_DATA / META_DATA_EXPORT.
VERSIONS = {  # shape -> (EXPORT_SCHEMA_VERSION, EXPORT_PRODUCT_VERSION)   (sheet §1 table)
    "2.9.1": ("2.9.1", "2022.2.1.31"),
    "3.0.0": ("3.0.0", "2022.4.2.1"),
    "3.13.2": ("3.13.2", "2024.5.1.113"),
    "3.22": ("3.22.1", "2025.4.1.172"),
}

# NSYS event types (ENUM_NSYS_EVENT_TYPE, sheet §7.2) and classes (§13).
NVTX_CATEGORY, NVTX_MARK, NVTX_THREAD, NVTX_PUSHPOP, NVTX_STARTEND, NVTX_DOMAIN = 33, 34, 39, 59, 60, 75
CLASS_CUDA_RUNTIME, CLASS_CUDA_DRIVER, CLASS_OSRT = 0, 1, 27

GLOBAL_VID_NAME_ENUM_HOSTNAME = 619  # TARGET_INFO_SYSTEM_ENV.nameEnum of 'Hostname' (cloverleaf)


# ----------------------------------------------------------------------------------------------------
# globalTid / globalPid encoding (sheet §2)
def encode_gtid(pid: int, tid: int = 0, vm: int = 1, hw: int = 0) -> int:
    """hw<<56 | vm<<48 | pid<<24 | tid.  ``tid=0`` gives the globalPid."""
    for what, v, bits in (("hw", hw, 8), ("vm", vm, 8), ("pid", pid, 24), ("tid", tid, 24)):
        if not 0 <= v < (1 << bits):
            raise ValueError(f"{what}={v} does not fit in {bits} bits")
    return (hw << 56) | (vm << 48) | (pid << 24) | tid


def decode_gtid(g: int) -> dict:
    return {"hw": (g >> 56) & 0xFF, "vm": (g >> 48) & 0xFF, "pid": (g >> 24) & 0xFFFFFF, "tid": g & 0xFFFFFF}


# ----------------------------------------------------------------------------------------------------
# DDL handling: a tiny model of the sqlite3 ``.schema`` text, so transformations can insert columns
# at their real position (e.g. greenContextId after contextId), rename or drop them.
@dataclass
class Column:
    name: str
    decl: str  # "INTEGER   NOT NULL" ...
    comment: str = ""  # "-- ..." (may be empty)


@dataclass
class TableDDL:
    name: str
    head: list  # comment / blank lines before the first column
    items: list  # Column or str (table-level constraint such as "PRIMARY KEY (id, stackDepth)")

    def column_names(self) -> list[str]:
        return [c.name for c in self.items if isinstance(c, Column)]

    def index(self, col: str) -> int:
        for i, c in enumerate(self.items):
            if isinstance(c, Column) and c.name == col:
                return i
        raise KeyError(f"{self.name}.{col}")

    def add(self, col: Column, after: str | None = None) -> None:
        """Insert after column ``after`` (None: after the last column, before table constraints)."""
        if col.name in self.column_names():
            raise ValueError(f"{self.name}.{col.name} exists")
        if after is None:
            pos = max((i for i, c in enumerate(self.items) if isinstance(c, Column)), default=-1) + 1
        else:
            pos = self.index(after) + 1
        self.items.insert(pos, col)

    def drop(self, col: str) -> None:
        del self.items[self.index(col)]

    def render(self) -> str:
        lines = [f"CREATE TABLE {self.name} ("] + list(self.head)
        n = len(self.items)
        for i, it in enumerate(self.items):
            comma = "," if i < n - 1 else ""
            if isinstance(it, Column):
                body = f"    {it.name:<27} {it.decl}{comma}"
                lines.append(f"{body:<71}{it.comment}".rstrip() if it.comment else body)
            else:
                lines.append(f"    {it}{comma}")
        return "\n".join(lines) + "\n);"


_TABLE_RE = re.compile(r"^CREATE TABLE (\w+) \((.*?)\n\);", re.S | re.M)
_COL_RE = re.compile(r"^\s+(\w+)\s+([^,-]*?)\s*(,?)\s*(--.*)?$")


def parse_ddl(text: str) -> dict[str, TableDDL]:
    tables: dict[str, TableDDL] = {}
    for m in _TABLE_RE.finditer(text):
        head, items = [], []
        for line in m.group(2).split("\n")[1:]:
            s = line.strip()
            if not items and (s == "" or s.startswith("--")):
                head.append(line)
                continue
            if s == "" or s.startswith("--"):
                continue
            if s.startswith(("PRIMARY KEY", "UNIQUE", "FOREIGN KEY", "CHECK")):
                items.append(s.rstrip(","))
                continue
            cm = _COL_RE.match(line)
            if not cm:
                raise ValueError(f"unparsed DDL line in {m.group(1)}: {line!r}")
            items.append(Column(cm.group(1), cm.group(2).strip(), (cm.group(4) or "").strip()))
        tables[m.group(1)] = TableDDL(m.group(1), head, items)
    return tables


def _col(name: str, decl: str, comment: str = "") -> Column:
    return Column(name, decl, f"-- {comment}" if comment else "")


def _tbl(name: str, cols: list[Column], comment: str) -> TableDDL:
    return TableDDL(name, [f"    -- {comment}", ""], cols)


def _read_ddl(version: str) -> dict[str, TableDDL]:
    path = DDL_DIR / f"schema_{version}.sql"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing (see tests/nsysgen.py docstring for how it is made)")
    return parse_ddl(path.read_text(encoding="utf-8"))


# --- supplements: tables the sheet documents but no local DDL file holds -----------------------------
def _generic_event_tables() -> list[TableDDL]:
    """GPU metrics, older form (sheet §12 A).  Not in the 3.0.0 --lazy false DDL (the 2022.4 exporter
    creates them only when metrics were collected) nor in the lazy 3.13.2 one."""
    return [
        _tbl(
            "GENERIC_EVENT_SOURCES",
            [_col("sourceId", "INTEGER   NOT NULL   PRIMARY KEY"), _col("data", "TEXT      NOT NULL", "JSON")],
            "supplement (sheet §12 A): generic event sources",
        ),
        _tbl(
            "GENERIC_EVENT_TYPES",
            [
                _col("typeId", "INTEGER   NOT NULL   PRIMARY KEY"),
                _col("sourceId", "INTEGER   NOT NULL", "REFERENCES GENERIC_EVENT_SOURCES"),
                _col("data", "TEXT      NOT NULL", "JSON"),
            ],
            "supplement (sheet §12 A): generic event types",
        ),
        _tbl(
            "GENERIC_EVENTS",
            [
                _col("rawTimestamp", "INTEGER   NOT NULL"),
                _col("timestamp", "INTEGER   NOT NULL"),
                _col("typeId", "INTEGER   NOT NULL", "REFERENCES GENERIC_EVENT_TYPES; gpu = typeId & 0xFF"),
                _col("data", "TEXT      NOT NULL", "JSON, e.g. {\"SM Active\": 50}"),
            ],
            "supplement (sheet §12 A): generic events (GPU metrics as JSON)",
        ),
    ]


def _mpi_tables(with_comm_uid: bool) -> list[TableDDL]:
    """MPI_* tables, exact columns of sheet §9.2.  ``commUid`` only where the shape has it."""
    uid = [_col("commUid", "INTEGER", "type not in the sheet: INTEGER chosen (a uid)")] if with_comm_uid else []
    ev = [
        _col("start", "INTEGER   NOT NULL"),
        _col("end", "INTEGER", "nullable (sheet §9.2)"),
        _col("globalTid", "INTEGER"),
        _col("textId", "INTEGER   NOT NULL", "REFERENCES StringIds(id) -- function name"),
    ]
    req = _col("requestHandle", "INTEGER")
    return [
        _tbl(
            "MPI_RANKS",
            [_col("globalTid", "INTEGER   NOT NULL"), _col("rank", "INTEGER   NOT NULL")],
            "supplement (sheet §9.2): MPI rank of each thread",
        ),
        _tbl(
            "MPI_P2P_EVENTS",
            [
                *ev,
                _col("commHandle", "INTEGER"),
                *uid,
                _col("tag", "INTEGER"),
                _col("remoteRank", "INTEGER"),
                _col("size", "INTEGER"),
                req,
            ],
            "supplement (sheet §9.2): MPI point-to-point calls",
        ),
        _tbl(
            "MPI_COLLECTIVES_EVENTS",
            [
                *ev,
                _col("commHandle", "INTEGER"),
                *uid,
                _col("rootRank", "INTEGER"),
                _col("size", "INTEGER", "send size"),
                _col("recvSize", "INTEGER"),
                req,
            ],
            "supplement (sheet §9.2): MPI collectives",
        ),
        _tbl("MPI_START_WAIT_EVENTS", [*ev, req], "supplement (sheet §9.2): MPI_Start*/Wait*"),
        _tbl("MPI_OTHER_EVENTS", list(ev), "supplement (sheet §9.2): other MPI calls"),
        _tbl(
            "MPI_COMMUNICATORS",
            [
                _col("rank", "INTEGER"),
                _col("timestamp", "INTEGER"),
                _col("commHandle", "INTEGER"),
                _col("parentHandle", "INTEGER"),
                _col("localRank", "INTEGER"),
                _col("size", "INTEGER"),
                _col("groupRoot", "INTEGER"),
                _col("groupRootUid", "INTEGER"),
                _col("members", "TEXT"),
                *uid,
            ],
            "supplement (sheet §9.2): MPI communicators",
        ),
    ]


def _to_2_9_1(t: dict[str, TableDDL]) -> dict[str, TableDDL]:
    """3.0.0 -> 2.9.1, the differences of sheet §14 row 1-2 (each one checked in the saxpy export [L])."""
    # (1) Schema 2.x has no ENUM_* tables (only UnwindMethodType, which 3.0.0 also has).
    t = {k: v for k, v in t.items() if not k.startswith("ENUM_")}
    # (2) CUDA_GPU_MEMORY_POOL_EVENTS and the memory-pool columns of CUDA_GPU_MEMORY_USAGE_EVENTS
    #     were added in 3.0.0.
    t.pop("CUDA_GPU_MEMORY_POOL_EVENTS", None)
    usage = t["CUDA_GPU_MEMORY_USAGE_EVENTS"]
    for c in [c for c in usage.column_names() if "MemoryPool" in c]:
        usage.drop(c)
    # (3) DX12 object names were plain TEXT (objectName) before 3.0.0's objectNameId -> StringIds.
    for tab in t.values():
        for i, c in enumerate(tab.items):
            if isinstance(c, Column) and c.name == "objectNameId":
                tab.items[i] = Column("objectName", "TEXT", "-- D3D12 object name (2.x: TEXT)")
    # (4) TARGET_INFO_CUDA_NULL_STREAM (not TARGET_INFO_CUDA_CONTEXT_INFO) and CUDA_GRAPH_EVENTS with
    #     node columns (graphNodeId, originalGraphNodeId): already so in 3.0.0, kept as is.
    assert "TARGET_INFO_CUDA_NULL_STREAM" in t and "TARGET_INFO_CUDA_CONTEXT_INFO" not in t
    assert "graphNodeId" in t["CUDA_GRAPH_EVENTS"].column_names()
    # (5) EXPORT_META_DATA (not META_DATA_EXPORT): as in 3.0.0.
    assert "EXPORT_META_DATA" in t
    return t


def _to_3_13_2(t: dict[str, TableDDL], t300: dict[str, TableDDL]) -> dict[str, TableDDL]:
    """Complete the lazy 3.13.2 DDL with the tables this builder writes that the cloverleaf export
    had no data for (so lazily did not create)."""
    # NVTX_EVENTS: columns "identical in 2.9.1, 3.0.0 and the 2024 docs" (sheet §7.1): take 3.0.0's.
    t["NVTX_EVENTS"] = t300["NVTX_EVENTS"]
    # CUPTI_ACTIVITY_KIND_MEMSET: 3.0.0's plus greenContextId after contextId, as KERNEL and MEMCPY
    # of this very DDL have it (sheet §6.4 lists [greenContextId] for MEMSET too).
    memset = t300["CUPTI_ACTIVITY_KIND_MEMSET"]
    memset.add(Column("greenContextId", "INTEGER", "-- Green context ID."), after="contextId")
    t["CUPTI_ACTIVITY_KIND_MEMSET"] = memset
    # MPI_* tables (the sheet: present in every schema >= 3.11).  commUid is a later addition
    # (sheet §9.2 "[commUid] was added later [D 3.28]"), so not in this shape.
    for tab in _mpi_tables(with_comm_uid=False):
        t[tab.name] = tab
    # GPU metrics in the GENERIC_EVENTS form for this shape (as the generator's spec asks; note the
    # sheet suggests 3.13.2 exports would rather use GPU_METRICS).
    for tab in _generic_event_tables():
        t[tab.name] = tab
    # OpenACC tables: 3.0.0's (sheet §10: same shared columns until 3.28 adds correlationId).
    for name in (
        "CUPTI_ACTIVITY_KIND_OPENACC_DATA",
        "CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH",
        "CUPTI_ACTIVITY_KIND_OPENACC_OTHER",
    ):
        t[name] = t300[name]
    # CUDA graphs, newer shape (sheet §6.7, "present in schemas used with 3.11+").
    for tab in _graph_tables():
        t[tab.name] = tab
    return t


def _graph_tables() -> list[TableDDL]:
    """Sheet §6.7, later shape: the node table renamed CUDA_GRAPH_NODE_EVENTS, CUDA_GRAPH_EVENTS
    graph-level, whole-graph launches in CUPTI_ACTIVITY_KIND_GRAPH_TRACE."""
    common = [
        _col("start", "INTEGER   NOT NULL"),
        _col("end", "INTEGER   NOT NULL"),
        _col("eventClass", "INTEGER   NOT NULL", "REFERENCES ENUM_NSYS_EVENT_CLASS(id)"),
        _col("globalTid", "INTEGER"),
        _col("nameId", "INTEGER   NOT NULL", "REFERENCES StringIds(id)"),
    ]
    return [
        _tbl(
            "CUDA_GRAPH_NODE_EVENTS",
            [*common, _col("graphNodeId", "INTEGER   NOT NULL"), _col("originalGraphNodeId", "INTEGER")],
            "supplement (sheet §6.7): graph node creation (formerly CUDA_GRAPH_EVENTS)",
        ),
        _tbl(
            "CUDA_GRAPH_EVENTS",
            [
                *common,
                _col("graphId", "INTEGER   NOT NULL"),
                _col("originalGraphId", "INTEGER"),
                _col("graphExecId", "INTEGER"),
            ],
            "supplement (sheet §6.7): graph-level events",
        ),
        _tbl(
            "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
            [
                _col("start", "INTEGER   NOT NULL"),
                _col("end", "INTEGER   NOT NULL"),
                _col("deviceId", "INTEGER   NOT NULL"),
                _col("contextId", "INTEGER   NOT NULL"),
                _col("greenContextId", "INTEGER"),
                _col("streamId", "INTEGER   NOT NULL"),
                _col("correlationId", "INTEGER"),
                _col("globalPid", "INTEGER"),
                _col("graphId", "INTEGER"),
                _col("graphExecId", "INTEGER"),
            ],
            "supplement (sheet §6.7): whole-graph launches (--cuda-graph-trace=graph)",
        ),
    ]


def _to_3_22(t: dict[str, TableDDL]) -> dict[str, TableDDL]:
    """3.13.2 shape -> "3.22" (nsys 2025.x): additions the sheet documents for newer schemas."""
    # MPI tables with commUid after commHandle (§9.2).
    for tab in _mpi_tables(with_comm_uid=True):
        t[tab.name] = tab
    # GPU metrics, newer form (§12 B) replaces GENERIC_EVENTS for metrics.
    for name in ("GENERIC_EVENTS", "GENERIC_EVENT_TYPES", "GENERIC_EVENT_SOURCES"):
        t.pop(name, None)
    t["TARGET_INFO_GPU_METRICS"] = _tbl(
        "TARGET_INFO_GPU_METRICS",
        [
            _col("typeId", "INTEGER   NOT NULL", "gpu = typeId & 0xFF"),
            _col("sourceId", "INTEGER   NOT NULL"),
            _col("typeName", "TEXT      NOT NULL"),
            _col("metricId", "INTEGER   NOT NULL", "not stable across reports"),
            _col("metricName", "TEXT      NOT NULL"),
        ],
        "supplement (sheet §12 B): GPU metric descriptions",
    )
    t["GPU_METRICS"] = _tbl(
        "GPU_METRICS",
        [
            _col("timestamp", "INTEGER"),
            _col("typeId", "INTEGER   NOT NULL"),
            _col("metricId", "INTEGER   NOT NULL"),
            _col("value", "INTEGER   NOT NULL"),
        ],
        "supplement (sheet §12 B): GPU metric samples",
    )
    # Per-process CUDA device ordinal -> GPU (§6.6).  Types not given by the sheet: ids INTEGER, uuid TEXT.
    t["TARGET_INFO_CUDA_DEVICE"] = _tbl(
        "TARGET_INFO_CUDA_DEVICE",
        [
            _col("gpuId", "INTEGER   NOT NULL", "REFERENCES TARGET_INFO_GPU(id)"),
            _col("cudaId", "INTEGER   NOT NULL", "CUDA device ordinal in the process"),
            _col("pid", "INTEGER   NOT NULL", "plain process id"),
            _col("uuid", "TEXT", "type chosen: TEXT"),
            _col("numMultiprocessors", "INTEGER"),
        ],
        "supplement (sheet §6.6): CUDA devices per process",
    )
    # NVTX binary payloads (§7.4): binaryData is TEXT per the docs (possibly a BLOB in practice).
    t["NVTX_EVENTS"].add(Column("binaryData", "TEXT", "-- binary payload (--include-blobs)"))
    t["NVTX_PAYLOAD_SCHEMAS"] = _tbl(
        "NVTX_PAYLOAD_SCHEMAS",
        [
            _col("domainId", "INTEGER"),
            _col("schemaId", "INTEGER"),
            _col("name", "TEXT"),
            _col("type", "INTEGER"),
            _col("flags", "INTEGER"),
            _col("numEntries", "INTEGER"),
            _col("payloadSize", "INTEGER"),
            _col("alignTo", "INTEGER"),
        ],
        "supplement (sheet §7.4): NVTX payload schemas (types chosen)",
    )
    t["NVTX_PAYLOAD_SCHEMA_ENTRIES"] = _tbl(
        "NVTX_PAYLOAD_SCHEMA_ENTRIES",
        [
            _col("domainId", "INTEGER"),
            _col("schemaId", "INTEGER"),
            _col("idx", "INTEGER"),
            _col("flags", "INTEGER"),
            _col("type", "INTEGER"),
            _col("name", "TEXT"),
            _col("description", "TEXT"),
            _col("arrayOrUnionDetail", "INTEGER"),
            _col("offset", "INTEGER"),
        ],
        "supplement (sheet §7.4): NVTX payload schema entries (types chosen)",
    )
    # NVTX payload enumerations (§7.4 lists NVTX_PAYLOAD_ENUMS / _ENUM_ENTRIES without columns: chosen).
    t["NVTX_PAYLOAD_ENUMS"] = _tbl(
        "NVTX_PAYLOAD_ENUMS",
        [
            _col("domainId", "INTEGER"),
            _col("schemaId", "INTEGER"),
            _col("name", "TEXT"),
            _col("sizeOfEnum", "INTEGER"),
            _col("numEntries", "INTEGER"),
        ],
        "supplement (sheet §7.4): NVTX payload enums (columns chosen)",
    )
    t["NVTX_PAYLOAD_ENUM_ENTRIES"] = _tbl(
        "NVTX_PAYLOAD_ENUM_ENTRIES",
        [
            _col("domainId", "INTEGER"),
            _col("schemaId", "INTEGER"),
            _col("idx", "INTEGER"),
            _col("name", "TEXT"),
            _col("value", "INTEGER"),
            _col("isFlag", "INTEGER"),
        ],
        "supplement (sheet §7.4): NVTX payload enum entries (columns chosen)",
    )
    return t


@lru_cache(maxsize=None)
def _schema_text(schema: str) -> tuple[tuple[str, str], ...]:
    """(table name, CREATE TABLE statement) of a shape, in DDL order."""
    if schema not in SCHEMAS:
        raise ValueError(f"unknown schema {schema!r} (one of {SCHEMAS})")
    if schema in ("2.9.1", "3.0.0"):
        t = _read_ddl("3.0.0")
        # GENERIC_EVENTS* (GPU metrics as JSON, sheet §12 A) exist in the 2022.4 exporter but are
        # created only when metrics were collected, so even --lazy false does not show them.
        for tab in _generic_event_tables():
            t[tab.name] = tab
        if schema == "2.9.1":
            t = _to_2_9_1(t)
    else:
        t = _to_3_13_2(_read_ddl("3.13.2"), _read_ddl("3.0.0"))
        if schema == "3.22":
            t = _to_3_22(t)
    return tuple((name, tab.render()) for name, tab in t.items())


def schema_ddl(schema: str) -> dict[str, str]:
    return dict(_schema_text(schema))


@lru_cache(maxsize=None)
def _enum_inserts(schema: str) -> tuple[str, ...]:
    src = {"2.9.1": None, "3.0.0": "3.0.0", "3.13.2": "3.13.2", "3.22": "3.13.2"}[schema]
    if src is None:
        return ()
    text = (DDL_DIR / f"enums_{src}.sql").read_text(encoding="utf-8")
    return tuple(line for line in text.splitlines() if line.startswith("INSERT INTO"))


# ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Process:
    pid: int
    name: str
    gpid: int
    vm: int
    hw: int

    def gtid(self, tid: int) -> int:
        return encode_gtid(self.pid, tid, self.vm, self.hw)


MPI_KIND_TABLE = {
    "p2p": "MPI_P2P_EVENTS",
    "coll": "MPI_COLLECTIVES_EVENTS",
    "startwait": "MPI_START_WAIT_EVENTS",
    "other": "MPI_OTHER_EVENTS",
}
# Tables a lazy export always writes (the cloverleaf lazy export has all of these, and every ENUM_*).
LAZY_ALWAYS = (
    "StringIds",
    "ThreadNames",
    "PROCESSES",
    "TARGET_INFO_SYSTEM_ENV",
    "TARGET_INFO_SESSION_START_TIME",
    "ANALYSIS_DETAILS",
    "EXPORT_META_DATA",
    "META_DATA_EXPORT",
    "META_DATA_CAPTURE",
)


class NsysBuilder:
    """Build one report (one rank's export).  Every time is in ns on the session timeline."""

    def __init__(
        self,
        path,
        schema: str = "3.13.2",
        host: str = "node01",
        session_start_ns: int = 1_700_000_000_000_000_000,
        lazy: bool = True,
        env: dict | None = None,
        shuffle_seed: int | None = None,
        vm: int = 1,
        hw: int = 0,
    ):
        if schema not in SCHEMAS:
            raise ValueError(f"unknown schema {schema!r} (one of {SCHEMAS})")
        self.path = Path(path)
        self.schema = schema
        self.host = host
        self.session_start_ns = int(session_start_ns)
        self.lazy = lazy
        self.env = dict(env or {})
        self.shuffle_seed = shuffle_seed
        self.vm, self.hw = vm, hw
        self.rows: dict[str, list[dict]] = {}
        self.strings: dict[str, int] = {}
        self.processes: dict[int, Process] = {}
        self.dropped_columns: dict[str, set] = {}  # table -> modelled columns this shape lacks
        self._mpi_domain: dict[int, int] = {}  # pid -> domain id of "MPI" (old shapes)
        self._domains: dict[int, set] = {}  # pid -> user domain ids
        self._streams: set = set()  # (pid, device, context, stream)
        self._range_id = 0
        self._grid_id = 0
        self._metric_ids: dict = {}
        self.gpu_id_of_device: dict[int, int] = {}  # CUDA ordinal -> TARGET_INFO_GPU.id (default: same)
        self._saved = False

    # -- helpers ---------------------------------------------------------------------------------
    @property
    def has_mpi_tables(self) -> bool:
        return self.schema in MPI_TABLE_SCHEMAS

    def sid(self, text: str) -> int:
        """StringIds id of ``text`` (interned)."""
        if text not in self.strings:
            self.strings[text] = len(self.strings) + 1
        return self.strings[text]

    def _add(self, table: str, **row) -> dict:
        self.rows.setdefault(table, []).append(row)
        return row

    def gtid(self, pid: int, tid: int) -> int:
        return encode_gtid(pid, tid, self.vm, self.hw)

    def gpid(self, pid: int) -> int:
        return encode_gtid(pid, 0, self.vm, self.hw)

    # -- processes and threads -------------------------------------------------------------------
    def process(self, pid: int, name: str = "app") -> Process:
        p = Process(pid, name, self.gpid(pid), self.vm, self.hw)
        if pid not in self.processes:
            self.processes[pid] = p
            self._add("PROCESSES", globalPid=p.gpid, pid=pid, name=name)
        return p

    def thread_name(self, pid: int, tid: int, name: str, priority: int = 0) -> None:
        self._add("ThreadNames", nameId=self.sid(name), priority=priority, globalTid=self.gtid(pid, tid))

    # -- CUDA ------------------------------------------------------------------------------------
    def cuda_api(self, pid, tid, name, start, end, corr, driver=False, return_value=0, stack=None):
        """A CUDA API call; ``stack``: its call stack in CUDA_CALLCHAINS (``callchain``), as
        ``--cudabacktrace`` records for calls longer than its threshold."""
        self._add(
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            start=start,
            end=end,
            eventClass=CLASS_CUDA_DRIVER if driver else CLASS_CUDA_RUNTIME,
            globalTid=self.gtid(pid, tid),
            correlationId=corr,
            nameId=self.sid(name),
            returnValue=return_value,
            callchainId=None if stack is None else self.callchain("CUDA_CALLCHAINS", stack),
        )

    def callchain(self, table: str, frames: list[tuple]) -> int:
        """A call stack in ``table`` (CUDA_CALLCHAINS, OSRT_CALLCHAINS): ``frames`` (function, module[,
        flags]) innermost first, flags a string of u (unresolved); returns its id."""
        ids = getattr(self, "_chain_ids", {})
        self._chain_ids = ids
        ids[table] = ids.get(table, 0) + 1
        for depth, (fn, module, *flags) in enumerate(frames):
            f = flags[0] if flags else ""
            self._add(
                table,
                id=ids[table],
                symbol=self.sid(fn),
                module=self.sid(module),
                unresolved=int("u" in f) or None,
                originalIP=None,
                stackDepth=depth,
            )
        return ids[table]

    def _gpu_common(self, pid, device, stream, start, end, corr, context):
        self._streams.add((pid, device, context, stream))
        return dict(
            start=start,
            end=end,
            deviceId=device,
            contextId=context,
            greenContextId=None,
            streamId=stream,
            correlationId=corr,
            globalPid=self.gpid(pid),
        )

    def kernel(
        self,
        pid,
        device,
        stream,
        start,
        end,
        corr,
        short,
        demangled=None,
        grid=(1, 1, 1),
        block=(1, 1, 1),
        registers=32,
        static_smem=0,
        dynamic_smem=0,
        local_mem=0,
        context=1,
        graph_node=None,
    ):
        self._grid_id += 1
        dem = self.sid(demangled if demangled is not None else short)
        threads = grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]
        self._add(
            "CUPTI_ACTIVITY_KIND_KERNEL",
            **self._gpu_common(pid, device, stream, start, end, corr, context),
            demangledName=dem,
            shortName=self.sid(short),
            mangledName=None,
            launchType=0,
            cacheConfig=0,
            registersPerThread=registers,
            gridX=grid[0],
            gridY=grid[1],
            gridZ=grid[2],
            blockX=block[0],
            blockY=block[1],
            blockZ=block[2],
            staticSharedMemory=static_smem,
            dynamicSharedMemory=dynamic_smem,
            localMemoryPerThread=local_mem,
            localMemoryTotal=local_mem * threads,
            gridId=self._grid_id,
            sharedMemoryExecuted=0,
            graphNodeId=graph_node,
            sharedMemoryLimitConfig=0,
        )

    def memcpy(
        self,
        pid,
        device,
        stream,
        start,
        end,
        corr,
        nbytes,
        copy_kind,
        src_kind=0,
        dst_kind=2,
        context=1,
        graph_node=None,
    ):
        self._add(
            "CUPTI_ACTIVITY_KIND_MEMCPY",
            **self._gpu_common(pid, device, stream, start, end, corr, context),
            bytes=nbytes,
            copyKind=copy_kind,
            deprecatedSrcId=None,
            srcKind=src_kind,
            dstKind=dst_kind,
            srcDeviceId=device,
            srcContextId=context,
            dstDeviceId=device,
            dstContextId=context,
            migrationCause=None,
            graphNodeId=graph_node,
            virtualAddress=None,
        )

    # -- CUDA graphs (sheet §6.7) ----------------------------------------------------------------
    @property
    def new_graph_shape(self) -> bool:
        return "CUDA_GRAPH_NODE_EVENTS" in schema_ddl(self.schema)

    def graph_trace(self, pid, device, stream, start, end, corr, graph_id, exec_id, context=1):
        """A whole-graph execution (--cuda-graph-trace=graph; newer shapes only)."""
        if not self.new_graph_shape:
            raise ValueError(f"schema {self.schema} has no CUPTI_ACTIVITY_KIND_GRAPH_TRACE")
        self._add(
            "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
            **self._gpu_common(pid, device, stream, start, end, corr, context),
            graphId=graph_id,
            graphExecId=exec_id,
        )

    def graph_node_event(self, pid, tid, name, start, end, node_id, original=None):
        """Node creation: CUDA_GRAPH_NODE_EVENTS, or CUDA_GRAPH_EVENTS with graphNodeId (<= 3.0.0)."""
        table = "CUDA_GRAPH_NODE_EVENTS" if self.new_graph_shape else "CUDA_GRAPH_EVENTS"
        self._add(
            table,
            start=start,
            end=end,
            eventClass=CLASS_CUDA_RUNTIME,
            globalTid=self.gtid(pid, tid),
            nameId=self.sid(name),
            graphNodeId=node_id,
            originalGraphNodeId=original,
        )

    def graph_event(self, pid, tid, name, start, end, graph_id, exec_id=None, original=None):
        """Graph-level API event (newer shapes only)."""
        if not self.new_graph_shape:
            raise ValueError(f"schema {self.schema} has only the node-level CUDA_GRAPH_EVENTS")
        self._add(
            "CUDA_GRAPH_EVENTS",
            start=start,
            end=end,
            eventClass=CLASS_CUDA_RUNTIME,
            globalTid=self.gtid(pid, tid),
            nameId=self.sid(name),
            graphId=graph_id,
            originalGraphId=original,
            graphExecId=exec_id,
        )

    # -- OpenACC (sheet §10) ---------------------------------------------------------------------
    def openacc(
        self,
        pid,
        tid,
        table,
        name,
        start,
        end,
        event_kind,
        src_file,
        func,
        line,
        nbytes=None,
        var=None,
        kernel=None,
        device=0,
        stream=7,
    ):
        tables = {
            "data": "CUPTI_ACTIVITY_KIND_OPENACC_DATA",
            "launch": "CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH",
            "other": "CUPTI_ACTIVITY_KIND_OPENACC_OTHER",
        }
        row = dict(
            start=start,
            end=end,
            nameId=self.sid(name),
            globalTid=self.gtid(pid, tid),
            eventKind=event_kind,
            DeviceType=4,
            lineNo=line,
            cuDeviceId=device,
            cuContextId=1,
            cuStreamId=stream,
            srcFile=self.sid(src_file),
            funcName=self.sid(func),
        )
        if table == "data":
            row.update(bytes=nbytes, varName=self.sid(var) if var else None)
        elif table == "launch":
            row.update(numGangs=1, numWorkers=1, vectorLength=32, kernelName=self.sid(kernel) if kernel else None)
        self._add(tables[table], **row)

    def memset(self, pid, device, stream, start, end, corr, nbytes, value=0, context=1, mem_kind=2):
        self._add(
            "CUPTI_ACTIVITY_KIND_MEMSET",
            **self._gpu_common(pid, device, stream, start, end, corr, context),
            value=value,
            bytes=nbytes,
            graphNodeId=None,
            memKind=mem_kind,
        )

    # -- NVTX ------------------------------------------------------------------------------------
    def _nvtx(self, pid, tid, event_type, start, end=None, **kw):
        row = dict(
            start=start,
            end=end,
            eventType=event_type,
            rangeId=None,
            category=None,
            color=None,
            text=None,
            globalTid=self.gtid(pid, tid),
            endGlobalTid=None,
            textId=None,
            domainId=0,
        )
        row.update(kw)
        self._add("NVTX_EVENTS", **row)

    def nvtx_domain(self, pid, tid, domain_id, name, ts):
        if self._mpi_domain.get(pid) == domain_id:
            raise ValueError(f"domain id {domain_id} is already the MPI domain of pid {pid}")
        self._domains.setdefault(pid, set()).add(domain_id)
        self._nvtx(pid, tid, NVTX_DOMAIN, ts, text=name, domainId=domain_id)

    def nvtx_category(self, pid, tid, domain_id, category, name, ts):
        self._nvtx(pid, tid, NVTX_CATEGORY, ts, text=name, domainId=domain_id, category=category)

    def nvtx_thread_name(self, pid, tid, name, ts):
        self._nvtx(pid, tid, NVTX_THREAD, ts, text=name)

    def nvtx_push(
        self, pid, tid, start, end, text=None, registered=None, domain_id=0, category=0, json_payload=None, binary=None
    ):
        """``json_payload``: a dict written as jsonText; ``binary``: bytes for binaryData (3.22 only)."""
        if (text is None) == (registered is None):
            raise ValueError("give exactly one of text= and registered=")
        extra = {}
        if json_payload is not None:
            extra["jsonText"] = json.dumps(json_payload)
        if binary is not None:
            if self.schema != "3.22":
                raise ValueError(f"schema {self.schema} has no NVTX_EVENTS.binaryData")
            extra["binaryData"] = binary
        self._nvtx(
            pid,
            tid,
            NVTX_PUSHPOP,
            start,
            end,
            text=text,
            textId=self.sid(registered) if registered is not None else None,
            domainId=domain_id,
            category=category or None,
            **extra,
        )

    def nvtx_payload_schema(self, domain_id, schema_id, name, entries, payload_size):
        """Describe a binary payload schema: entries = [(name, nvtx entry type, offset)] (3.22 only)."""
        self._add(
            "NVTX_PAYLOAD_SCHEMAS",
            domainId=domain_id,
            schemaId=schema_id,
            name=name,
            type=1,
            flags=0,
            numEntries=len(entries),
            payloadSize=payload_size,
            alignTo=8,
        )
        for idx, (ename, etype, offset) in enumerate(entries):
            self._add(
                "NVTX_PAYLOAD_SCHEMA_ENTRIES",
                domainId=domain_id,
                schemaId=schema_id,
                idx=idx,
                flags=0,
                type=etype,
                name=ename,
                description=None,
                arrayOrUnionDetail=None,
                offset=offset,
            )

    def nvtx_payload_enum(self, domain_id, schema_id, name, entries: dict, size=4):
        self._add(
            "NVTX_PAYLOAD_ENUMS",
            domainId=domain_id,
            schemaId=schema_id,
            name=name,
            sizeOfEnum=size,
            numEntries=len(entries),
        )
        for idx, (ename, value) in enumerate(entries.items()):
            self._add(
                "NVTX_PAYLOAD_ENUM_ENTRIES",
                domainId=domain_id,
                schemaId=schema_id,
                idx=idx,
                name=ename,
                value=value,
                isFlag=0,
            )

    def nvtx_startend(self, pid, tid, start, end, text, domain_id=0, end_tid=None):
        self._range_id += 1
        self._nvtx(
            pid,
            tid,
            NVTX_STARTEND,
            start,
            end,
            text=text,
            domainId=domain_id,
            rangeId=self._range_id,
            endGlobalTid=self.gtid(pid, end_tid if end_tid is not None else tid),
        )

    def nvtx_mark(self, pid, tid, ts, text, domain_id=0):
        self._nvtx(pid, tid, NVTX_MARK, ts, None, text=text, domainId=domain_id)

    # -- MPI -------------------------------------------------------------------------------------
    def mpi(self, pid, tid, name, start, end, kind="other", peer=-1, size=0, recv_size=0, tag=0, comm=1, request=None):
        if kind not in MPI_KIND_TABLE:
            raise ValueError(f"MPI kind {kind!r} (one of {sorted(MPI_KIND_TABLE)})")
        if not self.has_mpi_tables:
            # 2022.x: a push/pop range in the NVTX domain "MPI" (registered string name); the domain
            # is created once per process, at the first MPI call.  No sizes, tags, peers (sheet §9.1).
            if pid not in self._mpi_domain:
                dom = max(self._domains.get(pid, {0})) + 1
                self._mpi_domain[pid] = dom
                self._nvtx(pid, tid, NVTX_DOMAIN, start, text="MPI", domainId=dom)
            self.nvtx_push(pid, tid, start, end, registered=name, domain_id=self._mpi_domain[pid])
            return
        base = dict(start=start, end=end, globalTid=self.gtid(pid, tid), textId=self.sid(name))
        if kind == "p2p":
            self._add(
                "MPI_P2P_EVENTS",
                **base,
                commHandle=comm,
                commUid=comm,
                tag=tag,
                remoteRank=peer,
                size=size,
                requestHandle=request,
            )
        elif kind == "coll":
            self._add(
                "MPI_COLLECTIVES_EVENTS",
                **base,
                commHandle=comm,
                commUid=comm,
                rootRank=peer,
                size=size,
                recvSize=recv_size,
                requestHandle=request,
            )
        elif kind == "startwait":
            self._add("MPI_START_WAIT_EVENTS", **base, requestHandle=request)
        else:
            self._add("MPI_OTHER_EVENTS", **base)

    def mpi_rank(self, pid, tid, rank, ts=0):
        """MPI_RANKS where the shape has it; else what 2022.x writes: the NVTX thread-name event
        "MPI Rank N" (sheet §5/§9.1) and, as in the 2022.4 mrank0 export (sheet §5), the same name
        in ThreadNames."""
        if self.has_mpi_tables:
            self._add("MPI_RANKS", globalTid=self.gtid(pid, tid), rank=rank)
        else:
            self.nvtx_thread_name(pid, tid, f"MPI Rank {rank}", ts)
            self.thread_name(pid, tid, f"MPI Rank {rank}")

    # -- OS runtime ------------------------------------------------------------------------------
    def osrt(self, pid, tid, name, start, end, event_class=CLASS_OSRT):
        self._add(
            "OSRT_API",
            start=start,
            end=end,
            eventClass=event_class,
            globalTid=self.gtid(pid, tid),
            nameId=self.sid(name),
            returnValue=0,
            nestingLevel=0,
            callchainId=0,
        )

    # -- CPU samples and scheduling -------------------------------------------------------------
    def cpu_sample(self, pid, tid, ts, frames: list[tuple], cpu=0):
        """A CPU sample with its call stack: ``frames`` (function, module[, flags]), innermost first;
        flags: a string of k (kernel mode), u (unresolved), s (special entry)."""
        self._sample_id = getattr(self, "_sample_id", 0) + 1
        self._add(
            "COMPOSITE_EVENTS",
            id=self._sample_id,
            start=ts,
            cpu=cpu,
            threadState=1,
            globalTid=self.gtid(pid, tid),
            cpuCycles=1,
        )
        for depth, (fn, module, *flags) in enumerate(frames):
            f = flags[0] if flags else ""
            self._add(
                "SAMPLING_CALLCHAINS",
                id=self._sample_id,
                symbol=self.sid(fn),
                module=self.sid(module),
                kernelMode=int("k" in f) or None,
                unresolved=int("u" in f) or None,
                specialEntry=int("s" in f) or None,
                stackDepth=depth,
                unwindMethod=1,
            )

    def sched(self, pid, tid, ts, cpu, sched_in: bool):
        self._add("SCHED_EVENTS", start=ts, cpu=cpu, isSchedIn=int(sched_in), globalTid=self.gtid(pid, tid))

    # -- GPU metrics -----------------------------------------------------------------------------
    def gpu_metric_sample(self, gpu: int, ts: int, values: dict):
        type_id = (0x100 << 8) | (gpu & 0xFF)  # gpu = typeId & 0xFF (sheet §12)
        if self.schema == "3.22":
            for name, v in values.items():
                key = (gpu, name)
                if key not in self._metric_ids:
                    self._metric_ids[key] = len([k for k in self._metric_ids if k[0] == gpu])
                    self._add(
                        "TARGET_INFO_GPU_METRICS",
                        typeId=type_id,
                        sourceId=0x100,
                        typeName=f"GPU {gpu}",
                        metricId=self._metric_ids[key],
                        metricName=name,
                    )
                self._add("GPU_METRICS", timestamp=ts, typeId=type_id, metricId=self._metric_ids[key], value=int(v))
        else:
            if ("type", gpu) not in self._metric_ids:
                self._metric_ids[("type", gpu)] = type_id
                if not self.rows.get("GENERIC_EVENT_SOURCES"):
                    self._add("GENERIC_EVENT_SOURCES", sourceId=0x100, data=json.dumps({"Name": "GPU Metrics"}))
                self._add(
                    "GENERIC_EVENT_TYPES",
                    typeId=type_id,
                    sourceId=0x100,
                    data=json.dumps({"Name": f"GPU {gpu}", "Fields": sorted(values)}),
                )
            self._add("GENERIC_EVENTS", rawTimestamp=ts, timestamp=ts, typeId=type_id, data=json.dumps(values))

    # -- save ------------------------------------------------------------------------------------
    def _metadata(self) -> None:
        version, product = VERSIONS[self.schema]
        major, minor, micro = version.split(".")
        lazy = "true" if self.lazy else "false"
        meta = [
            ("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"),
            ("EXPORT_PRODUCT_VERSION", product),
            ("EXPORT_PRODUCT_DATE", product.rsplit(".", 2)[0]),
            ("EXPORT_SCHEMA_VERSION", version),
            ("EXPORT_SCHEMA_VERSION_MAJOR", major),
            ("EXPORT_SCHEMA_VERSION_MINOR", minor),
            ("EXPORT_SCHEMA_VERSION_MICRO", micro),
            ("EXPORT_PLATFORM", "linux-desktop"),
            ("EXPORT_ARCH", "x64"),
        ]
        name = self.path.name
        if self.schema in OLD_SCHEMAS:
            meta += [
                ("EXPORT_INPUT_FILE", name.replace(".sqlite", ".nsys-rep")),
                ("EXPORT_OUTUPT_FILE", name),  # sic: the old key has this typo (sheet §1)
                ("EXPORT_LAZY", lazy),
            ]
            for k, v in meta:
                self._add("EXPORT_META_DATA", name=k, value=v)
        else:
            meta += [
                ("EXPORT_PARAM_INPUT_FILE", name.replace(".sqlite", ".nsys-rep")),
                ("EXPORT_PARAM_OUTPUT_FILE", name),
                ("EXPORT_PARAM_LAZY", lazy),
                ("EXPORT_PARAM_TIME_NORMALIZE", "false"),
                ("EXPORT_PARAM_TIME_SHIFT", "0"),
                ("EXPORT_CONFIG_TIME_SHIFT", "0"),
            ]
            for k, v in meta:
                self._add("META_DATA_EXPORT", name=k, value=v)
            cap = [
                ("DEVICE_ID", "Local (CLI)"),
                ("DEVICE_DISPLAY_NAME", self.host),
                ("OS_RUNTIME_OPTIONS:DURATION_THRESHOLD_NS", "1000"),
                ("PROCESS_0:PID", "0"),
            ]
            cap += [("PROCESS_0:ENVIRONMENT_VARIABLE", f'{k}="{v}"') for k, v in self.env.items()]
            for k, v in cap:
                self._add("META_DATA_CAPTURE", name=k, value=v)
        self._add(
            "TARGET_INFO_SESSION_START_TIME",
            utcEpochNs=self.session_start_ns,
            utcTime="synthetic",
            localTime="synthetic",
        )
        gvid = encode_gtid(0, 0, self.vm, self.hw)
        self._add(
            "TARGET_INFO_SYSTEM_ENV",
            globalVid=gvid,
            devStateName="Local (CLI)",
            name="Hostname",
            nameEnum=GLOBAL_VID_NAME_ENUM_HOSTNAME,
            value=self.host,
        )
        times = [
            r[c]
            for t, rows in self.rows.items()
            for r in rows
            for c in ("start", "end", "timestamp")
            if c in r and isinstance(r[c], int) and t not in ("TARGET_INFO_SESSION_START_TIME",)
        ]
        lo, hi = (min(times), max(times)) if times else (0, 0)
        self._add("ANALYSIS_DETAILS", globalVid=gvid, duration=hi - lo, startTime=lo, stopTime=hi)
        # CUDA stream / context / device facts for every stream that got activity.
        for pid, device, context, stream in sorted(self._streams):
            self._add(
                "TARGET_INFO_CUDA_STREAM",
                streamId=stream,
                hwId=self.hw,
                vmId=self.vm,
                processId=pid,
                contextId=context,
                priority=0,
                flag=3 if stream == 7 else 2,
            )
        for pid, device, context in sorted({(p, d, c) for p, d, c, _ in self._streams}):
            self._add(
                "TARGET_INFO_CUDA_NULL_STREAM",
                streamId=7,
                hwId=self.hw,
                vmId=self.vm,
                processId=pid,
                deviceId=device,
                contextId=context,
            )
            self._add(
                "TARGET_INFO_CUDA_CONTEXT_INFO",
                nullStreamId=7,
                hwId=self.hw,
                vmId=self.vm,
                processId=pid,
                deviceId=device,
                contextId=context,
                parentContextId=None,
                isGreenContext=0,
            )
            gpu = self.gpu_id_of_device.get(device, device)
            self._add(
                "TARGET_INFO_CUDA_DEVICE",
                gpuId=gpu,
                cudaId=device,
                pid=pid,
                uuid=f"GPU-{gpu:08x}",
                numMultiprocessors=108,
            )
        for device in sorted({d for _, d, _, _ in self._streams}):
            gpu = self.gpu_id_of_device.get(device, device)
            self._add(
                "TARGET_INFO_GPU",
                vmId=gvid,
                id=gpu,
                name="Synthetic GPU",
                busLocation=f"0000:0{gpu}:00.0",
                uuid=f"GPU-{gpu:08x}",
                cuDevice=device,
                smCount=108,
            )
        self._add_strings()

    def _add_strings(self) -> None:
        self.rows["StringIds"] = [dict(id=i, value=s) for s, i in self.strings.items()]

    def save(self) -> Path:
        if self._saved:
            raise RuntimeError("save() already called")
        self._saved = True
        self._metadata()
        ddl = schema_ddl(self.schema)
        # Rows for tables the shape does not have are dropped (e.g. TARGET_INFO_CUDA_NULL_STREAM in 3.13.2).
        wanted = [t for t in ddl if not self.lazy or t in self.rows or t in LAZY_ALWAYS or t.startswith("ENUM_")]
        if self.path.exists():
            self.path.unlink()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path)
        try:
            for t in wanted:
                conn.execute(ddl[t])
            for stmt in _enum_inserts(self.schema):
                table = stmt.split()[2]
                if table in wanted:
                    conn.execute(stmt)
            rng = random.Random(self.shuffle_seed) if self.shuffle_seed is not None else None
            for t in wanted:
                rows = self.rows.get(t)
                if not rows:
                    continue
                info = conn.execute(f'PRAGMA table_info("{t}")').fetchall()
                cols = [r[1] for r in info]
                defaults = {r[1]: ("" if "TEXT" in (r[2] or "").upper() else 0) for r in info if r[3]}
                missing = set().union(*(r.keys() for r in rows)) - set(cols)
                if missing:
                    self.dropped_columns[t] = missing
                data = [
                    tuple(row.get(c, defaults.get(c)) if row.get(c) is not None else defaults.get(c) for c in cols)
                    for row in rows
                ]
                if rng is not None:
                    rng.shuffle(data)
                marks = ",".join("?" * len(cols))
                conn.executemany(f'INSERT INTO "{t}" VALUES ({marks})', data)
            conn.commit()
        finally:
            conn.close()
        return self.path


CLOVER_PID = 1701896
CLOVER_KERNELS = (
    "ideal_gas_kernel",
    "viscosity_kernel",
    "PdV_kernel",
    "accelerate_kernel",
    "flux_calc_kernel",
    "advec_cell_kernel",
    "advec_mom_kernel",
    "reset_field_kernel",
    "update_halo_kernel",
    "field_summary_kernel",
)


def cloverleaf_like(path, iterations: int = 12, seed: int = 7) -> Path:
    """A one-rank CUDA export shaped like the real CloverLeaf export the CloverLeaf tests read when it is
    there (schema 3.13.2, nsys 2024.5, host nid008553, process ``cuda-cloverleaf`` 1701896, device 0's
    null stream 7): device buffers allocated and filled (cudaMalloc, cudaMemcpy HtoD), then per iteration
    the ten kernels of a hydro step launched with cudaLaunchKernel, a halo exchange through the host
    (cudaMemcpy DtoH and HtoD) and a device-to-device copy every other iteration, a field summary copied
    back every fourth, cudaDeviceSynchronize at its end; OS runtime calls, scheduling events, CUDA
    synchronisation records and profiler overhead as the real export has (not translated).  Durations
    from a seeded generator: the same file every time."""
    rng = random.Random(seed)
    pid, main, osrt_tid = CLOVER_PID, CLOVER_PID, CLOVER_PID + 5
    b = NsysBuilder(
        path,
        schema="3.13.2",
        host="nid008553",
        session_start_ns=1_727_000_000_000_000_000,
        env={"SLURM_PROCID": "0", "SLURM_JOB_ID": "4242"},
    )
    b.process(pid, "cuda-cloverleaf")
    b.thread_name(pid, main, "cuda-cloverleaf")
    b.thread_name(pid, osrt_tid, "cuda-EvtHandlr")
    corr = iter(range(1, 1 << 30))
    t, gpu = 2_000_000, 0  # host cursor, the GPU's next free time

    def api(name, dur):
        nonlocal t
        c = next(corr)
        b.cuda_api(pid, main, name, t, t + dur, c)
        t += dur + rng.randrange(500, 2_000)
        return c

    def copy(kind, nbytes):
        nonlocal t, gpu
        c = next(corr)
        start = max(gpu, t + 3_000)
        end = start + 1_000 + nbytes // 5_000
        b.memcpy(
            pid,
            0,
            7,
            start,
            end,
            c,
            nbytes,
            copy_kind=kind,
            src_kind={1: 0, 2: 2, 8: 2}[kind],
            dst_kind={1: 2, 2: 0, 8: 2}[kind],
        )
        b.cuda_api(pid, main, "cudaMemcpy_v3020", t, end + 2_000, c)
        gpu, t = end, end + 3_000

    for _ in range(8):
        api("cudaMalloc_v3020", rng.randrange(20_000, 90_000))
    for _ in range(8):
        copy(1, 960 * 960 * 8)
    for it in range(iterations):
        for name in CLOVER_KERNELS:
            c = next(corr)
            b.cuda_api(pid, main, "cudaLaunchKernel_v7000", t, t + 4_000, c)
            start = max(gpu, t + 3_500)
            gpu = start + rng.randrange(15_000, 250_000)
            b.kernel(
                pid,
                0,
                7,
                start,
                gpu,
                c,
                name,
                demangled=f"{name}(int, int, double*, double*)",
                grid=(960, 1, 1),
                block=(128, 1, 1),
                registers=40,
            )
            t += 4_000 + rng.randrange(500, 3_000)
        copy(2, 960 * 8 * 2)
        copy(1, 960 * 8 * 2)
        if it % 2:
            copy(8, 960 * 960)
        if it % 4 == 3:
            copy(2, 8 * 64)
        c = next(corr)
        end = max(gpu, t) + 2_000
        b.cuda_api(pid, main, "cudaDeviceSynchronize_v3020", t, end, c)
        b._add(
            "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
            start=t + 1_000,
            end=end - 500,
            deviceId=0,
            contextId=1,
            streamId=7,
            correlationId=c,
            globalPid=b.gpid(pid),
            syncType=3,
            eventId=0,
        )
        t = end + rng.randrange(5_000, 40_000)
        b.osrt(pid, osrt_tid, "poll", t - 4_000, t - 1_000)
        b.osrt(pid, main, "ioctl", t, t + 2_000)
        t += 3_000
        b._add("SCHED_EVENTS", start=t - 2_500, cpu=it % 4, isSchedIn=1, globalTid=b.gtid(pid, main))
    api("cudaFree_v3020", 30_000)
    for ts, tid in ((1_500_000, main), (1_600_000, osrt_tid), (t + 10_000, main)):  # not calls: dropped
        b.osrt(pid, tid, "OS runtime libraries profiling started", ts, ts, event_class=31)
    b._add(
        "PROFILER_OVERHEAD",
        start=1_000_000,
        end=1_900_000,
        globalTid=b.gtid(pid, main),
        nameId=b.sid("CUDA profiling data flush"),
        returnValue=0,
    )
    return b.save()


__all__ = [
    "NsysBuilder",
    "Process",
    "SCHEMAS",
    "encode_gtid",
    "decode_gtid",
    "schema_ddl",
    "parse_ddl",
    "cloverleaf_like",
    "CLOVER_PID",
]
