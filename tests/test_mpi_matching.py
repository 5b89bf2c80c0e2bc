"""MPI point-to-point messages from generated MPI_* tables: what any correct matcher must give.

MPI's non-overtaking rule: the k-th send A->B with tag t matches the k-th receive on B from A with
tag t; tag 0 is a tag like any other (the commonest in real programs).  A receive with a wildcard
source or tag (MPI_ANY_SOURCE / MPI_ANY_TAG: negative in the export, -1 for Open MPI, -2 for MPICH's
ANY_SOURCE) takes, in posting order, the first unmatched send to its rank that fits it; one that no
send fits is counted unmatched, and so is a send whose tag or peer is NULL.  A row without a start
time is not a call (the MPI reader drops and counts it) and must not take part in matching.  Times as
Extrae writes them: logical send = send call start, physical send = its end, logical / physical
receive = receive call start / end (the physical send drawn at the physical receive when the send
returned later).
"""

from __future__ import annotations

import sqlite3

import pytest
from conftest import convert_valid
from nsysgen import NsysBuilder

PID, MAIN = 4000, 4000
ANY = -1  # Open MPI's MPI_ANY_SOURCE and MPI_ANY_TAG
MPICH_ANY_SOURCE = -2


def _rank(tmp, schema: str, rank: int, calls: list, window=None, waits=()) -> object:
    b = NsysBuilder(tmp / f"rank{rank}.sqlite", schema=schema, host="node01", env={"PMI_RANK": str(rank)})
    b.process(PID, "./app")
    b.mpi(PID, MAIN, "MPI_Init", 1_000, 2_000)
    b.mpi_rank(PID, MAIN, rank, ts=2_500)
    if window:
        b.nvtx_push(PID, MAIN, *window, text="window")
    for name, start, end, peer, tag, size, *request in calls:
        b.mpi(PID, MAIN, name, start, end, kind="p2p", peer=peer, tag=tag, size=size, request=(request or [None])[0])
    for name, start, end, request in waits:
        b.mpi(PID, MAIN, name, start, end, kind="startwait", request=request)
    b.mpi(PID, MAIN, "MPI_Finalize", 200_000, 201_000)
    path = b.save()
    if any(start is None for _, start, *_ in calls):
        without_start(path)
    return path


def without_start(path) -> None:
    """The rows written with start None get a NULL start (the export's DDL says NOT NULL, so the
    builder wrote 0): the table is rebuilt without the constraint, as a damaged export may be."""
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE p2p AS SELECT * FROM MPI_P2P_EVENTS")
        con.execute("DROP TABLE MPI_P2P_EVENTS")
        con.execute("ALTER TABLE p2p RENAME TO MPI_P2P_EVENTS")
        assert con.execute("UPDATE MPI_P2P_EVENTS SET start = NULL WHERE start = 0").rowcount == 1


# (name, start, end, peer, tag, size) per rank
RANK0 = [
    ("MPI_Send", 10_000, 12_000, 1, 0, 100),  # a: tag 0, the 1st 0->1 tag 0
    ("MPI_Send", 20_000, 22_000, 1, 0, 200),  # b: tag 0, the 2nd
    ("MPI_Send", 30_000, 32_000, 1, 7, 300),  # c: received with ANY_SOURCE
    ("MPI_Send", 40_000, 42_000, 1, 9, 400),  # d: received with ANY_TAG
    ("MPI_Send", None, 51_000, 1, 5, 500),  # e: no start: dropped by the reader, not a message
    ("MPI_Send", 60_000, 62_000, 1, 5, 600),  # f: the only 0->1 tag 5 send
    ("MPI_Send", 70_000, 72_000, 1, None, 700),  # g: tag NULL: unmatched
    ("MPI_Send", 80_000, 82_000, None, 3, 800),  # h: peer NULL: unmatched
    ("MPI_Isend", 90_000, 91_000, 2, 0, 900),  # i: 0->2 tag 0
]
RANK1 = [
    ("MPI_Recv", 11_000, 13_000, 0, 0, 100),  # A <- a
    ("MPI_Recv", 21_000, 23_000, 0, 0, 256),  # B <- b (the buffer's capacity: the size is the send's)
    ("MPI_Recv", 31_000, 33_000, ANY, 7, 300),  # C <- c: ANY_SOURCE, the only tag-7 send to rank 1
    ("MPI_Recv", 41_000, 43_000, 0, ANY, 400),  # D <- d: ANY_TAG, the first unmatched send 0->1 then
    ("MPI_Recv", 55_000, 63_000, 0, 5, 600),  # F <- f (not e)
    ("MPI_Send", 100_000, 101_000, 2, 3, 30),  # x: 1->2 tag 3
    ("MPI_Send", 102_000, 103_000, 2, 4, 40),  # y: 1->2 tag 4
]
RANK2 = [
    ("MPI_Recv", 89_000, 92_000, 0, 0, 900),  # I <- i
    ("MPI_Recv", 99_000, 104_000, 1, 4, 40),  # Y <- y: posted before X, matched by tag
    ("MPI_Recv", 104_500, 105_000, 1, 3, 30),  # X <- x
    ("MPI_Recv", 110_000, 111_000, MPICH_ANY_SOURCE, 0, 8),  # MPICH's ANY_SOURCE: no tag-0 send left
]

# (sender task, receiver task, log send, phys send, log recv, phys recv, size, tag), session times
MESSAGES = [
    (1, 2, 10_000, 12_000, 11_000, 13_000, 100, 0),
    (1, 2, 20_000, 22_000, 21_000, 23_000, 200, 0),
    (1, 2, 30_000, 32_000, 31_000, 33_000, 300, 7),
    (1, 2, 40_000, 42_000, 41_000, 43_000, 400, 9),
    (1, 2, 60_000, 62_000, 55_000, 63_000, 600, 5),
    (1, 3, 90_000, 91_000, 89_000, 92_000, 900, 0),
    (2, 3, 100_000, 101_000, 104_500, 105_000, 30, 3),
    (2, 3, 102_000, 103_000, 99_000, 104_000, 40, 4),
]


@pytest.fixture(scope="module", params=["3.13.2", "3.22"])
def matched(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"match-{request.param}")
    ranks = [_rank(tmp, request.param, r, calls) for r, calls in enumerate((RANK0, RANK1, RANK2))]
    return convert_valid(["-t", "mpi", "--align", "none", "--time-origin", "session", "-m", *ranks], tmp / "t")


def test_messages_matched_with_exact_records(matched):
    trace, _ = matched
    c = trace.comms
    got = sorted(
        c[["task", "rtask", "log_send", "phys_send", "log_recv", "phys_recv", "size", "tag"]].itertuples(
            index=False, name=None
        )
    )
    assert got == sorted(MESSAGES)
    assert set(c["thread"]) == set(c["rthread"]) == {1}


def test_unmatched_halves_counted(matched):
    """19 halves (e is no call): 8 messages (16 halves), 2 sends (g, h) and 1 receive (MPICH's) unmatched."""
    _, summary = matched
    m = summary["categories"]["mpi_messages"]
    assert (m["source_rows"], m["translated_rows"]) == (19, 16)
    assert sum(v for k, v in m["dropped"].items() if k.startswith("unmatched send")) == 2
    assert sum(v for k, v in m["dropped"].items() if k.startswith("unmatched receive")) == 1
    assert sum(m["dropped"].values()) == 3


def test_a_call_without_start_is_dropped_and_counted(matched):
    """Row e: the one row the MPI reader drops (its count: every p2p row, Init and Finalize per rank)."""
    trace, summary = matched
    calls = summary["categories"]["mpi"]
    assert calls["source_rows"] == len(RANK0) + len(RANK1) + len(RANK2) + 6 == 26
    assert calls["dropped"] == {"no start timestamp": 1}
    assert calls["translated_rows"] == 25
    sends = trace.events[(trace.events["task"] == 1) & (trace.events["type"] == 50000001)]
    begins = sorted(int(t) for t in sends[sends["value"] != 0]["time"])
    assert begins == [10_000, 20_000, 30_000, 40_000, 60_000, 70_000, 80_000, 90_000]


def test_only_the_messages_inside_the_filter_window(tmp_path):
    """-f window (rank 0's NVTX range 15-65 us): the messages whose send and receive calls lie inside
    it (b, c, d and f), the 4 other matched messages counted outside the window."""
    ranks = [
        _rank(tmp_path, "3.22", r, calls, window=(15_000, 65_000) if r == 0 else None)
        for r, calls in enumerate((RANK0, RANK1, RANK2))
    ]
    trace, summary = convert_valid(
        ["-t", "mpi,nvtx", "--align", "none", "--time-origin", "session", "-f", "window", "-m", *ranks],
        tmp_path / "t",
    )
    c = trace.comms
    assert sorted(zip(c["size"], c["tag"])) == [(200, 0), (300, 7), (400, 9), (600, 5)]
    m = summary["categories"]["mpi_messages"]
    assert (m["source_rows"], m["translated_rows"]) == (19, 8)
    assert sum(v for k, v in m["dropped"].items() if "window" in k) == 8
    assert sum(m["dropped"].values()) == 11


def test_a_nonblocking_receive_ends_at_the_wait_that_completed_it(tmp_path):
    """MPI_Irecv (request 1) completed by MPI_Wait: logical receive = the Irecv's end, physical
    receive = the Wait's end (Extrae)."""
    ranks = [
        _rank(tmp_path, "3.22", 0, [("MPI_Send", 10_000, 11_000, 1, 0, 64)]),
        _rank(
            tmp_path,
            "3.22",
            1,
            [("MPI_Irecv", 5_000, 6_000, 0, 0, 64, 1)],
            waits=[("MPI_Wait", 30_000, 32_000, 1)],
        ),
    ]
    trace, _ = convert_valid(["-t", "mpi", "--align", "none", "--time-origin", "session", "-m", *ranks], tmp_path / "t")
    c = trace.comms
    got = list(
        c[["task", "rtask", "log_send", "phys_send", "log_recv", "phys_recv", "size", "tag"]].itertuples(
            index=False, name=None
        )
    )
    assert got == [(1, 2, 10_000, 11_000, 6_000, 32_000, 64, 0)]


def test_wildcards_tell_source_0_and_tag_0_from_any(tmp_path):
    """Source 0 and tag 0 are ranks and tags like any other, not wildcards: rank 1's receive from
    rank 0 with ANY_TAG takes rank 0's first send to it (tag 6 at 15 us), not rank 2's earlier one;
    its ANY_SOURCE receive with tag 0 takes the tag-0 send, not the earliest send left; its last
    receive (ANY_SOURCE, ANY_TAG) takes what is left: rank 2's send."""
    ranks = [
        _rank(tmp_path, "3.22", 0, [("MPI_Send", 15_000, 16_000, 1, 6, 60), ("MPI_Send", 20_000, 21_000, 1, 0, 70)]),
        _rank(
            tmp_path,
            "3.22",
            1,
            [
                ("MPI_Recv", 30_000, 31_000, 0, ANY, 99),
                ("MPI_Recv", 40_000, 41_000, ANY, 0, 99),
                ("MPI_Recv", 50_000, 51_000, ANY, ANY, 99),
            ],
        ),
        _rank(tmp_path, "3.22", 2, [("MPI_Send", 10_000, 11_000, 1, 5, 50)]),
    ]
    trace, summary = convert_valid(
        ["-t", "mpi", "--align", "none", "--time-origin", "session", "-m", *ranks], tmp_path / "t"
    )
    got = sorted(
        trace.comms[["task", "rtask", "log_send", "log_recv", "size", "tag"]].itertuples(index=False, name=None)
    )
    assert got == [
        (1, 2, 15_000, 30_000, 60, 6),
        (1, 2, 20_000, 40_000, 70, 0),
        (3, 2, 10_000, 50_000, 50, 5),
    ]
    m = summary["categories"]["mpi_messages"]
    assert (m["source_rows"], m["translated_rows"], sum(m["dropped"].values())) == (6, 6, 0)


def test_a_waitall_of_two_requests_is_one_call(tmp_path):
    """MPI_Waitall completing two MPI_Isend requests is two MPI_START_WAIT_EVENTS rows (one per request,
    the same thread, start, end and name): one call (Extrae's MPI_Waitall, 50000001 = 6, at 20 us on
    task 1), the second row counted as merged; both messages matched."""
    ranks = [
        _rank(
            tmp_path,
            "3.22",
            0,
            [("MPI_Isend", 10_000, 11_000, 1, 0, 64, 1), ("MPI_Isend", 12_000, 13_000, 1, 1, 32, 2)],
            waits=[("MPI_Waitall", 20_000, 25_000, 1), ("MPI_Waitall", 20_000, 25_000, 2)],
        ),
        _rank(tmp_path, "3.22", 1, [("MPI_Recv", 5_000, 30_000, 0, 0, 64), ("MPI_Recv", 31_000, 32_000, 0, 1, 32)]),
    ]
    trace, summary = convert_valid(
        ["-t", "mpi", "--align", "none", "--time-origin", "session", "-m", *ranks], tmp_path / "t"
    )
    ev = trace.events
    waitall = ev[(ev["task"] == 1) & (ev["type"] == 50000001) & (ev["value"] == 6)]
    assert waitall["time"].tolist() == [20_000]
    calls = summary["categories"]["mpi"]
    assert (calls["source_rows"], calls["translated_rows"]) == (10, 9)
    assert calls["dropped"] == {"repeated row of one call (per-request Wait/Test, split Sendrecv): merged": 1}
    assert sorted(zip(trace.comms["size"], trace.comms["tag"])) == [(32, 1), (64, 0)]


def test_a_send_without_a_size_is_a_message_of_size_0(tmp_path):
    """A send whose size is NULL is still matched (tag 3, 0 -> 1); the message's size is the send's,
    unknown: 0 bytes, no size made up (nor the receive buffer's 64)."""
    ranks = [
        _rank(tmp_path, "3.22", 0, [("MPI_Send", 10_000, 11_000, 1, 3, None)]),
        _rank(tmp_path, "3.22", 1, [("MPI_Recv", 9_000, 12_000, 0, 3, 64)]),
    ]
    trace, _ = convert_valid(["-t", "mpi", "--align", "none", "--time-origin", "session", "-m", *ranks], tmp_path / "t")
    got = trace.comms[["task", "rtask", "log_send", "log_recv", "size", "tag"]].itertuples(index=False, name=None)
    assert list(got) == [(1, 2, 10_000, 9_000, 0, 3)]
