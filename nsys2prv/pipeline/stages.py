"""The per-report stages of a conversion, as plain functions of picklable jobs, so that they run
in this process, in local worker processes (--jobs) or on Dask workers (--dask).

- ``scan`` (stage A): export if needed, read and normalise the report (or load its Parquet cache),
  derive once what later stages need of its rows and store it with the tables (each kernel's
  ``nccl`` flag, set by the kernels reader; the GPU id of each GPU activity, column ``gpu``,
  ``read_kind``; the overlap lane of each GPU activity, ``TableCache.store_lanes``), and return
  only small metadata: identity, device map, each process's lifetime (first and last activity
  over every event table), the keys the resource models need (the trace's, over the translated
  kinds; POP's, over the POP kinds whatever -t), NVTX domains, GPU metric names, min time, the -f
  window's occurrence, the readers' tallies.
- ``translate`` (stage C): load the cached tables and their lanes, clip to the -f window, compute the report's
  POP partial (from the POP kinds, translated or not) and GPU-metric partial, translate only the
  -t kinds, and write the report's sorted record chunk (``paraver/chunks.py``) and return its
  metadata.

The global stage B (model, alignment, value numbering, END time) and the merge (stage D) are in
``pipeline/prepare.py``, ``pipeline/conversion.py`` and ``paraver/writer.py``.
"""

from __future__ import annotations

import sqlite3
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from nsys2prv import kinds as K
from nsys2prv.core.intervals import overlap_lanes, tuple_codes
from nsys2prv.core.memory import release
from nsys2prv.metrics import gpu_attribution, pop
from nsys2prv.model.align.clock import Clock
from nsys2prv.model.align.syncpoints import sync_tables
from nsys2prv.model.communicators import Communicators
from nsys2prv.model.resources import Model
from nsys2prv.nsys.cache import CACHE_NOTE, CacheDamage, TableCache, entry_hash
from nsys2prv.nsys.database import Report
from nsys2prv.nsys.devices import device_map, gpu_of
from nsys2prv.nsys.diagnostics import capture_warnings
from nsys2prv.nsys.export import BESIDE, beside_note, resolve_input
from nsys2prv.nsys.identity import Identity, identify
from nsys2prv.nsys.ids import pid_of, tid_of
from nsys2prv.nsys.lifetimes import ABSURD_NS, process_lifetimes
from nsys2prv.nsys.readers.base import ReadResult
from nsys2prv.nsys.readers.mpi import RawMpi, read_p2p
from nsys2prv.nsys.readers.nvtx import row_classes
from nsys2prv.paraver.chunks import write_chunk
from nsys2prv.translate.context import Context
from nsys2prv.translate.launches import Launches, restrict
from nsys2prv.translate.launches import of_tables as launches_of
from nsys2prv.translate.records import Translation

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

    def fates(self, kinds: tuple[str, ...], dropped: dict[str, int] | None = None) -> list[dict]:
        """Every listed table of the report with the fate of its rows (``kinds.table_fates``)."""
        return K.table_fates(self.table_counts, self.nvtx_classes, kinds, dropped)


def report_info(report, lifetimes: bool = True) -> ReportInfo:
    """The report's metadata (``lifetimes`` False: without the processes' lifetimes, found apart)."""
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
        device_map(report),
        report.source,
        report.index,
        process_lifetimes(report) if lifetimes else None,
        nvtx_classes,
        list(report.notes),
        report.host_known,
    )


def _lifetimes_beside(sqlite: Path, src: Source) -> Future:
    """``process_lifetimes`` on a connection of its own in a thread: SQLite's aggregation over every
    table (a full scan of each) runs while this thread reads the tables (both release the GIL)."""

    def run():
        report = Report(sqlite, src.index, source=str(src.file.input))
        try:
            return process_lifetimes(report)
        finally:
            report.close()

    pool = ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(run)
    finally:
        pool.shutdown(wait=False)


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
    ordinal (``nsys.devices.gpu_of``), derived here once and cached with the table for every later stage."""
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
                fresh[k] = (None, None) if res is None else (res.table, _tally(res))
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


# ---------------------------------------------------------------------------------------------------
# stage A
@dataclass
class Scan:
    info: ReportInfo
    tallies: dict[str, dict]  # read tallies of the translated kinds (declaration order)
    keys: dict[str, pd.DataFrame]  # the resource model's keys, per side (``model_keys``)
    pop_keys: dict[str, pd.DataFrame]  # the same over the POP kinds, whatever -t (metrics/pop.py KINDS)
    domains: list[str]
    metrics: list[str]
    min_time: int | None
    rows: int  # translated-kind rows
    window: tuple[int, int] | None  # first occurrence of the -f range (raw times)
    sync: dict = field(default_factory=dict)  # align.syncpoints.sync_tables: rows the alignment uses
    p2p: RawMpi | None = None  # mpi.read_p2p: raw point-to-point, wait and communicator rows


MODEL_KEYS = {K.CPU: ["tid"], K.GPU: ["gpid", "device", "stream", "lane"], K.METRIC: ["gpu"]}


GPU_STREAM = ("gpid", "device", "stream")  # a GPU stream: the model's key, before the overlap lane
LANE_COLUMNS = [*GPU_STREAM, "start", "end"]  # what an activity's overlap lane depends on


def stream_part(columns: list[np.ndarray], ids: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """GPU activities as (stream code, start, end) for ``stream_lanes``, from their ``LANE_COLUMNS``
    (``ids``: the streams' codes)."""
    gpid, device, stream, start, end = columns
    return (
        tuple_codes([np.asarray(gpid, np.int64), np.asarray(device, np.int64), np.asarray(stream, np.int64)], ids),
        np.array(start, np.int64),
        np.array(end, np.int64),
    )


def stream_lanes(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The stream codes and overlap lanes (``core.intervals.overlap_lanes``) of GPU activities given as
    ``stream_part``s, every translated GPU-side kind of a report in declaration order (a table or a
    batch a part)."""
    stream, start, end = (np.concatenate(x) for x in zip(*parts))
    return stream, overlap_lanes(stream, start, end)


def lane_kinds(src: Source) -> tuple[str, ...]:
    """The kinds whose activities share the overlap lanes: the translated GPU-side kinds."""
    return tuple(k for k in K.side_kinds(K.GPU) if k in src.reading.kinds)


def lane_tag(src: Source) -> str:
    """The name of the report's overlap lanes in its table cache entry (they depend on ``lane_kinds``)."""
    return entry_hash(repr(lane_kinds(src)))


def attach_lanes(src: Source, tables: dict[str, pd.DataFrame]) -> list[str]:
    """Give the translated GPU activities of ``tables`` (whole, unclipped) the overlap lanes stage A
    stored in the table cache (column ``lane``, only on the tables of a report with an activity on an
    extra lane); where the cache has none (it cannot be written, its file was unusable), ``add_lanes``
    derives them.  Returns what to say about the cache (``TableCache.notes``)."""
    cache = table_cache(src)
    got = cache.lanes(lane_tag(src))
    if got is None:
        add_lanes(tables)
        return cache.notes
    for k, lane in got.items():
        if k in tables:
            if len(lane) != len(tables[k]):
                raise CacheDamage(f"{LANES_NOTE}: {len(lane)} lanes for {len(tables[k])} {k} rows")
            tables[k] = tables[k].assign(lane=lane.astype(np.int64))
    return []


LANES_NOTE = "the stored overlap lanes do not match the table"


def add_lanes(tables: dict[str, pd.DataFrame]) -> int:
    """Give the GPU activities (every GPU-side kind) of a stream that overlap an earlier activity of
    the same stream a lane > 0 (column ``lane``, only on the tables of a report that has such
    overlaps): each lane is a row of its own in the trace, so that no activity's end record closes
    another one still running.  Stage A (``_Facts``) numbers them as the tables go by and stores them
    in the table cache (``attach_lanes`` gives them back); this derives them where the cache cannot
    hold them.  Returns the number of activities on an extra lane."""
    kinds = [k for k in K.side_kinds(K.GPU) if k in tables and len(tables[k])]
    if not kinds:
        return 0
    ids: dict = {}
    _, lanes = stream_lanes([stream_part([tables[k][c].to_numpy(np.int64) for c in LANE_COLUMNS], ids) for k in kinds])
    if not lanes.any():
        return 0
    cut = np.cumsum([len(tables[k]) for k in kinds])[:-1]
    for k, part in zip(kinds, np.split(lanes, cut)):
        tables[k] = tables[k].assign(lane=part)
    return int((lanes > 0).sum())


def _key_frame(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    if "lane" in cols and "lane" not in df:
        return df[[c for c in cols if c != "lane"]].assign(lane=np.zeros(len(df), np.int64))
    return df[cols]


def model_keys(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Just what ``build_model`` reads of the tables: the unique keys of each side of the model
    (CPU thread ids, GPU streams and their overlap lanes, GPU metric rows), over the kinds declared
    on that side."""
    keys = {}
    for side, cols in MODEL_KEYS.items():
        frames = [_key_frame(tables[k], cols) for k in K.side_kinds(side) if k in tables and len(tables[k])]
        if frames:
            keys[side] = pd.concat(frames, ignore_index=True).drop_duplicates().reset_index(drop=True)
    return keys


def _first_occurrence(tables: dict, name: str | None) -> tuple[int, int] | None:
    df = tables.get("nvtx")
    if not name or df is None:
        return None
    hit = df[(df["name"] == name) & (df["kind"] != "mark")]
    if not len(hit):
        return None
    first = hit.loc[hit["start"].idxmin()]
    return int(first["start"]), int(first["end"])


def scan_report(src: Source, filter_nvtx: str | None = None) -> Scan:
    """Stage A for one report; the result itself is cached (per categories and -f range), so a
    warm start reads no table at all here."""
    # (the scan lives in the table cache entry, whose name holds the code's version: core/versions.py)
    r = src.reading
    tag = entry_hash(repr((r.kinds, r.link_calls, filter_nvtx, r.align_kinds, r.marker, r.p2p, r.pop_kinds)))
    cache = None
    if not src.file.force_sqlite:
        try:
            cache = table_cache(src)
            res = cache.load_obj(f"scan-{tag}.n2p", Scan, (ReportInfo, Identity, RawMpi))
            if res is not None:
                res.info.source, res.info.index = str(src.file.input), src.index
                return _beside_said(res, src)
        except OSError:
            pass
    res = _scan(src, filter_nvtx)
    if cache is not None:  # (what this run found of the cache is said, not cached)
        said = res.info.capture_warnings
        res.info.capture_warnings = [w for w in said if not w.startswith(CACHE_NOTE) and BESIDE not in w]
        cache.store_obj(f"scan-{tag}.n2p", res)
        res.info.capture_warnings = [*said, *cache.notes]
    return _beside_said(res, src)


def _beside_said(res: Scan, src: Source) -> Scan:
    """The scan saying (once, as this run finds it) that an untrusted export beside the report was ignored."""
    note = beside_note(Path(src.file.input))
    said = [w for w in res.info.capture_warnings if BESIDE not in w]
    res.info.capture_warnings = said + ([note] if note else [])
    return res


def read_each(src: Source, kinds: tuple[str, ...], visit) -> tuple[ReportInfo, dict]:
    """Every table of ``kinds`` in turn, from the cache or read from the report and added to the cache,
    given to ``visit(kind, table or None)`` and let go before the next: stage A holds one table at a
    time, not the report.  Returns the metadata and each kind's tally (None: no such data)."""
    sqlite = sqlite_of(src)
    cache = TableCache(Path(src.file.cache_root), sqlite)
    info = cache.meta(ReportInfo, (Identity,))
    missing = [k for k in kinds if not cache.has(k)]
    report: Report | None = None
    results: dict = {}
    lifetimes = None
    try:
        if info is None or missing or info.lifetimes is None:
            report = Report(sqlite, src.index, source=str(src.file.input))
            if info is None or info.lifetimes is None:  # (also: metadata cached before lifetimes existed)
                lifetimes = _lifetimes_beside(sqlite, src)
            if info is None:
                info = report_info(report, lifetimes=False)
        assert info is not None
        for k in kinds:
            ranges = _batches(report, k) if k in missing and report is not None else None
            if ranges and report is not None:
                results[k] = _read_batched(report, k, ranges, cache, visit, info.devmap)
                continue
            if k in missing and report is not None:
                res = read_kind(report, k, info.devmap)
                table = None
                if res is not None:
                    table, res.table = res.table, None
                    cache.store(None, {k: (table, _tally(res))})
                results[k] = res
            else:
                table = cache.table(k)
            visit(k, table)
            del table
        tallies: dict[str, dict | None] = {k: cache.kinds.get(k) for k in kinds if k not in missing}
        fresh: dict[str, dict | None] = {}
        if lifetimes is not None:
            info.lifetimes = lifetimes.result()
        if report is not None:
            for k, res in count_all_unreadable(report, {k: results[k] for k in missing}).items():
                tallies[k] = fresh[k] = None if res is None else _tally(res)
            cache.store(info, {k: (None, t) for k, t in fresh.items() if results[k] is None})
            cache.set_tallies({k: t for k, t in fresh.items() if results[k] is not None and t is not None})
    finally:
        if report is not None:
            report.close()
    info.source, info.index = str(src.file.input), src.index
    info.capture_warnings = [*info.capture_warnings, *cache.notes]  # unusable cache files
    return info, tallies


BATCH_ROWS = 500_000  # rows of a large table read at a time (kinds declared ``batched``)


def _batches(report: Report, kind: str) -> list[tuple[int, int]] | None:
    """Rowid ranges of about BATCH_ROWS rows of a large table read by a row-by-row reader (None:
    read it whole: small, not row by row, or with open-ended rows, which are closed at the table's
    last time; a table of instants, without ``end``, is read in batches too)."""
    reader = K.BY_NAME[kind].reader
    if not K.BY_NAME[kind].batched:
        return None
    table = reader.tables[0]  # (the rows; a row-by-row reader's other tables are looked up per batch)
    try:
        if report.count(table) <= 2 * BATCH_ROWS or (
            report.has(table, "end") and report.count(table, '"end" IS NULL')
        ):  # (instants, such as CPU samples, have no end)
            return None
    except sqlite3.DatabaseError:
        return None
    span = report.rowid_range(table)
    if span is None:
        return None
    return [(lo, lo + BATCH_ROWS) for lo in range(span[0], span[1] + 1, BATCH_ROWS)]


def _read_batched(
    report: Report, kind: str, ranges: list[tuple[int, int]], cache: TableCache, visit, devmap: pd.DataFrame
):
    """``kind``'s table read (``read_kind``) a rowid range at a time: each batch visited and added to
    the cache, the tallies summed (the ReadResult, without its table; None: the reader read nothing)."""
    reader = K.BY_NAME[kind].reader
    total: list = []

    def frames():
        for lo, hi in ranges:
            report.window = (reader.tables[0], lo, hi)
            try:
                res = read_kind(report, kind, devmap)
            finally:
                report.window = None
            if res is None:
                return
            df, res.table = res.table, None
            if total:
                total[0].absorb(res)
            else:
                total.append(res)
            visit(kind, df)
            yield df

    cache.store_batches(kind, frames(), lambda: _tally(total[0]))
    return total[0] if total else None


def _tally(res) -> dict:
    return {"source_rows": res.source_rows, "dropped": res.dropped, "notes": res.notes}


class _Facts:
    """What stage A keeps of each table as it goes by (``read_each``): the Scan's reductions."""

    def __init__(self, src: Source, filter_nvtx: str | None):
        self.src, self.filter_nvtx = src, filter_nvtx
        self.rows = 0
        self.mins: list[int] = []
        self.domains: list[str] = []
        self.metrics: list[str] = []
        self.sync: dict = {}
        self.window: tuple[int, int] | None = None
        self.present: set[str] = set()
        self.keys: dict[str, list] = {}
        self.pop_keys: dict[str, list] = {}
        self.gpu: dict[str, list] = {}  # translated GPU kinds: (stream code, start, end) per table or batch
        self.gpu_rows: dict[str, int] = {}  # ... and their rows
        self.streams: dict = {}  # (gpid, device, stream) -> stream code

    def __call__(self, kind: str, df: pd.DataFrame | None) -> None:
        if df is None:
            return
        keys = model_keys({kind: df}) if kind in pop.KINDS else None  # (a translated POP kind: the same)
        for side, frame in (keys or {}).items():
            self.pop_keys.setdefault(side, []).append((kind, frame))
        for k, rows in sync_tables({kind: df}, self.src.reading.marker).items():  # (a batch at a time)
            self.sync[k] = pd.concat([self.sync[k], rows], ignore_index=True) if k in self.sync else rows
        if kind not in self.src.reading.kinds:
            return
        self.present.add(kind)
        self.rows += len(df)
        if len(df):
            self.mins.append(int(df["start"].min()))
        if kind == "nvtx":
            self.domains = sorted(df["domain"].unique())
            self.window = _first_occurrence({kind: df}, self.filter_nvtx)
        if kind == "gpu_metrics":
            self.metrics = list(df["metric"].unique())
        if kind in K.side_kinds(K.GPU):  # (lanes over every GPU activity: ``model_keys``)
            self.gpu.setdefault(kind, []).append(
                stream_part([df[c].to_numpy(np.int64) for c in LANE_COLUMNS], self.streams)
            )
            self.gpu_rows[kind] = self.gpu_rows.get(kind, 0) + len(df)
        else:
            for side, frame in (model_keys({kind: df}) if keys is None else keys).items():
                self.keys.setdefault(side, []).append((kind, frame))

    def model_keys(self, cache: TableCache, tag: str) -> tuple[dict, dict]:
        """The models' keys; the overlap lanes of the GPU activities stored in ``cache`` under ``tag``."""
        keys = {side: _unique(frames) for side, frames in self.keys.items()}
        parts = [x for k in K.side_kinds(K.GPU) for x in self.gpu.get(k, ())]  # (add_lanes' order)
        self.gpu = {}
        rows = {k: n for k in K.side_kinds(K.GPU) if (n := self.gpu_rows.get(k, 0))}
        if not parts:
            cache.store_lanes(tag, rows, None)
        else:
            stream, lane = stream_lanes(parts)
            del parts
            cache.store_lanes(tag, rows, lane if lane.any() else None)
            pairs = np.unique(stream * (int(lane.max(initial=0)) + 1) + lane)
            code, ln = np.divmod(pairs, int(lane.max(initial=0)) + 1)
            triple = np.array(sorted(self.streams, key=lambda t: self.streams[t]), np.int64).reshape(-1, 3)[code]
            keys[K.GPU] = pd.DataFrame(
                {"gpid": triple[:, 0], "device": triple[:, 1], "stream": triple[:, 2], "lane": ln}
            )
        return (
            {side: keys[side] for side in MODEL_KEYS if side in keys},
            {side: _unique(frames) for side, frames in self.pop_keys.items()},
        )


def _unique(frames: list[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    """The distinct keys of the kinds' frames, taken in the kinds' declaration order (as ``model_keys``)."""
    order = [k.name for k in K.KINDS]
    frames = sorted(frames, key=lambda kf: order.index(kf[0]))
    return pd.concat([f for _, f in frames], ignore_index=True).drop_duplicates().reset_index(drop=True)


def _scan(src: Source, filter_nvtx: str | None) -> Scan:
    extra = tuple(k for k in src.reading.align_kinds if k not in src.reading.kinds)
    kinds = tuple(dict.fromkeys(default_kinds(src) + extra))  # (each kind read and visited once)
    facts = _Facts(src, filter_nvtx)
    try:
        info, got = read_each(src, kinds, facts)
    except CACHE_DAMAGE as exc:  # a damaged cache entry: discarded and read again from the report
        table_cache(src).discard()
        facts = _Facts(src, filter_nvtx)
        info, got = read_each(src, kinds, facts)
        info.capture_warnings = [*info.capture_warnings, damaged_note(exc)]
    tallies = {k: tally for k, tally in got.items() if k in src.reading.kinds and (k in facts.present or tally)}
    sync = {k: facts.sync[k] for k in ("mpi", "kernels", "nvtx") if k in facts.sync}  # (sync_tables' order)
    keys, pop_keys = facts.model_keys(table_cache(src), lane_tag(src))
    _trim_identity(info, [keys, pop_keys])
    return Scan(
        info,
        tallies,
        keys,
        pop_keys,
        facts.domains,
        facts.metrics,
        min(facts.mins) if facts.mins else None,
        facts.rows,
        facts.window,
        sync,
        _read_p2p(src) if src.reading.p2p else None,
    )


def _trim_identity(info: ReportInfo, key_sets: list[dict[str, pd.DataFrame]]) -> None:
    """Keep the names of just the processes and threads the models (the trace's, POP's) will have:
    the captured lists hold every process and thread of the host, and the main process keeps one per
    report."""
    tids, pids = set(), set()
    for keys in key_sets:
        if K.CPU in keys:
            g = keys[K.CPU]["tid"].to_numpy(np.int64)
            tids.update(tid_of(g).tolist())
            pids.update(pid_of(g).tolist())
        if K.GPU in keys:
            pids.update(pid_of(keys[K.GPU]["gpid"].to_numpy(np.int64)).tolist())
    ident = info.identity
    ident.thread_names = {t: n for t, n in ident.thread_names.items() if t in tids}
    ident.process_names = {p: n for p, n in ident.process_names.items() if p in pids}


def _read_p2p(src: Source):
    sqlite = sqlite_of(src)
    report = Report(sqlite, src.index, source=str(src.file.input))
    try:
        return read_p2p(report)
    finally:
        report.close()


# ---------------------------------------------------------------------------------------------------
# stage C
@dataclass
class TraceSpec:
    """What the translators need of the run (the same for every report)."""

    categories: frozenset[str]
    nvtx_index: dict[str, int]  # NVTX domain -> index
    metric_types: dict[str, int]  # GPU metric name -> event type id
    types: dict  # event type id -> EventType (every type of the trace)


@dataclass
class PopShare:
    """A report's part in the POP metrics."""

    names: tuple[str, ...] | None  # NVTX ranges the POP windows need (None: all)
    tasks: dict  # (report, pid) -> POP task index, for this report's processes
    only: bool = False  # only the POP partial (``nsys2prv pop``): no translation


@dataclass
class RankJob:
    src: Source
    info: ReportInfo
    clock: Clock  # report time -> trace time
    clip: tuple[int, int] | None  # -f window in the report's raw times
    trace: TraceSpec
    pop: PopShare
    attribution: bool  # GPU metrics attribution partial
    chunk: str  # chunk file prefix (pop.only: of its POP files only)
    comms: Communicators | None = None  # the run's MPI communicators (global ids, world ranks)


def job_context(
    job: RankJob,
    model: Model,
    tables: dict[str, pd.DataFrame],
    calls: pd.DataFrame | None = None,
    launches: Launches | None = None,
) -> Context:
    """The translators' Context for ``tables`` of the job's report (``launches``: each activity's
    launch call, its row in ``calls``)."""
    return Context(
        job.src.index,
        job.clock,
        model,
        job.trace.categories,
        job.trace.nvtx_index,
        tables,
        calls=calls,
        metric_types=job.trace.metric_types,
        comms=job.comms,
        launches=launches,
    )


@dataclass
class RankResult:
    index: int
    counts: dict  # kind -> CategoryCount (clip drops + translation)
    pop: object  # metrics.pop.PopPartial
    attribution: pd.DataFrame | None
    chunk: object = None  # paraver.chunks.ChunkMeta
    warnings: list = field(default_factory=list)  # about the report, found in this stage (a damaged cache)


def in_window(df: pd.DataFrame, lo: int, hi: int) -> np.ndarray:
    """The rows ``clip`` keeps: marks within [lo, hi], intervals overlapping it."""
    start, end = df["start"], df["end"]
    point = start == end
    return ((end > lo) & (start < hi) | point & (start >= lo) & (start <= hi)).to_numpy()


def clip(tables: dict[str, pd.DataFrame], lo: int, hi: int, out: Translation) -> dict[str, np.ndarray]:
    """Cut ``tables`` to [lo, hi] (``in_window``; the rows dropped counted in ``out``), each row's
    times to the window; returns each kind's rows kept (a boolean mask over its rows before)."""
    kept = {}
    for kind, df in list(tables.items()):
        inside = kept[kind] = in_window(df, lo, hi)
        out.count(kind).drop("outside the -f/--filter-nvtx window", int((~inside).sum()))
        df = df[inside].copy()
        df["start"] = df["start"].clip(lower=lo)
        df["end"] = df["end"].clip(upper=hi)
        tables[kind] = df
    return kept


def translate_tables(ctx: Context, out: Translation, translators: bool = True, links: bool = True) -> None:
    """Every declared translator on its table, then the links; each counted under its summary name
    (a sliced report runs them apart, on different rows: ``pipeline/slices.py``)."""

    def run(name: str, fn) -> None:
        existed = name in out.counts
        n_events, n_comms = len(out.events), len(out.comms)
        rows = fn()
        records = sum(len(b) for b in out.events[n_events:]) + sum(len(c) for c in out.comms[n_comms:])
        count = out.count(name)
        count.translated_rows += rows
        count.records += records
        if not existed and name in K.OPTIONAL_COUNTS and not (rows or records or count.source_rows or count.dropped):
            del out.counts[name]  # a link or split with nothing to do: not a summary line

    for kind in K.KINDS if translators else ():
        df = ctx.tables.get(kind.name)
        if df is None:
            continue
        for tr in kind.translators:  # an empty table: its summary line, no translator run
            run(tr.count or kind.name, (lambda: tr.fn(df, ctx, out)) if len(df) else (lambda: 0))
    for link in K.LINKS if links else ():
        run(link.name, lambda: link.fn(ctx, out))


def translate_report(job: RankJob, model: Model) -> RankResult:
    """Stage C for one report (``model``: the run's resource model, sent once per worker).  With
    ``job.pop.only``, only the POP partial is computed (``nsys2prv pop``)."""
    r = job.src.index
    info, got = load(job.src)
    warnings = [w for w in info.capture_warnings if w not in job.info.capture_warnings]
    tables = {k: t for k, (t, _) in got.items() if k in job.src.reading.kinds and t is not None}
    link_calls = job.src.reading.link_calls and "cuda_api" not in tables
    calls = got["cuda_api"][0] if link_calls and "cuda_api" in got else None  # (for the links only)
    out = Translation()
    warnings += [w for w in attach_lanes(job.src, tables) if w not in warnings]  # (before the clip)
    # POP reads its kinds whatever -t translates (the translated tables are shared, not copied)
    untranslated = {k: t for k, (t, _) in got.items() if k in pop.ALL_KINDS and k not in tables and t is not None}
    # each activity's launch call, over the whole report (a call clipped away leaves its activities none)
    launches = None if job.pop.only else launches_of(tables.get("cuda_api", calls), tables)
    if job.clip is not None:
        kept = clip(tables, job.clip[0], job.clip[1], out)
        clip(untranslated, job.clip[0], job.clip[1], Translation())  # (drops of untranslated kinds: not counted)
        if launches is not None:
            launches = restrict(launches, kept.get("cuda_api"), kept, launches.shared)
    pop_tables = {k: t for k, t in (*tables.items(), *untranslated.items()) if k in pop.ALL_KINDS}
    partial = pop.collect_partial(
        r, pop_tables, job.pop.tasks, job.clock, job.pop.names, not job.pop.names, job.chunk + ".pop.npy", job.comms
    )
    del untranslated, pop_tables
    if job.pop.only:  # (no GPU metrics attribution either: ``nsys2prv pop`` writes no OUT.gpu_metrics.csv)
        return RankResult(r, out.counts, partial, None, warnings=warnings)
    attributed = gpu_attribution.partial(r, tables, model) if job.attribution else None
    if "cuda_api" in tables:
        calls = tables["cuda_api"]
    ctx = job_context(job, model, tables, calls, launches)
    translate_tables(ctx, out)
    del tables, calls, ctx, got
    res = RankResult(r, out.counts, partial, attributed, warnings=warnings)
    res.chunk = write_chunk(out, model, r, job.trace.types, job.chunk, consume=True)
    del out
    release()  # the next report of this worker starts from a trimmed heap
    return res
