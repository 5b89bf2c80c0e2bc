"""The command line's early process (``pipeline/early.py``): each report's tables' spans found while the
main process imports, but for the tables stage A reads as exported (their spans from its rows); stage
A combines them with its own and scans what is missing: the lifetimes are exactly a full scan's; a file
changed since is scanned again; a report it cannot read is left to stage A (the same one-line error);
no process outlives the command."""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import os
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
from conftest import MPI4, convert
from nsysgen import NsysBuilder

from nsys2prv import kinds as K
from nsys2prv.config import CATEGORIES, Config, parse_categories
from nsys2prv.metrics import on_cpu
from nsys2prv.metrics import pop as popm
from nsys2prv.nsys import lifetimes
from nsys2prv.nsys.cache_names import tables_root
from nsys2prv.nsys.database import Report
from nsys2prv.nsys.lifetimes import process_lifetimes, read_as_exported, table_spans
from nsys2prv.pipeline import early, scan
from nsys2prv.pipeline.prepare import translated_kinds
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


def _scanned(paths: list, tables: Path | None = None, categories=None) -> None:
    """``start``, then ``take`` once the process has gone through every report (it ends then)."""
    early.start(paths, tables, categories)
    assert early._proc is not None
    early._proc.join(60)
    early.take()
    assert early._proc is None and early._recv is None


def _on(path: Path, f):
    rep = Report(path)
    try:
        return f(rep)
    finally:
        rep.close()


def _lifetimes(path: Path):
    """The lifetimes of the early spans of ``path`` (None: none), combined as stage A does, no table scanned."""
    got = early.spans(path)
    if got is None:
        return None
    assert set(got) == set(_on(path, table_spans))  # (these reports have no table stage A reads as exported)
    return _on(path, lambda rep: process_lifetimes(rep, got))


def test_the_early_lifetimes_are_stage_as(tmp_path):
    assert [process_lifetimes(r) for r in map(Report, RANKS)] == LIFETIMES
    _scanned(RANKS)
    assert [early.spans(p) for p in RANKS] == [_on(p, table_spans) for p in RANKS]
    assert [_lifetimes(p) for p in RANKS] == LIFETIMES
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
    assert _lifetimes(copy) == LIFETIMES[0] and _lifetimes(RANKS[1]) == LIFETIMES[1]
    st = copy.stat()
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert early.spans(copy) is None
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
                monkeypatch.setattr(early, "start", lambda inputs, tables, categories=None: None)
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

    def started(inputs, tables, categories):  # (in-process the imports are done: waited for here, as a command's are)
        calls.append((len(inputs), tables, categories))
        start(inputs, tables, categories)
        early._proc.join(60)

    monkeypatch.setattr(early, "start", started)
    convert([*args, tmp_path / "early" / "t"])
    assert calls == [(4, None, parse_categories("mpi,nvtx,osrt"))] and early._proc is None and len(early._found) == 4
    monkeypatch.setattr(early, "start", lambda inputs, tables, categories=None: None)
    early._found.clear()
    convert([*args, tmp_path / "none" / "t"])
    assert _outputs(tmp_path / "early" / "t") == _outputs(tmp_path / "none" / "t")


def test_with_the_table_cache_only_the_reports_without_an_entry(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    calls = []
    start = early.start
    monkeypatch.setattr(early, "start", lambda inputs, tables, c=None: calls.append(tables) or start(inputs, tables, c))
    convert(["--cache-dir", cache, "-m", *RANKS[:2], tmp_path / "cached"])  # entries for ranks 0 and 1
    assert calls == [tables_root(cache)]
    _scanned(RANKS, tables_root(cache))
    assert sorted(early._found) == sorted(str(p.resolve()) for p in RANKS[2:])
    assert [_lifetimes(p) for p in RANKS] == [None, None, *LIFETIMES[2:]]
    early.start(RANKS[:2], tables_root(cache))  # every report cached (a warm run): nothing forked
    assert early._proc is None and early._found == {}


def test_only_the_first_reports(monkeypatch):
    monkeypatch.setattr(early, "MAX_REPORTS", 3)
    _scanned(RANKS)
    assert [_lifetimes(p) for p in RANKS] == [*LIFETIMES[:3], None]


def test_no_early_process_with_dask(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(early, "start", lambda inputs, tables, categories=None: calls.append(inputs))
    code, _ = convert(["--no-cache", "--dask", str(tmp_path / "no-scheduler"), "-m", *RANKS, tmp_path / "d"], False)
    assert calls == [] and code == 2


def test_the_tables_left_to_stage_a_are_those_it_reads_as_exported():
    """``lifetimes.READ_AS_EXPORTED`` (plain data, for the early process) against ``kinds.py``: for each
    category alone, the default, every category and a -t nsys2prv cannot parse (None)."""
    for cats in [*(frozenset({c}) for c in CATEGORIES), parse_categories(None), parse_categories("all"), None]:
        kinds = translated_kinds(Config([], Path("o"), categories=cats)) if cats is not None else ()
        read = kinds + popm.KINDS + on_cpu.KINDS + popm.REGION_KINDS  # (stage A's kinds, whatever -t: prepare)
        want = {K.BY_NAME[k].reader.tables[0] for k in read if K.BY_NAME[k].reader.as_exported}
        assert read_as_exported(cats) == want, cats
    assert read_as_exported(parse_categories(None)) == {
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
    }


A, B, C = 4242, 4343, 4444  # a process in every table, one only in the kernels, one only in the OS runtime calls
LEFT = {"NVTX_EVENTS", "OSRT_API"}  # the tables the early process scans with the default categories


def _gpu_report(path: Path) -> Path:
    b = NsysBuilder(path, host="n1")
    for pid in (A, B, C):
        b.process(pid, "./app")
    b.cuda_api(A, A, "cudaLaunchKernel", 100, 120, corr=1)
    b.kernel(A, 0, 7, 200, 260, 1, "k")
    b.kernel(B, 0, 7, 90, 900, 2, "k")
    b.memcpy(A, 0, 7, 400, 450, 3, 64, copy_kind=1)
    b.osrt(A, A, "read", 50, 70)
    b.osrt(C, C, "write", 1000, 1200)
    b.nvtx_push(A, A, 300, 500, text="step")
    return b.save()


WANT = {A: (50, 500), B: (90, 900), C: (1000, 1200)}


def _stage_a(src: Path, cache: Path, monkeypatch) -> tuple[dict, list[str], int]:
    """Stage A's lifetimes of ``src`` (default categories), the tables it scanned by SQL for them and the
    connections it opened."""
    seen: list[str] = []
    real = lifetimes._spans
    monkeypatch.setattr(lifetimes, "_spans", lambda rep, table, *a: seen.append(table) or real(rep, table, *a))
    kinds = translated_kinds(Config([src], cache / "out"))
    opened = Report.opened
    got = scan.scan_report(Source(0, ReportFile(str(src), str(cache), None, False), Reading(kinds)))
    monkeypatch.setattr(lifetimes, "_spans", real)
    return got.info.lifetimes, seen, Report.opened - opened


def test_stage_a_combines_the_early_spans_with_the_rows_it_reads(tmp_path, monkeypatch):
    src = _gpu_report(tmp_path / "gpu.sqlite")
    full = _on(src, process_lifetimes)
    assert full == WANT
    assert set(_on(src, table_spans)) == LEFT | {
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_RUNTIME",
    }
    _scanned([src], None, parse_categories(None))
    assert early.spans(src) == {t: s for t, s in _on(src, table_spans).items() if t in LEFT}
    # A's lifetime in all of them, B's only in a table stage A reads (the kernels), C's only in one the
    # early process scanned (OS runtime calls, which the default categories do not read)
    got, seen, opened = _stage_a(src, tmp_path / "c", monkeypatch)
    assert got == full and list(got) == list(full) and seen == [] and opened == 1  # (no table scanned twice)
    # what the early process had sent when it was stopped (the OS runtime calls not reached): scanned by A
    path = str(src.resolve())
    early._found[path][1].pop("OSRT_API")
    got, seen, opened = _stage_a(src, tmp_path / "d", monkeypatch)
    assert got == full and list(got) == list(full) and seen == ["OSRT_API"] and opened == 2
    # every category (its tables left to stage A are the same): the same
    early._found.clear()
    _scanned([src], None, parse_categories("all"))
    assert early.spans(src) == {t: s for t, s in _on(src, table_spans).items() if t in LEFT}
    # no categories known (a -t the conversion refuses): the early process scans the graph executions too
    _scanned([src], None, None)
    assert set(early.spans(src)) == LEFT


def test_a_file_changed_after_the_early_scan_gives_a_full_scans_lifetimes(tmp_path, monkeypatch):
    src = _gpu_report(tmp_path / "gpu.sqlite")
    _scanned([src], None, parse_categories(None))
    assert early.spans(src) is not None
    with sqlite3.connect(src) as con:  # (C's last call ends later now)
        con.execute('UPDATE OSRT_API SET "end" = 5000 WHERE start = 1000')
    assert early.spans(src) is None
    want = _on(src, process_lifetimes)
    assert want == {**WANT, C: (1000, 5000)}
    got, seen, _ = _stage_a(src, tmp_path / "c", monkeypatch)
    assert got == want and sorted(seen) == sorted(LEFT)


def _gated(monkeypatch, gate: Path) -> None:
    """The early process (forked from here: it inherits the patch) holds before scanning the OS runtime
    calls until ``gate`` exists."""
    real = lifetimes._spans

    def held(rep, table, *a):
        while table == "OSRT_API" and not gate.exists():
            time.sleep(0.01)
        return real(rep, table, *a)

    monkeypatch.setattr(lifetimes, "_spans", held)


def test_a_lone_report_still_scanned_is_finished_by_the_early_process(tmp_path, monkeypatch):
    src = _gpu_report(tmp_path / "gpu.sqlite")
    full = _on(src, process_lifetimes)
    gate = tmp_path / "go"
    _gated(monkeypatch, gate)
    early.start([src], None, parse_categories(None))
    early.take()  # (stage A starts while the early process is held: it is left running)
    assert early._proc is not None and early.pending(src)
    assert set(early.spans(src) or {}) <= {"NVTX_EVENTS"}  # (the tables before the gate, once sent)
    gate.touch()
    monkeypatch.undo()
    # stage A scans none of the early process's tables, nor beside its reading: it takes them at its end
    got, seen, opened = _stage_a(src, tmp_path / "c", monkeypatch)
    assert got == full and list(got) == list(full) and seen == [] and opened == 1
    assert not early.pending(src) and set(early.spans(src) or {}) == LEFT


def test_several_reports_still_scanned_are_left_to_stage_a(tmp_path, monkeypatch):
    srcs = [_gpu_report(tmp_path / f"gpu{i}.sqlite") for i in range(2)]
    _gated(monkeypatch, tmp_path / "go")
    early.start(srcs, None, parse_categories(None))
    early.take()  # (several reports: the process is ended; their stage A workers scan what is missing)
    assert early._proc is None and not any(early.pending(s) for s in srcs)
    monkeypatch.undo()
    got, seen, opened = _stage_a(srcs[0], tmp_path / "c", monkeypatch)
    assert got == _on(srcs[0], process_lifetimes) and "OSRT_API" in seen and opened == 2
