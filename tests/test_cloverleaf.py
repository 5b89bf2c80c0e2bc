"""Conservation on a CloverLeaf CUDA export (schema 3.13.2, nsys 2024.5): every kernel, API call and
memcpy of the source is in the trace, per name, with its exact duration.

Two exports: one generated in the same shape (``nsysgen.cloverleaf_like``: always), and the real one the
generated one imitates, a CloverLeaf run exported by someone else and not redistributable (at
``conftest.CLOVERLEAF`` when available; skipped, saying so, otherwise).  Every check runs on both; the
counts each export must give are below."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from conftest import CLOVERLEAF, convert_valid, need
from nsysgen import CLOVER_PID, cloverleaf_like
from trace_tools import begins, intervals

from nsys2prv.core import registry as R
from nsys2prv.nsys.database import strip_version_suffix

# the CPU side, where the export has it (the default): scheduling and samples on Nsight Systems'
# own threads dropped, counted
CPU_SIDE_FATES = {
    "SCHED_EVENTS": ["translated", "dropped"],
    "COMPOSITE_EVENTS": ["translated", "dropped"],
    "SAMPLING_CALLCHAINS": ["translated"],
}
# what each export holds: kernels, CUDA API calls, memcpys, launch lines, the rows not translated
# the stream row: its GPU id (the real export's device map: CUDA device 0 is GPU 3; the generated one
# has none) and host
STREAM = {"generated": "CUDA-D0.S7-nid008553", "cloverleaf": "CUDA-D3.S7-nid008553"}
EXPECT = {
    "generated": dict(
        kernels=120,
        api=182,
        copies=41,
        links=161,
        cpu_threads=[f"cuda-cloverleaf ({CLOVER_PID})"],
        cpu_side={"SCHED_EVENTS": ["translated"]},
        untranslated={
            "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": 12,
            "OSRT_API": 27,
            "PROFILER_OVERHEAD": 1,
        },
    ),
    "cloverleaf": dict(
        kernels=1312,
        api=3048,
        copies=279,
        links=1591,
        # the threads with scheduling or samples (the CPU side: the default) are CPU threads too
        cpu_threads=[
            f"cuda-cloverleaf ({CLOVER_PID})",
            "thread (1701904)",
            "CUPTI worker thread (1701905)",
            "cuda-EvtHandlr (1701906)",
            "thread (1701907)",
            "cuda-EvtHandlr (1701908)",
        ],
        cpu_side=CPU_SIDE_FATES,
        untranslated={
            "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": 1312,
            "DIAGNOSTIC_EVENT": 19,
            "OSRT_API": 1831,
            "OSRT_CALLCHAINS": 8930,
            "PROFILER_OVERHEAD": 47,
        },
    ),
}
SRC: dict[str, Path] = {}
CPU_SIDE_TABLES = ("SCHED_EVENTS", "COMPOSITE_EVENTS", "SAMPLING_CALLCHAINS", "OSRT_CALLCHAINS")


@pytest.fixture(scope="module", params=sorted(EXPECT))
def clover(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(request.param)
    src = cloverleaf_like(d / "clover.sqlite") if request.param == "generated" else need(CLOVERLEAF)
    SRC[request.param] = src
    out = d / "clover"
    trace, summary = convert_valid([src], out)
    summary["pop"] = json.loads(Path(f"{out}.pop.json").read_text())
    summary["case"] = request.param
    return trace, summary


def expect(summary) -> dict:
    return EXPECT[summary["case"]]


def source(sql: str, summary: dict) -> pd.DataFrame:
    with sqlite3.connect(f"file:{SRC[summary['case']]}?mode=ro", uri=True) as con:
        return pd.read_sql_query(sql, con)


def test_kernels_conserved_per_name_with_exact_total_time(clover):
    trace, summary = clover
    src = source(
        "SELECT s.value AS name, count(*) AS n, sum(k.end - k.start) AS total "
        "FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName GROUP BY 1",
        summary,
    )
    iv = intervals(trace, R.CUDA_KERNEL.id)
    got = iv.assign(dur=iv["end"] - iv["start"]).groupby("label").agg(n=("dur", "size"), total=("dur", "sum"))
    src = src.set_index("name").sort_index()
    assert got.loc[src.index, "n"].tolist() == src["n"].tolist()
    assert got.loc[src.index, "total"].tolist() == src["total"].tolist()
    assert len(got) == len(src) and int(src["n"].sum()) == expect(summary)["kernels"]


def test_cuda_api_calls_conserved_per_name(clover):
    trace, summary = clover
    src = source(
        "SELECT s.value AS name, count(*) AS n FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
        "JOIN StringIds s ON s.id = r.nameId GROUP BY 1",
        summary,
    )
    src["name"] = src["name"].map(strip_version_suffix)
    expected = src.groupby("name")["n"].sum().sort_index()
    got = begins(trace, R.CUDA_API.id)
    assert got.to_dict() == expected.to_dict()
    assert got.sum() == expect(summary)["api"]


def test_memcpy_conserved_per_kind_with_bytes(clover):
    trace, summary = clover
    src = source(
        "SELECT copyKind, count(*) AS n, sum(bytes) AS b, sum(end-start) AS t "
        "FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY 1",
        summary,
    )
    assert int(src["n"].sum()) == expect(summary)["copies"]
    iv = intervals(trace, R.MEMOP.id)
    for kind, n, nbytes, total in src.itertuples(index=False):
        label = R.MEMCPY_VALUES[kind][1]  # by CUPTI copyKind
        sel = iv[iv["label"] == label]
        assert len(sel) == n
        assert int((sel["end"] - sel["start"]).sum()) == total
    sizes = trace.events[(trace.events["type"] == R.MEMOP_SIZE.id)]
    assert int(sizes["value"].sum()) == int(src["b"].sum())


def test_resource_model_and_times(clover):
    trace, summary = clover
    h = trace.header
    threads = [f"Rank 0 {name}" for name in expect(summary)["cpu_threads"]] + [STREAM[summary["case"]]]
    assert (h.n_nodes, h.n_tasks, h.n_threads) == (1, 1, len(threads))
    assert trace.row["NODE"] == ["nid008553"]
    assert trace.row["THREAD"] == threads
    # Time 0 = the process's first activity (over every table of the export), END = its last: the
    # trace spans exactly POP's T; Nsight Systems' session time = trace time - offset_ns.
    with sqlite3.connect(f"file:{SRC[summary['case']]}?mode=ro", uri=True) as con:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        starts = []
        for t in tables:
            cols = {r[1] for r in con.execute(f'PRAGMA table_info("{t}")')}
            idc = "globalTid" if "globalTid" in cols else "globalPid" if "globalPid" in cols else None
            # (nsys's own PROFILER_OVERHEAD rows start no process's life: docs/pop-metrics.md)
            if (
                "start" in cols
                and idc
                and not t.startswith(("TARGET_INFO_", "META_DATA_"))
                and t != "PROFILER_OVERHEAD"
            ):
                starts.append(
                    con.execute(
                        f'SELECT min(start) FROM "{t}" WHERE ("{idc}" >> 24) & 16777215 = {CLOVER_PID}'
                    ).fetchone()[0]
                )
    first_activity = min(x for x in starts if x is not None)
    assert summary["reports"][0]["offset_ns"] == -first_activity
    first = source("SELECT min(start) AS s FROM CUPTI_ACTIVITY_KIND_KERNEL", summary)["s"][0]
    assert intervals(trace, R.CUDA_KERNEL.id)["start"].min() == first - first_activity
    assert summary["records"]["end_ns"] == h.end_time == summary["pop"]["elapsed_ns"]
    assert summary["pop"]["scope"]["start_ns"] == 0


def test_stream_states_follow_kernels_and_copies(clover):
    trace, summary = clover
    st = trace.states[trace.states["thread"] == trace.row["THREAD"].index(STREAM[summary["case"]]) + 1]
    running = int((st[st["state"] == R.RUNNING]["end"] - st[st["state"] == R.RUNNING]["begin"]).sum())
    transfer = int((st[st["state"] == R.MEMORY_TRANSFER]["end"] - st[st["state"] == R.MEMORY_TRANSFER]["begin"]).sum())
    k = source("SELECT sum(end-start) AS t FROM CUPTI_ACTIVITY_KIND_KERNEL", summary)["t"][0]
    m = source("SELECT sum(end-start) AS t FROM CUPTI_ACTIVITY_KIND_MEMCPY", summary)["t"][0]
    assert running == k and transfer == m
    assert set(st["state"]) == {R.IDLE, R.RUNNING, R.MEMORY_TRANSFER}
    # the states cover the whole trace without gaps
    assert st["begin"].iloc[0] == 0 and st["end"].iloc[-1] == trace.header.end_time
    assert (st["begin"].to_numpy()[1:] == st["end"].to_numpy()[:-1]).all()


def test_sync_state_on_host_equals_synchronize_calls(clover):
    trace, summary = clover
    st = trace.states[(trace.states["thread"] == 1) & (trace.states["state"] == R.SYNCHRONIZATION)]
    src = source(
        "SELECT sum(r.end - r.start) AS t FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s "
        "ON s.id = r.nameId WHERE s.value LIKE '%Synchronize%'",
        summary,
    )["t"][0]
    assert int((st["end"] - st["begin"]).sum()) == src


def test_launch_communications(clover):
    trace, summary = clover
    c = trace.comms
    assert (c["tag"] == R.TAG_KERNEL_LAUNCH).sum() == expect(summary)["kernels"]
    copies = c[c["tag"] == R.TAG_MEMORY_OP]
    assert len(copies) == expect(summary)["copies"]
    assert int(copies["size"].sum()) == int(
        source("SELECT sum(bytes) AS b FROM CUPTI_ACTIVITY_KIND_MEMCPY", summary)["b"][0]
    )
    assert (c["phys_recv"] >= c["phys_send"]).all()
    assert summary["categories"]["launch_links"]["translated_rows"] == expect(summary)["links"]


def test_summary_reports_untranslated_tables(clover):
    _, summary = clover
    tables = {u["table"]: u["rows"] for u in summary["untranslated"]}
    assert tables == expect(summary)["untranslated"]
    assert {
        t["table"]: [f["fate"] for f in t["fates"]]
        for t in summary["tables"]
        if t["fates"][0]["fate"] != "not translated"
    } == {
        "CUPTI_ACTIVITY_KIND_KERNEL": ["translated"],
        "CUPTI_ACTIVITY_KIND_MEMCPY": ["translated"],
        "CUPTI_ACTIVITY_KIND_RUNTIME": ["translated"],
        "OSRT_API": ["left out"],
        # the CPU side as it ran, where the export has it: the default (the OS runtime call stacks: -t osrt)
        **{t: ["left out"] for t in expect(summary)["untranslated"] if t in CPU_SIDE_TABLES},
        **expect(summary)["cpu_side"],
    }
    cats = summary["categories"]
    assert cats["kernels"]["source_rows"] == cats["kernels"]["translated_rows"] == expect(summary)["kernels"]
    assert cats["cuda_api"]["event_records"] == 2 * expect(summary)["api"]
