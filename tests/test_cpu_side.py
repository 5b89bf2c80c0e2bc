"""The CPU side as it ran (-t sched,samples; issue 37), on our own programs profiled with Nsight
Systems 2023.4 (tests/data/cpu23, scripts/cpu_fixtures): sample shares per function as designed,
every scheduling row accounted, off-CPU time exactly the scheduler's, states adding up to each
thread's lifetime, MPI waits keeping their MPI state."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess

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


def test_osrt_call_stacks_as_callers(threads):
    trace, summary = threads
    src = source(
        CPU23 / "threads.sqlite",
        "SELECT s.value AS fn, count(*) AS n FROM OSRT_API a JOIN OSRT_CALLCHAINS c ON c.id = a.callchainId "
        "JOIN StringIds s ON s.id = c.symbol WHERE c.stackDepth = 0 AND a.eventClass NOT IN (31, 32) GROUP BY 1",
    ).set_index("fn")["n"]
    got = sampled(trace, R.OSRT_CALLER[1].id)
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
        for r in ev[ev["type"].between(30000000, 30000099)].itertuples()
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
    from nsys2prv.pipeline import stages

    def run(name):
        out = tmp_path / name
        convert_valid(["-t", "osrt", "--cache-dir", tmp_path / f"cache-{name}", need(CPU23 / "threads.sqlite")], out)
        summary = json.loads((tmp_path / f"{name}.summary.json").read_text())
        return (tmp_path / f"{name}.prv").read_bytes(), summary["categories"]["osrt"]

    whole = run("whole")
    calls = []
    real = stages._read_batched
    monkeypatch.setattr(stages, "BATCH_ROWS", 20)
    monkeypatch.setattr(stages, "_read_batched", lambda *a, **k: calls.append(len(a[2])) or real(*a, **k))
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
    from nsys2prv.pipeline import stages

    def run(name):
        out = tmp_path / name
        convert_valid(["-t", "samples", "--cache-dir", tmp_path / f"cache-{name}", need(CPU23 / "compute.sqlite")], out)
        summary = json.loads((tmp_path / f"{name}.summary.json").read_text())
        return (tmp_path / f"{name}.prv").read_bytes(), (tmp_path / f"{name}.pcf").read_bytes(), summary["categories"]

    whole = run("whole")
    calls = []
    real = stages._read_batched
    monkeypatch.setattr(stages, "BATCH_ROWS", 200)
    monkeypatch.setattr(stages, "_read_batched", lambda *a, **k: calls.append(len(a[2])) or real(*a, **k))
    batched = run("batched")
    assert calls == [8]  # 1,496 samples, 200 a batch
    assert batched == whole
