"""Edges of the readers that a mutation run found untested (scripts/mutation_test.py, group readers):
every launch parameter of a kernel reaches the trace; a GPU metric sample at session time 0 is a sample
(only negative or missing timestamps are dropped, and counted); an NVTX row with text in a numeric
column is dropped and counted; both profiling markers of OSRT_API (classes 31 and 32) are not calls."""

from __future__ import annotations

import sqlite3

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
