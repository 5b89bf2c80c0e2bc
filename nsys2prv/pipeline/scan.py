"""Stage A (``scan_report``): export if needed, read and normalise the report (or load its Parquet
cache), derive once what later stages need of its rows and store it with the tables (each kernel's
``nccl`` flag, set by the kernels reader; the GPU id of each GPU activity, column ``gpu``,
``read_kind``; the overlap lane of each GPU activity, ``TableCache.store_lanes``), and return only
small metadata: identity, device map, each process's lifetime (first and last activity over every
event table), the keys the resource models need (the trace's, over the translated kinds; POP's,
over the POP kinds whatever -t), NVTX domains, GPU metric names, min time, the -f window's
occurrence, the readers' tallies (``Scan``, cached too: a warm start reads no table)."""

from __future__ import annotations

import pickle
import sqlite3
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from nsys2prv import kinds as K
from nsys2prv.core.memory import release
from nsys2prv.core.workers import forked
from nsys2prv.metrics import pop
from nsys2prv.model.align.syncpoints import sync_tables
from nsys2prv.nsys.cache import CACHE_NOTE, TableCache, entry_hash
from nsys2prv.nsys.database import Report
from nsys2prv.nsys.devices import device_map
from nsys2prv.nsys.export import BESIDE, beside_note
from nsys2prv.nsys.identity import Identity
from nsys2prv.nsys.ids import pid_of, tid_of
from nsys2prv.nsys.lifetimes import Covered, activity_tables, process_lifetimes, table_spans
from nsys2prv.nsys.readers.mpi import RawMpi, read_p2p
from nsys2prv.pipeline import early, parallel, read_ahead
from nsys2prv.pipeline.lanes import LANE_COLUMNS, lane_tag, launch_kinds, launch_tag, stream_lanes, stream_part
from nsys2prv.pipeline.report import (
    CACHE_DAMAGE,
    NO_DEVMAP,
    ReportInfo,
    Source,
    count_all_unreadable,
    damaged_note,
    default_kinds,
    read_kind,
    report_info,
    sqlite_of,
    table_cache,
    tally_of,
)
from nsys2prv.translate.launches import match_parts


@dataclass
class Scan:
    info: ReportInfo
    tallies: dict[str, dict]  # read tallies of the translated kinds (declaration order; counted and emptied by stage B)
    keys: dict[str, pd.DataFrame]  # the resource model's keys, per side (``model_keys``)
    pop_keys: dict[str, pd.DataFrame]  # the same over the POP kinds, whatever -t (metrics.pop.KINDS)
    domains: list[str]
    metrics: list[str]
    min_time: int | None
    rows: int  # translated-kind rows
    window: tuple[int, int] | None  # first occurrence of the -f range (raw times)
    sync: dict = field(default_factory=dict)  # align.syncpoints.sync_tables: rows the alignment uses
    p2p: RawMpi | None = None  # mpi.read_p2p: raw point-to-point, wait and communicator rows
    packed: dict[str, bytes] = field(default_factory=dict)  # STAGE_B_INPUTS pickled (``pack``)

    def pack(self) -> Scan:
        """Stage B's inputs (STAGE_B_INPUTS and the report's device map: pandas frames, a few KB of
        Python objects each once unpickled) pickled into one bytes object each, read back one report
        at a time by ``StageBInput``.  The main process receives every report's scan before stage B:
        unpickled, these frames were ~25 KB of small objects per report, interleaved with the scans
        it keeps; stage B dropped them, and the memory stayed with the process (partly used arenas).
        The main process's ``info.devmap`` is then ``report.NO_DEVMAP``, an empty frame (no later
        stage reads it; one frame for every report: ``ReportInfo.__setstate__``)."""
        packed = {name: pickle.dumps(getattr(self, name), pickle.HIGHEST_PROTOCOL) for name in STAGE_B_INPUTS}
        packed[DEVMAP] = pickle.dumps(self.info.devmap, pickle.HIGHEST_PROTOCOL)
        self.drop_stage_b_inputs()
        self.packed = packed
        self.info.devmap = NO_DEVMAP
        return self

    def drop_stage_b_inputs(self) -> None:
        for name in STAGE_B_INPUTS:
            setattr(self, name, None)
        self.packed = {}


STAGE_B_INPUTS = ("keys", "pop_keys", "sync", "p2p")  # per report, read only by stage B
DEVMAP = "devmap"  # ``StageBInput``'s name of ``info.devmap``


class StageBInput(Sequence):
    """One of STAGE_B_INPUTS over every report, each report's unpickled when it is read (the last
    one read kept): stage B holds one report's frames at a time, not every report's."""

    def __init__(self, scans: list[Scan], name: str) -> None:
        self.scans, self.name = scans, name
        self._last: tuple[int, object] | None = None

    def __len__(self) -> int:
        return len(self.scans)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = range(len(self))[i]
        if self._last is None or self._last[0] != i:
            s = self.scans[i]
            blob = s.packed.get(self.name)
            if blob is not None:
                self._last = (i, pickle.loads(blob))
            else:
                self._last = (i, s.info.devmap if self.name == DEVMAP else getattr(s, self.name))
        return self._last[1]


def scan_for_stage_b(src: Source, filter_nvtx: str | None = None) -> Scan:
    """``scan_report``, with stage B's inputs packed for the trip to the main process (``Scan.pack``)."""
    return scan_report(src, filter_nvtx).pack()


MODEL_KEYS = {K.CPU: ["tid"], K.GPU: ["gpid", "device", "stream", "lane"], K.METRIC: ["gpu"]}


def _key_frame(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    if "lane" in cols and "lane" not in df:
        return _runs(df, [c for c in cols if c != "lane"]).assign(lane=lambda k: np.zeros(len(k), np.int64))
    return _runs(df, cols)


def _runs(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """``df[cols]`` less each row equal to the one before it: ``drop_duplicates`` then keeps the same rows
    in the same order, hashing a few rows instead of every one (a table's keys come in long runs); the
    columns' arrays compared as they are, and only the rows kept copied."""
    series = [df[c] for c in cols]
    if len(df) < 2 or not all(isinstance(s.dtype, np.dtype) and s.dtype.kind in "iub" for s in series):
        return df[cols]
    arrays = [s.to_numpy() for s in series]
    new = np.zeros(len(df), bool)
    new[0] = True
    for a in arrays:
        new[1:] |= a[1:] != a[:-1]
    return pd.DataFrame(dict(zip(cols, (a[new] for a in arrays))), copy=False)


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
    if not src.file.force_sqlite and not src.file.private:  # (a run's own cache: no later run reads its scan)
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


def _lifetimes_beside(sqlite: Path, src: Source, report: Report, skip: set[str]) -> Future:
    """``table_spans`` (the tables not in ``skip``) on a connection of its own in a thread: SQLite's
    aggregation over each table (a full scan) runs while this thread reads the tables (both release
    the GIL); none (no connection) when every table is in ``skip``."""
    if all(t in skip for t, *_ in activity_tables(report)):
        done: Future = Future()
        done.set_result({})
        return done

    def run():
        report = Report(sqlite, src.index, source=str(src.file.input))
        try:
            return table_spans(report, skip)
        finally:
            report.close()

    pool = ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(run)
    finally:
        pool.shutdown(wait=False)


def read_each(src: Source, kinds: tuple[str, ...], visit) -> tuple[ReportInfo, dict]:
    """Every table of ``kinds`` in turn, from the cache or read from the report and added to the cache,
    given to ``visit(kind, table or None)`` and let go before the next: stage A holds one table at a
    time, not the report.  Returns the metadata and each kind's tally (None: no such data)."""
    sqlite = sqlite_of(src)
    cache = TableCache(Path(src.file.cache_root), sqlite, ipc=src.file.ipc)  # (a run's own: read once)
    info = cache.meta(ReportInfo, (Identity,))
    missing = [k for k in kinds if not cache.has(k)]
    report: Report | None = None
    plans: dict[str, list[tuple[int, int]] | None] = {}  # missing kind -> its rowid ranges (None: read whole)
    # what the helpers read (``parallel.helpers``, ``read_ahead.helper_parts``), in order; the kinds read whole
    parts: read_ahead.Ahead | None = None
    whole: set[str] = set()
    results: dict = {}
    lifetimes = None  # the spans of the tables scanned beside the reading (None: no lifetimes to find)
    found: dict = {}  # the spans the command line's early process found (``early.spans``)
    later = False  # its scan of this report goes on (``early.pending``)
    covered = Covered()  # the lifetimes of the tables read here, from their rows (``ReadResult.as_exported``)
    cache.hold_manifest()  # (the kinds stored one at a time, the manifest written once)
    try:
        if info is None or missing or info.lifetimes is None:
            report = Report(sqlite, src.index, source=str(src.file.input))
            plans = {k: _batches(report, k) for k in missing}
            helped = parallel.helpers()
            todo = read_ahead.helper_parts(report, plans) if helped is not None else []
            devmap = None  # (the helpers' devices: the metadata's too)
            if helped is not None and todo:  # (they read while this process gathers the metadata; forked
                devmap = device_map(report) if info is None else info.devmap  # before the thread below)
                parts = read_ahead.helpers_read(report, helped, todo, devmap)
                whole = {k for k, lo, _ in todo if lo is None}
            if info is None or info.lifetimes is None:  # (also: metadata cached before lifetimes existed)
                found = early.spans(sqlite) or {}
                later = early.pending(sqlite)  # (the early process scans on: the rest of them once read)
                readers = [K.BY_NAME[k].reader for k in missing]
                # the other tables scanned beside (those read as exported: from their rows, ``covered``)
                skip = {r.tables[0] for r in readers if r.as_exported} | set(found)
                lifetimes = _lifetimes_beside(
                    sqlite, src, report, {t for t, *_ in activity_tables(report)} if later else skip
                )
            if info is None:
                info = report_info(report, lifetimes=False, devmap=devmap)
        assert info is not None
        for k in kinds:
            ranges = plans.get(k) if report is not None else None
            if ranges and report is not None:
                results[k] = _read_batched(report, k, ranges, cache, visit, info.devmap, covered, parts)
                continue
            if k in missing and report is not None:
                res = (
                    read_ahead.probed(report, next(parts))
                    if parts is not None and k in whole
                    else read_kind(report, k, info.devmap)
                )
                table = None
                if res is not None:
                    table, res.table = res.table, None
                    covered.add(res, table, res.times_as_exported())
                    cache.store(None, {k: (table, tally_of(res))})
                results[k] = res
            else:
                table = cache.table(k)
            visit(k, table)
            del table
        tallies: dict[str, dict | None] = {k: cache.kinds.get(k) for k in kinds if k not in missing}
        fresh: dict[str, dict | None] = {}
        if lifetimes is not None and report is not None:  # (a table none has, e.g. read unclean: scanned now)
            if later:
                found = early.finish(sqlite) or {}
            info.lifetimes = process_lifetimes(report, {**found, **lifetimes.result(), **covered.spans(report)})
        if report is not None:
            for k, res in count_all_unreadable(report, {k: results[k] for k in missing}).items():
                tallies[k] = fresh[k] = None if res is None else tally_of(res)
            cache.store(info, {k: (None, t) for k, t in fresh.items() if results[k] is None})
            cache.set_tallies({k: t for k, t in fresh.items() if results[k] is not None and t is not None})
    finally:
        if parts is not None:
            parts.cancel()
        if report is not None:
            report.close()
        cache.write_held()
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
    report: Report,
    kind: str,
    ranges: list[tuple[int, int]],
    cache: TableCache,
    visit,
    devmap: pd.DataFrame,
    covered: Covered,
    parts: read_ahead.Ahead | None = None,
):
    """``kind``'s table read (``read_kind``) a rowid range at a time: each batch visited, added to
    the cache and to ``covered``, the tallies summed (the ReadResult, without its table; None: the
    reader read nothing); ``parts``: the helpers' results, the ranges past the first among them."""
    total: list = []

    def frames():
        with closing(read_ahead.batch_results(report, kind, ranges, devmap, parts)) as batches:
            for res in batches:
                if res is None:
                    return
                df, res.table = res.table, None
                covered.add(res, df, res.times_as_exported())
                if total:
                    total[0].absorb(res)
                else:
                    total.append(res)
                visit(kind, df)
                yield df

    cache.store_batches(kind, frames(), lambda: tally_of(total[0]))
    return total[0] if total else None


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
        self.launched = launch_kinds(src)  # activities whose launch calls are found (``launch_kinds``)
        self.links: dict[str, list] = {}  # ... their (gpid, corr), the calls' (tid, corr), per table or batch

    def __call__(self, kind: str, df: pd.DataFrame | None) -> None:
        if df is None:
            return
        keys = model_keys({kind: df}) if kind in pop.KINDS else None  # (a translated POP kind: the same)
        for side, frame in (keys or {}).items():
            self.pop_keys.setdefault(side, []).append((kind, frame))
        for k, rows in sync_tables({kind: df}, self.src.reading.marker).items():  # (a batch at a time)
            self.sync[k] = pd.concat([self.sync[k], rows], ignore_index=True) if k in self.sync else rows
        if self.launched and (kind == "cuda_api" or kind in self.launched):
            ids = "tid" if kind == "cuda_api" else "gpid"
            self.links.setdefault(kind, []).append((df[ids].to_numpy(np.int64), df["corr"].to_numpy(np.int64)))
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

    def store_launches(self, cache: TableCache, tag: str) -> None:
        """Each activity's launch call (``translate.launches.match_parts``, over the whole report's
        batches) stored in ``cache`` under ``tag`` (nothing without calls or activities)."""
        links, self.links = self.links, {}
        if "cuda_api" not in links or not any(k in links for k in self.launched):
            return
        calls = links.pop("cuda_api")
        found = match_parts(calls, links)  # (the batches as read: never put together)
        del calls, links
        cache.store_launches(tag, found.rows, found.shared)


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
    release()  # (what the reading threads freed, before the whole report's lanes and launch calls)
    with _launches_beside(facts, table_cache(src), launch_tag(src)):
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


@contextmanager
def _launches_beside(facts: _Facts, cache: TableCache, tag: str):
    """``facts.store_launches`` after the block -- or, the only report's stage A (this process, the
    workers its helpers: one core idle), in a forked process while the block numbers the overlap
    lanes: it inherits the calls and activities (no copy through a pipe) and stores the launch
    calls in the table cache, where stage C finds them (nothing comes back)."""
    links = facts.links
    if parallel.helpers() is None or "cuda_api" not in links or not any(k in links for k in facts.launched):
        yield
        facts.store_launches(cache, tag)
        return
    with forked([(facts.store_launches, (cache, tag))]) as (stored,):
        facts.links = {}  # (the forked process has them)
        yield
        stored.result()


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
