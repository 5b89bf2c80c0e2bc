"""The CPU side as it ran (-t sched,samples; issue 37), on our own programs profiled with Nsight
Systems 2023.4 (tests/data/cpu23, scripts/cpu_fixtures): sample shares per function as designed,
every scheduling row accounted, off-CPU time exactly the scheduler's, states adding up to each
thread's lifetime, MPI waits keeping their MPI state."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT, convert_valid, need

from nsys2prv.core import registry as R

CPU23 = ROOT / "tests" / "data" / "cpu23"


def source(path, sql: str) -> pd.DataFrame:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        return pd.read_sql_query(sql, con)


@pytest.fixture(scope="module")
def compute(tmp_path_factory):
    out = tmp_path_factory.mktemp("cpu23") / "compute"
    return convert_valid(["-t", "sched,samples", need(CPU23 / "compute.sqlite")], out)


@pytest.fixture(scope="module")
def threads(tmp_path_factory):
    out = tmp_path_factory.mktemp("cpu23") / "threads"
    return convert_valid(["-t", "cpu,osrt", need(CPU23 / "threads.sqlite")], out)


@pytest.fixture(scope="module")
def mpi(tmp_path_factory):
    out = tmp_path_factory.mktemp("cpu23") / "mpi"
    ranks = [need(CPU23 / f"mpi_rank{r}.sqlite") for r in range(2)]
    return convert_valid(["-t", "mpi,cpu", "-m", *ranks], out)


def sampled(trace, type_id: int) -> pd.Series:
    ev = trace.events[(trace.events["type"] == type_id) & (trace.events["value"] != 0)]
    return ev["value"].map(trace.pcf.types[type_id]["values"]).value_counts()


def test_sample_shares_as_designed(compute):
    trace, summary = compute
    leaf = sampled(trace, R.SAMPLED[0].id)
    src = source(
        CPU23 / "compute.sqlite",
        "SELECT s.value AS fn, count(*) AS n FROM SAMPLING_CALLCHAINS c JOIN StringIds s ON s.id = c.symbol "
        "WHERE c.stackDepth = 0 GROUP BY 1",
    ).set_index("fn")["n"]
    n_samples = int(source(CPU23 / "compute.sqlite", "SELECT count(*) AS n FROM COMPOSITE_EVENTS")["n"][0])
    assert (leaf["f [compute]"], leaf["g [compute]"]) == (src["f"], src["g"]) == (1045, 446)
    # one sample of the export is on an Nsight Systems thread: counted, not written
    c = summary["categories"]["samples"]
    assert (c["source_rows"], c["translated_rows"], c["dropped"]) == (
        n_samples,
        1495,
        {"on an Nsight Systems internal thread ([NSys*])": 1},
    )
    assert leaf.sum() == 1495 and n_samples == 1496
    assert abs(100 * leaf["f [compute]"] / leaf.sum() - 70) <= 2
    assert abs(100 * leaf["g [compute]"] / leaf.sum() - 30) <= 2


def test_sample_levels_share_one_numbering(compute):
    trace, _ = compute
    levels = [t for t in range(R.SAMPLED_LEVELS) if R.SAMPLED[t].id in trace.pcf.types]
    assert levels == [0, 1, 2, 3, 4]  # the .pcf declares the levels the samples reach (issue 36)
    values = {t: trace.pcf.types[R.SAMPLED[t].id]["values"] for t in levels}
    assert all(v == values[0] for v in values.values())
    assert "f [compute]" in values[0].values() and "[Unknown] @ 0x0" in values[0].values()
    callers = sampled(trace, R.SAMPLED[1].id)
    assert callers["__libc_start_call_main [libc.so.6]"] == 1492


def off_cpu_source(path) -> pd.DataFrame:
    """Per thread id: the off-CPU time (sched-out to the next sched-in) straight from the export."""
    df = source(
        path, "SELECT globalTid AS g, start, isSchedIn AS i FROM SCHED_EVENTS ORDER BY globalTid, start, isSchedIn"
    )
    g, t, i = (df[c].to_numpy(np.int64) for c in ("g", "start", "i"))
    gap = (i[:-1] == 0) & (i[1:] != 0) & (g[:-1] == g[1:])
    k = np.flatnonzero(gap)
    return pd.DataFrame({"tid": g[k] & 0xFFFFFF, "off": t[k + 1] - t[k]}).groupby("tid")["off"].sum()


def thread_tids(trace) -> list[int]:
    return [int(name.rsplit("(", 1)[1].rstrip(")")) for name in trace.row["THREAD"]]


def test_off_cpu_time_is_the_schedulers(threads):
    trace, summary = threads
    st = trace.states.assign(d=trace.states["end"] - trace.states["begin"])
    blocked = st[st["state"] == R.OFF_CPU_STATE].groupby("thread")["d"].sum()
    want = off_cpu_source(CPU23 / "threads.sqlite")
    tids = thread_tids(trace)
    assert len(tids) == 5
    for k, tid in enumerate(tids, start=1):
        assert blocked.get(k, 0) == want.get(tid, 0), tid
    c = summary["categories"]["sched"]
    n = int(source(CPU23 / "threads.sqlite", "SELECT count(*) AS n FROM SCHED_EVENTS")["n"][0])
    assert c["source_rows"] == n == 600
    assert c["translated_rows"] + sum(c["dropped"].values()) == n
    assert c["dropped"] == {"on an Nsight Systems internal thread ([NSys*])": 126}


def test_states_add_up_to_each_lifetime(threads):
    trace, _ = threads
    end = trace.header.end_time
    for k, seg in trace.states.groupby("thread"):
        seg = seg.sort_values("begin")
        assert seg["begin"].iloc[0] == 0 and seg["end"].iloc[-1] == end
        assert (seg["begin"].to_numpy()[1:] == seg["end"].to_numpy()[:-1]).all()  # gap-free
        alive = seg[seg["state"] != R.NOT_CREATED]
        life = alive["end"].max() - alive["begin"].min()
        assert (alive["end"] - alive["begin"]).sum() == life, k
        assert set(alive["state"]) <= {R.RUNNING, R.OFF_CPU_STATE}


def test_executing_cpu_events(threads):
    trace, _ = threads
    ev = trace.events[trace.events["type"] == R.EXECUTING_CPU.id]
    src = source(CPU23 / "threads.sqlite", "SELECT cpu, isSchedIn FROM SCHED_EVENTS")
    assert len(ev) == 474
    assert set(ev["value"]) <= {0, *(src["cpu"] + 1)}


def test_mpi_wait_keeps_its_state(mpi):
    trace, summary = mpi
    st = trace.states
    mpi_states = {s for s in st["state"].unique() if s not in (R.RUNNING, R.OFF_CPU_STATE, R.NOT_CREATED, R.IDLE)}
    assert mpi_states  # the MPI calls painted their states
    # no Blocked segment inside an MPI call: off-CPU time inside MPI_Recv shows the MPI state
    calls = trace.events[(trace.events["type"] == 50000001)]
    for (task, thread), ev in calls.sort_values("time").groupby(["task", "thread"]):
        begins = ev["time"].to_numpy()[ev["value"].to_numpy() != 0]
        ends = ev["time"].to_numpy()[ev["value"].to_numpy() == 0]
        b = st[(st["task"] == task) & (st["thread"] == thread) & (st["state"] == R.OFF_CPU_STATE)]
        for s, e in zip(begins, ends):
            assert not ((b["begin"] < e) & (b["end"] > s)).any()
    assert summary["categories"]["sched"]["translated_rows"] > 0


def test_without_the_categories_nothing_changes(tmp_path):
    """Without -t sched/samples the tables are listed as left out, and the trace has no sched or sample
    record (the states are today's: Running from first to last event)."""
    trace, summary = convert_valid(["-t", "osrt", need(CPU23 / "threads.sqlite")], tmp_path / "t")
    assert not trace.events["type"].isin([R.EXECUTING_CPU.id, *(t.id for t in R.SAMPLED.values())]).any()
    assert set(trace.states["state"]) <= {R.RUNNING, R.NOT_CREATED}
    fates = {t["table"]: t["fates"] for t in summary["tables"]}
    assert fates["SCHED_EVENTS"][0]["fate"] == "left out" and fates["SCHED_EVENTS"][0]["flag"] == "-t sched"
    assert "#" not in (tmp_path / "t.row").read_text()  # (the rule's comment: only with the scheduler's states)


def test_the_row_says_the_states_follow_the_scheduler(threads):
    """The .row's closing comment line (Paraver's reader skips '#' lines outside a block; BasicAnalysis
    reads the first line, the CPU count), and the names before it as they were."""
    from nsys2prv.paraver.row import scheduler_rule

    trace, _ = threads
    text = Path(trace.prv_path).with_suffix(".row").read_text()
    assert text.startswith("LEVEL CPU SIZE ") and text.endswith("\n\n" + scheduler_rule() + "\n")
    assert scheduler_rule() == (
        "# nsys2prv: CPU thread states from the scheduler (SCHED_EVENTS): Running only while on a CPU, "
        "Blocked (9) off it unless a call's own state covers the time; CPU threads without scheduling data: "
        "Running from their first to their last event"
    )
    assert len(trace.row["THREAD"]) == 5


def test_the_rows_rule_names_the_registrys_off_cpu_state(monkeypatch):
    """The .row's rule states the off-CPU state the registry defines (registry.OFF_CPU_STATE, its label
    in registry.STATES), not a number of its own: change the registry and the rule follows."""
    from nsys2prv.model.resources import Model
    from nsys2prv.paraver.row import render_row

    monkeypatch.setattr(R, "OFF_CPU_STATE", R.WAIT)
    monkeypatch.setitem(R.STATES, R.WAIT, "Waiting off CPU")
    text = render_row(Model([], [], [], {}), scheduler=True)
    assert text.endswith(
        "\n# nsys2prv: CPU thread states from the scheduler (SCHED_EVENTS): Running only while on a CPU, "
        "Waiting off CPU (8) off it unless a call's own state covers the time; CPU threads without scheduling "
        "data: Running from their first to their last event\n"
    )


def test_osrt_call_stacks_as_callers(threads):
    trace, summary = threads
    src = source(
        CPU23 / "threads.sqlite",
        "SELECT s.value AS fn, count(*) AS n FROM OSRT_API a JOIN OSRT_CALLCHAINS c ON c.id = a.callchainId "
        "JOIN StringIds s ON s.id = c.symbol WHERE c.stackDepth = 0 AND a.eventClass NOT IN (31, 32) GROUP BY 1",
    ).set_index("fn")["n"]
    got = sampled(trace, R.CALLER[1].id)
    got.index = [label.split(" [")[0] for label in got.index]
    assert got.sort_index().to_dict() == src.sort_index().to_dict()
    assert sum(src) == 75  # of the 80 calls translated, 5 were shorter than the backtrace threshold
    fates = {t["table"]: t["fates"] for t in summary["tables"]}
    assert fates["OSRT_CALLCHAINS"][0]["fate"] == "translated"


def test_sampled_functions_view_in_paramedir(compute, tmp_path):
    """The shipped view, run by Paraver's own paramedir, counts the export's samples per function."""
    paramedir = shutil.which("paramedir")
    if paramedir is None:
        pytest.skip(
            "paramedir is not on PATH (build Paraver's kernel from github.com/bsc-performance-tools/paraver-kernel)"
        )
    trace, _ = compute
    out = tmp_path / "sf.txt"
    cfg = ROOT / "nsys2prv" / "cfgs" / "views" / "sampled_functions.cfg"
    subprocess.run([paramedir, trace.prv_path, str(cfg), str(out)], check=True, capture_output=True)
    head, *rows = out.read_text().splitlines()
    cols = [c.strip() for c in head.split("\t")[1:]]
    total = next(r for r in rows if r.startswith("Total")).split("\t")[1:]
    counts = {c: float(v) for c, v in zip(cols, total) if c}
    assert (counts["f [compute]"], counts["g [compute]"]) == (1045, 446)
    assert sum(counts.values()) == 1495


def test_scheduler_states_view_is_generated_for_the_trace(tmp_path):
    """--cfgs on a trace with the scheduler's data adds a states view that says the rule (not shipped:
    other traces' views are unchanged); paramedir loads it."""
    out, views = tmp_path / "t", tmp_path / "views"
    convert_valid(["-t", "sched", "--cfgs", views, need(CPU23 / "threads.sqlite")], out)
    text = (views / "basics" / "states_from_the_scheduler.cfg").read_text()
    assert "Running only while" in text and str(R.EXECUTING_CPU.id) in text
    assert not (views / "views" / "sampled_functions.cfg").exists()  # no samples translated
    paramedir = shutil.which("paramedir")
    if paramedir is None:
        pytest.skip(
            "paramedir is not on PATH (build Paraver's kernel from github.com/bsc-performance-tools/paraver-kernel)"
        )
    res = subprocess.run(
        [paramedir, f"{out}.prv", str(views / "basics" / "states_from_the_scheduler.cfg"), str(tmp_path / "s.txt")],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0 and (tmp_path / "s.txt.csv").stat().st_size > 0, res.stdout + res.stderr


def test_samples_read_a_block_at_a_time_give_the_same_table(monkeypatch):
    """The call stacks read a block of samples at a time (bounded memory) give the table read at once."""
    from nsys2prv.nsys.database import Report
    from nsys2prv.nsys.readers import samples as S

    def table():
        r = Report(CPU23 / "threads.sqlite", 0)
        try:
            res = S.READER.read(r)
        finally:
            r.close()
        return res.table.astype({c: str for c in (*S.LEVEL_COLUMNS, S.KERNEL_COLUMN)}), res.notes, res.dropped

    whole = table()
    monkeypatch.setattr(S, "BLOCK", 7)
    blocks = table()
    pd.testing.assert_frame_equal(whole[0], blocks[0])
    assert whole[1:] == blocks[1:]
    assert len(whole[0]) == 270 and whole[0]["fn0"].notna().all()


@pytest.mark.parametrize("rows", [200, 60])
def test_sliced_conversion_writes_the_whole_reports_bytes(tmp_path, monkeypatch, rows):
    """A report converted a time slice at a time (off-CPU intervals and samples crossing the borders)
    gives the bytes of the whole conversion."""
    import json
    from pathlib import Path

    from nsys2prv.config import Config, parse_categories
    from nsys2prv.pipeline.conversion import convert

    def run(out, slice_rows):
        cfg = Config(
            inputs=[need(CPU23 / "threads.sqlite")],
            output=out,
            show_progress=False,
            jobs=1,
            slice_rows=slice_rows,
            categories=parse_categories("cpu,osrt"),
        )
        convert(cfg, log=lambda *a, **k: None)
        files = {ext: Path(f"{out}{ext}").read_text() for ext in (".prv", ".pcf", ".row")}
        summary = json.loads(Path(f"{out}.summary.json").read_text())
        return files, summary["categories"]

    from nsys2prv.pipeline import slices

    whole, whole_counts = run(tmp_path / "whole", 10**9)
    plans: list = []
    real = slices.plan
    monkeypatch.setattr(slices, "plan", lambda *a, **k: plans.append(real(*a, **k)) or plans[-1])
    sliced, sliced_counts = run(tmp_path / "sliced", rows)
    assert plans and plans[-1] is not None and plans[-1].slices >= 3
    assert sliced == whole
    assert sliced_counts["sched"] == whole_counts["sched"] and sliced_counts["samples"] == whole_counts["samples"]


def test_kernel_unresolved_and_artificial_frames(tmp_path):
    """Kernel-mode frames apart (the innermost one written), unresolved frames by module and address,
    nsys's artificial entries and the levels beyond the last counted; a sample without frames dropped."""
    from nsysgen import NsysBuilder

    b = NsysBuilder(tmp_path / "r.sqlite", schema="3.22", host="node1")
    pid = 4242
    b.process(pid, "./app")
    stack = [
        ("do_syscall_64", "[kernel.kallsyms]", "k"),
        ("entry_SYSCALL", "[kernel.kallsyms]", "k"),
        ("0x7f0000001234", "/path/to/libfoo.so", "u"),
        ("solve", "/path/to/app"),
        *[(f"level{k}", "/path/to/app") for k in range(2, 12)],
        ("[Broken backtraces]", "[Broken backtraces]", "s"),
    ]
    b.cpu_sample(pid, pid, 1_000, stack)
    b.cpu_sample(pid, pid, 2_000, [("solve", "/path/to/app")])
    b.cpu_sample(pid, pid, 3_000, [])
    b.osrt(pid, pid, "read", 500, 4_000)
    trace, summary = convert_valid(["-t", "samples,osrt", b.save()], tmp_path / "t")
    ev = trace.events
    label = {t: trace.pcf.types[t]["values"] for t in ev["type"].unique()}
    at = {
        (int(r.time), int(r.type)): label[r.type][r.value]
        for r in ev[ev["type"].isin([*(t.id for t in R.SAMPLED.values()), R.SAMPLED_KERNEL.id])].itertuples()
    }
    assert at[(at_time := min(t for t, _ in at), R.SAMPLED[0].id)] == "libfoo.so @ 0x7f0000001234"
    assert at[(at_time, R.SAMPLED[1].id)] == "solve [app]"
    assert at[(at_time, R.SAMPLED[9].id)] == "level9 [app]"
    assert at[(at_time, R.SAMPLED_KERNEL.id)] == "do_syscall_64 [[kernel.kallsyms]]"
    assert sum(1 for t, _ in at if t == at_time) == R.SAMPLED_LEVELS + 1
    c = summary["categories"]["samples"]
    assert (c["source_rows"], c["translated_rows"]) == (3, 2)
    assert c["dropped"] == {"CPU sample without a usable call-stack frame": 1}
    assert c["notes"] == {
        "artificial call-stack entries (added by nsys): not written": 1,
        "kernel-mode frames below the innermost: not written": 1,
        f"call-stack frames deeper than caller level {R.SAMPLED_LEVELS - 1}: not written": 2,
    }


def test_os_runtime_calls_read_in_batches_keep_their_call_stacks(tmp_path, monkeypatch):
    """Stage A reads OSRT_API a rowid range at a time, each batch with the call stacks of its calls:
    the trace and the summary are those of reading it whole."""
    from nsys2prv.pipeline import scan

    def run(name):
        out = tmp_path / name
        convert_valid(["-t", "osrt", "--cache-dir", tmp_path / f"cache-{name}", need(CPU23 / "threads.sqlite")], out)
        summary = json.loads((tmp_path / f"{name}.summary.json").read_text())
        return (tmp_path / f"{name}.prv").read_bytes(), summary["categories"]["osrt"]

    whole = run("whole")
    calls = []
    real = scan._read_batched
    monkeypatch.setattr(scan, "BATCH_ROWS", 20)
    monkeypatch.setattr(scan, "_read_batched", lambda *a, **k: calls.append(len(a[2])) or real(*a, **k))
    batched = run("batched")
    assert calls == [5]  # 83 rows, 20 a batch
    assert batched == whole


def test_sample_views_are_installed_only_with_samples():
    from nsys2prv.paraver import cfgs as C

    sampled = {"views/sampled_functions.cfg", "views/sampled_caller_level_1.cfg", "analysis/host_during_gpu_idle.cfg"}
    assert sampled <= set(C.selected({"samples"}))
    assert not sampled & set(C.selected({"kernels", "memcpy", "cuda_api", "osrt"}))


def test_samples_read_in_batches_of_rows(tmp_path, monkeypatch):
    """Stage A reads COMPOSITE_EVENTS a rowid range at a time, each batch with its samples' stacks
    (bounded memory): the trace and the counts are those of reading it whole."""
    from nsys2prv.pipeline import scan

    def run(name):
        out = tmp_path / name
        convert_valid(["-t", "samples", "--cache-dir", tmp_path / f"cache-{name}", need(CPU23 / "compute.sqlite")], out)
        summary = json.loads((tmp_path / f"{name}.summary.json").read_text())
        return (tmp_path / f"{name}.prv").read_bytes(), (tmp_path / f"{name}.pcf").read_bytes(), summary["categories"]

    whole = run("whole")
    calls = []
    real = scan._read_batched
    monkeypatch.setattr(scan, "BATCH_ROWS", 200)
    monkeypatch.setattr(scan, "_read_batched", lambda *a, **k: calls.append(len(a[2])) or real(*a, **k))
    batched = run("batched")
    assert calls == [8]  # 1,496 samples, 200 a batch
    assert batched == whole


def test_cuda_api_call_stacks_as_callers(tmp_path):
    """CUDA_CALLCHAINS (nsys profile --cudabacktrace) as Extrae's caller levels on the CUDA API calls,
    from the call's entry to its exit, as the OS runtime calls have them; a call without a stack has none."""
    from nsysgen import NsysBuilder

    b = NsysBuilder(tmp_path / "r.sqlite", schema="3.0.0", host="node1")
    pid = 4242
    b.process(pid, "./app")
    stack = [("cudaMalloc", "/usr/lib/libcudart.so.12"), ("0x7f00beef", "/path/libfoo.so", "u"), ("main", "/a/app")]
    b.cuda_api(pid, pid, "cudaMalloc_v3020", 1_000, 5_000, 1, stack=stack)
    b.cuda_api(pid, pid, "cudaFree_v3020", 6_000, 7_000, 2)
    b.cuda_api(pid, pid, "cudaMalloc_v3020", 8_000, 9_000, 3, stack=stack[:1])
    trace, summary = convert_valid(["-t", "cuda_api", b.save()], tmp_path / "t")
    ev = trace.events[trace.events["type"].isin([t.id for t in R.CALLER.values()])]
    t0 = trace.events[trace.events["type"] == R.CUDA_API.id]["time"].min()  # the first call's entry
    lab = {t: trace.pcf.types[t]["values"] for t in ev["type"].unique()}
    got = sorted((int(r.time - t0), int(r.type) - 70000000, lab[r.type][r.value]) for r in ev.itertuples())
    assert got == [
        (0, 1, "cudaMalloc [libcudart.so.12]"),
        (0, 2, "libfoo.so @ 0x7f00beef"),
        (0, 3, "main [app]"),
        (4_000, 1, "End"),
        (4_000, 2, "End"),
        (4_000, 3, "End"),
        (7_000, 1, "cudaMalloc [libcudart.so.12]"),
        (8_000, 1, "End"),
    ]
    fates = {t["table"]: t["fates"] for t in summary["tables"]}
    assert fates["CUDA_CALLCHAINS"][0]["fate"] == "translated"
    assert summary["categories"]["cuda_api"]["translated_rows"] == 3


def _on_and_off_cpu(b, pid: int) -> None:
    """Process ``pid`` (main thread) with two CUDA API calls, [1000, 3000] and [6000, 7000], on CPU
    [500, 2000], [4000, 4500], [5000, 6500] and [8000, 9000]."""
    b.process(pid, "./app")
    b.cuda_api(pid, pid, "cudaMalloc_v3020", 1_000, 3_000, 1)
    b.cuda_api(pid, pid, "cudaFree_v3020", 6_000, 7_000, 2)
    for t, cpu, sched_in in ((500, 0, True), (2_000, 0, False), (4_000, 1, True), (4_500, 1, False)):
        b.sched(pid, pid, t, cpu, sched_in)
    for t, cpu, sched_in in ((5_000, 0, True), (6_500, 0, False), (8_000, 0, True), (9_000, 0, False)):
        b.sched(pid, pid, t, cpu, sched_in)


def test_pop_useful_time_on_cpu(tmp_path):
    """OUT.pop.json's host.on_cpu: useful time minus the main thread's off-CPU time outside its calls,
    within its lifetime (metrics/on_cpu.py); another thread's off-CPU time does not count."""
    from nsysgen import NsysBuilder

    b = NsysBuilder(tmp_path / "r.sqlite", schema="3.22", host="node1")
    pid, other = 4242, 4243
    _on_and_off_cpu(b, pid)
    for t, sched_in in ((2_500, True), (3_000, False), (5_000, True)):
        b.sched(pid, other, t, 1, sched_in)
    out = tmp_path / "t"
    convert_valid([b.save()], out)
    host = json.loads((tmp_path / "t.pop.json").read_text())["host"]
    # alive 500..9000 (the process's first and last activity, its scheduling included); off CPU
    # [2000, 4000] (outside the calls: [3000, 4000]), [4500, 5000], [6500, 8000] (in cudaFree until
    # 7000): 2,500 ns outside the calls
    (label,) = host["useful_time_ns"]
    assert (host["alive_time_ns"][label], host["useful_time_ns"][label]) == (8_500, 8_500 - 3_000)
    assert host["on_cpu"] == {
        "useful_on_cpu_time_ns": {label: 3_000},
        "off_cpu_outside_calls_ns": {label: 2_500},
        "useful_on_cpu_time_total_ns": 3_000,
        "on_cpu_share_of_useful": 3_000 / 5_500,
        "on_cpu_parallel_efficiency": 3_000 / 8_500,
    }
    # -t chooses the trace, not the metrics: the same OUT.pop.json without the scheduler's states
    convert_valid(["-t", "no-cpu", tmp_path / "r.sqlite"], tmp_path / "n")
    same = [json.loads((tmp_path / f"{n}.pop.json").read_text()) for n in "nt"]
    assert same[0].pop("label") == "n" and same[1].pop("label") == "t" and same[0] == same[1]


def test_pop_on_cpu_names_a_process_without_scheduling_data(tmp_path):
    """A process whose main thread has no scheduling data is not taken as always on a CPU: its off-CPU
    time is unknown (null), its useful time is counted whole, and the block names it."""
    from nsysgen import NsysBuilder

    b = NsysBuilder(tmp_path / "r.sqlite", schema="3.22", host="node1")
    pid, bare = 4242, 5353
    b.process(pid, "./app")
    b.process(bare, "./other")
    b.cuda_api(pid, pid, "cudaMalloc_v3020", 1_000, 3_000, 1)
    b.cuda_api(pid, pid, "cudaFree_v3020", 6_000, 7_000, 2)
    for t, cpu, sched_in in ((500, 0, True), (2_000, 0, False), (4_000, 1, True), (9_000, 0, False)):
        b.sched(pid, pid, t, cpu, sched_in)
    b.cuda_api(bare, bare, "cudaMalloc_v3020", 500, 1_500, 3)
    b.cuda_api(bare, bare, "cudaFree_v3020", 8_000, 9_000, 4)
    convert_valid([b.save()], tmp_path / "t")
    host = json.loads((tmp_path / "t.pop.json").read_text())["host"]
    # both alive 500..9000 (8,500); 4242 off CPU [2000, 4000] of which [3000, 4000] outside its calls;
    # 5353: no scheduling data, its 6,500 ns of useful time counted whole
    assert host["useful_time_ns"] == {"Process 4242": 5_500, "Process 5353": 6_500}
    assert host["on_cpu"] == {
        "useful_on_cpu_time_ns": {"Process 4242": 4_500, "Process 5353": 6_500},
        "off_cpu_outside_calls_ns": {"Process 4242": 1_000, "Process 5353": None},
        "useful_on_cpu_time_total_ns": 11_000,
        "on_cpu_share_of_useful": 11_000 / 12_000,
        "on_cpu_parallel_efficiency": 11_000 / (2 * 8_500),
        "without_scheduling_data": ["Process 5353"],
    }


def off_cpu_outside_mpi(path) -> int:
    """The main thread's off-CPU time outside the process's MPI calls, from the export (a plain loop)."""
    s = source(
        path, "SELECT globalTid AS g, start, isSchedIn AS i FROM SCHED_EVENTS ORDER BY globalTid, start, isSchedIn"
    )
    g, t, i = (s[c].to_numpy(np.int64) for c in ("g", "start", "i"))
    calls = pd.concat(
        [
            source(path, f"SELECT globalTid AS g, start, end FROM {t} WHERE end > start")
            for t in ("MPI_P2P_EVENTS", "MPI_COLLECTIVES_EVENTS", "MPI_OTHER_EVENTS")
        ]
    )
    pid = int((calls["g"].to_numpy(np.int64)[0] >> 24) & 0xFFFFFF)
    calls = calls[((calls["g"].to_numpy(np.int64) >> 24) & 0xFFFFFF) == pid].sort_values("start")
    union: list[list[int]] = []
    for a, b in zip(calls["start"], calls["end"]):
        if union and a <= union[-1][1]:
            union[-1][1] = max(union[-1][1], b)
        else:
            union.append([a, b])
    main = (((g >> 24) & 0xFFFFFF) == pid) & ((g & 0xFFFFFF) == pid)
    k = np.flatnonzero((i[:-1] == 0) & (i[1:] != 0) & (g[:-1] == g[1:]) & main[:-1])
    total = 0
    for a, b in zip(t[k], t[k + 1]):
        total += int(b - a) - sum(max(0, min(b, y) - max(a, x)) for x, y in union)
    return total


def test_pop_on_cpu_of_an_mpi_rank_sliced_or_whole(tmp_path, monkeypatch):
    """The on-CPU block of a rank of the MPI fixture is the same converted whole or a time slice at a
    time (off-CPU intervals and calls crossing the slices' borders)."""
    from nsys2prv.config import Config
    from nsys2prv.pipeline import slices
    from nsys2prv.pipeline.conversion import convert

    def run(out, slice_rows):
        cfg = Config(
            inputs=[need(CPU23 / "mpi_rank1.sqlite")],
            output=out,
            show_progress=False,
            jobs=1,
            slice_rows=slice_rows,
        )
        convert(cfg, log=lambda *a, **k: None)
        return json.loads((out.parent / f"{out.name}.pop.json").read_text())["host"]

    whole = run(tmp_path / "whole", 10**9)
    plans: list = []
    real = slices.plan
    monkeypatch.setattr(slices, "plan", lambda *a, **k: plans.append(real(*a, **k)) or plans[-1])
    sliced = run(tmp_path / "sliced", 60)
    assert plans and all(p is not None and p.slices >= 3 for p in plans), [p and p.slices for p in plans]
    assert sliced["on_cpu"] == whole["on_cpu"]
    on = whole["on_cpu"]
    assert on["useful_on_cpu_time_total_ns"] == sum(on["useful_on_cpu_time_ns"].values()) > 0
    # straight from the export: the main thread's sched-out..sched-in time outside the process's MPI calls
    assert on["off_cpu_outside_calls_ns"] == {"Rank 1": off_cpu_outside_mpi(CPU23 / "mpi_rank1.sqlite")}
    assert on["off_cpu_outside_calls_ns"]["Rank 1"] == 148_783_809
    for rank, u in whole["useful_time_ns"].items():
        assert on["useful_on_cpu_time_ns"][rank] == u - on["off_cpu_outside_calls_ns"][rank]


def test_cuda_api_callers_sliced_or_whole(tmp_path, monkeypatch):
    """A report whose CUDA API calls have call stacks, converted a time slice at a time (the calls read
    again for their kernels' launch links), gives the bytes of the whole conversion."""
    from nsysgen import NsysBuilder

    from nsys2prv.config import Config, parse_categories
    from nsys2prv.pipeline import slices
    from nsys2prv.pipeline.conversion import convert

    b = NsysBuilder(tmp_path / "r.sqlite", schema="3.0.0", host="node1")
    pid = 4242
    b.process(pid, "./app")
    for i in range(120):
        t = 10_000 + 5_000 * i
        stack = [("cudaLaunchKernel", "/usr/lib/libcudart.so.12"), (f"step{i % 3}", "/a/app"), ("main", "/a/app")]
        b.cuda_api(pid, pid, "cudaLaunchKernel_v7000", t, t + 1_000, i + 1, stack=stack if i % 4 else None)
        b.kernel(pid, 0, 7, t + 1_500, t + 4_000, i + 1, f"k{i % 2}")
    src = b.save()

    def run(out, slice_rows):
        cfg = Config(
            inputs=[src],
            output=out,
            show_progress=False,
            jobs=1,
            slice_rows=slice_rows,
            categories=parse_categories(None),
        )
        convert(cfg, log=lambda *a, **k: None)
        return {ext: Path(f"{out}{ext}").read_text() for ext in (".prv", ".pcf", ".row")}

    whole = run(tmp_path / "whole", 10**9)
    plans: list = []
    real = slices.plan
    monkeypatch.setattr(slices, "plan", lambda *a, **k: plans.append(real(*a, **k)) or plans[-1])
    sliced = run(tmp_path / "sliced", 40)
    assert plans and plans[-1] is not None and plans[-1].slices >= 3
    assert sliced == whole
    # the 90 calls with a stack: level 3 at their entry (a value) and at their exit (0)
    assert len(re.findall(r":70000003:[1-9]", whole[".prv"])) == len(re.findall(r":70000003:0\b", whole[".prv"])) == 90


def test_on_cpu_durations_per_window():
    """metrics.on_cpu.durations: each process's off-CPU time outside its calls, per window (iterations)
    or over their union (trace, regions)."""
    from nsys2prv.metrics import on_cpu

    group = np.array([0, 0, 1, 1], np.int64)
    start = np.array([0, 50, 120, 150], np.int64)
    end = np.array([100, 70, 200, 160], np.int64)
    cls = np.array([on_cpu.OFF, on_cpu.CALL, on_cpu.OFF, on_cpu.CALL], np.int64)
    lo, hi = np.array([0, 100], np.int64), np.array([100, 200], np.int64)
    per = on_cpu.durations((group, start, end, cls), 2, lo, hi, per_window=True)
    assert per.tolist() == [[80, 0], [0, 70]]
    assert on_cpu.durations((group, start, end, cls), 2, lo, hi, per_window=False).tolist() == [[80, 70]]


@pytest.mark.parametrize("asked, made", [(1, 1_496), (1_496, 1_496), (1_497, 2_992), (5_000, 5_984)])
def test_many_samples_script_makes_whole_copies_of_the_fixture(tmp_path, asked, made):
    """scripts/make_many_samples.py (the 10M-sample benchmark's input): the fixture's 1,496 samples and as
    many shifted copies as reach the count asked for, no copy more."""
    src = need(CPU23 / "compute.sqlite")
    out = tmp_path / "s.sqlite"
    script = ROOT / "scripts" / "make_many_samples.py"
    subprocess.run([sys.executable, str(script), str(out), "--samples", str(asked)], check=True, capture_output=True)
    count = "SELECT count(*) FROM COMPOSITE_EVENTS"
    with sqlite3.connect(src) as a, sqlite3.connect(out) as b:
        assert a.execute(count).fetchone()[0] == 1_496
        assert b.execute(count).fetchone()[0] == made
        assert b.execute("SELECT count(DISTINCT id) FROM COMPOSITE_EVENTS").fetchone()[0] == made


def test_on_cpu_partials_in_files_measured_a_batch_of_reports_at_a_time(tmp_path, monkeypatch):
    """The reports' partials as their workers leave them (``on_cpu.spill``: a file each, the main
    process holding only its name; a report's time slices joined in slice order), measured a batch
    of reports at a time: the same durations as the intervals in memory, one sweep over the run."""
    from nsys2prv.metrics import on_cpu

    # report 0 (tasks 0, 1) in two time slices, report 1 (task 2) whole, report 2 (task 3: not a host process)
    slice0 = (
        np.array([0, 0, 1]),
        np.array([on_cpu.OFF, on_cpu.SEEN, on_cpu.SEEN]),
        np.array([0, 0, 0]),
        np.array([100, 0, 0]),
    )
    slice1 = (
        np.array([0, 1, 1]),
        np.array([on_cpu.CALL, on_cpu.OFF, on_cpu.CALL]),
        np.array([50, 120, 150]),
        np.array([70, 200, 160]),
    )
    rep1 = (np.array([2, 2]), np.array([on_cpu.OFF, on_cpu.OFF]), np.array([10, 300]), np.array([40, 900]))
    rep2 = (np.array([3, 3]), np.array([on_cpu.SEEN, on_cpu.OFF]), np.array([0, 0]), np.array([0, 50]))
    proc_index = np.array([0, 1, 2, -1, -1], np.int64)
    life = (np.array([0, 0, 0]), np.array([1_000, 1_000, 500]))
    arrays = [tuple(np.asarray(a, np.int64) for a in p) for p in (slice0, slice1, rep1, rep2)]
    files = [on_cpu.spill(p, str(tmp_path / f"p{i}.cpu.npy")) for i, p in enumerate(arrays)]
    assert [f.rows for f in files] == [3, 3, 2, 2] and all(Path(f.paths[0]).exists() for f in files)
    joined = on_cpu.join([files[0], None, files[1]])
    assert joined.paths == [files[0].paths[0], files[1].paths[0]] and joined.rows == 6
    in_memory = on_cpu.join([arrays[0], arrays[1]])
    lo, hi = np.array([0, 100], np.int64), np.array([100, 1_000], np.int64)
    want_per = [[80, 0, 30], [0, 70, 200]]  # (process 2: no scheduling data seen, yet its intervals count)
    got = on_cpu.gather([joined, files[2], files[3]], proc_index, life)
    assert got.covered.tolist() == [True, True, False]
    mem = on_cpu.gather([in_memory, arrays[2], arrays[3]], proc_index, life)
    for batch_rows in (1, 4, 1 << 18):
        monkeypatch.setattr(on_cpu.Intervals, "BATCH_ROWS", batch_rows)
        for g in (got, mem):
            per = on_cpu.durations(g, 3, lo, hi, per_window=True)
            assert per.tolist() == [[80, 0, on_cpu.NO_DATA], [0, 70, on_cpu.NO_DATA]]
            assert on_cpu.durations(g, 3, lo, hi, per_window=False).tolist() == [[80, 70, on_cpu.NO_DATA]]
    whole = on_cpu.durations(
        tuple(np.concatenate(x) for x in zip(*[b for b in got.batches()])) + (np.ones(3, bool),), 3, lo, hi, False
    )
    assert whole.tolist() == [[80, 70, 230]] and want_per[0][2] + want_per[1][2] == 230


def test_on_cpu_partials_reach_the_reduction_as_files(tmp_path, monkeypatch):
    """The main process holds each report's scheduling intervals as the name of the file its worker
    left in the work directory (``on_cpu.Spill``), not as the intervals (issue 40: ~140 KB per rank
    of a CloverLeaf 2024.5 export); the metrics are those of the intervals (``test_pop_useful_time_on_cpu``)."""
    from nsysgen import NsysBuilder

    from nsys2prv.metrics import on_cpu

    paths = []
    for r, host in enumerate(("node1", "node2")):
        b = NsysBuilder(tmp_path / f"rank{r}.sqlite", schema="3.22", host=host, env={"PMI_RANK": str(r)})
        _on_and_off_cpu(b, 4242)
        paths.append(b.save())
    seen = []
    real = on_cpu.gather

    def spy(parts, *args):
        seen.extend(
            (
                type(p).__name__,
                p.rows,
                [(Path(x).name.split(".")[0], x.endswith(".cpu.npy")) for x in p.paths],
                Path(p.paths[0]).exists(),
            )
            for p in parts
        )
        return real(parts, *args)

    monkeypatch.setattr(on_cpu, "gather", spy)
    convert_valid(["-m", *paths], tmp_path / "t")
    # per report: 3 off-CPU intervals, 2 calls and the main thread's mark (on_cpu.SEEN), in its file
    assert seen == [("Spill", 6, [(f"r{r}", True)], True) for r in (0, 1)]
    host = json.loads((tmp_path / "t.pop.json").read_text())["host"]
    assert host["on_cpu"]["off_cpu_outside_calls_ns"] == {"Rank 0": 2_500, "Rank 1": 2_500}
