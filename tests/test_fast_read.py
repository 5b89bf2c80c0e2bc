"""The optional ADBC reader (the ``fast`` extra) gives exactly the tables the sqlite3 path gives,
and steps aside (to sqlite3) whenever it could not: text columns, mixed column types, errors."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from conftest import MPI4
from nsysgen import SCHEMAS
from test_schema_versions import build_rank

from nsys2prv.kinds import KINDS
from nsys2prv.nsys.database import Report

pytest.importorskip("adbc_driver_sqlite")


def read_all(path: Path, adbc: bool, monkeypatch) -> dict:
    with monkeypatch.context() as m:
        if adbc:
            m.delenv("NSYS2PRV_NO_ADBC", raising=False)
        else:
            m.setenv("NSYS2PRV_NO_ADBC", "1")
        report = Report(path)
        try:
            out = {}
            for k in KINDS:
                res = k.reader.read(report)
                out[k.name] = None if res is None else (res.table, res.source_rows, res.dropped, res.notes)
            out["strings"] = report.strings
            used = report._adbc
        finally:
            report.close()
    assert bool(used) == adbc
    return out


def assert_same(path: Path, monkeypatch) -> None:
    fast, slow = read_all(path, True, monkeypatch), read_all(path, False, monkeypatch)
    assert fast.keys() == slow.keys()
    for kind in fast:
        a, b = fast[kind], slow[kind]
        if kind == "strings":
            pd.testing.assert_series_equal(a, b, check_exact=True)
            continue
        assert (a is None) == (b is None), kind
        if a is not None:
            pd.testing.assert_frame_equal(a[0], b[0], check_exact=True, obj=kind)
            assert a[1:] == b[1:], kind


def _reports(tmp: Path) -> list[Path]:
    out = [build_rank(tmp / f"s{i}.sqlite", s, i % 2) for i, s in enumerate(SCHEMAS)]
    out += sorted(MPI4.glob("rank*.sqlite"))
    assert len(out) == len(SCHEMAS) + 4, f"the real reports are missing from {MPI4}"
    return out


def test_same_tables_on_every_schema_and_the_real_mpi_reports(tmp_path, monkeypatch):
    for p in _reports(tmp_path):
        assert_same(p, monkeypatch)


def test_same_tables_on_the_cloverleaf_exports(clover_export, monkeypatch):
    """The generated CloverLeaf-shaped export, and the real one (skipped naming the file when absent)."""
    assert_same(clover_export, monkeypatch)


MUTATIONS = [
    # an int column holding a float, a text, a NULL run longer than the driver's first batch
    "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = 1.5 "
    "WHERE rowid = (SELECT max(rowid) FROM CUPTI_ACTIVITY_KIND_RUNTIME)",
    "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET globalTid = 'x' "
    "WHERE rowid = (SELECT max(rowid) FROM CUPTI_ACTIVITY_KIND_RUNTIME)",
    "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = NULL WHERE rowid < 3000",
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = NULL WHERE rowid % 2 = 0",
    # a number and invalid UTF-8 in the text of names
    "UPDATE StringIds SET value = 42 WHERE id = (SELECT min(id) FROM StringIds)",
    "UPDATE StringIds SET value = CAST(X'FFFE41' AS TEXT) WHERE id = (SELECT max(id) FROM StringIds)",
    "UPDATE StringIds SET value = X'0102' WHERE id = (SELECT max(id) FROM StringIds)",
]


@pytest.mark.parametrize("sql", MUTATIONS)
def test_same_tables_on_odd_columns(tmp_path, monkeypatch, sql, clover_export):
    src = clover_export
    db = tmp_path / "m.sqlite"
    shutil.copyfile(src, db)
    with sqlite3.connect(db) as con:
        con.execute(sql)
    assert_same(db, monkeypatch)


def test_driver_error_falls_back(tmp_path, monkeypatch):
    report = Report(sorted(MPI4.glob("rank*.sqlite"))[0])
    try:

        class Broken:
            def query(self, sql):
                raise OSError("driver failure")

        report._adbc = Broken()
        df = report.query("SELECT id FROM StringIds")
        assert len(df) > 0 and df["id"].dtype == "int64"
    finally:
        report._adbc = None
        report.close()
