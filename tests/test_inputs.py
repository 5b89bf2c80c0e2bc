"""Inputs that are not SQLite exports: a ``.qdstrm`` (what nsys leaves when it cannot find its importer)
is imported with QdstrmImporter into the cache, never touching the user's file; a text file named like a
report, or an export named like one, gets a precise answer.  The importer is a stand-in that "imports" by
copying (its input here is a real export renamed), and rewrites its input as the real one does."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest
from conftest import MPI4, convert

FAKE_IMPORTER = """#!/bin/sh
[ "$1 $3 $5" = "-i -o -f" ] || exit 9
echo "$2" >> "{log}"
cp "$2" "$4" && echo REWRITTEN >> "$2"
"""


@pytest.fixture
def importer(tmp_path, monkeypatch):
    path = tmp_path / "QdstrmImporter"
    path.write_text(FAKE_IMPORTER.format(log=tmp_path / "import.log"))
    path.chmod(0o755)
    monkeypatch.setenv("NSYS2PRV_IMPORTER", str(path))
    return tmp_path / "import.log"


def test_a_qdstrm_is_imported_once_into_the_cache(tmp_path, importer):
    qdstrm = tmp_path / "rank0.qdstrm"
    shutil.copyfile(MPI4 / "rank0.sqlite", qdstrm)
    before = qdstrm.read_bytes()
    cache = tmp_path / "cache"
    convert(["-t", "mpi", "--cache-dir", cache, qdstrm, tmp_path / "a"])
    convert(["-t", "mpi", "--cache-dir", cache, qdstrm, tmp_path / "b"])
    assert qdstrm.read_bytes() == before  # the importer ran on a copy
    assert len(importer.read_text().splitlines()) == 1  # once: the import is cached
    assert [p.suffix for p in cache.glob("rank0-*")] == [".nsys-rep"] and not list(cache.glob(".import-*"))
    assert (tmp_path / "a.prv").read_bytes() == (tmp_path / "b.prv").read_bytes()
    convert(["-t", "mpi", "--cache-dir", cache, MPI4 / "rank0.sqlite", tmp_path / "c"])
    assert (tmp_path / "a.prv").read_bytes() == (tmp_path / "c.prv").read_bytes()


def test_without_importer_the_command_that_imports_is_given(tmp_path, monkeypatch):
    qdstrm = tmp_path / "rank0.qdstrm"
    shutil.copyfile(MPI4 / "rank0.sqlite", qdstrm)
    monkeypatch.setenv("NSYS2PRV_IMPORTER", str(tmp_path / "none"))
    code, out = convert([qdstrm, tmp_path / "t"], expect_ok=False)
    assert code == 2 and not list(tmp_path.glob("t.*"))
    assert out.strip() == (
        f"nsys2prv: error: {qdstrm}: a .qdstrm must be imported into a .nsys-rep first and QdstrmImporter was not "
        "found (it is in the host-linux-x64 directory of Nsight Systems; set NSYS2PRV_IMPORTER or NSYS_HOME), or "
        f"import it yourself: QdstrmImporter -i {qdstrm} -o {tmp_path / 'rank0.nsys-rep'}"
    )


def test_a_failing_import_names_the_importer(tmp_path, monkeypatch):
    bad = tmp_path / "QdstrmImporter"
    bad.write_text("#!/bin/sh\necho 'Cannot parse the QDSTRM file' >&2\nexit 1\n")
    bad.chmod(0o755)
    monkeypatch.setenv("NSYS2PRV_IMPORTER", str(bad))
    qdstrm = tmp_path / "rank0.qdstrm"
    qdstrm.write_bytes(b"U3w[END]\0broken")
    code, out = convert(["--cache-dir", tmp_path / "cache", qdstrm, tmp_path / "t"], expect_ok=False)
    assert code == 2 and out.strip() == (
        f"nsys2prv: error: {qdstrm}: importing failed (Cannot parse the QDSTRM file): {bad} -i {qdstrm}"
    )
    assert not list((tmp_path / "cache").iterdir())


def test_a_text_file_named_like_a_report_is_said_to_be_one(tmp_path):
    rep = tmp_path / "rank0.nsys-rep"
    rep.write_text("rank 0 of the run\n")
    code, out = convert([rep, tmp_path / "t"], expect_ok=False)
    assert code == 2 and out.strip() == (
        f"nsys2prv: error: {rep}: not a Nsight Systems report: a text file (a "
        ".nsys-rep is the binary file 'nsys profile' writes)"
    )


def test_an_export_named_like_a_report_is_read_as_it_is(tmp_path):
    rep = tmp_path / "rank0.nsys-rep"
    shutil.copyfile(MPI4 / "rank0.sqlite", rep)
    convert(["-t", "mpi", "--cache-dir", tmp_path / "cache", rep, tmp_path / "a"])
    convert(["-t", "mpi", MPI4 / "rank0.sqlite", tmp_path / "b"])
    assert (tmp_path / "a.prv").read_bytes() == (tmp_path / "b.prv").read_bytes()
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").glob("*.sqlite"))


def test_the_summary_says_where_the_exports_are_cached_and_how_big(tmp_path, importer):
    qdstrm = tmp_path / "rank0.qdstrm"
    shutil.copyfile(MPI4 / "rank0.sqlite", qdstrm)
    cache = tmp_path / "cache"
    convert(["-t", "mpi", "--cache-dir", cache, qdstrm, tmp_path / "a"])
    summary = json.loads((tmp_path / "a.summary.json").read_text())
    (export,) = cache.glob("rank0-*")  # (the stand-in importer makes an SQLite file: no export)
    total = sum(p.lstat().st_size for p in cache.rglob("*") if p.is_file() and not p.is_symlink())
    assert summary["cache"] == {
        "dir": str(cache),
        "exports": 1,
        "export_bytes": export.stat().st_size,
        "total_bytes": total,
    }
    assert (
        f"1 report(s) exported to the cache {cache} ({export.stat().st_size / 1e6:.1f} MB; the cache holds "
        f"{total / 1e6:.1f} MB in all: --cache-dir DIR puts it elsewhere, deleting it is safe, it is rebuilt)"
        in summary["notes"]
    )
    convert(["-t", "mpi", "--cache-dir", cache, MPI4 / "rank0.sqlite", tmp_path / "b"])
    summary = json.loads((tmp_path / "b.summary.json").read_text())
    assert summary["cache"] is None and not any("exported to the cache" in n for n in summary["notes"])


def test_a_late_start_by_the_profiling_wrapper_is_named(tmp_path):
    """nsys-rank.sh records in the application's environment (captured in the report) how late it started
    nsys: the summary says so, the late start being the wrapper's, not the program's."""
    copies = []
    for r in range(4):
        q = tmp_path / f"rank{r}.sqlite"
        shutil.copyfile(MPI4 / q.name, q)
        env = {
            0: "NSYS2PRV_DELAY_S=0.010\0NSYS2PRV_ATTEMPT=1",
            1: "NSYS2PRV_DELAY_S=0.562\0NSYS2PRV_ATTEMPT=1",
            2: "NSYS2PRV_DELAY_S=4.250\0NSYS2PRV_ATTEMPT=2",
            3: "HOME=\0OMPI_COMM_WORLD_RANK=3",
        }[r]
        with sqlite3.connect(q) as con:
            con.execute("UPDATE TARGET_INFO_SYSTEM_ENV SET value = ? WHERE name = 'DeviceEnvironment'", (env + "\0",))
        copies.append(q)
    convert(["-t", "mpi", "-m", *copies, tmp_path / "t"])
    notes = json.loads((tmp_path / "t.summary.json").read_text())["notes"]
    assert (
        "nsys2prv's profiling wrapper started nsys late for Rank 1 0.562 s, Rank 2 4.250 s (attempt 2) "
        "(NSYS2PRV_DELAY_S in the report: waiting for its turn to start nsys on the node, or retried): a late "
        "start of these ranks is the wrapper's, not the program's"
    ) in notes


def test_one_file_given_twice_is_said_to_be_so(tmp_path, monkeypatch):
    rank0 = MPI4 / "rank0.sqlite"
    code, out = convert(["-m", rank0, MPI4 / "rank1.sqlite", rank0, tmp_path / "t"], expect_ok=False)
    assert code == 2 and out.strip() == f"nsys2prv: error: {rank0}: this file is given twice: give each report once"
    monkeypatch.chdir(MPI4)
    code, out = convert(
        ["-m", "rank0.sqlite", "./rank1.sqlite", MPI4 / "rank1.sqlite", tmp_path / "t"], expect_ok=False
    )
    assert code == 2 and out.strip() == (
        f"nsys2prv: error: {MPI4 / 'rank1.sqlite'}: this file is given twice "
        "(also as rank1.sqlite): give each report once"
    )
    assert not list(tmp_path.glob("t.*"))


def test_a_missing_nvtx_range_suggests_nvtx_only_when_it_is_not_translated(tmp_path):
    ranks = sorted(MPI4.glob("rank*.sqlite"))
    code, out = convert(["-t", "mpi,nvtx", "-f", "nosuchrange", "-m", *ranks, tmp_path / "t"], expect_ok=False)
    assert code == 2 and out.strip() == (
        "nsys2prv: error: NVTX range 'nosuchrange' (-f/--filter-nvtx) not found in any report"
    )
    code, out = convert(["-t", "mpi", "-f", "iteration", "-m", *ranks, tmp_path / "t"], expect_ok=False)
    assert code == 2 and out.strip() == (
        "nsys2prv: error: NVTX range 'iteration' (-f/--filter-nvtx) not found in "
        "any report (is NVTX translated? it needs -t nvtx)"
    )
    assert not list(tmp_path.glob("t.*"))
