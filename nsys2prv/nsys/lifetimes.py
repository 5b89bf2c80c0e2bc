"""Per-process lifetimes: the first and last timestamp of any activity of each process in a report.

Every event table of the export that has a ``start`` column and a thread or process id
(``globalTid`` / ``globalPid``) counts, whatever the conversion translates: scheduling
(``SCHED_EVENTS``), CPU samples (``COMPOSITE_EVENTS``), OS runtime, CUDA API, the CUPTI GPU tables,
NVTX, MPI, OpenACC, graphs, profiler overhead (nsys's own work inside the process: the process
exists).  One ``SELECT min(start), max(end)`` grouped by process per table, run once per report in
stage A and cached with its metadata.  Times are the report's own (as the readers return them).
"""

from __future__ import annotations

from nsys2prv.nsys.ids import ID_MASK, PID_SHIFT

ID_COLUMNS = ("globalTid", "globalPid")
SKIP = ("StringIds", "ThreadNames", "PROCESSES", "ProcessStreams")     # no activity


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


def process_lifetimes(report) -> dict[int, tuple[int, int]]:
    """pid -> (first start, last end) over every activity table of ``report`` (pid 0 and NULL ids,
    nsys's own system-wide rows, are left out)."""
    spans: dict[int, tuple[int, int]] = {}
    for table, idc, has_end in activity_tables(report):
        last = 'max(coalesce("end", start))' if has_end else "max(start)"
        sql = (f'SELECT ("{idc}" >> {PID_SHIFT}) & {ID_MASK} AS pid, min(start), {last} FROM "{table}" '
               f'WHERE "{idc}" IS NOT NULL AND start IS NOT NULL GROUP BY pid')
        for pid, lo, hi in report.rows(sql):
            if not pid or lo is None or hi is None:
                continue
            lo, hi = int(lo), max(int(hi), int(lo))
            old = spans.get(int(pid))
            spans[int(pid)] = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))
    return spans


__all__ = ["process_lifetimes", "activity_tables"]
