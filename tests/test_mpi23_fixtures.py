"""The real nsys 2023.4 MPI fixtures (tests/data/mpi23, scripts/make_mpi23_fixtures.sh) against the
programs' own logs (expected.json), at the level of the raw tables nsys wrote: what each set holds and
how nsys 2023.4 records each MPI call (docs/nsys-mpi.md). Not nsys2prv's matching: its tests stand on
these facts."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import nsys_versions
import pytest
from nsysgen import DDL_DIR, parse_ddl

MPI23 = Path(__file__).resolve().parent / "data" / "mpi23"
SETS = ("p2p4", "coll4", "p2p4h2", "coll8h4", "thr6h3", "pp2h2", "pp4h4")
SENDS = ("MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend", "MPI_Isend")
ROOTED = ("MPI_Bcast", "MPI_Reduce", "MPI_Gather", "MPI_Scatter")


class Rank:
    """One rank's export, read-only: rows of the MPI_* tables with their call names."""

    def __init__(self, path: Path):
        self.con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        self.tables = {t for (t,) in self.con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        self.names = dict(self.con.execute("SELECT id, value FROM StringIds"))

    def rows(self, table: str, cols: str) -> list[tuple]:
        if table not in self.tables:
            return []
        sql = f"SELECT textId, {cols} FROM {table} ORDER BY start, rowid"
        return [(self.names[t], *rest) for t, *rest in self.con.execute(sql)]

    def one(self, sql: str):
        return self.con.execute(sql).fetchone()[0]


def _load(name: str) -> tuple[dict, list[Rank]]:
    exp = json.loads((MPI23 / name / "expected.json").read_text())
    return exp, [Rank(MPI23 / name / f"rank{r}.sqlite") for r in range(exp["ranks"])]


@pytest.fixture(scope="module", params=SETS)
def fixture_set(request):
    return request.param, *_load(request.param)


def test_every_set_is_there_with_its_ranks_hosts_and_version(fixture_set):
    name, exp, ranks = fixture_set
    assert sorted(p.name for p in (MPI23 / name).glob("rank*.sqlite")) == [
        f"rank{r}.sqlite" for r in range(exp["ranks"])
    ]
    for r, db in enumerate(ranks):
        assert db.one("SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_PRODUCT_VERSION'") == "2023.4.4.54"
        assert db.one("SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION'") == "3.7.2"
        assert db.con.execute("SELECT rank FROM MPI_RANKS").fetchall() == [(r,)]
        # MPI_RANKS' thread is the one nsys names "MPI Rank r" (NVTX thread-name event)
        named = db.con.execute(
            "SELECT globalTid FROM NVTX_EVENTS WHERE eventType = 39 AND text = ?", (f"MPI Rank {r}",)
        )
        assert named.fetchall() == db.con.execute("SELECT globalTid FROM MPI_RANKS").fetchall()
        assert db.one("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'") == exp["hosts"][str(r)]
        other = Counter(c for c, _ in db.rows("MPI_OTHER_EVENTS", "1"))
        init = "MPI_Init_thread" if name.startswith("thr") else "MPI_Init"
        assert other == {init: 1, "MPI_Finalize": 1}  # nothing else (no Probe, Comm_split, Request_free...)


def test_the_oracle_is_consistent():
    """expected.json's counts (a guard against a half-written or hand-edited oracle)."""
    counts = {s: _load(s)[0] for s in SETS}
    assert {s: e["n_messages"] for s, e in counts.items()} == {
        "p2p4": 88,
        "coll4": 34,
        "p2p4h2": 88,
        "coll8h4": 70,
        "thr6h3": 72,
        "pp2h2": 108,
        "pp4h4": 600,
    }
    for e in counts.values():
        assert len(e["messages"]) == len(e["receives"]) == e["n_messages"]
        assert sum(sum(c.values()) for c in e["sends_per_rank"].values()) == e["n_messages"]


def _expected_sends(exp: dict, r: int, call: str) -> Counter:
    return Counter((m["dst"], m["tag"], m["size"]) for m in exp["messages"] if m["src"] == r and m["call"] == call)


def test_every_send_of_the_main_thread_is_one_p2p_row(fixture_set):
    """MPI_Send/Ssend/Bsend/Rsend/Isend: one MPI_P2P_EVENTS row each, remoteRank = the destination, tag and
    size in bytes as sent; a split Sendrecv(_replace): its send half is a row with end == start."""
    name, exp, ranks = fixture_set
    if name.startswith("thr"):
        pytest.skip("thr6h3's messages are all sent by worker threads (see the NVTX test)")
    for r, db in enumerate(ranks):
        rows = db.rows("MPI_P2P_EVENTS", "remoteRank, tag, size, start, end")
        for call in SENDS:
            got = Counter((d, t, s) for c, d, t, s, _, _ in rows if c == call)
            assert got == _expected_sends(exp, r, call), (name, r, call)
        for call in ("MPI_Sendrecv", "MPI_Sendrecv_replace"):
            send_half = Counter((d, t, s) for c, d, t, s, b, e in rows if c == call and e == b)
            recv_half = Counter((d, t, s) for c, d, t, s, b, e in rows if c == call and e > b)
            assert send_half == _expected_sends(exp, r, call), (name, r, call)
            assert recv_half == Counter(
                (m["src"], m["tag"], m["size"]) for m in exp["receives"] if m["dst"] == r and m["call"] == call
            )


def test_blocking_receives_record_the_status_even_for_wildcards(fixture_set):
    """MPI_Recv rows: remoteRank and tag of the message received (an MPI_ANY_SOURCE/MPI_ANY_TAG receive
    shows the sender and its tag), size = bytes received (not the buffer posted)."""
    name, exp, ranks = fixture_set
    if name.startswith("thr"):
        pytest.skip("thr6h3's receives are all made by worker threads")
    for r, db in enumerate(ranks):
        got = Counter((d, t, s) for c, d, t, s in db.rows("MPI_P2P_EVENTS", "remoteRank, tag, size") if c == "MPI_Recv")
        assert got == Counter(
            (m["src"], m["tag"], m["size"]) for m in exp["receives"] if m["dst"] == r and m["call"] == "MPI_Recv"
        )


def test_nonblocking_receives_record_what_was_posted(fixture_set):
    """MPI_Irecv rows: what the call was given: remoteRank -1 for MPI_ANY_SOURCE (coll: the last rank's
    size-1 receives of tag 30), and a requestHandle; its completion is a Wait*/Test* row of that handle."""
    name, exp, ranks = fixture_set
    if name.startswith("thr"):
        pytest.skip("thr6h3's receives are all made by worker threads")
    n = exp["ranks"]
    for r, db in enumerate(ranks):
        rows = [x for x in db.rows("MPI_P2P_EVENTS", "remoteRank, tag, size, requestHandle") if x[0] == "MPI_Irecv"]
        posted = [m for m in exp["receives"] if m["dst"] == r and m["call"] == "MPI_Irecv"]
        assert len(rows) == len(posted)
        anys = [(t, s) for _, d, t, s, _ in rows if d == -1]
        assert anys == ([(30, 32)] * (n - 1) if name.startswith("coll") and r == n - 1 else [])
        named = Counter((d, t, s) for _, d, t, s, _ in rows if d != -1)
        assert named == Counter((m["src"], m["tag"], m["size"]) for m in posted if (m["tag"] != 30 or r != n - 1))
        assert all(h is not None for *_, h in rows)


def test_persistent_requests_are_one_init_row_and_a_start_row_per_round(fixture_set):
    """MPI_Send_init / MPI_Recv_init: one MPI_P2P_EVENTS row each (peer, tag, size, request); every round
    is an MPI_Startall or MPI_Start row of that request in MPI_START_WAIT_EVENTS (5 rounds: 3 Startall,
    2 Start): the messages the program sent through it."""
    name, exp, ranks = fixture_set
    if not name.startswith("coll"):
        pytest.skip("only the coll program uses persistent requests")
    for r, db in enumerate(ranks):
        inits = [x for x in db.rows("MPI_P2P_EVENTS", "remoteRank, tag, size, requestHandle") if x[0].endswith("_init")]
        assert sorted(c for c, *_ in inits) == ["MPI_Recv_init", "MPI_Send_init"]
        ((_, dst, tag, size, handle),) = [x for x in inits if x[0] == "MPI_Send_init"]
        starts = Counter(c for c, h in db.rows("MPI_START_WAIT_EVENTS", "requestHandle") if h == handle)
        assert starts["MPI_Startall"] == 3 and starts["MPI_Start"] == 2
        assert _expected_sends(exp, r, "MPI_Send_init") == Counter({(dst, tag, size): 5})


def test_collectives_in_order_with_root_and_communicator(fixture_set):
    """MPI_COLLECTIVES_EVENTS: one row per collective call of the main thread, in the program's order
    (nonblocking ones too, with a requestHandle); rootRank is the root's rank in the communicator (NULL
    when not rooted); commHandle is the rank's own handle, whose MPI_COMMUNICATORS row gives the members:
    parentHandle 0 is MPI_COMM_WORLD; a Comm_split result has size and groupRoot (the world rank of its
    local rank 0); a Comm_dup result has only parentHandle (size and localRank NULL): its parent's group."""
    name, exp, ranks = fixture_set
    n = exp["ranks"]
    for r, db in enumerate(ranks):
        comms = {
            h: (parent, size, local, root)
            for h, parent, size, local, root in db.con.execute(
                "SELECT commHandle, parentHandle, size, localRank, groupRoot FROM MPI_COMMUNICATORS"
            )
        }
        splits = [c["ranks"] for c in exp["communicators"] if c["rank"] == r and c["call"] == "MPI_Comm_split"]

        def members(h: int) -> list[int]:
            parent, size, local, root = comms[h]
            if parent == 0:
                assert size == n and local == r
                return list(range(n))
            if size is None:  # Comm_dup
                return members(parent)
            (split,) = splits
            assert size == len(split) and root == split[0] and local == split.index(r)
            return split

        rows = db.rows("MPI_COLLECTIVES_EVENTS", "rootRank, commHandle, requestHandle")
        mine = [c for c in exp["collectives"] if c["rank"] == r]
        assert [c for c, *_ in rows] == [c["call"] for c in mine]
        for (call, root, handle, req), want in zip(rows, mine, strict=True):
            assert members(handle) == want["comm"], (name, r, call)
            assert root == (want["comm"].index(want["root"]) if call in ROOTED else None), (name, r, call)
            assert (req is not None) == call.startswith("MPI_I"), (name, r, call)
        assert len(comms) == (3 if name.startswith("coll") else 1)


def _coll_sizes(r: int, n: int) -> list[tuple]:
    """(call, size, recvSize) nsys 2023.4 writes for each collective of scripts/mpi_apps/coll.c on world
    rank r of n, from the bytes B the program passes (docs/nsys-mpi.md's table): a root's size or recvSize
    is B times the communicator's size P, and so are both sizes of an allreduce."""
    h = n // 2  # the split halves' size
    local = r % h  # rank in its half
    tri = n * (n + 1) // 2  # Alltoallv / Allgatherv: rank j's part is j+1 doubles

    def rooted(call, b, p, root, me, send_at_root, recv_at_root):
        # (size, recvSize) at the root and elsewhere
        if me == root:
            return (call, b * p if send_at_root else b, b * p if recv_at_root else b)
        return (call, None if send_at_root else b, None if recv_at_root else b)

    return [
        rooted("MPI_Bcast", 800, n, 0, r, True, False),
        rooted("MPI_Reduce", 80, n, 1, r, False, True),
        rooted("MPI_Gather", 32, n, 2, r, False, True),
        rooted("MPI_Scatter", 32, n, 3, r, True, False),
        *[("MPI_Allreduce", 8 * n, 8 * n)] * 3,
        ("MPI_Alltoallv", 8 * tri, 8 * (r + 1) * n),
        ("MPI_Allgatherv", 8 * (r + 1) * n, 8 * tri),
        ("MPI_Reduce_scatter_block", 16 * n, 16 * n),
        ("MPI_Barrier", None, None),
        ("MPI_Iallreduce", 64 * n, 64 * n),
        ("MPI_Ibarrier", None, None),
        ("MPI_Allreduce", 32 * h, 32 * h),
        rooted("MPI_Reduce", 48, h, 1, local, False, True),
        rooted("MPI_Bcast", 400, n, 1, r, True, False),
        ("MPI_Barrier", None, None),
    ]


@pytest.mark.parametrize("name", ["coll4", "coll8h4"])
def test_collective_sizes_as_nsys_writes_them(name):
    """size and recvSize of every collective row of coll.c: not the buffer sizes (see _coll_sizes)."""
    exp, ranks = _load(name)
    for r, db in enumerate(ranks):
        got = [(c, s, rs) for c, s, rs in db.rows("MPI_COLLECTIVES_EVENTS", "size, recvSize")]
        assert got == _coll_sizes(r, exp["ranks"]), (name, r)


def test_worker_threads_mpi_calls_are_nvtx_ranges_without_parameters():
    """nsys 2023.4 writes the MPI calls of threads other than the one that called MPI_Init_thread as
    NVTX ranges of the "MPI" domain (eventType 59, name only: no peer, tag or size) and nothing in
    MPI_P2P_EVENTS / MPI_START_WAIT_EVENTS; the main thread's collectives are in MPI_COLLECTIVES_EVENTS."""
    exp, ranks = _load("thr6h3")
    assert exp["thread_level"] == {str(r): "MPI_THREAD_MULTIPLE" for r in range(6)}
    for r, db in enumerate(ranks):
        assert "MPI_P2P_EVENTS" not in db.tables and "MPI_START_WAIT_EVENTS" not in db.tables
        dom = db.one("SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75 AND text = 'MPI'")
        main = db.one("SELECT globalTid FROM MPI_RANKS")
        ranges = db.con.execute(
            "SELECT s.value, e.globalTid FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId "
            "WHERE e.eventType = 59 AND e.domainId = ?",
            (dom,),
        ).fetchall()
        assert main not in {g for _, g in ranges} and len({g for _, g in ranges}) == 2
        sent = Counter(m["call"] for m in exp["messages"] if m["src"] == r)
        got = Counter(c for c, _ in ranges)
        recv = Counter(m["call"] for m in exp["receives"] if m["dst"] == r)
        assert (
            got
            == {**sent, **recv, "MPI_Waitall": sent["MPI_Isend"]}
            == {
                "MPI_Ssend": 6,
                "MPI_Recv": 6,
                "MPI_Isend": 6,
                "MPI_Irecv": 6,
                "MPI_Waitall": 6,
            }
        )


def test_what_the_p2p_program_leaves_in_the_wait_and_test_rows():
    """MPI_START_WAIT_EVENTS of p2p4: a Wait*/Test* call completing k requests is k rows with one start and
    end (Waitall: 2 requests x 1 call + 4 x 5 halo calls = 22 rows); MPI_Waitany/Waitsome: a row per call,
    with the request it completed; MPI_Test and MPI_Testall: only the call that completed (the program
    polls with usleep(100) between calls)."""
    _, ranks = _load("p2p4")
    for db in ranks:
        rows = db.rows("MPI_START_WAIT_EVENTS", "start, end, requestHandle")
        per_call = Counter((c, b, e) for c, b, e, _ in rows)
        n_rows = Counter(c for c, *_ in rows)
        n_calls = Counter(c for c, _, _ in per_call)
        assert n_rows == {
            "MPI_Wait": 3,
            "MPI_Waitall": 22,
            "MPI_Waitany": 2,
            "MPI_Waitsome": 2,
            "MPI_Test": 2,
            "MPI_Testall": 2,
        }
        assert n_calls == {
            "MPI_Wait": 3,
            "MPI_Waitall": 6,
            "MPI_Waitany": 2,
            "MPI_Waitsome": 2,
            "MPI_Test": 2,
            "MPI_Testall": 1,
        }


@pytest.fixture(scope="module")
def polls_run(tmp_path_factory) -> Path:
    """scripts/mpi_apps/polls.c profiled now with nsys 2023.4 and the wrapper (2 ranks), both exported."""
    nsys = nsys_versions.require("2023.4")
    missing = [t for t in ("mpicc", "mpirun") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"not installed: {missing} (scripts/install_nsys.sh installs them)")
    d = tmp_path_factory.mktemp("polls")
    src = Path(__file__).resolve().parent.parent / "scripts" / "mpi_apps" / "polls.c"
    subprocess.run(["mpicc", "-O1", "-o", str(d / "polls"), str(src)], check=True)
    wrapper = subprocess.run(
        [sys.executable, "-m", "nsys2prv", "wrapper"], capture_output=True, text=True, check=True
    ).stdout.strip()
    env = {
        **nsys_versions.environ("2023.4"),
        "MPILOG_DIR": str(d),
        "NSYS2PRV_OUTDIR": str(d),
        "TMPDIR": str(d),
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    }
    opts = ["-t", "mpi", "--mpi-impl=openmpi", "-s", "none", "--cpuctxsw=none", "--"]
    res = subprocess.run(
        ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", wrapper, *opts, "./polls"],
        cwd=d,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    for r in (0, 1):
        export = [str(nsys), "export", "--type", "sqlite", "--quiet", "true", "-o", f"rank{r}.sqlite"]
        subprocess.run([*export, f"rank{r}.nsys-rep"], cwd=d, env=env, check=True, capture_output=True)
    return d


@pytest.mark.profiling
def test_polls_that_find_nothing_and_probes_leave_no_row(polls_run):
    """Each MPI_Test, MPI_Testany, MPI_Testall and MPI_Testsome loop of polls.c polled in vain (its log
    says how often) but left one row, the call that completed; MPI_Iprobe and MPI_Probe leave none."""
    lines = (polls_run / "log.rank0").read_text().splitlines()
    polls = {w[1]: int(w[2]) for w in (line.split() for line in lines) if w[0] == "poll"}
    assert sorted(polls) == ["MPI_Iprobe", "MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome"]
    assert min(polls.values()) >= 2, polls  # every loop polled at least once in vain
    db = Rank(polls_run / "rank0.sqlite")
    assert Counter(c for c, _ in db.rows("MPI_START_WAIT_EVENTS", "1")) == {
        "MPI_Test": 1,
        "MPI_Testany": 1,
        "MPI_Testall": 1,
        "MPI_Testsome": 1,
    }
    assert Counter(c for c, _ in db.rows("MPI_P2P_EVENTS", "1")) == {"MPI_Irecv": 4, "MPI_Recv": 3}
    assert Counter(c for c, _ in db.rows("MPI_OTHER_EVENTS", "1")) == {"MPI_Init": 1, "MPI_Finalize": 1}
    assert [v for v in db.names.values() if "Probe" in v] == []


@pytest.mark.profiling
def test_remote_ranks_are_ranks_in_the_communicator(polls_run):
    """On polls.c's communicator with the ranks reversed (world 1 is its rank 0), the message from world 1
    to world 0 has remoteRank 1 on the sender and 0 on the receiver: ranks in the communicator, whose
    MPI_COMMUNICATORS row has parentHandle = the world's, the rank's localRank and groupRoot 1."""
    for r, remote, local in ((0, 0, 1), (1, 1, 0)):
        db = Rank(polls_run / f"rank{r}.sqlite")
        rows = [x for x in db.rows("MPI_P2P_EVENTS", "commHandle, remoteRank, tag") if x[3] == 15]
        assert [(c, peer) for c, _, peer, _ in rows] == [("MPI_Recv" if r == 0 else "MPI_Send", remote)]
        world = db.one("SELECT commHandle FROM MPI_COMMUNICATORS WHERE parentHandle = 0")
        row = db.con.execute(
            "SELECT parentHandle, localRank, size, groupRoot FROM MPI_COMMUNICATORS WHERE commHandle = ?", (rows[0][1],)
        ).fetchall()
        assert row == [(world, local, 2, 1)]


def test_the_mpi_tables_are_those_of_the_full_3_7_2_schema():
    """tests/data/ddl/schema_3.7.2.sql (scripts/dump_ddl.sh on a 2023.4 report: every table) declares the
    MPI_* tables with the columns the fixtures' lazy exports have, in the same order."""
    ddl = parse_ddl((DDL_DIR / "schema_3.7.2.sql").read_text(encoding="utf-8"))
    db = Rank(MPI23 / "coll4" / "rank0.sqlite")
    mpi = sorted(t for t in db.tables if t.startswith("MPI_"))
    assert mpi == [
        "MPI_COLLECTIVES_EVENTS",
        "MPI_COMMUNICATORS",
        "MPI_OTHER_EVENTS",
        "MPI_P2P_EVENTS",
        "MPI_RANKS",
        "MPI_START_WAIT_EVENTS",
    ]
    for t in mpi:
        have = [r[1] for r in db.con.execute(f"PRAGMA table_info({t})")]
        assert have == ddl[t].column_names(), t


def test_skew_reports_moves_the_session_start_of_one_host_only(tmp_path):
    """scripts/skew_reports.py: p2p4h2 with node1's clock 250 us ahead: ranks 2 and 3 (node1) start their
    session 250000 ns later, ranks 0 and 1 are untouched, every event row stays; skew.json says the truth."""
    src = MPI23 / "p2p4h2"
    script = Path(__file__).resolve().parent.parent / "scripts" / "skew_reports.py"
    res = subprocess.run(
        [sys.executable, str(script), str(src), str(tmp_path / "out"), "node1=250000"], capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "out" / "skew.json").read_text()) == {"skew_ns": {"node1": 250000}}
    assert (tmp_path / "out" / "expected.json").read_bytes() == (src / "expected.json").read_bytes()
    for r in range(4):
        a, b = Rank(src / f"rank{r}.sqlite"), Rank(tmp_path / "out" / f"rank{r}.sqlite")
        start = "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME"
        assert b.one(start) - a.one(start) == (250000 if r >= 2 else 0)
        for t in ("MPI_P2P_EVENTS", "MPI_COLLECTIVES_EVENTS", "MPI_START_WAIT_EVENTS", "MPI_OTHER_EVENTS"):
            assert b.con.execute(f"SELECT * FROM {t}").fetchall() == a.con.execute(f"SELECT * FROM {t}").fetchall()
    bad = subprocess.run(
        [sys.executable, str(script), str(src), str(tmp_path / "bad"), "node7=1"], capture_output=True, text=True
    )
    assert bad.returncode == 1 and not (tmp_path / "bad").exists()
    assert bad.stderr.strip() == f"skew_reports.py: {src}: no report of host ['node7']"
