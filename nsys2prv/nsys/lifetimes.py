"""Per-process lifetimes: the first and last timestamp of any activity of each process in a report.

Every event table of the export that has a ``start`` column and a thread or process id
(``globalTid`` / ``globalPid``) counts, whatever the conversion translates: scheduling
(``SCHED_EVENTS``), CPU samples (``COMPOSITE_EVENTS``), OS runtime, CUDA API, the CUPTI GPU tables,
NVTX, MPI, OpenACC, graphs.  ``PROFILER_OVERHEAD`` (nsys's own work inside the process: NVTX/CUDA
injection start-up, TLS allocation -- 1.5 to 26 ms per process before the program's first event on the
exports we measured) counts only for a process that has nothing else: that time is the profiler's, an
unprofiled run does not spend it, and counting it would make profiler start-up useful computation in
POP and move T (docs/pop-metrics.md).  One ``SELECT min(start), max(end)`` grouped by process per table,
run once per report in stage A and cached with its metadata.  Times are the report's own (as the readers
return them).  A table stage A reads anyway, one row per exported row with its start, end and id as
exported (``ReadResult.as_exported``), gives its spans from the rows read (``Covered``: the same
figures, without a second scan of the table: 2 of r10m's 2.8 CPU s); any other is scanned.
"""

from __future__ import annotations

import numpy as np

from nsys2prv.nsys.ids import ID_MASK, PID_SHIFT

ID_COLUMNS = ("globalTid", "globalPid")
ABSURD_NS = 7 * 86400 * 10**9  # a row this far from the middle of its table is corrupt (a week)
SKIP = ("StringIds", "ThreadNames", "PROCESSES", "ProcessStreams")  # no activity
PROFILER = "PROFILER_OVERHEAD"  # the profiler's own rows: only for a process with nothing else


def activity_tables(report) -> list[tuple[str, str, bool]]:
    """(table, id column, has an ``end`` column) of every event table with a start time and an id."""
    out = []
    for table in sorted(report.tables):
        if table in SKIP or table.startswith(("ENUM_", "TARGET_INFO_", "META_DATA_", "EXPORT_")):
            continue
        cols = report.columns(table)
        if "start" not in cols:
            continue
        idc = next((c for c in ID_COLUMNS if c in cols), None)
        if idc is not None:
            out.append((table, idc, "end" in cols))
    return out


def table_spans(report, skip=frozenset()) -> dict[str, list[tuple[int, int, int]]]:
    """table -> [(pid, first start, last end)] of the activity tables not in ``skip``, by SQL."""
    return dict(each_table_spans(report, skip))


def each_table_spans(report, skip=frozenset()):
    """(table, [(pid, first start, last end)]) of each activity table not in ``skip`` in turn, by SQL."""
    for t, idc, has_end in activity_tables(report):
        if t not in skip:
            yield t, _spans(report, t, idc, has_end)


# The tables stage A reads whole as exported (``Reader.as_exported``, declared with the readers in
# ``kinds.py``), giving their spans from the rows it reads (``Covered``): those of the POP kinds, read
# whatever -t (key None), and those of a -t category's kinds.  Plain data for the command line's early
# process (``pipeline/early.py``), which scans the other tables only and loads no reader;
# ``tests/test_early.py`` holds it to ``kinds.py`` and stage A's reading.
READ_AS_EXPORTED: dict[str | None, tuple[str, ...]] = {
    None: (
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
        "CUPTI_ACTIVITY_KIND_RUNTIME",
    ),
    "graphs": ("CUPTI_ACTIVITY_KIND_GRAPH_TRACE",),
}


def read_as_exported(categories) -> frozenset[str]:
    """The tables stage A reads whole as exported with the -t ``categories`` (``config.parse_categories``;
    None: those it reads whatever -t)."""
    return frozenset(
        t for c, tables in READ_AS_EXPORTED.items() if c is None or c in (categories or ()) for t in tables
    )


def process_lifetimes(report, known: dict | None = None) -> dict[int, tuple[int, int]]:
    """pid -> (first start, last end) over every activity table of ``report`` (pid 0 and NULL ids,
    nsys's own system-wide rows, are left out).  Timestamps more than ABSURD_NS from the median
    first start of the tables (corrupt rows, which the readers drop and count) are left out too.
    ``known``: the spans of some tables found already (``table_spans``, ``Covered.spans``, the command
    line's early process: ``early.spans``); every other table is scanned here.  The one place the
    spans of a report's tables are combined, wherever each was found."""
    known = known or {}
    found = []
    for table, idc, has_end in activity_tables(report):
        got = known.get(table)
        found += [
            (table, idc, has_end, *span) for span in (_spans(report, table, idc, has_end) if got is None else got)
        ]
    if not found:
        return {}
    los = sorted(lo for *_, lo, _ in found)
    ref = los[len(los) // 2]
    lo_ok, hi_ok = ref - ABSURD_NS, ref + ABSURD_NS
    redo = {(t, i, e) for t, i, e, _, lo, hi in found if lo < lo_ok or hi > hi_ok}
    found = [f for f in found if f[:3] not in redo]
    for table, idc, has_end in sorted(redo):
        found += [(table, idc, has_end, *span) for span in _spans(report, table, idc, has_end, (lo_ok, hi_ok))]
    spans: dict[int, tuple[int, int]] = {}
    own: dict[int, tuple[int, int]] = {}
    for table, _, _, pid, lo, hi in found:
        into = own if table == PROFILER else spans
        old = into.get(pid)
        into[pid] = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))
    for pid, span in own.items():  # a process seen only through the profiler's rows
        spans.setdefault(pid, span)
    return spans


def _spans(report, table: str, idc: str, has_end: bool, bounds: tuple[int, int] | None = None) -> list:
    """[(pid, first start, last end)] of one table (inside ``bounds`` when given)."""
    # only numbers count: text in a time or id column (a damaged row, which the readers drop and
    # count) would sort after every number in min/max
    end = """coalesce(CASE WHEN typeof("end") IN ('integer', 'real') THEN "end" END, start)""" if has_end else "start"
    where = f"""typeof("{idc}") = 'integer' AND typeof(start) IN ('integer', 'real')"""
    if bounds is not None:
        where += f" AND start BETWEEN {bounds[0]} AND {bounds[1]} AND {end} BETWEEN {bounds[0]} AND {bounds[1]}"
    key = f'("{idc}" >> {PID_SHIFT}) & {ID_MASK}'
    # one process in the table (the usual case): its span by one scan; GROUP BY sorts every row first
    first, last, lo, hi = report.rows(
        f'SELECT min({key}), max({key}), min(start), max({end}) FROM "{table}" WHERE {where}'
    )[0]
    if first is not None and first == last:
        groups = [(first, lo, hi)]
    else:
        groups = report.rows(f'SELECT {key} AS pid, min(start), max({end}) FROM "{table}" WHERE {where} GROUP BY pid')
    out = []
    for pid, lo, hi in groups:
        if pid and lo is not None and hi is not None:
            out.append((int(pid), int(lo), max(int(hi), int(lo))))
    return out


class Covered:
    """The spans of the tables stage A reads whole anyway (``ReadResult.as_exported``), from the rows
    read, a batch at a time (``add``); ``spans``: those of the tables read whole and clean, which are
    exactly what ``_spans`` scans: every row read (as many as the table has), none dropped (but exact
    duplicates) nor given another end, ids read as integers (NULL as 0: pid 0, left out as SQL's NULL)."""

    def __init__(self) -> None:
        self.parts: dict[str, dict[int, tuple[int, int]]] = {}
        self.ids: dict[str, str] = {}  # table -> the export's id column its reader read
        self.rows: dict[str, int] = {}
        self.unclean: set[str] = set()

    def add(self, res, df, clean: bool) -> None:
        """One read (a whole table or a batch of it): ``res`` its ReadResult, ``df`` its rows."""
        if res is None or res.as_exported is None:
            return
        table, idc, col = res.as_exported
        self.ids[table] = idc
        self.rows[table] = self.rows.get(table, 0) + res.source_rows
        if not clean or df is None:
            self.unclean.add(table)
            return
        into = self.parts.setdefault(table, {})
        for pid, lo, hi in spans_of(df[col].to_numpy(np.int64), df["start"].to_numpy(), df["end"].to_numpy()):
            old = into.get(pid)
            into[pid] = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))

    def spans(self, report) -> dict[str, list[tuple[int, int, int]]]:
        """table -> [(pid, first start, last end)] (by pid, as SQL's GROUP BY) of the tables read
        whole and clean (any other: scanned by ``process_lifetimes``)."""
        ids = {t: idc for t, idc, _ in activity_tables(report)}
        return {
            t: sorted((pid, lo, hi) for pid, (lo, hi) in self.parts.get(t, {}).items())
            for t in self.ids
            if t not in self.unclean and ids.get(t) == self.ids[t] and self.rows[t] == report.count(t)
        }


def spans_of(ids: np.ndarray, start: np.ndarray, end: np.ndarray) -> list[tuple[int, int, int]]:
    """[(pid, first start, last end)] of rows (pid 0 left out), by pid."""
    if not len(ids):
        return []
    pid = (ids >> PID_SHIFT) & ID_MASK
    start, end = np.asarray(start, np.int64), np.asarray(end, np.int64)
    if pid.min() == pid.max():
        groups = [(int(pid[0]), int(start.min()), int(end.max()))]
    else:
        order = np.argsort(pid, kind="stable")
        p = pid[order]
        at = np.flatnonzero(np.r_[True, p[1:] != p[:-1]])
        lo, hi = np.minimum.reduceat(start[order], at), np.maximum.reduceat(end[order], at)
        groups = [(int(a), int(b), int(c)) for a, b, c in zip(p[at], lo, hi)]
    return [(pid, lo, max(hi, lo)) for pid, lo, hi in groups if pid]


__all__ = [
    "process_lifetimes",
    "activity_tables",
    "table_spans",
    "each_table_spans",
    "read_as_exported",
    "Covered",
]
