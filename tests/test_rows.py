"""Issue 14 "Every row accounted for, on exports from every Nsight Systems version" (and issue 15
item 1): GPU activities that overlap on one stream, the fate of every table's rows, ``-t all``,
lazy ``--stats`` exports, unified-memory migrations, NCCL ranges in an unnamed domain, the host
name, and missing columns / unresolvable names (``--strict``).

Every export is generated (tests/nsysgen.py) and every trace validated strictly; counts and times
are exact.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from nsysgen import NsysBuilder
from paraver_validator import validate_trace
from trace_tools import intervals

from nsys2prv.cli import main
from nsys2prv.translate.context import OVERLAP_NOTE

PID = 6000
MAIN = PID
# Paraver ids written out on purpose (registry.py)
KERNEL, MEMOP, CORR = 63000006, 63000001, 9200
RUNNING, IDLE, MEMXFER = 1, 0, 17
TAG_LAUNCH, TAG_MEMOP = 55001, 55002


def run(args: list, expect: int = 0) -> tuple[int, str]:
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exit_code == expect, res.output + repr(res.exception)
    return res.exit_code, res.output


def convert(src, out: Path, *opts) -> tuple[object, dict]:
    run(["-q", *opts, *([src] if isinstance(src, (str, Path)) else src), out])
    return validate_trace(str(out)), json.loads(Path(f"{out}.summary.json").read_text())


# ---------------------------------------------------------------------------------------------------
# 1. GPU activities overlapping on one stream
def overlap_export(path: Path) -> Path:
    """Stream 7: k_first [100 000, 130 000); k_second starts 12 442 ns before k_first ends and runs
    43 136 ns (as in a real nsys 2026.2 export); k_third starts while both run; a copy and k_after
    come after all of them (back on the stream's first row).  Stream 9: no overlap."""
    b = NsysBuilder(path, schema="3.13.2", host="gpunode")
    b.process(PID, "./overlap")
    for corr, (start, end) in enumerate([(90_000, 91_000), (92_000, 93_000), (94_000, 95_000),
                                         (96_000, 97_000), (98_000, 99_000), (99_000, 99_500)], start=1):
        b.cuda_api(PID, MAIN, "cudaLaunchKernel_v7000" if corr != 4 else "cudaMemcpyAsync_v3020", start, end, corr)
    b.kernel(PID, 0, 7, 100_000, 130_000, 1, "k_first")
    b.kernel(PID, 0, 7, 117_558, 160_694, 2, "k_second")
    b.kernel(PID, 0, 7, 120_000, 125_000, 3, "k_third")
    b.memcpy(PID, 0, 7, 170_000, 180_000, 4, 4096, copy_kind=1)
    b.kernel(PID, 0, 7, 190_000, 200_000, 5, "k_after")
    b.kernel(PID, 0, 9, 100_000, 150_000, 6, "k_other")
    return b.save()


@pytest.fixture(scope="module")
def overlap(tmp_path_factory):
    d = tmp_path_factory.mktemp("overlap")
    return convert(overlap_export(d / "rank0.sqlite"), d / "trace", "-t", "cuda_api")


def test_overlapping_kernels_get_extra_rows_of_their_stream(overlap):
    tr, s = overlap
    assert tr.row["THREAD"] == ["Process 6000 main (6000)", "Process 6000 CUDA-D0.S7", "Process 6000 CUDA-D0.S7-2",
                                "Process 6000 CUDA-D0.S7-3", "Process 6000 CUDA-D0.S9"]
    S7, S7_2, S7_3, S9 = 2, 3, 4, 5
    k = intervals(tr, KERNEL)
    assert sorted(zip(k["label"], k["thread"], k["start"], k["end"])) == [
        ("k_after", S7, 190_000, 200_000), ("k_first", S7, 100_000, 130_000),
        ("k_other", S9, 100_000, 150_000), ("k_second", S7_2, 117_558, 160_694),
        ("k_third", S7_3, 120_000, 125_000)]
    # per-name kernel time is exact whatever the overlap
    assert (k["end"] - k["start"]).groupby(k["label"]).sum().to_dict() == {
        "k_after": 10_000, "k_first": 30_000, "k_other": 50_000, "k_second": 43_136, "k_third": 5_000}
    # the copy is back on the first row; every row is Running exactly during its kernels
    m = intervals(tr, MEMOP)
    assert list(zip(m["thread"], m["start"], m["end"])) == [(S7, 170_000, 180_000)]
    st = tr.states[(tr.states["state"] != IDLE) & (tr.states["thread"] >= S7)]
    assert sorted(map(tuple, st[["thread", "begin", "end", "state"]].astype(int).to_numpy().tolist())) == [
        (S7, 100_000, 130_000, RUNNING), (S7, 170_000, 180_000, MEMXFER), (S7, 190_000, 200_000, RUNNING),
        (S7_2, 117_558, 160_694, RUNNING), (S7_3, 120_000, 125_000, RUNNING), (S9, 100_000, 150_000, RUNNING)]
    # launch communications arrive on the row that holds the activity
    c = tr.comms[tr.comms["tag"].isin([TAG_LAUNCH, TAG_MEMOP])]
    assert sorted(zip(c["rthread"], c["phys_recv"])) == [
        (S7, 100_000), (S7, 170_000), (S7, 190_000), (S7_2, 117_558), (S7_3, 120_000), (S9, 100_000)]


def test_overlaps_are_counted_in_the_summary(overlap):
    _, s = overlap
    assert (s["streams"], s["overlap_rows"]) == (2, 2)
    assert s["categories"]["kernels"]["notes"] == {OVERLAP_NOTE: 2}
    assert s["categories"]["kernels"]["translated_rows"] == 5
    assert s["categories"]["memcpy"]["notes"] == {}


def test_no_overlap_no_extra_row(tmp_path):
    b = NsysBuilder(tmp_path / "r.sqlite", schema="3.13.2")
    b.process(PID, "./app")
    b.kernel(PID, 0, 7, 100_000, 130_000, 1, "a")
    b.kernel(PID, 0, 7, 130_000, 140_000, 2, "b")      # starts exactly when a ends: same row
    tr, s = convert(b.save(), tmp_path / "t")
    assert tr.row["THREAD"] == ["Process 6000 CUDA-D0.S7"]
    assert (s["streams"], s["overlap_rows"]) == (1, 0) and s["categories"]["kernels"]["notes"] == {}


def test_overlap_lanes_survive_the_nvtx_window(tmp_path):
    """-f clips after the lanes are numbered on the whole report: stage A and C agree."""
    b = NsysBuilder(tmp_path / "r.sqlite", schema="3.13.2")
    b.process(PID, "./app")
    b.nvtx_push(PID, MAIN, 150_000, 400_000, text="window")
    b.kernel(PID, 0, 7, 100_000, 200_000, 1, "early")
    b.kernel(PID, 0, 7, 180_000, 300_000, 2, "late")
    tr, _ = convert(b.save(), tmp_path / "t", "-f", "window")
    k = intervals(tr, KERNEL)
    assert sorted(zip(k["label"], k["thread"], k["start"], k["end"])) == [("early", 2, 0, 50_000),
                                                                         ("late", 3, 30_000, 150_000)]
