"""Edges of the readers that a mutation run found untested (scripts/mutation_test.py, group readers):
every launch parameter of a kernel reaches the trace; a GPU metric sample at session time 0 is a sample
(only negative or missing timestamps are dropped, and counted); an NVTX row with text in a numeric
column is dropped and counted; both profiling markers of OSRT_API (classes 31 and 32) are not calls."""

from __future__ import annotations

import json
import sqlite3
import struct

import pytest
from conftest import convert_valid
from nsysgen import NsysBuilder

PID = 5000
SM = "SMs Active [Throughput %]"


def test_every_launch_parameter_of_a_kernel_is_in_the_trace(tmp_path):
    b = NsysBuilder(tmp_path / "k.sqlite", schema="3.22")
    b.process(PID, "./app")
    b.cuda_api(PID, PID, "cudaLaunchKernel_v7000", 1_000, 2_000, 1)
    b.kernel(
        PID, 0, 7, 3_000, 9_000, 1, "stencil", grid=(64, 2, 3), block=(128, 4, 1),
        registers=40, static_smem=1024, dynamic_smem=2048, local_mem=16,
    )  # fmt: skip
    trace, _ = convert_valid([b.save()], tmp_path / "t")
    ev = trace.events[(trace.events["type"] >= 9101) & (trace.events["type"] <= 9110)]
    begin = ev[ev["value"] != 0].sort_values("type")
    assert list(zip(begin["type"], begin["value"], begin["time"] - begin["time"].min())) == [
        (9101, 64, 0),  # grid x, y, z
        (9102, 2, 0),
        (9103, 3, 0),
        (9104, 128, 0),  # block x, y, z
        (9105, 4, 0),
        (9106, 1, 0),
        (9107, 1024, 0),  # static shared memory
        (9108, 2048, 0),  # dynamic shared memory
        (9109, 16, 0),  # local memory per thread
        (9110, 40, 0),  # registers per thread
    ]
    assert (ev["value"] == 0).sum() == 10  # each back to 0 at the kernel's end


@pytest.mark.parametrize("schema", ["3.13.2", "3.22"])
def test_a_gpu_metric_sample_at_time_0_is_kept_and_a_negative_one_dropped(tmp_path, schema):
    b = NsysBuilder(tmp_path / "m.sqlite", schema=schema)
    b.process(PID, "./app")
    b.cuda_api(PID, PID, "cudaLaunchKernel_v7000", 1_000, 2_000, 1)
    b.kernel(PID, 0, 7, 3_000, 9_000, 1, "stencil")
    for ts, v in ((0, 10), (4_000, 20), (8_000, 30), (12_000, 40)):
        b.gpu_metric_sample(0, ts, {SM: v})
    path = b.save()
    table, column = ("GPU_METRICS", "timestamp") if schema == "3.22" else ("GENERIC_EVENTS", "timestamp")
    with sqlite3.connect(path) as con:  # the last sample gets a negative time (a damaged export)
        assert con.execute(f"UPDATE {table} SET {column} = -5 WHERE {column} = 12000").rowcount == 1
    trace, summary = convert_valid([path], tmp_path / "t")
    cat = summary["categories"]["gpu_metrics"]
    assert (cat["source_rows"], cat["translated_rows"]) == (4, 3)
    assert cat["dropped"] == {"negative or missing timestamp": 1}
    metric = trace.events[trace.events["type"] == 9400]
    assert sorted(metric["value"]) == [10, 20, 30]


def test_an_nvtx_row_with_text_in_a_numeric_column_is_dropped_and_counted(tmp_path):
    b = NsysBuilder(tmp_path / "n.sqlite", schema="3.22")
    b.process(PID, "./app")
    for k in range(3):
        b.nvtx_push(PID, PID, 1_000 + 10_000 * k, 5_000 + 10_000 * k, text=f"step {k}")
    path = b.save()
    with sqlite3.connect(path) as con:  # a damaged export: text where a time belongs
        assert con.execute("UPDATE NVTX_EVENTS SET start = 'x' WHERE text = 'step 1'").rowcount == 1
    trace, summary = convert_valid(["-t", "nvtx", path], tmp_path / "t")
    cat = summary["categories"]["nvtx"]
    assert (cat["source_rows"], cat["translated_rows"], sum(cat["dropped"].values())) == (3, 2, 1), cat
    ranges = trace.events[(trace.events["type"] == 9600) & (trace.events["value"] != 0)]
    assert len(ranges) == 2


def test_profiling_started_and_finished_markers_are_not_os_runtime_calls(tmp_path):
    """OSRT_API rows of event classes 31 and 32 mark where OS runtime profiling started and finished."""
    b = NsysBuilder(tmp_path / "o.sqlite", schema="3.22")
    b.process(PID, "./app")
    b.osrt(PID, PID, "read", 1_000, 2_000)
    b.osrt(PID, PID, "OS runtime libraries profiling started", 500, 500, event_class=31)
    b.osrt(PID, PID, "OS runtime libraries profiling finished", 3_000, 3_000, event_class=32)
    b.osrt(PID, PID, "write", 4_000, 6_000)
    trace, summary = convert_valid(["-t", "osrt", b.save()], tmp_path / "t")
    cat = summary["categories"]["osrt"]
    assert (cat["source_rows"], cat["translated_rows"]) == (4, 2)
    assert cat["dropped"] == {"profiling started/finished markers (not calls)": 2}
    calls = trace.events[(trace.events["type"] == 66400000) & (trace.events["value"] != 0)]
    assert len(calls) == 2


def test_nvtx_nesting_levels_of_push_pop_ranges(tmp_path):
    """Push/pop ranges nested on a thread: the nesting level (type 9603, the default domain's) is
    the range's depth + 1 at its start and its parent's level at its end; another thread's ranges
    nest on their own.  Times from the outer range's start."""
    b = NsysBuilder(tmp_path / "d.sqlite", schema="3.22")
    b.process(PID, "./app")
    b.thread_name(PID, PID + 1, "worker")
    b.nvtx_push(PID, PID, 1_000, 10_000, text="outer")
    b.nvtx_push(PID, PID, 2_000, 5_000, text="inner")
    b.nvtx_push(PID, PID, 3_000, 4_000, text="innermost")
    b.nvtx_push(PID, PID, 6_000, 8_000, text="inner")
    b.nvtx_push(PID, PID + 1, 2_500, 3_500, text="alone")
    trace, _ = convert_valid(["-t", "nvtx", b.save()], tmp_path / "t")
    ev = trace.events
    d = ev[ev["type"] == 9603]
    origin = int(ev[ev["type"] == 9600]["time"].min())
    assert sorted(zip(d["thread"], d["time"] - origin, d["value"])) == [
        (1, 0, 1),
        (1, 1_000, 2),
        (1, 2_000, 3),
        (1, 3_000, 2),
        (1, 4_000, 1),
        (1, 5_000, 2),
        (1, 7_000, 1),
        (1, 9_000, 0),
        (2, 1_500, 1),
        (2, 2_500, 0),
    ]


def test_a_scheduling_row_without_a_thread_is_dropped_and_counted(tmp_path):
    """SCHED_EVENTS rows: the thread on CPU 2 from 1 us to 3 us, on CPU 3 from 5 us to 8 us; a row
    whose thread is NULL (a damaged export) between them is dropped and counted, the others give
    Extrae's Executing CPU (40000033: CPU + 1 at a sched-in, 0 at a sched-out) and the thread is
    Blocked (state 9) from 3 us to 5 us.  Times from the first sched-in."""
    b = NsysBuilder(tmp_path / "s.sqlite", schema="3.22")
    b.process(PID, "./app")
    for ts, cpu, sched_in in (
        (1_000, 2, True),
        (3_000, 2, False),
        (4_000, 7, True),
        (5_000, 3, True),
        (8_000, 3, False),
    ):
        b.sched(PID, PID, ts, cpu, sched_in)
    path = b.save()
    with sqlite3.connect(path) as con:
        assert con.execute("UPDATE SCHED_EVENTS SET globalTid = NULL WHERE start = 4000").rowcount == 1
    trace, summary = convert_valid(["-t", "sched", path], tmp_path / "t")
    cat = summary["categories"]["sched"]
    assert (cat["source_rows"], cat["translated_rows"]) == (5, 4)
    assert cat["dropped"] == {"scheduling event without a thread or a time": 1}
    ev = trace.events[trace.events["type"] == 40000033]
    origin = int(ev["time"].min())
    assert sorted(zip(ev["time"] - origin, ev["value"])) == [(0, 3), (2_000, 0), (4_000, 4), (7_000, 0)]
    st = trace.states[trace.states["state"] == 9]
    assert list(zip(st["begin"] - origin, st["end"] - origin)) == [(2_000, 4_000)]


def test_nccl_binary_payload_fields_of_every_integer_entry_type(tmp_path):
    """An NCCL range's binary payload (NVTX payload schema, 3.22) with fields of entry types INT64 (17),
    INT16 (13), USHORT (4), INT8 (11), UINT16 (14), SHORT (3) and UINT64 (18) at their offsets: each
    decoded and written on the NCCL kernel the range launched (9501-9510; ranks, roots and devices
    + 1, so that 0 keeps meaning "end"; the communicator as its first-seen index 1).  The run's only
    kernel is an NCCL kernel: the device load balance is not defined under the default --nccl-as, and
    the advice that compares both rules says so (it failed the conversion before)."""
    domain, schema, comm = 2, 0x1000001, 0xABCDEF0123456789
    b = NsysBuilder(tmp_path / "nccl.sqlite", schema="3.22")
    b.process(PID, "./app")
    b.nvtx_domain(PID, PID, domain, "NCCL", ts=1_000)
    entries = [
        ("Message size [bytes]", 17, 0),
        ("Root", 13, 8),
        ("Rank", 4, 10),
        ("No. of ranks", 11, 12),
        ("peer", 14, 14),
        ("CUDA device", 3, 16),
        ("NCCL communicator ID", 18, 24),
    ]
    b.nvtx_payload_schema(domain, schema, "NcclNvtxParamsAllReduce", entries, 32)
    payload = struct.pack("<qhHbxHh6xQ", 4096, 2, 1, 4, 3, 0, comm)
    blob = struct.pack("<QQQQ", domain, schema, len(payload), 32) + payload
    b.nvtx_push(PID, PID, 10_000, 50_000, registered="ncclAllReduce", domain_id=domain, binary=blob)
    b.cuda_api(PID, PID, "cudaLaunchKernel_v7000", 20_000, 25_000, 10)
    b.kernel(PID, 0, 20, 30_000, 40_000, 10, "ncclDevKernel_AllReduce_Sum_f32_RING_LL")
    trace, summary = convert_valid([b.save()], tmp_path / "t")
    ev = trace.events[trace.events["type"].between(9501, 9510) & (trace.events["value"] != 0)]
    assert sorted(zip(ev["type"], ev["value"])) == [
        (9501, 1),  # ncclAllReduce
        (9502, 4096),  # bytes
        (9505, 3),  # root 2
        (9506, 1),  # the communicator
        (9507, 2),  # rank 1
        (9508, 4),  # 4 ranks
        (9509, 4),  # peer 3
        (9510, 1),  # CUDA device 0
    ]
    assert trace.pcf.types[9506]["values"][1] == f"0x{comm:016x}"
    assert summary["categories"]["nccl_payloads"]["dropped"] == {}
    advice = {a["kind"]: a["message"] for a in json.loads((tmp_path / "t.pop.json").read_text())["advice"]}
    assert "(now LB n/a, CommE n/a)" in advice["nccl_rule"]


def test_an_osrt_backtrace_deeper_than_ten_levels(tmp_path):
    """An OS runtime call whose backtrace has 12 frames: levels 1-10 written as its callers (70000001-
    70000010, level k the frame at depth k - 1), the 2 frames deeper (depths 10 and 11) counted."""
    b = NsysBuilder(tmp_path / "o.sqlite", schema="3.13.2")
    b.process(PID, "./app")
    b.osrt(PID, PID, "read", 1_000, 2_000, frames=[(f"f{d}", "libapp.so") for d in range(12)])
    trace, summary = convert_valid(["-t", "osrt", b.save()], tmp_path / "t")
    ev = trace.events[trace.events["type"].between(70000001, 70000010) & (trace.events["value"] != 0)]
    labels = {t: trace.pcf.types[t]["values"][v].split(" [")[0] for t, v in zip(ev["type"], ev["value"])}
    assert labels == {70000000 + k: f"f{k - 1}" for k in range(1, 11)}
    assert summary["categories"]["osrt"]["notes"] == {
        "OS runtime call-stack frames deeper than caller level 10: not written": 2
    }


def test_a_negative_gpu_metric_value_is_clamped_and_counted_a_zero_is_not(tmp_path):
    """GPU metric values 0, -5 and 7: written 0, 0 and 7; only the negative one is noted as clamped."""
    b = NsysBuilder(tmp_path / "m.sqlite", schema="3.22")
    b.process(PID, "./app")
    b.cuda_api(PID, PID, "cudaLaunchKernel_v7000", 1_000, 2_000, 1)
    b.kernel(PID, 0, 7, 3_000, 9_000, 1, "stencil")
    for ts, v in ((2_000, 0), (4_000, -5), (8_000, 7)):
        b.gpu_metric_sample(0, ts, {SM: v})
    trace, summary = convert_valid([b.save()], tmp_path / "t")
    cat = summary["categories"]["gpu_metrics"]
    assert (cat["source_rows"], cat["translated_rows"], cat["dropped"]) == (3, 3, {})
    assert cat["notes"] == {"negative value clamped to 0": 1}
    metric = trace.events[trace.events["type"] == 9400].sort_values("time")
    assert metric["value"].tolist() == [0, 0, 7]


def test_an_openacc_data_event_without_bytes_has_no_data_size(tmp_path):
    """OpenACC data events: an upload of 4096 bytes and a create whose bytes are NULL; only the upload
    carries the data size (66300001), the create none (not a made-up size)."""
    b = NsysBuilder(tmp_path / "a.sqlite", schema="3.22")
    b.process(PID, "./app")
    b.openacc(PID, PID, "data", "acc_enqueue_upload", 1_000, 2_000, 5, "main.f90", "compute", 42, nbytes=4096, var="a")
    b.openacc(PID, PID, "data", "acc_create", 3_000, 4_000, 1, "main.f90", "compute", 43, var="b")
    trace, summary = convert_valid(["-t", "openacc", b.save()], tmp_path / "t")
    assert summary["categories"]["openacc"]["translated_rows"] == 2
    size = trace.events[trace.events["type"] == 66300001]
    assert size[size["value"] != 0]["value"].tolist() == [4096]
    assert len(trace.events[(trace.events["type"] == 66000001) & (trace.events["value"] != 0)]) == 2
