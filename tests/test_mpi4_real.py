"""Conservation and structure on real 4-rank reports (nsys 2022.4, schema 3.0.0: MPI as the NVTX
domain "MPI"): every MPI call, NVTX range and OS runtime call of the sources is in the trace, per
rank and per name, with exact durations; tasks in rank order; MPI states from Extrae's table."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest
from conftest import MPI4, convert_valid, need
from trace_tools import intervals

from nsys2prv.core import registry as R

RANKS = [MPI4 / f"rank{r}.sqlite" for r in range(4)]


@pytest.fixture(scope="module")
def mpi4(tmp_path_factory):
    out = tmp_path_factory.mktemp("mpi4") / "mpi4"
    return convert_valid(["-t", "mpi,nvtx,osrt", "-m", *[need(r) for r in RANKS]], out)


def source(rank: int, sql: str) -> pd.DataFrame:
    with sqlite3.connect(f"file:{RANKS[rank]}?mode=ro", uri=True) as con:
        return pd.read_sql_query(sql, con)


def nvtx_source(rank: int, where: str) -> pd.DataFrame:
    return source(
        rank,
        "SELECT COALESCE(e.text, s.value) AS name, count(*) AS n, sum(e.end - e.start) AS total "
        "FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId "
        f"WHERE {where} GROUP BY 1 ORDER BY 1",
    ).set_index("name")


def per_task(iv: pd.DataFrame, task: int) -> pd.DataFrame:
    iv = iv[iv["task"] == task + 1]
    return iv.assign(total=iv["end"] - iv["start"]).groupby("label").agg(n=("total", "size"), total=("total", "sum"))


def test_structure(mpi4):
    trace, summary = mpi4
    assert (trace.header.n_nodes, trace.header.n_tasks) == (1, 4)
    assert trace.row["NODE"] == ["node01"]
    assert [t.split(" (")[0] for t in trace.row["TASK"]] == [f"Rank {r}" for r in range(4)]
    for r in range(4):  # main thread first, named main; the NVTX-named worker thread is there
        names = [n for n in trace.row["THREAD"] if n.startswith(f"Rank {r} ")]
        assert names[0].startswith(f"Rank {r} main (") and any(" worker (" in n for n in names)
    assert summary["notes"][0].count("rank from NVTX thread name") == 4


@pytest.mark.parametrize("rank", range(4))
def test_mpi_calls_conserved_per_name_with_exact_time(mpi4, rank):
    trace, _ = mpi4
    src = nvtx_source(
        rank,
        "e.eventType = 59 AND e.domainId = (SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75 AND text = 'MPI')",
    )
    got = per_task(intervals(trace, list(R.MPI_TYPES)), rank)
    assert got.sort_index().to_dict() == src[["n", "total"]].sort_index().to_dict()
    assert int(src["n"].sum()) == 25 and src.loc["MPI_Allreduce", "n"] == 4


@pytest.mark.parametrize("rank", range(4))
def test_nvtx_ranges_conserved_per_name(mpi4, rank):
    trace, _ = mpi4
    pp = nvtx_source(
        rank,
        "e.eventType = 59 AND e.domainId != (SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75 AND text = 'MPI')",
    )
    domains = sorted(["", "app"])
    types = [R.nvtx_types(i, d)["pushpop"].id for i, d in enumerate(domains)]
    got = per_task(intervals(trace, types), rank)
    assert got.sort_index().to_dict() == pp[["n", "total"]].sort_index().to_dict()
    se = nvtx_source(rank, "e.eventType = 60")
    got = per_task(intervals(trace, [R.nvtx_types(i, d)["startend"].id for i, d in enumerate(domains)]), rank)
    assert got.to_dict() == se[["n", "total"]].to_dict()
    marks = trace.events[(trace.events["type"] == R.nvtx_types(0, "")["mark"].id) & (trace.events["task"] == rank + 1)]
    assert len(marks) == 1


@pytest.mark.parametrize("rank", range(4))
def test_osrt_calls_conserved_per_name(mpi4, rank):
    trace, _ = mpi4
    src = source(
        rank,
        "SELECT s.value AS name, count(*) AS n, sum(o.end - o.start) AS total FROM OSRT_API o "
        "JOIN StringIds s ON s.id = o.nameId WHERE o.eventClass = 27 GROUP BY 1",
    ).set_index("name")
    got = per_task(intervals(trace, R.OSRT.id), rank)
    assert got.sort_index().to_dict() == src[["n", "total"]].sort_index().to_dict()


def test_mpi_states_follow_extrae(mpi4):
    trace, _ = mpi4
    iv = intervals(trace, list(R.MPI_TYPES))
    st = trace.states
    expected = {  # Extrae's states (mpi_prv_semantics.c, labels.h), not the registry's
        "MPI_Allreduce": 13,  # Group Communication
        "MPI_Barrier": 5,  # Synchronization
        "MPI_Sendrecv": 16,  # Send Receive
        "MPI_Waitall": 8,  # Wait/WaitAll
        "MPI_Isend": 10,  # Immediate Send
        "MPI_Irecv": 11,  # Immediate Receive
    }
    for name, state in expected.items():
        for task, thread, start, end in iv[iv["label"] == name][["task", "thread", "start", "end"]].itertuples(
            index=False
        ):
            inside = st[(st["task"] == task) & (st["thread"] == thread) & (st["begin"] < end) & (st["end"] > start)]
            assert set(inside["state"]) == {state}, (name, task)


def test_session_alignment_of_one_host(mpi4):
    """One host, one clock: the MPI_Allreduce calls of all ranks overlap in the merged trace."""
    trace, summary = mpi4
    iv = intervals(trace, list(R.MPI_TYPES))
    ar = iv[iv["label"] == "MPI_Allreduce"].sort_values(["task", "start"])
    for k in range(4):
        calls = ar.groupby("task").nth(k)
        assert calls["start"].max() <= calls["end"].min(), k  # every rank inside the collective together
    first = summary["reports"][0]["offset_ns"]
    assert all(r["offset_ns"] > first for r in summary["reports"][1:])
