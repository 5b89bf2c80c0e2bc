"""Every bad input gets one clear line and no partial output; data oddities are handled, counted and
never crash; the conservation summary balances; an interrupted run leaves no half-written trace."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import convert, convert_valid
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nsysgen import NsysBuilder
from paraver_validator import validate_trace
from test_schema_versions import build_rank

from nsys2prv.core import registry as R


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    d = tmp_path_factory.mktemp("robust")
    return [build_rank(d / f"rank{r}.sqlite", "3.13.2", r) for r in (0, 1)]


def copy(src: Path, dst: Path) -> Path:
    shutil.copyfile(src, dst)
    return dst


def execute(db: Path, *sql: str) -> Path:
    with sqlite3.connect(db) as con:
        for stmt in sql:
            con.execute(stmt)
    return db


def assert_clean_error(args, out_dir: Path, *needles: str) -> str:
    code, text = convert([*args, out_dir / "t"], expect_ok=False)
    lines = text.strip().splitlines()
    assert code == 2, text
    assert len(lines) == 1 and lines[0].startswith("nsys2prv: error: "), text
    assert "Traceback" not in text
    for n in needles:
        assert n in lines[0], lines[0]
    assert not out_dir.exists() or not any(out_dir.iterdir()), list(out_dir.iterdir())
    return lines[0]


# --- bad inputs: one line naming the file and the problem, exit 2, nothing written -------------
def _truncated(src, tmp):
    data = Path(src).read_bytes()
    (tmp / "truncated.sqlite").write_bytes(data[: len(data) // 3])
    return tmp / "truncated.sqlite"


def _corrupt(src, tmp):
    data = bytearray(Path(src).read_bytes())
    for off in range(4096, len(data), 4096):  # smash the start of every page after the first
        data[off : off + 64] = b"\xde\xad\xbe\xef" * 16
    (tmp / "corrupt.sqlite").write_bytes(bytes(data))
    return tmp / "corrupt.sqlite"


def _no_events(src, tmp):
    b = NsysBuilder(tmp / "empty.sqlite", schema="3.13.2")
    b.process(10, "idle")
    return b.save()


def _empty_file(src, tmp):
    (tmp / "zero.sqlite").write_bytes(b"")
    return tmp / "zero.sqlite"


@pytest.mark.parametrize(
    "make, needle",
    [
        (_truncated, "truncated.sqlite"),
        (_corrupt, "corrupt.sqlite"),
        (_no_events, "no events to translate"),
        (_empty_file, "not an SQLite file"),
    ],
)
def test_bad_report(base, tmp_path, make, needle):
    bad = make(base[0], tmp_path)
    line = assert_clean_error([bad], tmp_path / "out", needle)
    assert str(bad) in line


REPORT_LIKE = b"NVIDIA Tegra Profiler Report 1.\n\0\x01\xff"  # binary, as a report: not refused as text


def test_nsys_rep_without_nsys_says_how_to_install(tmp_path, monkeypatch):
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(REPORT_LIKE)
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    monkeypatch.delenv("NSYS_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert_clean_error([rep], tmp_path / "out", str(rep), "'nsys' was not found", "NSYS_HOME")


def test_nsys_too_old_or_failing_export_is_one_line(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "nsys"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'Importer error: report version is newer than this nsys' >&2\nexit 1\n")
    fake.chmod(0o755)
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(REPORT_LIKE)
    monkeypatch.setenv("PATH", str(fake.parent))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert_clean_error([rep], tmp_path / "out", str(rep), "report version is newer", "newer Nsight Systems")
    assert not any((tmp_path / "cache" / "nsys2prv").iterdir())


def test_unwritable_output_location(base, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where a directory should be")
    code, text = convert([base[0], blocker / "sub" / "t"], expect_ok=False)
    assert code == 2 and text.count("\n") == 1 and "cannot write the output there" in text and str(blocker) in text


def test_duplicate_ranks_refused_unless_forced(base, tmp_path):
    twin = copy(base[0], tmp_path / "twin.sqlite")
    line = assert_clean_error(["-m", base[0], twin], tmp_path / "out", "rank 0 is claimed by both", "--force")
    assert str(twin) in line
    trace, _ = convert_valid(["--force", "-m", base[0], twin], tmp_path / "forced")
    assert trace.header.n_tasks == 2


# --- data oddities: handled, counted, never a crash -------------------------------------------
def test_oddities_are_translated_and_counted(base, tmp_path):
    db = copy(base[0], tmp_path / "odd.sqlite")
    execute(
        db,
        # an unterminated NVTX range and an MPI call with NULL end
        "UPDATE NVTX_EVENTS SET end = NULL WHERE text = 'inner'",
        "UPDATE MPI_OTHER_EVENTS SET end = NULL WHERE start = 960000",
        # a name with a newline, colons and invalid UTF-8; an empty name
        "UPDATE StringIds SET value = CAST(X'73617870790a3a3afffe' AS TEXT) WHERE value = 'saxpy'",
        "UPDATE NVTX_EVENTS SET text = '' WHERE text = 'step'",
        # a call ending before it starts; a negative timestamp
        "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = start - 1 WHERE correlationId = 4",
        "UPDATE OSRT_API SET start = -5000 WHERE start = 200000",
        # a duplicate correlation id (two calls claim the first memcpy)
        "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = 1 WHERE correlationId = 6",
        # an event on a thread whose process is in no table
        "INSERT INTO OSRT_API (start, end, eventClass, globalTid, nameId, returnValue, nestingLevel, "
        "callchainId) SELECT 250000, 251000, 27, (1 << 48) + (777 << 24) + 778, nameId, 0, 0, 0 FROM OSRT_API "
        "LIMIT 1",
    )
    trace, summary = convert_valid(["-t", "cuda_api,nvtx,mpi,osrt", db], tmp_path / "t")
    cats = summary["categories"]
    assert cats["nvtx"]["notes"] == {"unterminated (end is NULL): closed at the report's last timestamp": 1}
    assert cats["mpi"]["notes"] == {"unterminated (end is NULL): closed at the report's last timestamp": 1}
    assert cats["cuda_api"]["dropped"] == {"end before start": 1}
    # Paraver's time 0 is the earliest record: the negative OSRT start (5000 ns before the session start)
    assert int(trace.events["time"].min()) == 0
    assert summary["reports"][0]["offset_ns"] == 5000
    labels = set(trace.pcf.types[R.CUDA_KERNEL.id]["values"].values())
    assert "saxpy ::\ufffd\ufffd" in labels  # one line, control characters blanked
    assert "(empty name)" in set(trace.pcf.types[R.NVTX_BASE]["values"].values())
    assert trace.header.n_tasks == 2  # the orphan thread's process became a task
    # duplicate correlation id: the first call is linked to the HtoD copy; the DtoH copy (corr 6) and the
    # memset (its call was dropped) have no call left
    assert (trace.comms["tag"] == R.TAG_MEMORY_OP).sum() == 1
    links = cats["launch_links"]
    assert links["notes"] == {"API calls sharing a correlation id (the first is linked)": 1}
    assert links["dropped"] == {"no API call with its correlation id (call not traced or not requested)": 2}


def test_conservation_balances(base, tmp_path):
    _, summary = convert_valid(["-t", "cuda_api,nvtx,mpi,osrt", "-m", *base], tmp_path / "t")
    for kind, c in summary["categories"].items():
        assert c["source_rows"] == c["translated_rows"] + sum(c["dropped"].values()), kind


def test_conservation_balances_on_cloverleaf(tmp_path, clover_export):
    _, summary = convert_valid(["-t", "cuda_api,osrt", clover_export], tmp_path / "t")
    for kind, c in summary["categories"].items():
        assert c["source_rows"] == c["translated_rows"] + sum(c["dropped"].values()), kind
    assert summary["categories"]["osrt"]["dropped"] == {"profiling started/finished markers (not calls)": 3}


def test_interrupted_write_leaves_no_trace(base, tmp_path, monkeypatch):
    import nsys2prv.paraver.merge as merge

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(merge, "write_compact", boom)
    code, text = convert([base[0], tmp_path / "out" / "t"], expect_ok=False)
    assert code == 130 and "no output written" in text
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == []


# --- fuzz: mutated exports give a clean error or a valid trace ----------------------------------
TABLES = [
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "NVTX_EVENTS",
    "MPI_P2P_EVENTS",
    "MPI_OTHER_EVENTS",
    "OSRT_API",
    "StringIds",
    "ThreadNames",
    "TARGET_INFO_SESSION_START_TIME",
    "META_DATA_EXPORT",
    "MPI_RANKS",
]
mutation = st.tuples(
    st.sampled_from(["drop_table", "drop_column", "nulls", "shuffle", "dup_rows"]),
    st.sampled_from(TABLES),
    st.integers(0, 30),
)


def _columns(con, table):
    return [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]


def mutate(db: Path, muts) -> None:
    con = sqlite3.connect(db)
    for kind, table, k in muts:
        cols = _columns(con, table)
        if not cols:
            continue
        col = cols[k % len(cols)]
        if kind == "drop_table":
            con.execute(f'DROP TABLE "{table}"')
        elif kind == "drop_column":
            try:
                con.execute(f'ALTER TABLE "{table}" DROP COLUMN "{col}"')
            except sqlite3.OperationalError:
                pass  # primary keys and indexed columns cannot be dropped
        elif kind == "nulls":
            try:
                con.execute(f'UPDATE "{table}" SET "{col}" = NULL WHERE rowid % 2 = {k % 2}')
            except sqlite3.IntegrityError:
                pass
        elif kind == "shuffle":
            con.execute(f'CREATE TEMP TABLE s AS SELECT * FROM "{table}" ORDER BY random()')
            con.execute(f'DELETE FROM "{table}"')
            con.execute(f'INSERT INTO "{table}" SELECT * FROM s')
            con.execute("DROP TABLE s")
        elif kind == "dup_rows":
            try:
                con.execute(f'INSERT INTO "{table}" SELECT * FROM "{table}" LIMIT {k}')
            except sqlite3.IntegrityError:
                pass
    con.commit()
    con.close()


@pytest.mark.faults  # the slow tier (a loop of 60 damaged exports): python3 -m pytest -m faults
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(muts=st.lists(mutation, min_size=1, max_size=3))
def test_fuzz_mutated_exports(base, tmp_path_factory, muts):
    d = tmp_path_factory.mktemp("fuzz")
    db = copy(base[0], d / "m.sqlite")
    mutate(db, muts)
    code, text = convert(["-t", "cuda_api,nvtx,mpi,osrt", db, d / "out" / "t"], expect_ok=False)
    if code == 0:
        validate_trace(str(d / "out" / "t"))
        summary = json.loads((d / "out" / "t.summary.json").read_text())
        for kind, c in summary["categories"].items():
            assert c["source_rows"] == c["translated_rows"] + sum(c["dropped"].values()), (kind, muts)
    else:
        lines = text.strip().splitlines()
        assert code == 2 and len(lines) == 1 and lines[0].startswith("nsys2prv: error: "), (muts, text)
        assert not (d / "out").exists() or not any((d / "out").iterdir())
