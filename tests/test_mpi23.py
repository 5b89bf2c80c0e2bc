"""MPI as Nsight Systems 2023.4 records it (its MPI_* tables), on real reports of our own programs
(tests/data/mpi23: scripts/mpi_apps, made by scripts/make_mpi23_fixtures.sh).  The oracle of every
message is the program's own log (expected.json), the oracle of every time the export's own rows read
here with sqlite3, and the truth of the alignment is known: the ranks of every set shared one machine's
clock ("hosts" are UTS namespaces), so the true correction is zero, and a skew added to a host's
session starts is the truth for that host."""

from __future__ import annotations

import collections
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, convert, load_trace, need

MPI23 = ROOT / "tests" / "data" / "mpi23"
TABLE_SETS = ["p2p4", "p2p4h2", "coll4", "coll8h4", "pp2h2", "pp4h4"]  # the sets whose messages nsys recorded
ONE_HOST = ["p2p4", "coll4"]
SEVERAL_HOSTS = ["p2p4h2", "coll8h4", "thr6h3", "pp2h2", "pp4h4"]


def _ranks(name: str) -> list[Path]:
    need(MPI23 / name / "rank0.sqlite")
    return sorted((MPI23 / name).glob("rank*.sqlite"), key=lambda p: int(p.stem[4:]))


def _expected(name: str) -> dict:
    return json.loads((MPI23 / name / "expected.json").read_text())


def _run(tmp_path: Path, paths: list[Path], *extra: str) -> tuple[dict, dict, Path]:
    out = tmp_path / "out"
    convert(["-t", "mpi", *extra, "-m", *paths, out])
    summary = json.loads(Path(f"{out}.summary.json").read_text())
    sync = json.loads(Path(f"{out}.sync.json").read_text())
    return summary, sync, out


def _report_rank(path: str) -> int:
    return int(Path(path).stem[4:])


@pytest.mark.parametrize("name", TABLE_SETS)
def test_every_message_the_program_sent_is_matched_once(tmp_path, name):
    summary, _, out = _run(tmp_path, _ranks(name))
    want = collections.Counter((m["src"], m["dst"], m["tag"], m["size"]) for m in _expected(name)["messages"])
    c = load_trace(str(out)).comms  # tasks are the ranks in rank order (task = rank + 1)
    got = collections.Counter(
        zip(c["task"].to_numpy() - 1, c["rtask"].to_numpy() - 1, c["tag"].to_numpy(), c["size"].to_numpy())
    )
    assert got == want
    mc = summary["categories"]["mpi_messages"]
    assert mc["event_records"] == sum(want.values()) and mc["dropped"] == {}
    assert mc["source_rows"] == mc["translated_rows"] == 2 * sum(want.values())


def test_the_program_sends_tag_0_and_wildcards():
    """What the matching sets must cover (a fixture that lost them would make the tests above weak)."""
    p2p, coll = _expected("p2p4"), _expected("coll4")
    assert sum(m["tag"] == 0 for m in p2p["messages"]) == 68
    calls = collections.Counter(m["call"] for m in p2p["messages"] + coll["messages"])
    assert {"MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend", "MPI_Isend", "MPI_Sendrecv"} <= set(calls)
    assert {"MPI_Sendrecv_replace", "MPI_Send_init"} <= set(calls)
    with sqlite3.connect(f"file:{MPI23 / 'coll4' / 'rank3.sqlite'}?mode=ro", uri=True) as db:
        wild = db.execute("SELECT count(*) FROM MPI_P2P_EVENTS WHERE remoteRank < 0").fetchone()[0]
    assert wild == 3  # MPI_Irecv(MPI_ANY_SOURCE, 30) x 3: nsys records the wildcard, not the source


def _rows(path: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute(sql).fetchall()


def test_communication_times_are_extraes(tmp_path):
    """Logical/physical times from the export's rows: a blocking receive's call, a nonblocking receive's
    Irecv end and completing Wait/Test, a persistent request's MPI_Start and its Wait."""
    paths = _ranks("coll4")
    _, sync, out = _run(tmp_path, paths)
    shift = {_report_rank(r["report"]): r["trace_offset_ns"] for r in sync["reports"]}
    c = load_trace(str(out)).comms
    # persistent ring (tag 7): rank r sends to r+1; sender's MPI_Start* rows, receiver's Wait* rows
    ring = c[c["tag"] == 7]
    assert len(ring) == 20
    for r in range(4):
        sql = (
            "SELECT w.start, w.end FROM MPI_START_WAIT_EVENTS w JOIN StringIds s ON s.id = w.textId "
            "WHERE w.requestHandle = (SELECT requestHandle FROM MPI_P2P_EVENTS p JOIN StringIds t ON t.id = p.textId "
            "WHERE t.value = '{call}') AND s.value {op} ORDER BY w.start LIMIT 5"
        )  # (5 rounds; the freed request's handle is then reused by the program's MPI_Irecv)
        starts = _rows(paths[r], sql.format(call="MPI_Send_init", op="LIKE 'MPI_Start%'"))
        waits = _rows(paths[(r + 1) % 4], sql.format(call="MPI_Recv_init", op="LIKE 'MPI_Wait%'"))
        mine = ring[ring["task"] == r + 1].sort_values("log_send")
        assert len(starts) == len(waits) == len(mine) == 5
        assert mine["log_send"].tolist() == [s + shift[r] for s, _ in starts]
        assert sorted(mine["phys_recv"].tolist()) == [e + shift[(r + 1) % 4] for _, e in waits]
    # the wildcard MPI_Irecvs of rank 3 (tag 30): logical = the Irecv's end, physical = its MPI_Waitany
    irecv = _rows(paths[3], "SELECT end, requestHandle FROM MPI_P2P_EVENTS WHERE remoteRank < 0 ORDER BY start")
    waits = _rows(paths[3], "SELECT end FROM MPI_START_WAIT_EVENTS ORDER BY start")
    wild = c[(c["tag"] == 30) & (c["rtask"] == 4)]
    assert sorted(wild["log_recv"].tolist()) == sorted(e + shift[3] for e, _ in irecv)
    assert set(wild["phys_recv"].tolist()) <= {e + shift[3] for (e,) in waits}


@pytest.mark.parametrize("name", ONE_HOST)
def test_one_host_keeps_its_session_clocks_and_they_are_causal(tmp_path, name):
    _, sync, _ = _run(tmp_path, _ranks(name))
    assert sync["method"] == "session"
    assert [r["correction_ns"] for r in sync["reports"]] == [0] * len(sync["reports"])
    cau = sync["causality"]
    assert cau["collectives_violated"] == cau["messages_violated"] == 0
    assert cau["messages_checked"] == len(_expected(name)["messages"])


def test_split_communicators_synchronise_their_members_only(tmp_path):
    """coll4's MPI_Allreduce on the two halves of an MPI_Comm_split: one collective per half (scoped
    to its members), not a fourth world Allreduce across both halves."""
    _, sync, _ = _run(tmp_path, _ranks("coll4"))
    assert sync["sync_names"] == [
        "mpi:MPI_Allgatherv",
        "mpi:MPI_Allreduce",
        "mpi:MPI_Allreduce@comm2",
        "mpi:MPI_Allreduce@comm4",
        "mpi:MPI_Alltoallv",
        "mpi:MPI_Barrier",
        "mpi:MPI_Finalize",
        "mpi:MPI_Init",
        "mpi:MPI_Reduce_scatter_block",
    ]
    assert sync["causality"]["collectives_checked"] == 12 and sync["causality"]["collectives_violated"] == 0


@pytest.mark.parametrize("name", SEVERAL_HOSTS)
def test_hosts_sharing_one_clock_get_no_correction(tmp_path, name):
    ex = _expected(name)
    _, sync, _ = _run(tmp_path, _ranks(name))
    hosts = {r["host"] for r in sync["reports"]}
    assert hosts == set(ex["hosts"].values()) and len(hosts) > 1
    assert [r["correction_ns"] for r in sync["reports"]] == [0] * len(sync["reports"])
    cau = sync["causality"]
    assert cau["collectives_violated"] == cau["messages_violated"] == 0
    shared = len(hosts) < len(sync["reports"])  # (pp2h2, pp4h4: one report per host)
    assert any(n.startswith("one clock per host") for n in sync["notes"]) == shared
    assert sync["clocks_moved_by_fix"] == sync["reports_moved_by_fix"] == 0  # (the old name, one release)


def _skewed(tmp_path: Path, name: str, skews: dict[str, int]) -> list[Path]:
    """Copies of a set with ``skews[host]`` ns added to the session start of that host's reports."""
    hosts = _expected(name)["hosts"]
    out = []
    for p in _ranks(name):
        q = tmp_path / p.name
        shutil.copy(p, q)
        skew = skews.get(hosts[str(_report_rank(p.name))], 0)
        with sqlite3.connect(q) as db:
            db.execute("UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = utcEpochNs + ?", (skew,))
        out.append(q)
    return out


# (set, skew per host, error per host in ns -- 0 where not named -- against the truth: a host skewed by S
# needs a correction of skew(reference host) - S).  The data bound each host's offset from both sides
# (the fastest message or collective each way); an offset outside its interval is replaced by the
# interval's midpoint, whatever the skew, and one inside it is kept (docs/clock-alignment.md).
# p2p4h2: node1 lies in [-175.4, +8.9] us of the truth, midpoint -83.3 us; a -50 us skew stays inside.
# pp2h2, pp4h4 (ping-pongs, scripts/mpi_apps/pingpong.c): intervals of +-0.5 to +-3.3 us, errors <= 41 ns.
SKEWS = [
    ("p2p4h2", {"node1": 500_000}, {"node1": -83_251}),
    ("p2p4h2", {"node1": -5_000_000}, {"node1": -83_251}),
    ("p2p4h2", {"node1": 50_000}, {"node1": -83_251}),
    ("p2p4h2", {"node1": -50_000}, {"node1": -50_000}),
    ("pp2h2", {"node1": 50_000}, {"node1": 41}),
    ("pp2h2", {"node1": -50_000}, {"node1": 41}),
    ("pp2h2", {"node0": 5_000_000}, {"node1": 41}),
    ("pp2h2", {"node1": -500_000}, {"node1": 41}),
    ("pp4h4", {"node0": 5_000_000}, {"node1": -21, "node2": -21, "node3": -21}),
    ("pp4h4", {"node1": -50_000}, {"node1": -35}),
    ("pp4h4", {"node2": 500_000}, {"node2": -11}),
    ("pp4h4", {"node3": -5_000_000}, {"node3": 40}),
    ("coll8h4", {"node2": 5_000_000}, {"node2": 6_305}),
    ("thr6h3", {"node1": -500_000}, {"node1": -6_276}),
]


@pytest.mark.parametrize("name, skews, errors", SKEWS)
def test_a_skewed_host_is_put_where_the_data_bound_it(tmp_path, name, skews, errors):
    _, sync, _ = _run(tmp_path, _skewed(tmp_path, name, skews))
    ref = next(r["host"] for r in sync["reports"] if r["report"] == sync["reference_report"])
    got = {}
    for r in sync["reports"]:
        truth = skews.get(ref, 0) - skews.get(r["host"], 0)
        got.setdefault(r["host"], set()).add(r["correction_ns"] - truth)
    assert all(len(v) == 1 for v in got.values())  # one clock per host
    err = {h: v.pop() for h, v in got.items()}
    assert err == {**{h: 0 for h in err}, **errors}
    if name.startswith("pp"):  # two and four hosts with ping-pongs: the 10 us
        assert max(map(abs, err.values())) <= 10_000
    # every host moved was placed by the bounds and says so, with the half-width of its interval against
    # the reference host: its error is within it
    bound = {r["host"]: r["bound_ns"] for r in sync["reports"] if "bound_ns" in r}
    assert set(bound) == {r["host"] for r in sync["reports"] if r["correction_ns"] != 0}
    assert all(abs(err[h]) <= b for h, b in bound.items())
    cau = sync["causality"]
    assert cau["collectives_violated"] == cau["messages_violated"] == 0


def test_worker_threads_mpi_calls_come_from_the_nvtx_domain(tmp_path):
    """thr6h3 (MPI_THREAD_MULTIPLE): nsys 2023.4 writes the main thread's MPI calls into the MPI_* tables
    and the two worker threads' (which send all 72 messages) into the NVTX domain "MPI", with no peer,
    tag or size: those are MPI calls of their threads in the trace, and no message can be matched."""
    assert len(_expected("thr6h3")["messages"]) == 72
    paths = _ranks("thr6h3")
    sql = (
        "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59 AND domainId = "
        "(SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75 AND text = 'MPI')"
    )
    nvtx = sum(_rows(p, sql)[0][0] for p in paths)
    tables = sum(
        _rows(p, f"SELECT count(*) FROM {t}")[0][0]
        for p in paths
        for t in ("MPI_COLLECTIVES_EVENTS", "MPI_OTHER_EVENTS")
    )
    summary, sync, out = _run(tmp_path, paths)
    mpi = summary["categories"]["mpi"]
    why = 'MPI call of a thread the MPI_* tables do not cover, from the NVTX domain "MPI" (no peers)'
    assert nvtx == 180 and mpi["notes"][why] == 180 and mpi["source_rows"] == tables + nvtx
    assert "mpi_messages" not in summary["categories"]
    ev = load_trace(str(out)).events
    calls = ev[ev["type"].isin([50000001, 50000002, 50000003]) & (ev["value"] != 0)]
    assert int((calls["thread"] > 1).sum()) == 180  # the worker threads' calls (the main thread is thread 1)
    assert sync["causality"]["collectives_checked"] == 27
    assert sync["causality"]["collectives_violated"] == 0


# -- ranks when "MPI Rank N" thread names collide ----------------------------------------------------
MPI4 = ROOT / "tests" / "data" / "mpi4"


def _colliding(tmp_path: Path, names: list[str], keep_env: bool) -> list[Path]:
    """mpi4's reports (nsys 2022.4: ranks only from the NVTX thread name and the environment) with every
    main thread named "MPI Rank 0", as nsys 2021.5 did on a real 2-host job."""
    out = []
    for r, name in enumerate(names):
        q = tmp_path / name
        shutil.copy(need(MPI4 / f"rank{r}.sqlite"), q)
        with sqlite3.connect(q) as db:
            db.execute("UPDATE NVTX_EVENTS SET text = 'MPI Rank 0' WHERE text LIKE 'MPI Rank %'")
            if not keep_env:
                db.execute(
                    "UPDATE TARGET_INFO_SYSTEM_ENV SET value = replace(value, 'OMPI_COMM_WORLD_RANK=', 'X=') "
                    "WHERE name = 'DeviceEnvironment'"
                )
        out.append(q)
    return out


def _task_ranks(summary: dict) -> list[str]:
    note = next(n for n in summary["notes"] if n.startswith("tasks: "))
    return note[len("tasks: ") :].split(", ")


def test_colliding_nvtx_ranks_fall_back_to_the_environment(tmp_path):
    paths = _colliding(tmp_path, [f"r{r}.sqlite" for r in (3, 1, 0, 2)], keep_env=True)
    summary, _, _ = _run(tmp_path, paths)
    assert _task_ranks(summary) == [
        f"Rank {r}=r{f}.sqlite (rank from captured environment (NVTX thread names collide))"
        for r, f in ((0, 3), (1, 1), (2, 0), (3, 2))
    ]  # (rN.sqlite holds mpi4's rank N: the environment wins over the file name)
    assert any("'MPI Rank 0' are claimed by several processes (4 of 4)" in n for n in summary["notes"])


def test_colliding_nvtx_ranks_fall_back_to_the_file_names(tmp_path):
    paths = _colliding(tmp_path, [f"job_rank{r}.sqlite" for r in range(4)], keep_env=False)
    summary, _, _ = _run(tmp_path, paths)
    assert _task_ranks(summary) == [
        f"Rank {r}=job_rank{r}.sqlite (rank from file name job_rank{r}.sqlite (NVTX thread names collide))"
        for r in range(4)
    ]


def test_genuinely_duplicated_ranks_are_still_refused(tmp_path):
    """Two reports that both say rank 0 in their NVTX thread name AND in their captured environment:
    the environment confirms the duplicate, so it stays refused (without --force)."""
    a, b = tmp_path / "x_0.sqlite", tmp_path / "y_0.sqlite"
    shutil.copy(need(MPI4 / "rank0.sqlite"), a)
    shutil.copy(need(MPI4 / "rank1.sqlite"), b)
    with sqlite3.connect(b) as db:
        db.execute("UPDATE NVTX_EVENTS SET text = 'MPI Rank 0' WHERE text = 'MPI Rank 1'")
        db.execute(
            "UPDATE TARGET_INFO_SYSTEM_ENV SET value = replace(value, 'OMPI_COMM_WORLD_RANK=1', "
            "'OMPI_COMM_WORLD_RANK=0') WHERE name = 'DeviceEnvironment'"
        )
    code, output = convert(["-t", "mpi", "-m", a, b, tmp_path / "o"], expect_ok=False)
    assert code != 0 and "rank 0 is claimed by both" in output


def test_clock_fit_is_per_host_not_per_report():
    """hosts.host_groups: reports of one named host form one group; unknown hosts are their own."""
    from nsys2prv.model.align.hosts import host_groups

    class R:
        def __init__(self, host, known=True, start=0):
            self.source, self.hostname, self.host_known = host, host, known
            self.session_start_ns, self.time_normalized, self.time_shift_ns = start, False, 0

    reps = [R("a"), R("b"), R("a"), R("x", known=False), R("x.4", known=False)]
    g = host_groups(reps, np.array([0, 5, 7, 9, 11]))
    assert g.group.tolist() == [0, 1, 0, 2, 3] and g.lead.tolist() == [0, 1, 3, 4]
    assert g.shift.tolist() == [0, 0, 7, 0, 0] and g.shared


def test_a_warm_run_reads_the_raw_mpi_rows_from_the_cache(tmp_path):
    """The scan cache holds each report's raw MPI rows (RawMpi): a second run takes them from it, with
    no note of an unusable entry, and writes the same trace."""
    paths = _ranks("coll4")
    cache = tmp_path / "cache"
    outs = []
    for n in range(2):
        out = tmp_path / f"o{n}"
        convert(["-t", "mpi", "--cache-dir", cache, "-m", *paths, out])
        outs.append(json.loads(Path(f"{out}.summary.json").read_text()))
    said = [w for r in outs[1]["reports"] for w in r["capture_warnings"]]
    assert not [w for w in said if "unusable" in w or "rebuilt" in w]
    assert (tmp_path / "o0.prv").read_bytes() == (tmp_path / "o1.prv").read_bytes()


def test_messages_alone_fit_the_clocks():
    """No synchronising collective, only messages (and a synchronous send's rendezvous): report 1's clock
    lies 4 to 12 us after its session offset (its receive ended 4 us before the send started; the send
    returned 12 us after the receive was posted): the midpoint of that interval."""
    from nsys2prv.model.align.fit import P2P, fit_clocks
    from nsys2prv.model.align.syncpoints import SyncPoints

    # report 0's send starts at 1_000_000, report 1's receive ends at 996_000 (the same session offsets)
    p2p = P2P.of([0], [1], [1_000_000], [1_002_000], [990_000], [996_000], [True])
    res = fit_clocks(SyncPoints.empty(), p2p, np.array([0, 0], np.int64), 0, estimate=True)
    assert res.violations_before == res.violations_after == 0
    assert res.offsets.tolist() == [0, 8_000] and res.kept.tolist() == [True, False]


def test_the_accuracy_script_measures_what_the_tests_assert():
    """scripts/align_accuracy.py (the docs' table): pp2h2 with each host skewed by +500 us in turn."""
    need(MPI23 / "pp2h2" / "rank0.sqlite")
    res = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "align_accuracy.py"), "--skews", "500000", str(MPI23 / "pp2h2")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert res.stdout.splitlines()[2:] == [
        "| `pp2h2` | node0 | 0.00 | 0.04 | 0.04 |",
        "| `pp2h2` | node1 | 0.00 | 0.04 | 0.04 |",
        "<!-- pp2h2: worst 41 ns, causality violations 0 -->",
    ]
