"""A report as a worker reads it: where it comes from (``Source``), its metadata (``ReportInfo``), one
kind's rows as its reader normalises them (``read_kind``: absurd rows dropped and counted, the GPU
of each GPU activity) and the kinds stage C reads, from the table cache (``load``)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from nsys2prv import __version__
from nsys2prv import kinds as K
from nsys2prv.core.errors import UserError
from nsys2prv.nsys.cache import TableCache
from nsys2prv.nsys.database import Report
from nsys2prv.nsys.devices import device_map, gpu_of
from nsys2prv.nsys.diagnostics import capture_warnings
from nsys2prv.nsys.export import resolve_input
from nsys2prv.nsys.identity import Identity, identify
from nsys2prv.nsys.ids import pid_of
from nsys2prv.nsys.lifetimes import ABSURD_NS, process_lifetimes
from nsys2prv.nsys.readers.base import ReadResult
from nsys2prv.nsys.readers.nvtx import row_classes

METADATA_TABLES = (
    "StringIds",
    "ThreadNames",
    "PROCESSES",
    "TARGET_INFO_SYSTEM_ENV",
    "TARGET_INFO_SESSION_START_TIME",
    "TARGET_INFO_GPU",
    "TARGET_INFO_CUDA_STREAM",
    "META_DATA_EXPORT",
    "META_DATA_CAPTURE",
    "EXPORT_META_DATA",
    "MPI_RANKS",
    "ENUM_CUDA_MEMCPY_OPER",
)


@dataclass
class ReportInfo:
    """What the conversion needs to know about a report besides its event tables (cached)."""

    path: str  # the SQLite export read
    schema_version: str
    product_version: str
    hostname: str
    session_start_ns: int | None
    time_normalized: bool
    time_shift_ns: int
    capture_warnings: list[str]
    table_counts: dict[str, int]  # rows of every non-empty table that is not metadata (kinds.is_metadata)
    identity: Identity
    devmap: pd.DataFrame
    source: str = ""  # the file the user named
    index: int = 0
    # pid -> (first, last) activity timestamp over every event table (nsys/lifetimes.py); None in
    # metadata cached by an older version (then computed and cached again)
    lifetimes: dict | None = None
    nvtx_classes: dict[str, int] = field(default_factory=dict)  # NVTX_EVENTS rows by class (nvtx.row_classes)
    notes: list[str] = field(default_factory=list)  # what to say about this export (Report.notes)
    host_known: bool = True  # False: the export names no host (hostname made from the file's name)

    def count(self, table: str) -> int:
        return self.table_counts.get(table, 0)

    # Pickled (a worker's result to the main process, which keeps every report's): the empty device
    # map of a report whose map went with its stage-B inputs (``scan.Scan.pack``) unpickled as the one
    # shared NO_DEVMAP (a frame of its own: 3.6 KB a report), and the strings most reports repeat
    # (tables, warnings, thread and process names) as one string each.
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        if self.devmap is NO_DEVMAP:
            state["devmap"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        if state["devmap"] is None:
            state["devmap"] = NO_DEVMAP
        state["table_counts"] = {_intern(t): n for t, n in state["table_counts"].items()}
        state["capture_warnings"] = [_intern(w) for w in state["capture_warnings"]]
        ident = state["identity"]
        for names in ("process_names", "thread_names"):
            setattr(ident, names, {k: _intern(n) for k, n in getattr(ident, names).items()})
        self.__dict__.update(state)

    def fates(self, kinds: tuple[str, ...], dropped: dict[str, int] | None = None) -> list[dict]:
        """Every listed table of the report with the fate of its rows (``kinds.table_fates``)."""
        return K.table_fates(self.table_counts, self.nvtx_classes, kinds, dropped)


NO_DEVMAP = pd.DataFrame({c: np.zeros(0, np.int64) for c in ("pid", "device", "gpu")})  # (one, shared)


def _intern(text):
    return sys.intern(text) if type(text) is str else text


def report_info(report, lifetimes: bool = True, devmap: pd.DataFrame | None = None) -> ReportInfo:
    """The report's metadata (``lifetimes`` False: without the processes' lifetimes, found apart;
    ``devmap``: its ``device_map``, when the caller has it already)."""
    counts = {t: n for t in report.base_tables() if not K.is_metadata(t) and (n := report.count(t))}
    nvtx_classes = row_classes(report) if K.NVTX_TABLE in counts else {}
    return ReportInfo(
        str(report.path),
        report.schema_version,
        report.product_version,
        report.hostname,
        report.session_start_ns,
        report.time_normalized,
        report.time_shift_ns,
        capture_warnings(report) + _string_warnings(report),
        counts,
        identify(report),
        device_map(report) if devmap is None else devmap,
        report.source,
        report.index,
        process_lifetimes(report) if lifetimes else None,
        nvtx_classes,
        list(report.notes),
        report.host_known,
    )


def name_unknown_hosts(infos: list[ReportInfo]) -> None:
    """Reports whose export names no host are each their own node: a name made from the file's name
    that another report also has gets the report's index."""
    names = [i.hostname for i in infos]
    for i in infos:
        if not i.host_known and names.count(i.hostname) > 1:
            i.hostname = i.identity.host = f"{i.hostname}.{i.index}"


@dataclass
class ReportFile:
    """Where a report comes from: the file the user named and the caches it is read through."""

    input: str  # the path the user gave (.sqlite or .nsys-rep)
    cache_root: str  # directory of the table cache entries
    export_cache: str | None  # --cache-dir for nsys exports
    force_sqlite: bool
    private: bool = False  # the table cache is this run's own (--no-cache), removed after it: its
    #                        entries are never found again, so what only a later run reads is not stored
    ipc: bool = False  # ... and its tables are Arrow IPC (``TableCache.ipc``: a run of few reports)


@dataclass
class Reading:
    """What is read of a report: the translated kinds, and what the links, the clock alignment and
    POP need besides (the same for every report of a run)."""

    kinds: tuple[str, ...]  # normalised tables translated
    link_calls: bool = False  # also the CUDA API calls, for links (when cuda_api is not translated)
    align_kinds: tuple[str, ...] = ()  # tables read only for the clock alignment (not translated)
    marker: str | None = None  # --align marker:NAME
    p2p: bool = False  # raw MPI point-to-point rows, for message records and alignment
    pop_kinds: tuple[str, ...] = ()  # tables read only for the POP metrics (not translated)


@dataclass
class Source:
    """One report as a worker reads it (the part of the Config a worker needs)."""

    index: int
    file: ReportFile
    reading: Reading


def needed_export_tables() -> tuple[str, ...]:
    return tuple(dict.fromkeys(K.export_tables() + METADATA_TABLES))


def sqlite_of(src: Source) -> Path:
    """The SQLite export a report is read from (a .nsys-rep is exported, once, to the export cache)."""
    return resolve_input(
        Path(src.file.input),
        Path(src.file.export_cache) if src.file.export_cache else None,
        src.file.force_sqlite,
        needed_export_tables(),
    )


def table_cache(src: Source) -> TableCache:
    """The report's entry in the table cache."""
    return TableCache(Path(src.file.cache_root), sqlite_of(src))


def default_kinds(src: Source) -> tuple[str, ...]:
    """The kinds stage C reads: the translated ones, the CUDA API calls for the links, the POP kinds."""
    r = src.reading
    kinds = r.kinds + (("cuda_api",) if r.link_calls and "cuda_api" not in r.kinds else ())
    return kinds + tuple(k for k in r.pop_kinds if k not in kinds)


MISSING_COLUMNS = "lacks column(s) the reader needs"
STRINGS_MISSING = "no StringIds table (or no id/value columns)"


def _string_warnings(report: Report) -> list[str]:
    return [] if report.has("StringIds", "id", "value") else [STRINGS_MISSING]


def count_unreadable(report: Report, tables, res):
    """Rows of tables the reader could not read (a column missing): counted as dropped with the table and
    the columns named, never silently skipped (``--strict`` turns them into an error)."""
    for table, cols in report.unreadable(tables).items():
        n = report.count(table)
        if res is None:
            res = ReadResult(table=None, source_rows=0)
        res.source_rows += n
        res.drop(f"{table} {MISSING_COLUMNS}: {', '.join(cols)} (not translated)", n)
    return res


def count_all_unreadable(report: Report, results: dict) -> dict:
    """``count_unreadable`` over each kind's tables, ``results`` (kind -> ReadResult or None) in reading
    order: after every reader probed, a table counts once, under its first kind."""
    seen: set[str] = set()
    out = {}
    for k, res in results.items():
        tables = [t for t in K.BY_NAME[k].reader.tables if t not in seen]
        seen.update(tables)
        out[k] = count_unreadable(report, tables, res)
    return out


def drop_absurd_times(res) -> None:
    """Rows whose start or end lies more than a week from the median start of their table (a corrupt
    export: an end of 2**63-1, a start of 0 in an absolute-time export) are dropped and counted: they
    would stretch the trace or overflow when the clocks are aligned."""
    df = res.table
    if df is None or not len(df) or "start" not in df or "end" not in df:
        return
    start, end = df["start"].to_numpy(np.float64), df["end"].to_numpy(np.float64)
    mid = float(np.median(start))
    bad = (np.abs(start - mid) > ABSURD_NS) | (np.abs(end - mid) > ABSURD_NS)
    if bad.any():
        res.drop("timestamp more than a week away from the report's other rows (corrupt row)", int(bad.sum()))
        res.table = df[~bad].reset_index(drop=True)


ID_LIMIT = 1 << 31  # a device or stream id beyond 32 bits: a corrupt row (the GPU's key packs node and id)


def drop_absurd_ids(res) -> None:
    """GPU activities whose device or stream id does not fit in 32 bits (a corrupt export: a deviceId of
    2**40) are dropped and counted: the GPU keys pack a node and a device id into one int64."""
    df = res.table
    if df is None or not len(df):
        return
    bad = np.zeros(len(df), bool)
    for col in ("device", "stream"):
        if col in df:
            v = df[col].to_numpy(np.float64, na_value=0)
            bad |= (v >= ID_LIMIT) | (v < -ID_LIMIT)
    if bad.any():
        res.drop("device or stream id beyond 32 bits (corrupt row)", int(bad.sum()))
        res.table = df[~bad].reset_index(drop=True)


def read_kind(report: Report, kind: str, devmap: pd.DataFrame) -> ReadResult | None:
    """``kind``'s rows as its reader normalises them (a batch of them under ``report.window``), less
    the absurd times (``drop_absurd_times``); the GPU activities (the GPU-side kinds) with the GPU each
    ran on, column ``gpu``: the id ``devmap`` (the report's ``device_map``) gives the process's CUDA
    ordinal (``nsys.devices.gpu_of``), derived here once and cached with the table for every later stage.
    The table is held to its kind's declared columns (``kinds.check_columns``): a one-line error naming
    the file and the column otherwise."""
    res = K.BY_NAME[kind].reader.read(report)
    if res is None:
        return None
    drop_absurd_times(res)
    if kind in K.side_kinds(K.GPU):
        drop_absurd_ids(res)
    df = res.table
    if df is not None and kind in K.side_kinds(K.GPU):
        res.table = df.assign(
            gpu=gpu_of(devmap, pid_of(df["gpid"].to_numpy(np.int64)), df["device"].to_numpy(np.int64))
        )
    wrong = None if res.table is None else K.check_columns(K.BY_NAME[kind], res.table)
    if wrong is not None:  # (a reader out of step with its kind's declared columns)
        raise UserError(f"{wrong} (nsys2prv {__version__} cannot read this export)", report.source)
    return res


# what reading a damaged (truncated, overwritten) cache file raises: Arrow's errors are ValueErrors/OSErrors
CACHE_DAMAGE = (OSError, ValueError, EOFError, KeyError, TypeError, AttributeError)


def damaged_note(exc: BaseException) -> str:
    """What to say of a report whose damaged cache entry was discarded and read again."""
    return f"its table cache entry was damaged ({type(exc).__name__}: {exc}); discarded and rebuilt from the report"


def load(src: Source, _retry: bool = False) -> tuple[ReportInfo, dict]:
    """The report's metadata and ``{kind: (table or None, tally dict or None)}`` for the kinds stage C
    reads (``default_kinds``), from the cache when it has them."""
    kinds = default_kinds(src)
    sqlite = sqlite_of(src)
    cache = TableCache(Path(src.file.cache_root), sqlite)
    info = cache.meta(ReportInfo, (Identity,))
    missing = [k for k in kinds if not cache.has(k)]
    fresh: dict = {}
    if info is None or missing or info.lifetimes is None:
        report = Report(sqlite, src.index, source=str(src.file.input))
        try:
            if info is None:
                info = report_info(report)
            elif info.lifetimes is None:  # metadata cached before lifetimes existed
                info.lifetimes = process_lifetimes(report)
            results = {k: read_kind(report, k, info.devmap) for k in missing}
            for k, res in count_all_unreadable(report, results).items():
                fresh[k] = (None, None) if res is None else (res.table, tally_of(res))
        finally:
            report.close()
        cache.store(info, fresh)
    info.source, info.index = str(src.file.input), src.index
    info.capture_warnings = [*info.capture_warnings, *cache.notes]  # unusable cache files
    out = {}
    try:
        for k in kinds:
            out[k] = fresh[k] if k in fresh else (cache.table(k), cache.kinds.get(k))
    except CACHE_DAMAGE as exc:
        if _retry:
            raise
        cache.discard()
        info, out = load(src, _retry=True)
        info.capture_warnings = [*info.capture_warnings, damaged_note(exc)]
    return info, out


def tally_of(res) -> dict:
    return {"source_rows": res.source_rows, "dropped": res.dropped, "notes": res.notes}
