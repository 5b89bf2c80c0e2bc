"""Issue #4 "GPU depth": NCCL kernels and payloads, GPU metrics (rows, samples, attribution),
CUDA graphs (both shapes), OpenACC and NVTX ranges projected onto GPU activity.

One scenario per export shape (tests/nsysgen.py), converted with the CLI, validated strictly and
checked value by value; expected metric means are computed by hand below.  Then the real CloverLeaf
export with some kernels renamed to NCCL names.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import CLOVERLEAF, convert_valid
from nsysgen import SCHEMAS, NsysBuilder
from paraver_validator import validate_trace
from trace_tools import begins, intervals

from nsys2prv.cli import main
from nsys2prv.kinds import NVTX_CLASS_REASONS

NVTX_NAMES = NVTX_CLASS_REASONS["names"]

PID = 5000
MAIN, ACC = PID, PID + 3
NCCL_DOMAIN = 2
COMM = 0xABCDEF0123456789
# Paraver ids written out on purpose (registry.py): the test must notice if they change.
KERNEL, NCCL_KERNEL, KERNEL_FULL, CORR = 63000006, 63000007, 63000005, 9200
NCCL_RANGE, NCCL_OP, NCCL_BYTES, NCCL_DTYPE, NCCL_REDOP, NCCL_ROOT, NCCL_COMM = 9500, 9501, 9502, 9503, 9504, 9505, 9506
NCCL_RANK, NCCL_NRANKS, NCCL_PEER, NCCL_DEV = 9507, 9508, 9509, 9510
METRIC_DRAM, METRIC_SM = 9400, 9401  # sorted metric names: "DRAM..." < "SMs..."
NVTX_PP, NVTX_GPU = 9600, 9605
GRAPH_EXEC, GRAPH_ID, GRAPH_EXEC_ID, GRAPH_NODE, GRAPH_API = 63000008, 63000100, 63000101, 63000102, 63000103
ACC_OTHER, ACC_DATA, ACC_LAUNCH = 66000000, 66000001, 66000002
ACC_REGION, ACC_FUNC, ACC_SIZE = 66100000, 66200000, 66300001
RUNNING, GROUP_COMM, MEMXFER, IDLE = 1, 13, 17, 0
GPU_ACTIVITY = 63000090
TAG_LAUNCH = 55001
SM, DRAM = "SMs Active [Throughput %]", "DRAM Read Bandwidth [Throughput %]"
GPU_OF_DEVICE = {0: 3, 1: 1}  # CUDA ordinal -> nsys GPU id (TARGET_INFO_CUDA_DEVICE / _GPU)
NEW_GRAPHS = ("3.13.2", "3.22")  # graph-level CUDA_GRAPH_EVENTS + GRAPH_TRACE shapes

# NVTX payload binary form (3.22): NCCL's schemas (nvtx_payload_schemas.h) with entry types
# UINT64 18, SIZE 22, INT 5 and an enum schema for the reduction operation.
REDOP_ENUM, ALLREDUCE_SCHEMA, BCAST_SCHEMA = 0x1000010, 0x1000001, 0x1000002


def _blob(schema_id: int, payload: bytes) -> bytes:
    return struct.pack("<QQQQ", NCCL_DOMAIN, schema_id, len(payload), 32) + payload


def build(path: Path, schema: str) -> Path:
    b = NsysBuilder(path, schema=schema, host="gpuhost", env={"PMI_RANK": "0"})
    b.gpu_id_of_device.update(GPU_OF_DEVICE)
    b.process(PID, "./nccl_app")
    b.thread_name(PID, ACC, "acc-worker")
    b.mpi_rank(PID, MAIN, 0, ts=500)
    b.nvtx_domain(PID, MAIN, NCCL_DOMAIN, "NCCL", ts=1_000)
    # NCCL: init (JSON payload, no kernel), an allreduce and a broadcast launching NCCL kernels
    b.nvtx_push(
        PID,
        MAIN,
        10_000,
        50_000,
        registered="ncclCommInitRank",
        domain_id=NCCL_DOMAIN,
        json_payload={"NCCL communicator ID": COMM, "No. of ranks": 4, "Rank": 2, "CUDA device": 0, "Color": 7},
    )
    if schema == "3.22":
        b.nvtx_payload_enum(NCCL_DOMAIN, REDOP_ENUM, "ncclRedOp_t", {"Sum": 0, "Prod": 1, "Max": 2, "Min": 3, "Avg": 4})
        b.nvtx_payload_schema(
            NCCL_DOMAIN,
            ALLREDUCE_SCHEMA,
            "NcclNvtxParamsAllReduce",
            [("NCCL communicator ID", 18, 0), ("Message size [bytes]", 22, 8), ("Reduction operation", REDOP_ENUM, 16)],
            24,
        )
        b.nvtx_payload_schema(
            NCCL_DOMAIN,
            BCAST_SCHEMA,
            "NcclNvtxParamsBroadcast",
            [("NCCL communicator ID", 18, 0), ("Message size [bytes]", 22, 8), ("Root", 5, 16)],
            24,
        )
        allreduce = dict(binary=_blob(ALLREDUCE_SCHEMA, struct.pack("<QQi4x", COMM, 4096, 0)))
        bcast = dict(binary=_blob(BCAST_SCHEMA, struct.pack("<QQi4x", COMM, 1024, 0)))
    else:
        allreduce = dict(
            json_payload={"NCCL communicator ID": COMM, "Message size [bytes]": 4096, "Reduction operation": "Sum"}
        )
        bcast = dict(
            json_payload={
                "NcclNvtxParamsBroadcast": {"NCCL communicator ID": COMM, "Message size [bytes]": 1024, "Root": 0}
            }
        )
    b.nvtx_push(PID, MAIN, 100_000, 150_000, registered="ncclAllReduce", domain_id=NCCL_DOMAIN, **allreduce)
    b.cuda_api(PID, MAIN, "cudaLaunchKernel_v7000", 110_000, 120_000, 10)
    b.kernel(PID, 0, 20, 130_000, 200_000, 10, "ncclDevKernel_AllReduce_Sum_f32_RING_LL")
    b.nvtx_push(PID, MAIN, 300_000, 340_000, registered="ncclBroadcast", domain_id=NCCL_DOMAIN, **bcast)
    b.cuda_api(PID, MAIN, "cuLaunchKernel", 310_000, 315_000, 11, driver=True)
    b.kernel(PID, 0, 20, 320_000, 380_000, 11, "ncclKernel_Broadcast_RING_LL_Sum_int8")
    # compute work inside the NVTX range "solve" (default domain), then on the second GPU
    b.nvtx_push(PID, MAIN, 390_000, 600_000, text="solve")
    b.cuda_api(PID, MAIN, "cudaLaunchKernel_v7000", 400_000, 410_000, 12)
    b.kernel(PID, 0, 7, 420_000, 520_000, 12, "stencil")
    b.cuda_api(PID, MAIN, "cudaMemcpyAsync_v3020", 530_000, 540_000, 13)
    b.memcpy(PID, 0, 7, 545_000, 560_000, 13, 2048, copy_kind=1)
    b.cuda_api(PID, MAIN, "cudaLaunchKernel_v7000", 610_000, 615_000, 14)
    b.kernel(PID, 1, 9, 620_000, 700_000, 14, "stencil")
    # CUDA graphs: node creation (both shapes), graph-level events and a whole-graph execution
    # (newer shapes), and a node-level kernel with its graph node id
    b.graph_node_event(PID, MAIN, "cudaGraphAddKernelNode_v10000", 690_000, 691_000, node_id=77)
    if schema in NEW_GRAPHS:
        b.graph_event(PID, MAIN, "cudaGraphInstantiate_v12000", 700_000, 705_000, graph_id=1, exec_id=2)
        b.cuda_api(PID, MAIN, "cudaGraphLaunch_v10000", 710_000, 712_000, 15)
        b.graph_trace(PID, 0, 7, 715_000, 760_000, 15, graph_id=1, exec_id=2)
    b.cuda_api(PID, MAIN, "cudaGraphLaunch_v10000", 770_000, 772_000, 16)
    b.kernel(PID, 0, 7, 775_000, 790_000, 16, "graphkernel", graph_node=77)
    # OpenACC on a worker thread
    b.openacc(PID, ACC, "other", "acc_compute_construct", 800_000, 840_000, 9, "main.f90", "compute", 48)
    b.openacc(
        PID, ACC, "data", "acc_enqueue_upload", 805_000, 810_000, 5, "main.f90", "compute", 42, nbytes=8192, var="a"
    )
    b.openacc(
        PID,
        ACC,
        "launch",
        "acc_enqueue_launch",
        820_000,
        830_000,
        4,
        "main.f90",
        "compute",
        50,
        kernel="compute_50_gpu",
    )
    # GPU metrics (by nsys GPU id): GPU 3 (= device 0) and GPU 1 (= device 1)
    b.gpu_metric_sample(3, -5_000, {SM: 99, DRAM: 99})  # negative timestamp: dropped
    for t, sm, dram in ((100_000, 10, 0), (200_000, 50, 20), (400_000, 90, -5), (500_000, 30, 40), (800_000, 0, 0)):
        b.gpu_metric_sample(3, t, {SM: sm, DRAM: dram})  # -5: clamped to 0
    for t, sm in ((600_000, 20), (650_000, 60), (750_000, 0)):
        b.gpu_metric_sample(1, t, {SM: sm})
    return b.save()


def run(tmp: Path, schema: str, categories: str | None = None) -> tuple[Path, dict]:
    tmp.mkdir(parents=True, exist_ok=True)
    src = build(tmp / "rank0.sqlite", schema)
    out = tmp / "trace"
    args = ["-q", "--time-origin", "session"] + (["-t", categories] if categories else []) + [str(src), str(out)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output + repr(res.exception)
    return out, json.loads(Path(f"{out}.summary.json").read_text())


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    base = tmp_path_factory.mktemp("gpudepth")
    out = {}
    for s in SCHEMAS:
        trace, summary = run(base / s, s)
        out[s] = (trace, summary, validate_trace(str(trace)))
    return out


def recs(tr, thread: int, time: int) -> list:
    """[[(type, value), ...] per event record] of a thread at a time, in file order."""
    e = tr.events[(tr.events["thread"] == thread) & (tr.events["time"] == time)].sort_values("rec", kind="stable")
    return [list(zip(g["type"].astype(int), g["value"].astype(int))) for _, g in e.groupby("rec", sort=True)]


def ev(tr, thread: int, time: int) -> list:
    """[(type, value)] of every event record of a thread at a time, in file order, flattened."""
    return [p for r in recs(tr, thread, time) for p in r]


def label(tr, type_id: int, value: int) -> str:
    return tr.pcf.types[type_id]["values"][value]


# Threads of the task: 1 main, 2 acc-worker, 3 CUDA-D3.S7, 4 CUDA-D3.S20, 5 CUDA-D1.S9, 6 Metrics GPU1, 7 Metrics GPU3
# (streams of CUDA devices 0 and 1 = GPUs 3 and 1: one numbering for streams and metric rows)
S7, S20, S9, GPU1_ROW, GPU3_ROW = 3, 4, 5, 6, 7


@pytest.mark.parametrize("schema", SCHEMAS)
def test_rows_and_metric_rows_after_streams(traces, schema):
    _, _, tr = traces[schema]
    assert tr.row["THREAD"] == [
        "Rank 0 main (5000)",
        "Rank 0 acc-worker (5003)",
        "CUDA-D3.S7-gpuhost",
        "CUDA-D3.S20-gpuhost",
        "CUDA-D1.S9-gpuhost",
        "Metrics GPU1",
        "Metrics GPU3",
    ]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_nccl_kernels_apart_from_compute_kernels(traces, schema):
    _, s, tr = traces[schema]
    assert begins(tr, NCCL_KERNEL).to_dict() == {
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL": 1,
        "ncclKernel_Broadcast_RING_LL_Sum_int8": 1,
    }
    assert begins(tr, KERNEL).to_dict() == {"graphkernel": 1, "stencil": 2}
    # NCCL kernels: Group Communication on their stream, never Running
    st = tr.states[tr.states["thread"] == S20]
    assert [tuple(map(int, r)) for r in st[st["state"] != IDLE][["begin", "end", "state"]].to_numpy()] == [
        (130_000, 200_000, GROUP_COMM),
        (320_000, 380_000, GROUP_COMM),
    ]
    assert s["categories"]["nccl_kernels"] == {
        "source_rows": 2,
        "translated_rows": 2,
        "event_records": 4,
        "dropped": {},
        "notes": {},
    }
    assert s["categories"]["kernels"]["source_rows"] == s["categories"]["kernels"]["translated_rows"] == 3


@pytest.mark.parametrize("schema", SCHEMAS)
def test_nccl_payloads_on_nccl_kernels(traces, schema):
    """JSON payloads (all shapes; nested object for the broadcast) and binary payloads decoded through
    NVTX_PAYLOAD_SCHEMA_ENTRIES + enum entries (3.22) give the same events."""
    _, s, tr = traces[schema]
    allreduce = recs(tr, S20, 130_000)[1]
    bcast = recs(tr, S20, 320_000)[1]
    assert allreduce == [(NCCL_OP, 1), (NCCL_BYTES, 4096), (NCCL_REDOP, 1), (NCCL_COMM, 1)]
    assert bcast == [(NCCL_OP, 2), (NCCL_BYTES, 1024), (NCCL_ROOT, 1), (NCCL_COMM, 1)]  # root 0 -> 1
    assert recs(tr, S20, 200_000)[1] == [(NCCL_OP, 0), (NCCL_BYTES, 0), (NCCL_REDOP, 0), (NCCL_COMM, 0)]
    assert (label(tr, NCCL_OP, 1), label(tr, NCCL_OP, 2)) == ("ncclAllReduce", "ncclBroadcast")
    assert label(tr, NCCL_REDOP, 1) == "ncclSum" and label(tr, NCCL_COMM, 1) == f"0x{COMM:016x}"
    # payload types never on compute kernels or CPU threads
    nccl_types = {
        NCCL_OP,
        NCCL_BYTES,
        NCCL_DTYPE,
        NCCL_REDOP,
        NCCL_ROOT,
        NCCL_COMM,
        NCCL_RANK,
        NCCL_NRANKS,
        NCCL_PEER,
        NCCL_DEV,
    }
    assert set(tr.events.loc[tr.events["type"].isin(nccl_types), "thread"]) == {S20}
    assert s["categories"]["nccl_payloads"] == {
        "source_rows": 2,
        "translated_rows": 2,
        "event_records": 4,
        "dropped": {},
        "notes": {},
    }
    # the init range's unknown field is counted; the ranges themselves stay on the CPU (type 9500)
    assert s["categories"]["nccl"]["notes"] == {"NCCL payload field without a Paraver type: Color": 1}
    assert begins(tr, NCCL_RANGE).to_dict() == {"ncclAllReduce": 1, "ncclBroadcast": 1, "ncclCommInitRank": 1}


@pytest.mark.parametrize("schema", SCHEMAS)
def test_gpu_metric_samples(traces, schema):
    _, s, tr = traces[schema]
    assert tr.pcf.types[METRIC_SM]["label"] == f"GPU metric: {SM}" and tr.pcf.types[METRIC_SM]["values"] is None
    assert tr.pcf.types[METRIC_DRAM]["label"] == f"GPU metric: {DRAM}"
    e = tr.events[tr.events["type"].isin([METRIC_SM, METRIC_DRAM])]
    got = sorted((int(r.thread), int(r.time), int(r.type), int(r.value)) for r in e.itertuples())
    gpu3 = [(100_000, 10, 0), (200_000, 50, 20), (400_000, 90, 0), (500_000, 30, 40), (800_000, 0, 0)]
    exp = sorted(
        [(GPU3_ROW, t, METRIC_SM, sm) for t, sm, _ in gpu3]
        + [(GPU3_ROW, t, METRIC_DRAM, d) for t, _, d in gpu3]
        + [(GPU1_ROW, t, METRIC_SM, v) for t, v in ((600_000, 20), (650_000, 60), (750_000, 0))]
    )
    assert got == exp
    assert s["categories"]["gpu_metrics"] == {
        "source_rows": 15,
        "translated_rows": 13,
        "event_records": 13,
        "dropped": {"negative or missing timestamp": 2},
        "notes": {"negative value clamped to 0": 1},
    }
    assert s["metric_rows"] == 2
    assert {(u["table"], u["reason"]) for u in s["untranslated"]} == {("NVTX_EVENTS", NVTX_NAMES)}


@pytest.mark.parametrize("schema", SCHEMAS)
def test_gpu_metrics_attributed_to_kernels_and_nvtx(traces, schema):
    """Time-weighted means, by hand (a sample holds until the next one of its GPU and metric):
    GPU3 SM: 10 @100k, 50 @200k, 90 @400k, 30 @500k, 0 @800k; DRAM: 0, 20, 0 (clamped), 40, 0.
    GPU1 SM: 20 @600k, 60 @650k, 0 @750k; no DRAM.  Device 0 is GPU 3, device 1 is GPU 1."""
    out, _, _ = traces[schema]
    csv = pd.read_csv(f"{out}.gpu_metrics.csv")
    assert list(csv.columns) == ["rank", "device", "kind", "name", "calls", "time_ns", DRAM, SM]
    got = {
        (r.device, r.kind, r.name): (r.calls, r.time_ns, getattr(r, "_7"), getattr(r, "_8")) for r in csv.itertuples()
    }
    nan = float("nan")
    exp = {
        # stencil on GPU3 [420k, 520k]: SM (90*80k + 30*20k)/100k; DRAM (0*80k + 40*20k)/100k
        (3, "kernel", "stencil"): (1, 100_000, 8.0, 78.0),
        # stencil on GPU1 [620k, 700k]: SM (20*30k + 60*50k)/80k
        (1, "kernel", "stencil"): (1, 80_000, nan, 45.0),
        (3, "kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"): (1, 70_000, 0.0, 10.0),  # [130k,200k]
        (3, "kernel", "ncclKernel_Broadcast_RING_LL_Sum_int8"): (1, 60_000, 20.0, 50.0),  # [320k,380k]
        (3, "kernel", "graphkernel"): (1, 15_000, 40.0, 30.0),  # [775k,790k]
        # NVTX "solve" [390k, 600k] on both GPUs of its process.  GPU3: SM (50*10k + 90*100k + 30*100k)/210k,
        # DRAM (20*10k + 0*100k + 40*100k)/210k; GPU1: no sample covers it (samples start at 600k)
        (3, "nvtx", "solve"): (1, 210_000, 4.2e6 / 210_000, 12.5e6 / 210_000),
        (1, "nvtx", "solve"): (1, 210_000, nan, nan),
    }
    assert set(got) == set(exp)
    for k, (calls, t, dram, sm) in exp.items():
        g = got[k]
        assert g[:2] == (calls, t), k
        np.testing.assert_allclose([g[2], g[3]], [dram, sm], rtol=1e-5, err_msg=str(k))
    assert set(csv["rank"]) == {0}


@pytest.mark.parametrize("schema", SCHEMAS)
def test_nvtx_ranges_projected_onto_gpu_activity(traces, schema):
    _, s, tr = traces[schema]
    iv = intervals(tr, NVTX_GPU)
    assert [(int(r.thread), int(r.start), int(r.end), r.label) for r in iv.itertuples()] == [
        (S7, 420_000, 520_000, "solve"),
        (S7, 545_000, 560_000, "solve"),
    ]
    assert tr.pcf.types[NVTX_GPU]["label"] == "NVTX on GPU: default domain"
    assert s["categories"]["nvtx_on_gpu"]["translated_rows"] == 2


@pytest.mark.parametrize("schema", SCHEMAS)
def test_cuda_graphs(traces, schema):
    _, s, tr = traces[schema]
    # node-level: the kernel carries its graph node id; node creation on the CPU with the node id
    assert ev(tr, S7, 775_000)[-1] == (GRAPH_NODE, 77)
    assert ev(tr, 1, 690_000) == [(GRAPH_API, label_id(tr, GRAPH_API, "cudaGraphAddKernelNode")), (GRAPH_NODE, 77)]
    if schema in NEW_GRAPHS:
        assert ev(tr, S7, 715_000) == [(GRAPH_EXEC, 1), (CORR, 15), (GRAPH_ID, 1), (GRAPH_EXEC_ID, 2)]
        assert label(tr, GRAPH_EXEC, 1) == "graph 1"
        assert ev(tr, 1, 700_000) == [
            (GRAPH_API, label_id(tr, GRAPH_API, "cudaGraphInstantiate")),
            (GRAPH_ID, 1),
            (GRAPH_EXEC_ID, 2),
        ]
        st = tr.states[(tr.states["thread"] == S7) & (tr.states["begin"] == 715_000)]
        assert [tuple(map(int, r)) for r in st[["end", "state"]].to_numpy()] == [(760_000, RUNNING)]
        link = tr.comms[(tr.comms["log_send"] == 710_000)]
        got = [tuple(map(int, r)) for r in link[["rthread", "log_recv", "tag"]].to_numpy()]
        assert got == [(S7, 715_000, TAG_LAUNCH)]
        assert s["categories"]["graph_exec"]["translated_rows"] == 1
        assert s["categories"]["graph_api"]["translated_rows"] == 2
    else:
        assert GRAPH_EXEC not in set(tr.events["type"]) and s["categories"]["graph_api"]["translated_rows"] == 1


def label_id(tr, type_id: int, name: str) -> int:
    return {v: k for k, v in tr.pcf.types[type_id]["values"].items()}[name]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_openacc_events(traces, schema):
    _, s, tr = traces[schema]
    f = lambda name: label_id(tr, ACC_FUNC, name)  # noqa: E731
    assert ev(tr, 2, 800_000) == [(ACC_OTHER, 1), (ACC_FUNC, f("compute@main.f90:48")), (ACC_REGION, 9)]
    assert ev(tr, 2, 805_000) == [
        (ACC_DATA, 1),
        (ACC_FUNC, f("compute@main.f90:42")),
        (ACC_REGION, 5),
        (ACC_SIZE, 8192),
    ]
    assert ev(tr, 2, 820_000) == [(ACC_LAUNCH, 1), (ACC_FUNC, f("compute@main.f90:50")), (ACC_REGION, 4)]
    assert (label(tr, ACC_OTHER, 1), label(tr, ACC_DATA, 1), label(tr, ACC_LAUNCH, 1)) == (
        "acc_compute_construct",
        "acc_enqueue_upload",
        "acc_enqueue_launch",
    )
    assert (label(tr, ACC_REGION, 9), label(tr, ACC_REGION, 5)) == ("Compute construct", "Enqueue upload")
    assert s["categories"]["openacc"]["translated_rows"] == 3


@pytest.mark.parametrize("schema", ["3.0.0", "3.22"])
def test_categories_not_requested_are_listed_untranslated(tmp_path, schema):
    out, s = run(tmp_path, schema, "cuda_api_trace,nvtx")
    validate_trace(str(out))
    tables = {(u["table"], u["reason"]): u["rows"] for u in s["untranslated"]}
    why = "category not requested with -t (add -t {})".format
    # one JSON row per sample instant (incl. the negative one) vs one row per metric and sample
    metrics = ("GPU_METRICS", 2 + 13) if schema == "3.22" else ("GENERIC_EVENTS", 1 + 5 + 3)
    exp = {
        (metrics[0], why("gpu_metrics")): metrics[1],
        ("CUPTI_ACTIVITY_KIND_OPENACC_DATA", why("openacc")): 1,
        ("CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH", why("openacc")): 1,
        ("CUPTI_ACTIVITY_KIND_OPENACC_OTHER", why("openacc")): 1,
        ("CUDA_GRAPH_EVENTS", why("graphs")): 1,  # 3.22: graph-level (instantiate); 3.0.0: the node event
        # the NCCL ranges (-t nccl not given) and the NVTX domain name (plus the rank's thread name: 3.0.0)
        ("NVTX_EVENTS", why("nccl")): 3,
        ("NVTX_EVENTS", NVTX_NAMES): 1 if schema == "3.22" else 2,
    }
    if schema == "3.22":
        exp.update(
            {("CUDA_GRAPH_NODE_EVENTS", why("graphs")): 1, ("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", why("graphs")): 1}
        )
    assert tables == exp
    assert not Path(f"{out}.gpu_metrics.csv").exists()
    # without -t gpu_metrics the GPU rows carry no samples: only the activity of the process's two GPUs
    tr = validate_trace(str(out))
    assert [label for label in tr.row["THREAD"] if label.startswith("Metrics")] == ["Metrics GPU1", "Metrics GPU3"]
    types = set(tr.events["type"])
    assert GPU_ACTIVITY in types and not any(METRIC_DRAM <= t < METRIC_DRAM + 100 for t in types)
    # without -t nccl the NCCL kernels are still NCCL kernels, but carry no payload
    assert begins(tr, NCCL_KERNEL).sum() == 2 and NCCL_OP not in set(tr.events["type"])


# ---------------------------------------------------------------------------------------------------
# The real CloverLeaf export with some kernels renamed to NCCL names (on a copy).
RENAMED = 2


@pytest.fixture
def clover_nccl(tmp_path, clover_export):
    d = tmp_path
    src = d / "clover.sqlite"
    shutil.copyfile(clover_export, src)
    with sqlite3.connect(src) as con:
        ids = [
            r[0]
            for r in con.execute(
                "SELECT shortName FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY shortName ORDER BY count(*), shortName "
                f"LIMIT {RENAMED}"
            )
        ]
        con.executemany("UPDATE StringIds SET value = 'ncclDevKernel_' || value WHERE id = ?", [(i,) for i in ids])
        kernels = pd.read_sql_query(
            "SELECT s.value AS name, k.start, k.end FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds s ON s.id = k.shortName",
            con,
        )
    trace, summary = convert_valid([src], d / "trace")
    return trace, summary, kernels, clover_export == CLOVERLEAF


def test_cloverleaf_renamed_kernels_are_nccl_kernels(clover_nccl):
    trace, summary, src, real = clover_nccl
    is_nccl = src["name"].str.startswith("ncclDevKernel_")
    nccl_src = src[is_nccl].groupby("name").size().sort_index()
    assert len(nccl_src) == RENAMED
    assert begins(trace, NCCL_KERNEL).to_dict() == nccl_src.to_dict()
    assert not [lab for lab in trace.pcf.types[KERNEL]["values"].values() if lab.startswith("nccl")]
    # the rest: conservation per name with exact total time, under the compute kernel type
    iv = intervals(trace, KERNEL)
    got = iv.assign(dur=iv["end"] - iv["start"]).groupby("label").agg(n=("dur", "size"), total=("dur", "sum"))
    rest = (
        src[~is_nccl].assign(dur=src["end"] - src["start"]).groupby("name").agg(n=("dur", "size"), total=("dur", "sum"))
    )
    assert got.sort_index().to_dict() == rest.sort_index().to_dict()
    assert int(rest["n"].sum()) + int(nccl_src.sum()) == len(src) == (1312 if real else 120)
    # stream states: Group Communication exactly during the NCCL kernels, Running during the others
    stream = f"CUDA-D{3 if real else 0}.S7-nid008553"  # (the real export's CUDA device 0 is GPU 3)
    st = trace.states[trace.states["thread"] == trace.row["THREAD"].index(stream) + 1]
    dur = lambda s: int((st[st["state"] == s]["end"] - st[st["state"] == s]["begin"]).sum())  # noqa: E731
    assert dur(GROUP_COMM) == int((src[is_nccl]["end"] - src[is_nccl]["start"]).sum())
    assert dur(RUNNING) == int(rest["total"].sum())
    cats = summary["categories"]
    assert cats["nccl_kernels"]["source_rows"] == cats["nccl_kernels"]["translated_rows"] == int(nccl_src.sum())
    assert cats["kernels"]["source_rows"] == cats["kernels"]["translated_rows"] == len(src) - int(nccl_src.sum())


def test_gpu_of_maps_pid_and_ordinal_then_any_process_then_keeps_the_ordinal():
    import numpy as np
    import pandas as pd

    from nsys2prv.nsys.devices import gpu_of

    devmap = pd.DataFrame({"pid": [10, 10, -1, -1, -1], "device": [0, 1, 0, 2, 2], "gpu": [5, 6, 7, 8, 9]})
    pid = np.array([10, 10, 11, 11, 12, 10, 11])
    dev = np.array([0, 1, 0, 2, 3, 2, 0])
    # exact (pid, device); else the any-process row of the device (first one); else the ordinal itself
    assert gpu_of(devmap, pid, dev).tolist() == [5, 6, 7, 8, 3, 8, 7]
    assert gpu_of(devmap, np.zeros(0, np.int64), np.zeros(0, np.int64)).tolist() == []
    empty = pd.DataFrame({c: np.zeros(0, np.int64) for c in ("pid", "device", "gpu")})
    assert gpu_of(empty, pid, dev).tolist() == dev.tolist()


@pytest.mark.parametrize("batch_rows", [None, 1])
def test_stage_a_caches_each_gpu_activity_with_its_gpu_id(tmp_path, monkeypatch, batch_rows):
    """Stage A gives every GPU activity the GPU it ran on once, column ``gpu`` cached with its table
    (read whole, or a batch of rows at a time): ``gpu_of`` of its process and CUDA ordinal in the
    report's device map, here GPU 3 for ordinal 0 and GPU 1 for ordinal 1 (POP and the GPU metrics
    attribution read the column)."""
    from nsys2prv import kinds as K
    from nsys2prv.nsys.cache import TableCache
    from nsys2prv.nsys.database import Report
    from nsys2prv.nsys.devices import device_map, gpu_of
    from nsys2prv.nsys.ids import pid_of
    from nsys2prv.pipeline import stages

    b = NsysBuilder(tmp_path / "rank0.sqlite", schema=NEW_GRAPHS[-1], host="gpuhost")
    b.gpu_id_of_device.update(GPU_OF_DEVICE)
    b.process(PID, "./app")
    for i, (dev, t) in enumerate([(0, 100), (1, 200), (0, 300), (1, 400), (0, 500)]):
        b.kernel(PID, dev, 7, t, t + 50, i, "k")
    b.memcpy(PID, 1, 7, 600, 650, 10, 64, copy_kind=1)
    b.memset(PID, 0, 7, 700, 750, 11, 64)
    b.graph_trace(PID, 0, 7, 800, 850, 12, graph_id=1, exec_id=2)
    src = b.save()
    batched = []
    real = stages._read_batched
    monkeypatch.setattr(
        stages, "_read_batched", lambda report, kind, *a: batched.append(kind) or real(report, kind, *a)
    )
    if batch_rows:
        monkeypatch.setattr(stages, "BATCH_ROWS", batch_rows)
    gpu_kinds = K.side_kinds(K.GPU)
    assert gpu_kinds == ("kernels", "memcpy", "memset", "graph_exec")
    stages.scan_report(
        stages.Source(0, stages.ReportFile(str(src), str(tmp_path / "c"), None, False), stages.Reading(gpu_kinds))
    )
    assert batched == (["kernels"] if batch_rows else [])  # (5 rows > 2 batches of 1; the others: whole)
    report = Report(src, 0)
    try:
        devmap = device_map(report)
    finally:
        report.close()
    cache = TableCache(tmp_path / "c", src)
    got = {k: cache.table(k) for k in gpu_kinds}
    assert {k: df["gpu"].tolist() for k, df in got.items()} == {
        "kernels": [3, 1, 3, 1, 3],
        "memcpy": [1],
        "memset": [3],
        "graph_exec": [3],
    }
    for df in got.values():
        assert df["gpu"].dtype == np.int64
        assert (
            df["gpu"].to_numpy()
            == gpu_of(devmap, pid_of(df["gpid"].to_numpy(np.int64)), df["device"].to_numpy(np.int64))
        ).all()
