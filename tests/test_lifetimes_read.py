"""Stage A's process lifetimes: a table it reads anyway, one row per exported row with the
export's start, end and id (``ReadResult.as_exported``), gives its spans from the rows read; any
other table, or one whose rows were read unclean (a row dropped or given another end, an id that is
not an integer), is scanned by SQL.  Either way the lifetimes are exactly ``process_lifetimes``'s."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import MPI4, need
from nsysgen import NsysBuilder

from nsys2prv.config import Config
from nsys2prv.nsys import lifetimes
from nsys2prv.nsys.database import Report
from nsys2prv.pipeline import report, scan
from nsys2prv.pipeline.prepare import translated_kinds

READ = {  # the tables the default categories read as exported
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
}


def _scanned(src: Path, cache: Path, monkeypatch) -> tuple[dict, list[str]]:
    """Stage A's lifetimes of ``src`` and the tables it scanned by SQL for them."""
    seen: list[str] = []
    real = lifetimes._spans
    monkeypatch.setattr(lifetimes, "_spans", lambda rep, table, *a: seen.append(table) or real(rep, table, *a))
    kinds = translated_kinds(Config([src], cache / "out"))  # (the default categories)
    got = scan.scan_report(
        report.Source(0, report.ReportFile(str(src), str(cache), None, False), report.Reading(kinds))
    )
    monkeypatch.setattr(lifetimes, "_spans", real)
    return got.info.lifetimes, seen


def _sql(src: Path) -> tuple[dict, set[str]]:
    rep = Report(src)
    try:
        return lifetimes.process_lifetimes(rep), {t for t, *_ in lifetimes.activity_tables(rep)}
    finally:
        rep.close()


def _table_spans(src: Path) -> dict:
    rep = Report(src)
    try:
        return lifetimes.table_spans(rep)
    finally:
        rep.close()


@pytest.mark.parametrize("batch_rows", [None, 1000])
def test_lifetimes_from_the_rows_read_equal_the_sql_scan(clover_export, monkeypatch, tmp_path, batch_rows):
    if batch_rows:  # (the large tables read a rowid range at a time: spans joined over the batches)
        monkeypatch.setattr(scan, "BATCH_ROWS", batch_rows)
    want, tables = _sql(clover_export)
    got, seen = _scanned(clover_export, tmp_path / "c", monkeypatch)
    assert got == want and list(got) == list(want)  # (the same order too)
    read = tables & READ
    assert read >= {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY"}
    assert sorted(seen) == sorted(tables - read)  # (each other table scanned once)


def test_lifetimes_of_the_real_mpi_reports(monkeypatch, tmp_path):
    for i, src in enumerate(sorted(need(MPI4).glob("*.sqlite"))):
        want, tables = _sql(src)
        got, seen = _scanned(src, tmp_path / f"c{i}", monkeypatch)
        assert got == want and list(got) == list(want)
        assert sorted(seen) == sorted(tables - READ)


PID = 4242


def _export(path: Path) -> Path:
    b = NsysBuilder(path, host="n1")
    b.process(PID, "./app")
    b.cuda_api(PID, PID, "cudaLaunchKernel", 100, 120, corr=1)
    b.cuda_api(PID, PID, "cudaLaunchKernel", 130, 150, corr=2)
    b.kernel(PID, 0, 7, 200, 260, 1, "k")
    b.kernel(PID, 0, 7, 300, 390, 2, "k")
    b.memcpy(PID, 0, 7, 400, 450, 3, 64, copy_kind=1)
    return b.save()


@pytest.mark.parametrize(
    "table,sql",
    [
        # text in an end: the reader drops the row (counted); SQL counts its start
        ("CUPTI_ACTIVITY_KIND_KERNEL", "UPDATE {t} SET \"end\" = 'abc' WHERE start = 300"),
        # an absurd end (weeks away): the reader drops the row (counted); SQL counts it, then bounds it
        ("CUPTI_ACTIVITY_KIND_MEMCPY", 'UPDATE {t} SET "end" = 9000000000000000'),
        # an id that is not an integer: SQL leaves the row out, the reader would count it
        ("CUPTI_ACTIVITY_KIND_RUNTIME", "UPDATE {t} SET globalTid = globalTid + 0.5 WHERE start = 100"),
        # an end before its start: dropped by the reader, SQL takes the start as the last time
        ("CUPTI_ACTIVITY_KIND_KERNEL", 'UPDATE {t} SET "end" = 10 WHERE start = 300'),
    ],
)
def test_a_table_read_unclean_is_scanned(tmp_path, monkeypatch, table, sql):
    good = _export(tmp_path / "good.sqlite")
    bad = tmp_path / "bad.sqlite"
    shutil.copy(good, bad)
    with sqlite3.connect(bad) as con:
        con.execute(sql.format(t=table))
    want, tables = _sql(bad)
    assert _table_spans(bad)[table] != _table_spans(good)[table]  # (the damage moves the table's span)
    got, seen = _scanned(bad, tmp_path / "c", monkeypatch)
    assert got == want
    # the damaged table scanned by SQL (the absurd end: once more, inside the bounds), the others not
    assert sorted(seen) == sorted([*(tables - READ), table, *([table] if "9000" in sql else [])])


def test_spans_of_rows_by_process():
    g = lambda pid: (pid << 24) | 7  # noqa: E731 - a global id of process ``pid``
    import numpy as np

    ids = np.array([g(5), g(3), g(5), 0, g(3)], np.int64)
    start = np.array([10, 40, 5, 1, 50], np.int64)
    end = np.array([20, 45, 30, 99, 48], np.int64)
    assert lifetimes.spans_of(ids, start, end) == [(3, 40, 48), (5, 5, 30)]  # (pid 0 left out)
    assert lifetimes.spans_of(ids[:1], start[:1], end[:1]) == [(5, 10, 20)]


def test_rows_given_another_end_or_dropped_are_not_as_exported():
    from nsys2prv.nsys.readers.base import DUPLICATE, UNTERMINATED, ReadResult

    assert ReadResult(dropped={DUPLICATE: 2}).times_as_exported()  # (an exact duplicate: the same times)
    assert not ReadResult(notes={UNTERMINATED: 1}).times_as_exported()  # (NULL end closed at the report's end)
    assert not ReadResult(dropped={"end before start": 1}).times_as_exported()
