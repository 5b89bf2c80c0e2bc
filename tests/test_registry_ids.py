"""The event type ids, values, labels and states a trace is written with, as literals.

Most tests look ids up through the product's own registry (``R.CUDA_KERNEL.id``, ``R.MPI_TYPES``): a
wrong id in the registry passes them, and Paraver's and BSC's views and tools then read nothing.  Here
every id is written out as the documents state it, independently of the registry: Extrae's encoding
(MPI_EventEncoding.h: MPI types 50000001-50000005 and values, the global-op types 50100001-50100004;
labels.h: the state table) for what BSC's tools read, and docs/trace-content.md for nsys2prv's own ids.
One test holds the registry to them, one the .pcf and .prv of a real conversion."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import MPI4, convert_valid, need

from nsys2prv.core import extrae_mpi
from nsys2prv.core import registry as R

# Extrae's labels.h STATES 0-23 and STATES_COLOR
STATE_COLORS = {
    0: (117, 195, 255),
    1: (0, 0, 255),
    2: (255, 255, 255),
    3: (255, 0, 0),
    4: (255, 0, 174),
    5: (179, 0, 0),
    6: (0, 255, 0),
    7: (255, 255, 0),
    8: (235, 0, 0),
    9: (0, 162, 0),
    10: (255, 0, 255),
    11: (100, 100, 177),
    12: (172, 174, 41),
    13: (255, 144, 26),
    14: (2, 255, 177),
    15: (192, 224, 0),
    16: (66, 66, 66),
    17: (255, 0, 96),
    18: (169, 169, 169),
    19: (169, 0, 0),
    20: (0, 109, 255),
    21: (200, 61, 68),
    22: (200, 66, 0),
    23: (0, 41, 0),
}
STATES = {
    0: "Idle",
    1: "Running",
    2: "Not created",
    3: "Waiting a message",
    4: "Blocking Send",
    5: "Synchronization",
    6: "Test/Probe",
    7: "Scheduling and Fork/Join",
    8: "Wait/WaitAll",
    9: "Blocked",
    10: "Immediate Send",
    11: "Immediate Receive",
    12: "I/O",
    13: "Group Communication",
    14: "Tracing Disabled",
    15: "Others",
    16: "Send Receive",
    17: "Memory transfer",
    18: "Profiling",
    19: "On-line analysis",
    20: "Remote memory access",
    21: "Atomic memory operation",
    22: "Memory ordering operation",
    23: "Distributed locking",
}

# MPI_EventEncoding.h: the MPI call types and their labels
MPI_TYPES = {
    50000001: "MPI Point-to-point",
    50000002: "MPI Collective Comm",
    50000003: "MPI Other",
    50000004: "MPI One-sided",
    50000005: "MPI I/O",
}
# MPI_EventEncoding.h (values: the MPIVal enum), mpi_prv_events.c (the type of each value),
# mpi_prv_semantics.c (the state inside the call)
MPI_CALLS = {
    "MPI_Send": (50000001, 1, 4),
    "MPI_Recv": (50000001, 2, 3),
    "MPI_Isend": (50000001, 3, 10),
    "MPI_Irecv": (50000001, 4, 11),
    "MPI_Wait": (50000001, 5, 8),
    "MPI_Waitall": (50000001, 6, 8),
    "MPI_Bcast": (50000002, 7, 13),
    "MPI_Barrier": (50000002, 8, 5),
    "MPI_Reduce": (50000002, 9, 13),
    "MPI_Allreduce": (50000002, 10, 13),
    "MPI_Alltoall": (50000002, 11, 13),
    "MPI_Gather": (50000002, 13, 13),
    "MPI_Allgather": (50000002, 17, 13),
    "MPI_Comm_rank": (50000003, 19, 15),
    "MPI_Comm_size": (50000003, 20, 15),
    "MPI_Init": (50000003, 31, 15),
    "MPI_Finalize": (50000003, 32, 15),
    "MPI_Ssend": (50000001, 34, 4),
    "MPI_Sendrecv": (50000001, 41, 16),
    "MPI_Waitany": (50000001, 59, 8),
    "MPI_Waitsome": (50000001, 60, 8),
    "MPI_Probe": (50000001, 61, 6),
    "MPI_Iprobe": (50000001, 62, 6),
}
# Extrae's events.h MPI_GLOBAL_OP_*: on the begin of every collective
MPI_GLOBAL_OP = {
    50100001: "Send Size in MPI Global OP",
    50100002: "Recv Size in MPI Global OP",
    50100003: "Root in MPI Global OP",
    50100004: "Communicator in MPI Global OP",
}

# docs/trace-content.md
TYPES = {
    "CUDA_API": (63000000, "CUDA library call"),
    "MEMOP": (63000001, "CUDA memcpy kernel (memory copies and memsets)"),
    "MEMOP_SIZE": (63000002, "Memory operation size (bytes)"),
    "CUDA_KERNEL_FULL": (63000005, "CUDA kernel (demangled name)"),
    "CUDA_KERNEL": (63000006, "CUDA kernel"),
    "NCCL_KERNEL": (63000007, "NCCL kernel"),
    "GRAPH_EXEC": (63000008, "CUDA graph execution"),
    "GPU_ACTIVITY": (
        63000090,
        "GPU activity (every stream of every process on the GPU; Useful: a compute kernel runs; Data movement:"
        " memory operations or NCCL kernels, no compute kernel; Idle: neither)",
    ),
    "GRAPH_ID": (63000100, "CUDA graph id"),
    "GRAPH_EXEC_ID": (63000101, "CUDA graph exec id"),
    "GRAPH_NODE": (63000102, "CUDA graph node id"),
    "GRAPH_API": (63000103, "CUDA graph API event"),
    "CORRELATION": (9200, "CUDA correlation id"),
    "NCCL_RANGE": (9500, "NCCL regions"),
    "NCCL_OPERATION": (9501, "NCCL operation"),
    "OPENACC_REGION": (66100000, "OpenACC region (event kind)"),
    "OPENACC_FUNCTION": (66200000, "OpenACC function (name@file:line)"),
    "OPENACC_DATA_SIZE": (66300001, "OpenACC data size (bytes)"),
    "OSRT": (66400000, "OS runtime call"),
}
KERNEL_PARAMS = dict(
    zip(
        ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"),
        range(9101, 9107),
    ),
    static_smem=9107,
    dynamic_smem=9108,
    local_mem=9109,
    registers=9110,
)
# BasicAnalysis's memory operation values (docs/trace-content.md), by CUPTI copyKind
MEMCPY_VALUES = {1: 5, 2: 4, 8: 3, 9: 1, 10: 2, 3: 7, 4: 8, 5: 9, 6: 10, 7: 11, 11: 12, 12: 13, 13: 14}
TAGS = {55001: "CUDA launch call -> kernel", 55002: "CUDA memcpy/memset call -> memory operation"}


def test_registry_has_extraes_states_and_mpi_encoding():
    assert R.STATES == STATES and R.STATE_COLORS == STATE_COLORS
    assert (R.IDLE, R.RUNNING, R.WAITING_MESSAGE, R.BLOCKING_SEND, R.SYNCHRONIZATION) == (0, 1, 3, 4, 5)
    assert (R.WAIT, R.IMMEDIATE_SEND, R.IMMEDIATE_RECV, R.GROUP_COMM, R.SEND_RECEIVE) == (8, 10, 11, 13, 16)
    assert (R.MEMORY_TRANSFER, R.NCCL_KERNEL_STATE) == (17, 13)
    assert extrae_mpi.MPI_EVENT_TYPES == MPI_TYPES
    assert {t: R.BY_ID[t].label for t in MPI_TYPES} == MPI_TYPES
    assert {name: R.mpi_code(name) for name in MPI_CALLS} == MPI_CALLS
    assert [(t.id, t.label) for t in (R.MPI_SEND_SIZE, R.MPI_RECV_SIZE, R.MPI_ROOT, R.MPI_COMM)] == list(
        MPI_GLOBAL_OP.items()
    )


def test_registry_has_the_documented_ids():
    assert {n: (getattr(R, n).id, getattr(R, n).label) for n in TYPES} == TYPES
    assert {k: t.id for k, t in R.KERNEL_PARAMS.items()} == KERNEL_PARAMS
    assert {k: v for k, (v, _) in R.MEMCPY_VALUES.items()} == MEMCPY_VALUES
    assert R.COMM_TAGS == TAGS and (R.TAG_KERNEL_LAUNCH, R.TAG_MEMORY_OP) == (55001, 55002)
    nvtx = R.nvtx_types(2, "lib")
    assert {k: (t.id, t.label) for k, t in nvtx.items()} == {
        "pushpop": (9800, "NVTX push/pop ranges: lib"),
        "startend": (9801, "NVTX start/end ranges: lib"),
        "mark": (9802, "NVTX marks: lib"),
        "depth": (9803, "NVTX push/pop nesting level: lib"),
        "category": (9804, "NVTX category: lib"),
        "gpu": (9805, "NVTX on GPU: lib"),
    }
    assert {n: (t.id, t.label) for n, t in R.gpu_metric_types(["b", "a"]).items()} == {
        "a": (9400, "GPU metric: a"),
        "b": (9401, "GPU metric: b"),
    }


def test_cpu_side_types_are_extraes():
    """Extrae's ids and labels (src/common/events.h, src/merger/paraver/labels.h, addr2info.c):
    SAMPLING_EV 30000000 "Sampled functions" + depth k "Sampled functions (depth k)", GETCPU_EV
    40000033 "Executing CPU", CALLER_EV 70000000 + k "Caller at level k"; our kernel-mode type outside
    Extrae's sampling ranges (30000000..30000199: functions and lines, MAX_CALLERS = 100)."""
    assert [(t.id, t.label) for t in R.SAMPLED.values()] == [(30000000, "Sampled functions")] + [
        (30000000 + k, f"Sampled functions (depth {k})") for k in range(1, 10)
    ]
    assert R.EXECUTING_CPU.id == 40000033 and R.EXECUTING_CPU.label.startswith("Executing CPU")
    assert [(t.id, t.label) for t in R.CALLER.values()] == [
        (70000000 + k, f"Caller at level {k}") for k in range(1, 11)
    ]
    assert not 30000000 <= R.SAMPLED_KERNEL.id < 30000200 and R.SAMPLED_KERNEL.id == 66500000


@pytest.fixture(scope="module")
def mpi4(tmp_path_factory):
    out = tmp_path_factory.mktemp("ids") / "mpi4"
    ranks = [need(MPI4 / f"rank{r}.sqlite") for r in range(4)]
    trace, _ = convert_valid(["-t", "mpi", "-m", *ranks], out)
    return trace, ranks


def test_real_trace_pcf_has_extraes_types_values_and_states(mpi4):
    trace, _ = mpi4
    types = trace.pcf.types
    for t, label in {**MPI_TYPES, **MPI_GLOBAL_OP}.items():
        if t in types:
            assert types[t]["label"] == label, t
    # the .pcf declares the types the records use (issue 36): no rooted collective here; and, records or not,
    # the types host_mpi.cfg filters on (one-sided 50000004, I/O 50000005: Paraver lets every event through
    # a filter whose types the .pcf does not declare)
    assert {50000001, 50000002, 50000003, 50000004, 50000005, *MPI_GLOBAL_OP} - {50100003} <= set(types)
    assert 50100003 not in types
    # every MPI call the trace makes is named with Extrae's name; as Extrae, the .pcf lists only those
    ev = trace.events
    held = set(ev["value"][ev["type"].between(50000001, 50000005)].astype(int))
    assert held == {0, 3, 4, 6, 7, 8, 9, 10, 31, 32, 41}
    for name, (t, v, _) in MPI_CALLS.items():
        assert types[t]["values"].get(v) == (name if v in held else None), (name, t, v)
    assert set(types[50000001]["values"]) == held
    assert {t: types[t]["values"][0] for t in (50000001, 50000002, 50000003)} == dict.fromkeys(
        (50000001, 50000002, 50000003), "Outside MPI"
    )
    assert trace.pcf.states == STATES and trace.pcf.states_color == STATE_COLORS


def _calls(rank: Path) -> dict[str, tuple[int, int]]:
    """name -> (number of calls, total ns) of one rank's MPI ranges (nsys 2022.4: the NVTX domain MPI)."""
    with sqlite3.connect(f"file:{rank}?mode=ro", uri=True) as con:
        rows = con.execute(
            "SELECT COALESCE(e.text, s.value), count(*), sum(e.end - e.start) FROM NVTX_EVENTS e "
            "LEFT JOIN StringIds s ON s.id = e.textId WHERE e.eventType = 59 AND e.domainId = "
            "(SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75 AND text = 'MPI') GROUP BY 1"
        ).fetchall()
    return {name: (n, total) for name, n, total in rows}


def test_real_trace_prv_writes_each_call_with_extraes_type_value_and_state(mpi4):
    """Per rank and MPI function of the source: that many begin events of Extrae's (type, value),
    and that much time in Extrae's state for the call."""
    trace, ranks = mpi4
    ev, st = trace.events, trace.states
    for task, rank in enumerate(ranks, start=1):
        calls = _calls(rank)
        assert sum(n for n, _ in calls.values()) == 25
        mine = ev[(ev["task"] == task) & ev["type"].isin(list(MPI_TYPES))]
        got = mine[mine["value"] != 0].groupby(["type", "value"]).size().to_dict()
        assert got == {MPI_CALLS[name][:2]: n for name, (n, _) in calls.items()}, task
        main = st[(st["task"] == task) & (st["thread"] == 1)]
        in_state = (main["end"] - main["begin"]).groupby(main["state"]).sum().to_dict()
        # the states of the calls: each call's whole duration (the calls do not overlap on a thread)
        for state in (5, 13, 16, 8, 10, 11):
            want = sum(total for name, (_, total) in calls.items() if MPI_CALLS[name][2] == state)
            assert in_state.get(state, 0) == want, (task, state)
