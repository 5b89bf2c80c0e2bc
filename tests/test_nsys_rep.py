"""End to end from .nsys-rep: profile the fixture MPI+NVTX app with each installed Nsight Systems (2022.4:
MPI as NVTX ranges; 2023.4: nsys's own MPI_* tables) on 2 ranks, convert the reports (nsys export of the
same version runs inside nsys2prv), and check the trace against the export nsys2prv made.  Runs where
nsys, mpicc and mpirun exist (CI installs them: scripts/install_nsys.sh)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import nsys_versions
import pytest
from conftest import ROOT, convert_valid
from trace_tools import begins

from nsys2prv.core import registry as R

pytestmark = pytest.mark.profiling  # the slow tier: python3 -m pytest -m profiling

TOOLS = ("mpicc", "mpirun")
MPI_TABLES = ("MPI_P2P_EVENTS", "MPI_COLLECTIVES_EVENTS", "MPI_START_WAIT_EVENTS", "MPI_OTHER_EVENTS")


@pytest.fixture(scope="module", params=nsys_versions.VERSIONS)
def version(request):
    nsys_versions.require(request.param)
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI must install {missing} (scripts/install_nsys.sh)")
        pytest.skip(f"not installed: {missing} (scripts/install_nsys.sh installs them)")
    return request.param


@pytest.fixture(scope="module")
def reports(version, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"nsysrep{version}")
    subprocess.run(
        ["bash", str(ROOT / "scripts" / "profile_app.sh"), str(d), "2"],
        check=True,
        capture_output=True,
        timeout=600,
        env=nsys_versions.environ(version),
    )
    return [d / "rank0.nsys-rep", d / "rank1.nsys-rep"]


@pytest.fixture(autouse=True)
def _nsys_of_the_version(request, monkeypatch):
    """The in-process conversion exports with the nsys of the reports' version."""
    if "version" in request.fixturenames:
        env = nsys_versions.environ(request.getfixturevalue("version"))
        monkeypatch.delenv("NSYS_HOME", raising=False)
        monkeypatch.setenv("PATH", env["PATH"])
        if "LD_LIBRARY_PATH" in env:
            monkeypatch.setenv("LD_LIBRARY_PATH", env["LD_LIBRARY_PATH"])


def _mpi_calls(con: sqlite3.Connection) -> dict[str, int]:
    """MPI calls per name in one export: MPI-domain NVTX ranges (2022.4's form; 2023.4 writes the MPI calls
    of threads other than the one that initialised MPI so) plus, in 2023.4's MPI_* tables, one call per
    (thread, start, name): a Waitall/Testall/Startall has a row per request, a split Sendrecv one per half."""
    calls: dict[str, int] = {}
    dom = con.execute("SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75 AND text = 'MPI'").fetchone()
    queries = [
        (
            "SELECT s.value, count(*) FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId "
            "WHERE e.eventType = 59 AND e.domainId = ? GROUP BY 1",
            (dom[0] if dom else -1,),
        )
    ]
    have = {t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    queries += [
        (
            f"SELECT s.value, count(*) FROM (SELECT DISTINCT globalTid, start, textId FROM {t}) e "
            "JOIN StringIds s ON s.id = e.textId GROUP BY 1",
            (),
        )
        for t in MPI_TABLES
        if t in have
    ]
    for sql, args in queries:
        for name, n in con.execute(sql, args):
            calls[name] = calls.get(name, 0) + n
    return calls


def test_nsys_rep_end_to_end(version, reports, tmp_path):
    cache = tmp_path / "cache"
    before = [r.read_bytes() for r in reports]
    trace, summary = convert_valid(["-t", "mpi,nvtx,osrt", "--cache-dir", cache, "-m", *reports], tmp_path / "t")
    assert [r.read_bytes() for r in reports] == before  # reports untouched
    exports = sorted(cache.glob("*.sqlite"))
    assert len(exports) == 2 and not list(reports[0].parent.glob("*.sqlite"))
    assert trace.header.n_tasks == 2 and trace.row["TASK"][0].startswith("Rank 0 ")
    # MPI calls per name in the trace == MPI calls in the exports (in the form of the version)
    expected: dict[str, int] = {}
    for db in exports:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            meta = "META_DATA_EXPORT" if version >= "2023" else "EXPORT_META_DATA"  # (2022.4's name)
            made_by = con.execute(f"SELECT value FROM {meta} WHERE name = 'EXPORT_PRODUCT_VERSION'").fetchone()[0]
            assert made_by.startswith(version)
            for name, n in _mpi_calls(con).items():
                expected[name] = expected.get(name, 0) + n
    got = {}
    for t in R.MPI_TYPES:
        if t in trace.pcf.types:
            for label, n in begins(trace, t).items():
                got[label] = got.get(label, 0) + int(n)
    assert got == expected and expected["MPI_Allreduce"] == 2 * 4 and expected["MPI_Waitall"] == 2 * 4
    assert summary["categories"]["mpi"]["translated_rows"] == sum(expected.values())


def test_export_cache_is_reused_and_forced(version, reports, tmp_path):
    cache = tmp_path / "cache"
    convert_valid(["-t", "mpi", "--cache-dir", cache, reports[0]], tmp_path / "a")
    (export,) = cache.glob("*.sqlite")
    stamp = export.stat().st_mtime_ns
    convert_valid(["-t", "mpi", "--cache-dir", cache, reports[0]], tmp_path / "b")
    assert export.stat().st_mtime_ns == stamp  # reused
    convert_valid(["-t", "mpi", "--cache-dir", cache, "--force-sqlite", reports[0]], tmp_path / "c")
    assert export.stat().st_mtime_ns > stamp  # re-exported
    assert (tmp_path / "a.prv").read_bytes() == (tmp_path / "c.prv").read_bytes()


def test_the_shipped_wrapper_delivers_reports_and_leaves_nothing(version, reports, tmp_path):
    """README's profiling command on 4 ranks: four .nsys-rep (the .qdstrm imported where nsys cannot find
    its importer: both Debian's 2022.4 and the unpacked 2023.4), no process of the wrapper left, and the
    design card's conversion of them."""
    wrapper = subprocess.run(
        [sys.executable, "-m", "nsys2prv", "wrapper"], capture_output=True, text=True, check=True
    ).stdout.strip()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**nsys_versions.environ(version), "TMPDIR": str(tmp), "NSYS2PRV_OUTDIR": str(tmp_path / "run")}
    res = subprocess.run(
        ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4", wrapper, str(reports[0].parent / "app")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    names = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert [n for n in names if n.endswith(".nsys-rep")] == [f"rank{r}.nsys-rep" for r in range(4)]
    assert set(names) - {f"rank{r}.nsys-rep" for r in range(4)} <= {f"rank{r}.nsys.log" for r in range(4)}
    # one line per rank from the wrapper; nsys's own messages are in the logs, not in the job's output
    said = sorted(x for x in res.stdout.splitlines() if x.startswith("nsys-rank.sh: "))
    assert [x.split(": ")[1] for x in said] == [f"rank {r}" for r in range(4)]
    assert all(f"wrote {tmp_path / 'run'}/rank" in x and "s for its turn;" in x for x in said)
    nsys_own = ("Generat", "Importer error", "Unable to retrieve the importer", "Collecting data")
    assert not [x for x in (res.stdout + res.stderr).splitlines() if x.startswith(nsys_own)]
    # each .qdstrm imported by the importer of the same installation (<prefix>/bin/nsys, <prefix>/lib/...)
    prefix = nsys_versions.require(version).parent.parent
    imported = [line for line in said if " (imported from its .qdstrm with " in line]
    assert sorted(line.split()[2] for line in imported) == [f"{r}:" for r in range(4)], res.stdout[-2000:]
    assert all(line.split(" with ")[1].startswith(f"{prefix}/lib/nsight-systems/") for line in imported)
    left = [e for e in Path("/proc").glob("[0-9]*/environ") if _has(e, f"TMPDIR={tmp}/nsys-rank".encode())]
    assert left == [] and not list(tmp.glob("nsys-rank*"))
    trace, summary = convert_valid(
        [
            "-t",
            "nvtx,cuda_api_trace,gpu_metrics",
            "--cache-dir",
            tmp_path / "cache",
            "-m",
            *sorted((tmp_path / "run").glob("rank*.nsys-rep")),
        ],
        tmp_path / "out",
    )
    assert trace.header.n_tasks == 4 and summary["categories"]["nvtx"]["translated_rows"] == 4 * 14


def _has(environ: Path, marker: bytes) -> bool:
    try:
        return any(v.startswith(marker) for v in environ.read_bytes().split(b"\0"))
    except OSError:
        return False
