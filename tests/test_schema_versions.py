"""One logical scenario (2 MPI ranks, CUDA, NVTX, MPI, OS runtime) written in each export schema shape
by tests/nsysgen.py, converted with the CLI, validated strictly, and checked record by record.

Times below are session-relative ns of each report.  Report 1's session starts 1 ms after report 0's,
so in the trace every record of rank 1 is its rank-0 twin shifted by SHIFT = 1_000_000 ns.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from nsysgen import MPI_TABLE_SCHEMAS, SCHEMAS, NsysBuilder
from paraver_validator import load_trace, validate_trace

from nsys2prv.cli import main
from nsys2prv.kinds import NVTX_CLASS_REASONS

SESSION0 = 1_700_000_000_000_000_000
SHIFT = 1_000_000
PID = 4000  # the same pid on both nodes (different hosts): reports must keep them apart
MAIN, IO, NSYS = PID, PID + 1, PID + 2
CATEGORIES = "cuda_api_trace,nvtx,mpi,osrt"

# Paraver ids (nsys2prv/paraver/registry.py, extrae_mpi.py), written out on purpose: the test must
# notice if they change.
CUDA_API, MEMOP, MEMOP_SIZE, KERNEL_FULL, KERNEL, CORR = 63000000, 63000001, 63000002, 63000005, 63000006, 9200
GRID_X, GRID_Y, GRID_Z, BLOCK_X, BLOCK_Y, BLOCK_Z, SSMEM, DSMEM, LMEM, REGS = range(9101, 9111)
GRAPH_NODE = 63000102
OSRT = 66400000
NVTX_PP, NVTX_SE, NVTX_MARK, NVTX_DEPTH, NVTX_CAT = 9600, 9601, 9602, 9603, 9604  # default domain (index 0)
SOLVER_PP, SOLVER_DEPTH, SOLVER_CAT = 9700, 9703, 9704  # domain "solver" (index 1)
NVTX_GPU, SOLVER_GPU = 9605, 9705  # innermost push/pop range of the launch call, on the GPU activity
MPI_P2P, MPI_COLL, MPI_OTHER = 50000001, 50000002, 50000003
MPI_SEND_SIZE, MPI_RECV_SIZE, MPI_ROOT, MPI_COMM = 50100001, 50100002, 50100003, 50100004
APPL = 40000001
IDLE, RUNNING, NOT_CREATED, WAITING_MSG, BLOCKING_SEND, SYNC, GROUP_COMM, OTHERS, MEMXFER = 0, 1, 2, 3, 4, 5, 13, 15, 17
TAG_LAUNCH, TAG_MEMOP = 55001, 55002


def build_rank(path: Path, schema: str, rank: int, **kw) -> Path:
    """The scenario of one rank.  Names are as nsys stores them (``_vNNNN`` suffixes)."""
    host = kw.pop("host", ("nodeA", "nodeB")[rank])
    kw.setdefault("session_start_ns", SESSION0 + rank * SHIFT)
    b = NsysBuilder(path, schema=schema, host=host, env={"PMI_RANK": str(rank), "SLURM_JOB_ID": "77"}, **kw)
    b.process(PID, "./app")
    b.thread_name(PID, IO, "io-worker")
    b.thread_name(PID, NSYS, "[NSys]")
    peer = 1 - rank
    # NVTX domain "solver" (id 1) with category 7 "phase"
    b.nvtx_domain(PID, MAIN, 1, "solver", ts=1_000)
    b.nvtx_category(PID, MAIN, 1, 7, "phase", ts=1_500)
    b.mpi(PID, MAIN, "MPI_Init", 10_000, 50_000, kind="other")
    b.mpi_rank(PID, MAIN, rank, ts=50_500)
    b.nvtx_startend(PID, MAIN, 90_000, 950_000, text="epoch")
    b.nvtx_push(PID, MAIN, 100_000, 900_000, text="step")
    b.nvtx_push(PID, MAIN, 150_000, 400_000, text="compute")
    b.nvtx_push(PID, MAIN, 200_000, 300_000, text="inner")
    b.nvtx_push(PID, MAIN, 160_000, 350_000, registered="assemble", domain_id=1, category=7)
    # CUDA: HtoD copy, two kernels on two streams, a memset, a device sync, a DtoH copy
    b.cuda_api(PID, MAIN, "cudaMemcpy_v3020", 110_000, 140_000, 1)
    b.memcpy(PID, 0, 7, 120_000, 135_000, 1, 4096, copy_kind=1, src_kind=0, dst_kind=2)
    b.cuda_api(PID, MAIN, "cudaLaunchKernel_v7000", 160_000, 170_000, 2)
    b.kernel(
        PID,
        0,
        14,
        180_000,
        260_000,
        2,
        "saxpy",
        demangled="void saxpy<float>(int, float, float*, float*)",
        grid=(128, 1, 1),
        block=(256, 1, 1),
        registers=32,
    )
    b.cuda_api(PID, MAIN, "cudaLaunchKernel_v7000", 175_000, 185_000, 3)
    b.kernel(
        PID,
        0,
        7,
        190_000,
        370_000,
        3,
        "reduce",
        demangled="reduce(float const*, float*)",
        grid=(64, 2, 1),
        block=(128, 2, 1),
        registers=40,
        static_smem=1024,
        dynamic_smem=2048,
        local_mem=16,
    )
    b.cuda_api(PID, MAIN, "cudaMemset_v3020", 305_000, 315_000, 4)
    b.memset(PID, 0, 14, 312_000, 318_000, 4, 1024)
    b.cuda_api(PID, MAIN, "cudaDeviceSynchronize_v3020", 320_000, 380_000, 5)
    b.mpi(PID, MAIN, "MPI_Allreduce", 400_000, 450_000, kind="coll", size=8, recv_size=8, peer=-1, comm=11)
    b.cuda_api(PID, MAIN, "cudaMemcpy_v3020", 460_000, 500_000, 6)
    b.memcpy(PID, 0, 7, 470_000, 495_000, 6, 8192, copy_kind=2, src_kind=2, dst_kind=0)
    first, second = ("MPI_Send", "MPI_Recv") if rank == 0 else ("MPI_Recv", "MPI_Send")
    b.mpi(PID, MAIN, first, 510_000, 520_000, kind="p2p", peer=peer, size=1024, tag=5, comm=11)
    b.mpi(PID, MAIN, second, 530_000, 560_000, kind="p2p", peer=peer, size=1024, tag=5, comm=11)
    b.mpi(PID, MAIN, "MPI_Barrier", 600_000, 650_000, kind="coll", peer=-1, comm=11)
    b.nvtx_mark(PID, MAIN, 700_000, "checkpoint")
    b.mpi(PID, MAIN, "MPI_Finalize", 960_000, 990_000, kind="other")
    # OS runtime: a worker thread, the process-level "profiling started" marker, an nsys-internal thread
    b.osrt(PID, IO, "read", 200_000, 210_000)
    b.osrt(PID, IO, "pthread_mutex_lock", 215_000, 216_500)
    b.osrt(PID, 0, "OS runtime libraries profiling started", 5_000, 5_000, event_class=31)
    b.osrt(PID, NSYS, "ioctl", 300_000, 301_000)
    b.gpu_metric_sample(0, 100_000, {"SMs Active [Throughput %]": 40, "SM Issue [Throughput %]": 20})
    b.gpu_metric_sample(0, 200_000, {"SMs Active [Throughput %]": 80, "SM Issue [Throughput %]": 60})
    return b.save()


def convert(tmp_path: Path, schema: str, tag: str = "", **kw) -> tuple[Path, dict]:
    d = tmp_path / f"{schema}{tag}"
    d.mkdir(parents=True, exist_ok=True)
    inputs = [str(build_rank(d / f"rank{r}.sqlite", schema, r, **kw)) for r in (0, 1)]
    out = d / "trace"
    res = CliRunner().invoke(
        main, ["-q", "-t", CATEGORIES, "--align", "session", "--time-origin", "session", "-m", *inputs, str(out)]
    )
    assert res.exit_code == 0, res.output + repr(res.exception)
    return out, json.loads(Path(str(out) + ".summary.json").read_text())


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    base = tmp_path_factory.mktemp("schemas")
    return {s: convert(base, s) for s in SCHEMAS}


# ---------------------------------------------------------------------------------------------------
# Expected results.  Rank 0, session-relative == trace time (report 0 has the earliest session start;
# converted with --time-origin session: these tests are about the translation, not the origin).
END = 990_000 + SHIFT  # last record: rank 1's MPI_Finalize end
OLD = ("2.9.1", "3.0.0")  # MPI only as NVTX ranges: no sizes/comm
# Dynamic value ids (names sorted per type, numbered from 1), checked against the .pcf below.
API_IDS = {"cudaDeviceSynchronize": 1, "cudaLaunchKernel": 2, "cudaMemcpy": 3, "cudaMemset": 4}
PP_IDS = {"compute": 1, "inner": 2, "step": 3}


def coll_extra(schema: str, size: int, recv: int) -> list:
    """Extrae global-op pairs on collective begins: send and receive sizes (0 where the export has no
    MPI_COLLECTIVES_EVENTS: the NVTX form of 2022.x), the communicator (MPI_COMM_WORLD = 1); no root
    pair (these calls have none: Extrae writes it on the root's record only)."""
    if schema in OLD:
        size = recv = 0
    return [(MPI_SEND_SIZE, size), (MPI_RECV_SIZE, recv), (MPI_COMM, 1)]


def main_events_rank0(schema: str) -> list:
    """(time, pairs) of every event record of rank 0's main thread, in file order."""
    return [
        (1_000, [(APPL, 1)]),  # the process's life starts (Extrae's APPL_EV)
        (10_000, [(MPI_OTHER, 31)]),  # MPI_Init
        (50_000, [(MPI_OTHER, 0)]),
        (90_000, [(NVTX_SE, 1)]),  # epoch
        (100_000, [(NVTX_PP, 3), (NVTX_DEPTH, 1)]),  # step
        (110_000, [(CUDA_API, 3), (CORR, 1)]),  # cudaMemcpy HtoD
        (140_000, [(CUDA_API, 0), (CORR, 0)]),
        (150_000, [(NVTX_PP, 1), (NVTX_DEPTH, 2)]),  # compute
        (160_000, [(CUDA_API, 2), (CORR, 2)]),  # cudaLaunchKernel saxpy
        (160_000, [(SOLVER_PP, 1), (SOLVER_DEPTH, 1)]),  # solver:assemble
        (160_000, [(SOLVER_CAT, 1)]),  # category "phase"
        (170_000, [(CUDA_API, 0), (CORR, 0)]),
        (175_000, [(CUDA_API, 2), (CORR, 3)]),  # cudaLaunchKernel reduce
        (185_000, [(CUDA_API, 0), (CORR, 0)]),
        (200_000, [(NVTX_PP, 2), (NVTX_DEPTH, 3)]),  # inner
        (300_000, [(NVTX_PP, 0), (NVTX_DEPTH, 2)]),
        (305_000, [(CUDA_API, 4), (CORR, 4)]),  # cudaMemset
        (315_000, [(CUDA_API, 0), (CORR, 0)]),
        (320_000, [(CUDA_API, 1), (CORR, 5)]),  # cudaDeviceSynchronize
        (350_000, [(SOLVER_PP, 0), (SOLVER_DEPTH, 0)]),
        (350_000, [(SOLVER_CAT, 0)]),
        (380_000, [(CUDA_API, 0), (CORR, 0)]),
        (400_000, [(NVTX_PP, 0), (NVTX_DEPTH, 1)]),  # compute ends
        (400_000, [(MPI_COLL, 10)] + coll_extra(schema, 8, 8)),  # MPI_Allreduce
        (450_000, [(MPI_COLL, 0)]),
        (460_000, [(CUDA_API, 3), (CORR, 6)]),  # cudaMemcpy DtoH
        (500_000, [(CUDA_API, 0), (CORR, 0)]),
        (510_000, [(MPI_P2P, 1)]),  # MPI_Send
        (520_000, [(MPI_P2P, 0)]),
        (530_000, [(MPI_P2P, 2)]),  # MPI_Recv
        (560_000, [(MPI_P2P, 0)]),
        (600_000, [(MPI_COLL, 8)] + coll_extra(schema, 0, 0)),  # MPI_Barrier
        (650_000, [(MPI_COLL, 0)]),
        (700_000, [(NVTX_MARK, 1)]),  # checkpoint (punctual)
        (900_000, [(NVTX_PP, 0), (NVTX_DEPTH, 0)]),
        (950_000, [(NVTX_SE, 0)]),
        (960_000, [(MPI_OTHER, 32)]),  # MPI_Finalize
        (990_000, [(MPI_OTHER, 0)]),
        (990_000, [(APPL, 0)]),  # its life ends
    ]


KPARAMS = [GRID_X, GRID_Y, GRID_Z, BLOCK_X, BLOCK_Y, BLOCK_Z, SSMEM, DSMEM, LMEM, REGS]  # graph node only when set
# NVTX on GPU (9605/9705): value ids of the names seen on the GPU, per type: default domain
# {compute: 1, step: 2}, solver {assemble: 1}.
STREAM_EVENTS_RANK0 = {  # thread in task -> [(time, pairs)]
    2: [(200_000, [(OSRT, 2)]), (210_000, [(OSRT, 0)]), (215_000, [(OSRT, 1)]), (216_500, [(OSRT, 0)])],
    3: [
        (120_000, [(MEMOP, 5), (MEMOP_SIZE, 4096), (CORR, 1)]),
        (120_000, [(NVTX_GPU, 2)]),  # in "step"
        (135_000, [(MEMOP, 0), (MEMOP_SIZE, 0), (CORR, 0)]),
        (135_000, [(NVTX_GPU, 0)]),
        (
            190_000,
            [(KERNEL, 1), (KERNEL_FULL, 1), (CORR, 3)] + list(zip(KPARAMS, [64, 2, 1, 128, 2, 1, 1024, 2048, 16, 40])),
        ),
        (190_000, [(NVTX_GPU, 1)]),
        (190_000, [(SOLVER_GPU, 1)]),  # compute, assemble
        (370_000, [(KERNEL, 0), (KERNEL_FULL, 0), (CORR, 0)] + [(t, 0) for t in KPARAMS]),
        (370_000, [(NVTX_GPU, 0)]),
        (370_000, [(SOLVER_GPU, 0)]),
        (470_000, [(MEMOP, 4), (MEMOP_SIZE, 8192), (CORR, 6)]),
        (470_000, [(NVTX_GPU, 2)]),
        (495_000, [(MEMOP, 0), (MEMOP_SIZE, 0), (CORR, 0)]),
        (495_000, [(NVTX_GPU, 0)]),
    ],
    4: [
        (180_000, [(KERNEL, 2), (KERNEL_FULL, 2), (CORR, 2)] + list(zip(KPARAMS, [128, 1, 1, 256, 1, 1, 0, 0, 0, 32]))),
        (180_000, [(NVTX_GPU, 1)]),
        (180_000, [(SOLVER_GPU, 1)]),
        (260_000, [(KERNEL, 0), (KERNEL_FULL, 0), (CORR, 0)] + [(t, 0) for t in KPARAMS]),
        (260_000, [(NVTX_GPU, 0)]),
        (260_000, [(SOLVER_GPU, 0)]),
        (312_000, [(MEMOP, 6), (MEMOP_SIZE, 1024), (CORR, 4)]),
        (312_000, [(NVTX_GPU, 1)]),
        (312_000, [(SOLVER_GPU, 1)]),
        (318_000, [(MEMOP, 0), (MEMOP_SIZE, 0), (CORR, 0)]),
        (318_000, [(NVTX_GPU, 0)]),
        (318_000, [(SOLVER_GPU, 0)]),
    ],
}
STATES_RANK0 = {  # thread in task -> [(begin, end, state)], gap-free over [0, END)
    # the process's first activity is its NVTX domain creation at 1 000: Running from there (Task.life)
    1: [
        (0, 1_000, NOT_CREATED),
        (1_000, 10_000, RUNNING),
        (10_000, 50_000, OTHERS),
        (50_000, 320_000, RUNNING),
        (320_000, 380_000, SYNC),
        (380_000, 400_000, RUNNING),
        (400_000, 450_000, GROUP_COMM),
        (450_000, 510_000, RUNNING),
        (510_000, 520_000, BLOCKING_SEND),
        (520_000, 530_000, RUNNING),
        (530_000, 560_000, WAITING_MSG),
        (560_000, 600_000, RUNNING),
        (600_000, 650_000, SYNC),
        (650_000, 960_000, RUNNING),
        (960_000, 990_000, OTHERS),
        (990_000, END, NOT_CREATED),
    ],
    2: [(0, 200_000, NOT_CREATED), (200_000, 216_500, RUNNING), (216_500, END, NOT_CREATED)],
    3: [
        (0, 120_000, IDLE),
        (120_000, 135_000, MEMXFER),
        (135_000, 190_000, IDLE),
        (190_000, 370_000, RUNNING),
        (370_000, 470_000, IDLE),
        (470_000, 495_000, MEMXFER),
        (495_000, END, IDLE),
    ],
    4: [
        (0, 180_000, IDLE),
        (180_000, 260_000, RUNNING),
        (260_000, 312_000, IDLE),
        (312_000, 318_000, MEMXFER),
        (318_000, END, IDLE),
    ],
}
# (send thread, recv thread, send time, recv time, size, tag): CUDA call -> GPU activity
COMMS_RANK0 = [
    (1, 3, 110_000, 120_000, 4096, TAG_MEMOP),
    (1, 4, 160_000, 180_000, 0, TAG_LAUNCH),
    (1, 3, 175_000, 190_000, 0, TAG_LAUNCH),
    (1, 4, 305_000, 312_000, 1024, TAG_MEMOP),
    (1, 3, 460_000, 470_000, 8192, TAG_MEMOP),
]


def rank1(t: int) -> int:
    """Rank 1's trace time of a rank-0 time (the trace's first/last instants stay)."""
    return t if t in (0, END) else t + SHIFT


def rank1_swap(v: int, table: dict) -> int:
    return table.get(v, v)


def records(tr, task: int) -> dict:
    """thread -> [(time, [(type, value), ...])] in file order, for one task."""
    ev = tr.events[tr.events["task"] == task]
    out: dict = {}
    for (thread, rec), g in ev.groupby(["thread", "rec"], sort=False):
        out.setdefault(int(thread), []).append(
            (int(g["time"].iloc[0]), list(zip(g["type"].astype(int), g["value"].astype(int))))
        )
    return out


def states(tr, task: int) -> dict:
    st = tr.states[tr.states["task"] == task].sort_values(["thread", "begin"])
    return {
        int(th): [tuple(map(int, r)) for r in g[["begin", "end", "state"]].to_numpy()] for th, g in st.groupby("thread")
    }


def expected_events(schema: str, task: int) -> dict:
    exp = {1: main_events_rank0(schema), **STREAM_EVENTS_RANK0}
    if task == 1:
        return exp
    swap = {1: 2, 2: 1}  # rank 1 receives first, then sends
    return {
        th: [(rank1(t), [(ty, swap.get(v, v) if ty == MPI_P2P else v) for ty, v in pairs]) for t, pairs in recs]
        for th, recs in exp.items()
    }


def expected_states(task: int) -> dict:
    if task == 1:
        return STATES_RANK0
    swap = {BLOCKING_SEND: WAITING_MSG, WAITING_MSG: BLOCKING_SEND}
    shifted = {
        th: [(rank1(b), rank1(e), swap.get(s, s) if b in (510_000, 530_000) else s) for b, e, s in segs]
        for th, segs in STATES_RANK0.items()
    }
    # rank 1's main thread has the trace's last event: no "Not created" tail after it
    return {th: [seg for seg in segs if seg[1] > seg[0]] for th, segs in shifted.items()}


# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("schema", SCHEMAS)
def test_valid_trace_and_header(traces, schema):
    out, _ = traces[schema]
    tr = validate_trace(out)
    assert tr.header.end_time == END and tr.header.unit == "_ns"
    assert tr.header.nodes == [4, 4]  # one CPU per thread, 2 nodes (nodeA, nodeB)
    assert tr.header.apps == [[(4, 1), (4, 2)]]  # 2 tasks x (2 CPU threads + 2 streams)
    assert tr.header.date == "14/11/2023 at 22:13"  # the earliest session start (UTC)
    assert tr.row["NODE"] == ["nodeA", "nodeB"]
    assert tr.row["TASK"] == ["Rank 0 (nodeA, pid 4000)", "Rank 1 (nodeB, pid 4000)"]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_row_thread_names(traces, schema):
    """The [NSys] thread is hidden.  2022.x exports name the rank's thread "MPI Rank N" (NVTX
    thread-name event + ThreadNames), newer ones do not name it: both show as "main".  Both hosts' GPU 0
    are the run's GPUs 0 and 1 (GPU ids are per host)."""
    tr = load_trace(traces[schema][0])
    assert tr.row["THREAD"] == [
        n.format(r=r, h=h)
        for r, h in ((0, "nodeA"), (1, "nodeB"))
        for n in ("Rank {r} main (4000)", "Rank {r} io-worker (4001)", "CUDA-D{r}.S7-{h}", "CUDA-D{r}.S14-{h}")
    ]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_pcf_types_and_value_labels(traces, schema):
    tr = load_trace(traces[schema][0])
    T = tr.pcf.types
    lab = lambda t: {k: v for k, v in T[t]["values"].items() if k}  # noqa: E731
    assert lab(CUDA_API) == {v: k for k, v in API_IDS.items()}
    assert lab(NVTX_PP) == {v: k for k, v in PP_IDS.items()}
    assert T[NVTX_PP]["label"] == "NVTX push/pop ranges: default domain"
    assert T[SOLVER_PP]["label"] == "NVTX push/pop ranges: solver" and lab(SOLVER_PP) == {1: "assemble"}
    assert lab(SOLVER_CAT) == {1: "phase"} and lab(NVTX_SE) == {1: "epoch"} and lab(NVTX_MARK) == {1: "checkpoint"}
    assert T[NVTX_DEPTH]["values"] is None and T[SOLVER_DEPTH]["values"] is None
    assert lab(KERNEL) == {1: "reduce", 2: "saxpy"}
    assert lab(KERNEL_FULL) == {1: "reduce(float const*, float*)", 2: "void saxpy<float>(int, float, float*, float*)"}
    assert lab(OSRT) == {1: "pthread_mutex_lock", 2: "read"}  # no "ioctl": its thread is hidden
    # BasicAnalysis's values for the memory operations it counts: 3 DtoD, 4 DtoH, 5 HtoD, 6 memset
    assert {k: lab(MEMOP)[k] for k in (3, 4, 5, 6)} == {
        3: "CUDA memcpy Device-to-Device",
        4: "CUDA memcpy Device-to-Host",
        5: "CUDA memcpy Host-to-Device",
        6: "CUDA memset",
    }
    assert "CUDA memcpy kernel" in T[MEMOP]["label"]
    for t in (MPI_P2P, MPI_COLL, MPI_OTHER):
        v = T[t]["values"]
        assert (v[0], v[1], v[2], v[8], v[10], v[31], v[32]) == (
            "Outside MPI",
            "MPI_Send",
            "MPI_Recv",
            "MPI_Barrier",
            "MPI_Allreduce",
            "MPI_Init",
            "MPI_Finalize",
        )
    assert not [t for t in T if 9800 <= t < 9900]  # the MPI NVTX domain is not an NVTX type
    assert tr.pcf.states[MEMXFER] == "Memory transfer" and tr.pcf.states[SYNC] == "Synchronization"


@pytest.mark.parametrize("schema", SCHEMAS)
def test_begin_counts_per_label(traces, schema):
    tr = load_trace(traces[schema][0])
    ev = tr.events[tr.events["value"] != 0]
    got = {}
    for t in (
        CUDA_API,
        KERNEL,
        MEMOP,
        OSRT,
        NVTX_PP,
        NVTX_SE,
        NVTX_MARK,
        SOLVER_PP,
        SOLVER_CAT,
        MPI_P2P,
        MPI_COLL,
        MPI_OTHER,
    ):
        labels = tr.pcf.types[t]["values"]
        got[t] = dict(Counter(labels[int(v)] for v in ev.loc[ev["type"] == t, "value"]))
    assert got == {
        CUDA_API: {"cudaMemcpy": 4, "cudaLaunchKernel": 4, "cudaMemset": 2, "cudaDeviceSynchronize": 2},
        KERNEL: {"saxpy": 2, "reduce": 2},
        MEMOP: {"CUDA memcpy Host-to-Device": 2, "CUDA memcpy Device-to-Host": 2, "CUDA memset": 2},
        OSRT: {"read": 2, "pthread_mutex_lock": 2},
        NVTX_PP: {"step": 2, "compute": 2, "inner": 2},
        NVTX_SE: {"epoch": 2},
        NVTX_MARK: {"checkpoint": 2},
        SOLVER_PP: {"assemble": 2},
        SOLVER_CAT: {"phase": 2},
        MPI_P2P: {"MPI_Send": 2, "MPI_Recv": 2},
        MPI_COLL: {"MPI_Allreduce": 2, "MPI_Barrier": 2},
        MPI_OTHER: {"MPI_Init": 2, "MPI_Finalize": 2},
    }
    # nesting levels written at begin (level = depth + 1) and at end (the enclosing level)
    d = tr.events[tr.events["type"] == NVTX_DEPTH]
    assert sorted(d["value"]) == sorted([1, 2, 3, 2, 1, 0] * 2)


@pytest.mark.parametrize("schema", SCHEMAS)
@pytest.mark.parametrize("task", [1, 2])
def test_exact_event_records(traces, schema, task):
    tr = load_trace(traces[schema][0])
    assert records(tr, task) == expected_events(schema, task)


@pytest.mark.parametrize("schema", SCHEMAS)
@pytest.mark.parametrize("task", [1, 2])
def test_exact_states(traces, schema, task):
    tr = load_trace(traces[schema][0])
    assert states(tr, task) == expected_states(task)


@pytest.mark.parametrize("schema", SCHEMAS)
def test_exact_communications(traces, schema):
    tr = load_trace(traces[schema][0])
    c = tr.comms
    got = sorted(
        tuple(map(int, r))
        for r in c[
            ["task", "thread", "rtask", "rthread", "log_send", "phys_send", "log_recv", "phys_recv", "size", "tag"]
        ].to_numpy()
    )
    exp = sorted(
        (task, s, task, r, sh(ts), sh(ts), sh(tr_), sh(tr_), size, tag)
        for task, sh in ((1, lambda t: t), (2, rank1))
        for s, r, ts, tr_, size, tag in COMMS_RANK0
    )
    if schema in MPI_TABLE_SCHEMAS:  # peers are known: the two MPI messages (tag 5, main threads)
        # rank 1's Send ends (session time) after rank 0's Recv: physical send drawn at the receive
        exp += [
            (1, 1, 2, 1, 510_000, 520_000, rank1(510_000), rank1(520_000), 1024, 5),
            (2, 1, 1, 1, 560_000, 560_000, 530_000, 560_000, 1024, 5),
        ]
        exp.sort()
    assert got == exp
    # cpu of the receiver of a launch/memory link is the stream's own CPU on the same node
    c = c[c["tag"] != 5]
    assert sorted(set(map(tuple, c[["rtask", "rthread", "rcpu"]].to_numpy().tolist()))) == [
        (1, 3, 3),
        (1, 4, 4),
        (2, 3, 7),
        (2, 4, 8),
    ]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_summary_json(traces, schema):
    _, s = traces[schema]
    none = {"dropped": {}, "notes": {}}
    assert s["categories"] == {
        "cuda_api": {"source_rows": 12, "translated_rows": 12, "event_records": 24, **none},
        "kernels": {"source_rows": 4, "translated_rows": 4, "event_records": 8, **none},
        "memcpy": {"source_rows": 4, "translated_rows": 4, "event_records": 8, **none},
        "memset": {"source_rows": 2, "translated_rows": 2, "event_records": 4, **none},
        "nvtx": {"source_rows": 12, "translated_rows": 12, "event_records": 26, **none},
        "mpi": {"source_rows": 12, "translated_rows": 12, "event_records": 24, **none},
        "osrt": {
            "source_rows": 8,
            "translated_rows": 4,
            "event_records": 8,
            "notes": {},
            "dropped": {
                "profiling started/finished markers (not calls)": 2,
                "on an Nsight Systems internal thread ([NSys*])": 2,
            },
        },
        "launch_links": {"source_rows": 10, "translated_rows": 10, "event_records": 10, **none},
        # per rank 5 GPU activities in default-domain ranges, 3 in "solver" ones (begin + end each)
        "nvtx_on_gpu": {"source_rows": 16, "translated_rows": 16, "event_records": 32, **none},
        **(
            {
                "mpi_messages": {
                    "source_rows": 4,
                    "translated_rows": 4,
                    "event_records": 2,
                    "dropped": {},
                    "notes": {
                        "physical send after the physical receive (send call returned later): drawn at the receive": 1
                    },
                }
            }
            if schema in MPI_TABLE_SCHEMAS
            else {}
        ),
    }
    assert (s["ranks"], s["nodes"], s["threads"], s["streams"]) == (2, ["nodeA", "nodeB"], 4, 4)
    assert [r["offset_ns"] for r in s["reports"]] == [0, SHIFT]
    assert [r["host"] for r in s["reports"]] == ["nodeA", "nodeB"]
    assert {r["schema"] for r in s["reports"]} == {"3.22.1" if schema == "3.22" else schema}
    # shape differences: where the rank comes from, which table holds the GPU metric samples
    how = "NVTX thread name" if schema in OLD else "MPI_RANKS"
    assert s["notes"] == [f"tasks: Rank 0=rank0.sqlite (rank from {how}), Rank 1=rank1.sqlite (rank from {how})"]
    table, rows = ("GPU_METRICS", 4) if schema == "3.22" else ("GENERIC_EVENTS", 2)
    # the NVTX domain and category names (and, in the old shapes, the rank's thread name and the MPI domain)
    names = 4 if schema in OLD else 2
    assert [(Path(u["report"]).name, u["table"], u["rows"], u["reason"]) for u in s["untranslated"]] == [
        row
        for r in (0, 1)
        for row in (
            (f"rank{r}.sqlite", table, rows, "category not requested with -t (add -t gpu_metrics)"),
            (f"rank{r}.sqlite", "NVTX_EVENTS", names, NVTX_CLASS_REASONS["names"]),
        )
    ]
    assert s["records"] == {
        "states": 2 * (16 + 3 + 7 + 5) - 1,
        "events": 2 * (39 + 4 + 14 + 12),  # main thread: 37 + its life's begin and end (40000001)
        "communications": 10 + 2 * (schema in MPI_TABLE_SCHEMAS),
        "end_ns": END,
    }


def _body(out) -> list[str]:
    return Path(str(out) + ".prv").read_text().splitlines()


def _strip_global_op(line: str) -> str:
    """Drop the Extrae global-op pairs (types 501000xx) from an event record."""
    if not line.startswith("2:"):
        return line
    f = line.split(":")
    head, pairs = f[:6], list(zip(f[6::2], f[7::2]))
    return ":".join(head + [x for t, v in pairs if not t.startswith("501000") for x in (t, v)])


def test_identical_prv_across_shapes_except_mpi_global_op_sizes(traces):
    bodies = {s: _body(traces[s][0]) for s in SCHEMAS}
    assert bodies["2.9.1"] == bodies["3.0.0"]
    assert bodies["3.13.2"] == bodies["3.22"]
    old, new = bodies["3.0.0"], bodies["3.13.2"]
    # The MPI_* shapes name the peers: their two MPI messages (tag 5) are extra communications.
    messages = [x for x in new if x.startswith("3:") and x.endswith(":5")]
    assert len(messages) == 2
    new = [x for x in new if x not in messages]
    differ = [(a, b) for a, b in zip(old, new) if a != b]
    # The only difference: the sizes of the 2 Allreduce begins (8 bytes in the MPI_* shapes, 0 in the
    # NVTX form); every collective begin carries the communicator (world) and sizes in both shapes.
    assert len(old) == len(new) and len(differ) == 2
    assert all(
        ":50000002:10:50100001:0:50100002:0:50100004:1" in a and b == a.replace(":0:50100002:0:", ":8:50100002:8:")
        for a, b in differ
    )
    assert [_strip_global_op(x) for x in new] == [_strip_global_op(x) for x in old]
    pcfs = {s: Path(str(traces[s][0]) + ".pcf").read_text() for s in SCHEMAS}
    assert len(set(pcfs.values())) == 1


@pytest.mark.parametrize("schema", SCHEMAS)
def test_shuffled_rows_give_byte_identical_prv(traces, tmp_path, schema):
    out, _ = convert(tmp_path, schema, "-shuffled", shuffle_seed=1234)
    for ext in (".prv", ".pcf", ".row"):
        assert Path(str(out) + ext).read_bytes() == Path(str(traces[schema][0]) + ext).read_bytes()


@pytest.mark.parametrize("schema", SCHEMAS)
def test_full_export_gives_same_trace_as_lazy(traces, tmp_path, schema):
    out, summary = convert(tmp_path, schema, "-full", lazy=False)
    for ext in (".prv", ".pcf", ".row"):
        assert Path(str(out) + ext).read_bytes() == Path(str(traces[schema][0]) + ext).read_bytes()
    assert summary["categories"] == traces[schema][1]["categories"]
