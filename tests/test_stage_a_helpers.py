"""One report's stage A on every core: while the main process runs the only report's stage A, the
idle worker processes read its large tables' rowid ranges (``parallel.helpers``,
``read_ahead.batch_results``); the main process visits and stores them in order.  The cached tables are
those of one process reading them (byte for byte), the outputs those of reading them whole."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
from pathlib import Path

import pandas as pd
import pytest
from conftest import outputs_text
from test_slices import build

from nsys2prv.config import Config
from nsys2prv.core.errors import UserError
from nsys2prv.nsys.cache import TableCache
from nsys2prv.pipeline import convert, parallel, read_ahead, scan

BATCH = 97  # rows a part (forced small)
# each batched table's rowid ranges past the first (the main process reads the first of each table):
# 642 CUDA calls (7 ranges), 312 kernels and 300 copies (4 ranges each)
HELPED = {"cuda_api": 6, "kernels": 3, "memcpy": 3}

_LOG = "N2P_TEST_PARTS_LOG"
_PARENT = os.getpid()
_real_read_part = read_ahead._read_part
_real_read_kind = read_ahead.read_kind


def _logged_part(path, index, source, kind, lo, hi, devmap):
    """``read_ahead._read_part``, noting which process read which range (a helper runs it: a forked worker)."""
    with open(os.environ[_LOG], "a") as fh:
        fh.write(f"{kind} {lo} {hi} {os.getpid()}\n")
    return _real_read_part(path, index, source, kind, lo, hi, devmap)


_real_store_launches = scan._Facts.store_launches


def _logged_launches(facts, cache, tag):
    """``_Facts.store_launches``, noting the process that matched and stored the launch calls."""
    with open(os.environ[_LOG] + ".launches", "a") as fh:
        fh.write(f"{os.getpid()}\n")
    return _real_store_launches(facts, cache, tag)


def _failing_read_kind(report, kind, devmap):
    """``read_kind``, failing in a helper process on the cuda_api table's last range."""
    if os.getpid() != _PARENT and kind == "cuda_api" and report.window and report.window[1] >= 5 * BATCH:
        raise UserError("cannot read the export (database disk image is malformed)", report.source)
    return _real_read_kind(report, kind, devmap)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("helpers") / "rank0.sqlite", 300)


def _convert(src: Path, out: Path, cache: Path, jobs: int) -> dict[str, str]:
    convert(Config(inputs=[src], output=out, show_progress=False, jobs=jobs, cache_dir=cache), log=lambda *a, **k: None)
    return outputs_text(out)


def _entry(cache: Path, src: Path) -> dict[str, bytes]:
    """Every file of the report's table cache entry (the scan's too), by name."""
    d = TableCache(cache / "tables", src).dir
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def _parts(log: Path) -> list[tuple[str, int | None, int | None, int]]:
    """(kind, lo, hi, pid) of every part a helper read (lo, hi None: the whole table)."""
    if not log.exists():
        return []
    lines = (line.split() for line in log.read_text().splitlines())
    return [(k, None if lo == "None" else int(lo), None if hi == "None" else int(hi), int(p)) for k, lo, hi, p in lines]


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_idle_workers_read_one_reports_parts_into_the_same_cache(report, tmp_path, monkeypatch, jobs):
    """The report read whole (one part a table), then in parts of 97 rows by one process (threads
    reading ahead) and by the helpers: the helpers read every range but each table's first, in
    worker processes; the cache entry is the one process's byte for byte, its tables equal to the
    whole read's, and the outputs the same."""
    whole = _convert(report, tmp_path / "whole", tmp_path / "c-whole", jobs)
    monkeypatch.setattr(scan, "BATCH_ROWS", BATCH)
    monkeypatch.setenv(_LOG, str(tmp_path / "parts.log"))
    monkeypatch.setattr(read_ahead, "_read_part", _logged_part)
    monkeypatch.setattr(scan._Facts, "store_launches", _logged_launches)
    helped = _convert(report, tmp_path / "helped", tmp_path / "c-helped", jobs)
    parts = _parts(tmp_path / "parts.log")
    (tmp_path / "parts.log").unlink()
    stored = (tmp_path / "parts.log.launches").read_text().split()
    (tmp_path / "parts.log.launches").unlink()
    monkeypatch.setattr(parallel, "helpers", lambda: None)
    alone = _convert(report, tmp_path / "alone", tmp_path / "c-alone", jobs)

    # the launch calls matched once: with helpers in a forked process (beside the lanes), else here
    assert len(stored) == 1 and int(stored[0]) != os.getpid()
    assert (tmp_path / "parts.log.launches").read_text().split() == [str(os.getpid())]

    assert _parts(tmp_path / "parts.log") == []  # (without helpers: read ahead in threads)
    counts = {k: sum(p[0] == k for p in parts) for k in HELPED}
    assert counts == HELPED and len(parts) == sum(HELPED.values())
    assert all(p[3] != os.getpid() for p in parts) and len({p[3] for p in parts}) <= jobs
    for kind in HELPED:  # the ranges that follow each table's first, each once, 97 rowids wide
        ranges = sorted((lo, hi) for k, lo, hi, _ in parts if k == kind)
        assert all(hi - lo == BATCH for lo, hi in ranges)
        assert [lo for lo, _ in ranges] == [ranges[0][0] + BATCH * i for i in range(HELPED[kind])]
    assert helped == alone == whole
    entry, one = _entry(tmp_path / "c-helped", report), _entry(tmp_path / "c-alone", report)
    assert entry == one
    assert {f"{k}.parquet" for k in HELPED} <= set(entry)
    assert sum(name.startswith("launches-") for name in entry) == 1  # (the forked process's, the same bytes)
    a, b = TableCache(tmp_path / "c-whole" / "tables", report), TableCache(tmp_path / "c-helped" / "tables", report)
    assert sorted(a.kinds) == sorted(b.kinds)
    for kind in a.kinds:
        ta, tb = a.table(kind), b.table(kind)
        if ta is None:
            assert tb is None
            continue
        assert len(tb) == len(ta) == {"cuda_api": 642, "kernels": 312, "memcpy": 300}.get(kind, len(ta))
        pd.testing.assert_frame_equal(tb, ta, check_categorical=False)
        for c in ta.columns:
            if isinstance(ta[c].dtype, pd.CategoricalDtype):
                assert (ta[c].astype(str) == tb[c].astype(str)).all()
    assert a.kinds == b.kinds  # (the tallies: the parts' summed)


def test_the_helpers_read_a_large_table_read_whole(report, tmp_path, monkeypatch):
    """A table read whole of HELPED_WHOLE_ROWS rows or more (here: every one, 1 row) is read by a
    helper, in reading order; the cache entry and the outputs are those of reading them here."""
    here = _convert(report, tmp_path / "here", tmp_path / "c-here", 2)
    monkeypatch.setattr(read_ahead, "HELPED_WHOLE_ROWS", 1)
    monkeypatch.setenv(_LOG, str(tmp_path / "parts.log"))
    monkeypatch.setattr(read_ahead, "_read_part", _logged_part)
    helped = _convert(report, tmp_path / "helped", tmp_path / "c-helped", 2)
    parts = _parts(tmp_path / "parts.log")
    assert sorted(p[:3] for p in parts) == [("cuda_api", None, None), ("kernels", None, None), ("memcpy", None, None)]
    assert all(p[3] != os.getpid() for p in parts)
    assert helped == here
    assert _entry(tmp_path / "c-helped", report) == _entry(tmp_path / "c-here", report)


@pytest.mark.parametrize("helped", [True, False])
def test_a_table_a_helper_cannot_read_is_counted_as_here(report, tmp_path, monkeypatch, helped):
    """The copies without their streamId column, read whole by a helper (or here): what its reader's
    probe found is the report's: the 300 rows counted as dropped, naming the column, the same way."""
    import sqlite3

    bad = tmp_path / "rank0.sqlite"
    bad.write_bytes(report.read_bytes())
    with sqlite3.connect(bad) as con:
        con.execute('ALTER TABLE CUPTI_ACTIVITY_KIND_MEMCPY RENAME COLUMN "streamId" TO "renamed"')
    monkeypatch.setattr(read_ahead, "HELPED_WHOLE_ROWS", 1 if helped else 10**9)
    monkeypatch.setenv(_LOG, str(tmp_path / "parts.log"))
    monkeypatch.setattr(read_ahead, "_read_part", _logged_part)
    _convert(bad, tmp_path / "t", tmp_path / "c", 2)
    assert len(_parts(tmp_path / "parts.log")) == (3 if helped else 0)
    summary = json.loads((tmp_path / "t.summary.json").read_text())
    memcpy = summary["categories"]["memcpy"]
    why = "CUPTI_ACTIVITY_KIND_MEMCPY lacks column(s) the reader needs: streamId (not translated)"
    assert memcpy["source_rows"] == 300 and memcpy["dropped"] == {why: 300}


def test_a_warm_run_reads_no_part(report, tmp_path, monkeypatch):
    """A cached report is not read again: no part goes to the helpers."""
    monkeypatch.setattr(scan, "BATCH_ROWS", BATCH)
    monkeypatch.setenv(_LOG, str(tmp_path / "parts.log"))
    monkeypatch.setattr(read_ahead, "_read_part", _logged_part)
    cold = _convert(report, tmp_path / "cold", tmp_path / "c", 2)
    assert len(_parts(tmp_path / "parts.log")) == sum(HELPED.values())
    (tmp_path / "parts.log").unlink()
    warm = _convert(report, tmp_path / "warm", tmp_path / "c", 2)
    assert _parts(tmp_path / "parts.log") == [] and warm == cold


def test_an_error_in_a_helpers_part_is_the_one_line_error_naming_the_report(report, tmp_path, monkeypatch):
    """A part failing in a helper process fails the conversion with the reader's one-line error naming
    the report (raised again in the main process), writes no output and leaves no process behind."""
    monkeypatch.setattr(scan, "BATCH_ROWS", BATCH)
    monkeypatch.setattr(read_ahead, "read_kind", _failing_read_kind)
    out = tmp_path / "failed"
    with pytest.raises(UserError) as err:
        _convert(report, out, tmp_path / "c", 2)
    assert str(err.value) == f"{report}: cannot read the export (database disk image is malformed)"
    assert not list(tmp_path.glob("failed*"))
    assert mp.active_children() == []


def test_parts_are_taken_in_order_a_bounded_number_ahead():
    """``read_ahead.Ahead``: results in submission order, never more than ``ahead`` submitted and not taken;
    a table stopped early lets its other ranges go (``skip``: the next table's are next), ``cancel``
    the rest."""
    from concurrent.futures import Future

    submitted: list[int] = []

    def submit(k):
        submitted.append(k)
        f: Future = Future()
        f.set_result(k * 10)
        return f

    parts = read_ahead.Ahead(submit, 7, 2)
    assert submitted == [0, 1]
    assert next(parts) == 0 and submitted == [0, 1, 2]
    parts.skip(2)  # (ranges 1 and 2 let go: 3 and 4 submitted meanwhile)
    assert submitted == [0, 1, 2, 3, 4]
    assert [next(parts), next(parts)] == [30, 40] and submitted == [0, 1, 2, 3, 4, 5, 6]
    parts.cancel()
    assert list(parts) == [] and submitted == [0, 1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("helped", [True, False])
def test_a_missing_optional_column_is_said_once_for_a_table_read_in_parts(report, tmp_path, monkeypatch, helped):
    """The CUDA calls without correlationId, read in 7 parts (by the helpers, or ahead in threads): the
    note counts the table's 642 rows once (each part after the first counted them again)."""
    import sqlite3

    bad = tmp_path / "rank0.sqlite"
    bad.write_bytes(report.read_bytes())
    with sqlite3.connect(bad) as con:
        con.execute('ALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME RENAME COLUMN "correlationId" TO "renamed"')
    monkeypatch.setattr(scan, "BATCH_ROWS", BATCH)
    if not helped:
        monkeypatch.setattr(parallel, "helpers", lambda: None)
    _convert(bad, tmp_path / "t", tmp_path / "c", 2)
    summary = json.loads((tmp_path / "t.summary.json").read_text())
    why = "CUPTI_ACTIVITY_KIND_RUNTIME lacks optional column(s): correlationId (their values are not written)"
    assert summary["categories"]["cuda_api"]["notes"] == {why: 642}


def test_a_signal_while_the_helpers_read_stops_them_all(report, tmp_path, monkeypatch):
    """A SIGTERM (``Interrupted``, raised in the main thread by the command line's handler) while the
    helpers read: the conversion stops, writes nothing, and no helper is left."""
    import signal

    from nsys2prv.core.errors import Interrupted

    taken = []

    def interrupted(res):
        taken.append(res)
        if len(taken) == 2:  # (the helpers have parts in hand: one more submitted than there are)
            raise Interrupted(signal.SIGTERM)
        return res

    monkeypatch.setattr(scan, "BATCH_ROWS", BATCH)
    monkeypatch.setattr(read_ahead, "_said_once", interrupted)
    with pytest.raises(Interrupted):
        _convert(report, tmp_path / "stopped", tmp_path / "c", 2)
    assert len(taken) == 2
    assert not list(tmp_path.glob("stopped*"))
    assert mp.active_children() == []
