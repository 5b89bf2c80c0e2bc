"""The command line's early process (``pipeline/early.py``): each report's process lifetimes found while
the main process imports, exactly those stage A finds itself; a file changed since is scanned again; a
report it cannot read is left to stage A (the same one-line error); no process outlives the command."""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import MPI4, convert

from nsys2prv.nsys.cache_names import tables_root
from nsys2prv.nsys.database import Report
from nsys2prv.nsys.lifetimes import process_lifetimes
from nsys2prv.pipeline import early, scan
from nsys2prv.pipeline.report import Reading, ReportFile, Source

RANKS = sorted(MPI4.glob("rank*.sqlite"))
# the real 4-rank run's lifetimes (pid -> first start, last end), as stage A's SQLite scan finds them
LIFETIMES = [
    {25086: (31039951, 1273119662)},
    {25155: (23339472, 978872356)},
    {25182: (26743014, 658388555)},
    {25209: (23711033, 430533761)},
]


@pytest.fixture(autouse=True)
def _no_early_left():
    yield
    early.stop()
    early._found.clear()
    assert mp.active_children() == []


def _scanned(paths: list, tables: Path | None = None) -> None:
    """``start``, then ``take`` once the process has gone through every report (it ends then)."""
    early.start(paths, tables)
    assert early._proc is not None
    early._proc.join(60)
    early.take()
    assert early._proc is None and early._recv is None


def test_the_early_lifetimes_are_stage_as(tmp_path):
    assert [process_lifetimes(r) for r in map(Report, RANKS)] == LIFETIMES
    _scanned(RANKS)
    assert [early.lifetimes(p) for p in RANKS] == LIFETIMES
    # stage A takes them instead of scanning: one connection less per report, the same scan
    src = Source(0, ReportFile(str(RANKS[0]), str(tmp_path / "a"), None, False), Reading(("mpi", "nvtx")))
    opened = Report.opened
    with_early = scan.scan_report(src)
    assert Report.opened - opened == 1
    early._found.clear()
    src.file.cache_root = str(tmp_path / "b")
    opened = Report.opened
    without = scan.scan_report(src)
    assert Report.opened - opened == 2
    assert with_early.info.lifetimes == without.info.lifetimes == LIFETIMES[0]
    assert with_early.info.table_counts == without.info.table_counts
    assert sorted(with_early.keys) == sorted(without.keys) and all(
        with_early.keys[k].equals(without.keys[k]) for k in without.keys
    )


def test_a_file_changed_after_the_early_scan_is_scanned_again(tmp_path):
    copy = tmp_path / "rank0.sqlite"
    shutil.copyfile(RANKS[0], copy)
    _scanned([copy, tmp_path / "missing.sqlite", RANKS[1]])
    assert early.lifetimes(copy) == LIFETIMES[0] and early.lifetimes(RANKS[1]) == LIFETIMES[1]
    st = copy.stat()
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert early.lifetimes(copy) is None
    assert sorted(early._found) == sorted(str(p.resolve()) for p in (copy, RANKS[1]))  # (none for the missing one)


def _not_an_export(path: Path) -> Path:
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE foo (start INTEGER, globalTid INTEGER)")
        con.execute("INSERT INTO foo VALUES (1, 16777217)")
    return path


def _outputs(base: Path) -> dict[str, str]:
    ext = (".prv", ".pcf", ".row", ".pop.json", ".sync.json")
    return {e: hashlib.sha256(Path(f"{base}{e}").read_bytes()).hexdigest() for e in ext}


def test_a_report_the_early_process_cannot_read_is_stage_as_error(tmp_path, monkeypatch):
    bad = _not_an_export(tmp_path / "bad.sqlite")
    truncated = tmp_path / "truncated.sqlite"
    truncated.write_bytes(RANKS[1].read_bytes()[:8192])
    _scanned([bad, truncated, RANKS[0]])
    assert sorted(early._found) == [str(RANKS[0].resolve())]  # the others left to stage A
    early._found.clear()
    for inputs in ([RANKS[0], bad], [truncated, RANKS[0]]):
        said = []
        for run in ("early", "none"):
            if run == "none":
                monkeypatch.setattr(early, "start", lambda inputs, tables: None)
            code, text = convert(["--no-cache", "-m", *inputs, tmp_path / run / "t"], expect_ok=False)
            said.append((code, text))
            assert early._proc is None and mp.active_children() == []
            assert not (tmp_path / run / "t.prv").exists()
            monkeypatch.undo()
        assert said[0] == said[1]
        code, text = said[0]
        assert code == 2 and len(text.splitlines()) == 1 and text.startswith("nsys2prv: error: ")
        assert str(bad if bad in inputs else truncated) in text


def test_a_conversion_with_the_early_lifetimes_writes_the_same_outputs(tmp_path, monkeypatch):
    args = ["--no-cache", "-t", "mpi,nvtx,osrt", "-m", *RANKS]
    calls = []
    start = early.start

    def started(inputs, tables):  # (in-process the imports are done: waited for here, as a command's are)
        calls.append((len(inputs), tables))
        start(inputs, tables)
        early._proc.join(60)

    monkeypatch.setattr(early, "start", started)
    convert([*args, tmp_path / "early" / "t"])
    assert calls == [(4, None)] and early._proc is None and len(early._found) == 4
    monkeypatch.setattr(early, "start", lambda inputs, tables: None)
    early._found.clear()
    convert([*args, tmp_path / "none" / "t"])
    assert _outputs(tmp_path / "early" / "t") == _outputs(tmp_path / "none" / "t")


def test_with_the_table_cache_only_the_reports_without_an_entry(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    calls = []
    start = early.start
    monkeypatch.setattr(early, "start", lambda inputs, tables: calls.append(tables) or start(inputs, tables))
    convert(["--cache-dir", cache, "-m", *RANKS[:2], tmp_path / "cached"])  # entries for ranks 0 and 1
    assert calls == [tables_root(cache)]
    _scanned(RANKS, tables_root(cache))
    assert sorted(early._found) == sorted(str(p.resolve()) for p in RANKS[2:])
    assert [early.lifetimes(p) for p in RANKS] == [None, None, *LIFETIMES[2:]]
    early.start(RANKS[:2], tables_root(cache))  # every report cached (a warm run): nothing forked
    assert early._proc is None and early._found == {}


def test_only_the_first_reports(monkeypatch):
    monkeypatch.setattr(early, "MAX_REPORTS", 3)
    _scanned(RANKS)
    assert [early.lifetimes(p) for p in RANKS] == [*LIFETIMES[:3], None]


def test_no_early_process_with_dask(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(early, "start", lambda inputs, tables: calls.append(inputs))
    code, _ = convert(["--no-cache", "--dask", str(tmp_path / "no-scheduler"), "-m", *RANKS, tmp_path / "d"], False)
    assert calls == [] and code == 2
