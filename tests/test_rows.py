"""Issue 14 "Every row accounted for, on exports from every Nsight Systems version" (and issue 15
item 1): GPU activities that overlap on one stream, the fate of every table's rows, ``-t all``,
lazy ``--stats`` exports, unified-memory migrations, NCCL ranges in an unnamed domain, the host
name, and missing columns / unresolvable names (``--strict``).

Every export is generated (tests/nsysgen.py) and every trace validated strictly; counts and times
are exact.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT
from nsysgen import NsysBuilder
from paraver_validator import validate_trace
from trace_tools import intervals

from nsys2prv import kinds as K
from nsys2prv.cli import main
from nsys2prv.nsys.readers.nccl import NCCL_BY_NAME
from nsys2prv.nsys.schema import NO_METADATA
from nsys2prv.translate.context import OVERLAP_NOTE
from nsys2prv.translate.cuda import MIGRATION

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
    run(["-q", "--time-origin", "session", *opts, *([src] if isinstance(src, (str, Path)) else src), out])
    return validate_trace(str(out)), json.loads(Path(f"{out}.summary.json").read_text())


# ---------------------------------------------------------------------------------------------------
# 1. GPU activities overlapping on one stream
def overlap_export(path: Path) -> Path:
    """Stream 7: k_first [100 000, 130 000); k_second starts 12 442 ns before k_first ends and runs
    43 136 ns (as in a real nsys 2026.2 export); k_third starts while both run; a copy and k_after
    come after all of them (back on the stream's first row).  Stream 9: no overlap."""
    b = NsysBuilder(path, schema="3.13.2", host="gpunode")
    b.process(PID, "./overlap")
    for corr, (start, end) in enumerate(
        [(90_000, 91_000), (92_000, 93_000), (94_000, 95_000), (96_000, 97_000), (98_000, 99_000), (99_000, 99_500)],
        start=1,
    ):
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
    # the overlap rows carry their stream's label and their lane's number: every row name is unique
    s7, s9 = "CUDA-D0.S7-gpunode", "CUDA-D0.S9-gpunode"
    assert tr.row["THREAD"] == ["Process 6000 main (6000)", s7, f"{s7}-overlap1", f"{s7}-overlap2", s9]
    S7, S7_2, S7_3, S9 = 2, 3, 4, 5
    k = intervals(tr, KERNEL)
    assert sorted(zip(k["label"], k["thread"], k["start"], k["end"])) == [
        ("k_after", S7, 190_000, 200_000),
        ("k_first", S7, 100_000, 130_000),
        ("k_other", S9, 100_000, 150_000),
        ("k_second", S7_2, 117_558, 160_694),
        ("k_third", S7_3, 120_000, 125_000),
    ]
    # per-name kernel time is exact whatever the overlap
    assert (k["end"] - k["start"]).groupby(k["label"]).sum().to_dict() == {
        "k_after": 10_000,
        "k_first": 30_000,
        "k_other": 50_000,
        "k_second": 43_136,
        "k_third": 5_000,
    }
    # the copy is back on the first row; every row is Running exactly during its kernels
    m = intervals(tr, MEMOP)
    assert list(zip(m["thread"], m["start"], m["end"])) == [(S7, 170_000, 180_000)]
    st = tr.states[(tr.states["state"] != IDLE) & (tr.states["thread"] >= S7)]
    assert sorted(map(tuple, st[["thread", "begin", "end", "state"]].astype(int).to_numpy().tolist())) == [
        (S7, 100_000, 130_000, RUNNING),
        (S7, 170_000, 180_000, MEMXFER),
        (S7, 190_000, 200_000, RUNNING),
        (S7_2, 117_558, 160_694, RUNNING),
        (S7_3, 120_000, 125_000, RUNNING),
        (S9, 100_000, 150_000, RUNNING),
    ]
    # launch communications arrive on the row that holds the activity
    c = tr.comms[tr.comms["tag"].isin([TAG_LAUNCH, TAG_MEMOP])]
    assert sorted(zip(c["rthread"], c["phys_recv"])) == [
        (S7, 100_000),
        (S7, 170_000),
        (S7, 190_000),
        (S7_2, 117_558),
        (S7_3, 120_000),
        (S9, 100_000),
    ]


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
    b.kernel(PID, 0, 7, 130_000, 140_000, 2, "b")  # starts exactly when a ends: same row
    tr, s = convert(b.save(), tmp_path / "t")
    assert tr.row["THREAD"] == ["CUDA-D0.S7-node01"]
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
    assert sorted(zip(k["label"], k["thread"], k["start"], k["end"])) == [
        ("early", 2, 0, 50_000),
        ("late", 3, 30_000, 150_000),
    ]


# ---------------------------------------------------------------------------------------------------
# 2. Every non-empty table of every report, with its rows and their fate
def table_rows(path) -> dict[str, int]:
    """Rows of every non-empty table of an export that is not metadata, read straight from SQLite."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        counts = {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in names}
    return {t: n for t, n in counts.items() if n and not K.is_metadata(t)}


def assert_every_table_accounted(summary: dict, paths) -> None:
    listed = {}
    for t in summary["tables"]:
        assert sum(f["rows"] for f in t["fates"]) == t["rows"], t
        for f in t["fates"]:
            assert f["fate"] in ("translated", "dropped", "not translated", "left out"), f
            # (a kind's dropped rows: their reasons are the kind's in summary["categories"])
            assert ("kind" in f) if f["fate"] in ("translated", "dropped") else ("reason" in f or "flag" in f), f
            if f["fate"] == "dropped":
                assert sum(summary["categories"][f["kind"]]["dropped"].values()) >= f["rows"], f
        listed[(Path(t["report"]).resolve(), t["table"])] = t["rows"]
    expected = {(Path(p).resolve(), t): n for p in paths for t, n in table_rows(p).items()}
    assert listed == expected


def accounting_export(path: Path, osrt_only: bool = False) -> Path:
    b = NsysBuilder(path, schema="3.0.0", host="acct")
    b.process(PID, "./app")
    for i in range(3):
        b.osrt(PID, MAIN, "read", 30_000 + 2_000 * i, 31_000 + 2_000 * i)
    if osrt_only:
        return b.save()
    b.nvtx_domain(PID, MAIN, 1, "solver", ts=1_000)
    b.nvtx_category(PID, MAIN, 1, 7, "phase", ts=1_500)
    b.nvtx_thread_name(PID, MAIN + 1, "worker", ts=1_600)
    b.nvtx_push(PID, MAIN, 10_000, 20_000, text="step")
    b.nvtx_mark(PID, MAIN, 15_000, "here")
    b.nvtx_push(PID, MAIN, 11_000, 12_000, registered="solve", domain_id=1, category=7)
    b.cuda_api(PID, MAIN, "cudaLaunchKernel_v7000", 12_000, 13_000, 1)
    b.kernel(PID, 0, 7, 14_000, 18_000, 1, "k")
    for i in range(4):
        b._add("SCHED_EVENTS", start=1_000 * i, cpu=0, isSchedIn=i % 2, globalTid=b.gtid(PID, MAIN))
    for i in range(2):
        b._add("COMPOSITE_EVENTS", id=i + 1, start=5_000 + i, cpu=0, globalTid=b.gtid(PID, MAIN), cpuCycles=9)
        b._add(
            "CUPTI_ACTIVITY_KIND_CUDA_EVENT",
            deviceId=0,
            contextId=1,
            streamId=7,
            correlationId=50 + i,
            globalPid=b.gpid(PID),
            eventId=i + 1,
        )
    b._add("PROFILER_OVERHEAD", start=100, end=200, globalTid=b.gtid(PID, MAIN), nameId=b.sid("overhead"))
    return b.save()


def fates(summary: dict) -> dict:
    return {
        t["table"]: [(f["rows"], f["fate"], f.get("flag") or f.get("kind") or f["reason"]) for f in t["fates"]]
        for t in summary["tables"]
    }


def test_every_table_of_a_generated_report_has_a_fate(tmp_path):
    src = accounting_export(tmp_path / "r.sqlite")
    _, s = convert(src, tmp_path / "t")
    assert_every_table_accounted(s, [src])
    # the CPU side where the report has it (the default): the scheduling rows translated, the samples
    # (without call stacks) dropped and counted
    assert fates(s) == {
        "COMPOSITE_EVENTS": [(2, "dropped", "samples")],
        "CUPTI_ACTIVITY_KIND_CUDA_EVENT": [
            (2, "not translated", K.UNTRANSLATED_TABLES["CUPTI_ACTIVITY_KIND_CUDA_EVENT"])
        ],
        "CUPTI_ACTIVITY_KIND_KERNEL": [(1, "translated", "kernels")],
        "CUPTI_ACTIVITY_KIND_RUNTIME": [(1, "translated", "cuda_api")],
        "NVTX_EVENTS": [(3, "not translated", K.NVTX_CLASS_REASONS["names"]), (3, "translated", "nvtx")],
        "OSRT_API": [(3, "left out", "-t osrt")],
        "PROFILER_OVERHEAD": [(1, "not translated", K.UNTRANSLATED_TABLES["PROFILER_OVERHEAD"])],
        "SCHED_EVENTS": [(4, "translated", "sched")],
    }
    assert s["categories"]["samples"]["dropped"] == {"CPU sample without a usable call-stack frame": 2}
    assert {(u["table"], u["rows"]) for u in s["untranslated"]} == {
        ("CUPTI_ACTIVITY_KIND_CUDA_EVENT", 2),
        ("NVTX_EVENTS", 3),
        ("OSRT_API", 3),
        ("PROFILER_OVERHEAD", 1),
    }
    # -t no-cpu: the default without them, each left out naming its flag
    _, s = convert(src, tmp_path / "c", "-t", "no-cpu")
    assert fates(s)["SCHED_EVENTS"] == [(4, "left out", "-t sched")]
    assert fates(s)["COMPOSITE_EVENTS"] == [(2, "left out", "-t samples")]
    assert fates(s)["CUPTI_ACTIVITY_KIND_RUNTIME"] == [(1, "translated", "cuda_api")]
    # -t nvtx: the CUDA API calls are left out, naming the flag; -t all takes osrt too
    _, s = convert(src, tmp_path / "n", "-t", "nvtx")
    assert fates(s)["CUPTI_ACTIVITY_KIND_RUNTIME"] == [(1, "left out", "-t cuda_api")]
    _, s = convert(src, tmp_path / "a", "-t", "all")
    assert fates(s)["OSRT_API"] == [(3, "translated", "osrt")]
    assert s["categories"]["osrt"]["translated_rows"] == 3
    # and the scheduling rows (translated) and the samples (without call stacks: dropped, counted)
    assert fates(s)["SCHED_EVENTS"] == [(4, "translated", "sched")]
    assert fates(s)["COMPOSITE_EVENTS"] == [(2, "dropped", "samples")]
    assert s["categories"]["samples"]["dropped"] == {"CPU sample without a usable call-stack frame": 2}


def test_only_os_runtime_calls_says_which_flag_would_translate_them(tmp_path):
    src = accounting_export(tmp_path / "r.sqlite", osrt_only=True)
    _, text = run(["-q", src, tmp_path / "t"], expect=2)
    assert text.strip() == (
        f"nsys2prv: error: {src}: no events for the chosen categories; the reports hold 3 rows "
        "of OS runtime library calls: add -t osrt"
    )
    tr, s = convert(src, tmp_path / "t", "-t", "osrt")
    assert s["categories"]["osrt"]["translated_rows"] == 3


def test_every_table_of_the_cloverleaf_exports(tmp_path, clover_export):
    """The real CloverLeaf export (skipped naming the file when absent) and its generated twin."""
    src = clover_export
    _, s = convert(src, tmp_path / "t")
    assert_every_table_accounted(s, [src])


@pytest.mark.parametrize("run_dir", ["mpi4", "mpi8"])
def test_every_table_of_the_real_mpi_reports(tmp_path, run_dir):
    ranks = sorted((ROOT / "tests" / "data" / run_dir).glob("rank*.sqlite"))
    _, s = convert(ranks, tmp_path / "t", "-m")
    assert_every_table_accounted(s, ranks)
    nvtx = [t for t in s["tables"] if t["table"] == "NVTX_EVENTS"]
    assert len(nvtx) == len(ranks)
    kinds = {f.get("kind") for t in nvtx for f in t["fates"]}
    assert {"mpi", "nvtx"} <= kinds


# ---------------------------------------------------------------------------------------------------
# 5. Unified memory migrations have no API call, by nature
def test_unified_memory_migrations_are_not_missing_calls(tmp_path):
    b = NsysBuilder(tmp_path / "r.sqlite", schema="3.13.2")
    b.process(PID, "./um")
    b.cuda_api(PID, MAIN, "cudaMemcpyAsync_v3020", 1_000, 2_000, 5)
    b.memcpy(PID, 0, 7, 3_000, 4_000, 5, 64, copy_kind=1)
    for i, kind in enumerate((11, 12, 11)):
        b.memcpy(PID, 0, 7, 10_000 + 2_000 * i, 11_000 + 2_000 * i, 0, 4096, copy_kind=kind)
    b.memcpy(PID, 0, 7, 20_000, 21_000, 99, 64, copy_kind=2)  # its call was not traced
    tr, s = convert(b.save(), tmp_path / "t", "-t", "cuda_api")
    assert s["categories"]["launch_links"]["dropped"] == {
        MIGRATION: 3,
        "no API call with its correlation id (call not traced or not requested)": 1,
    }
    assert s["categories"]["memcpy"]["translated_rows"] == 5
    m = intervals(tr, MEMOP)
    assert m["label"].value_counts().to_dict() == {
        "CUDA Unified Memory Host-to-Device migration": 2,
        "CUDA Unified Memory Device-to-Host migration": 1,
        "CUDA memcpy Host-to-Device": 1,
        "CUDA memcpy Device-to-Host": 1,
    }


# ---------------------------------------------------------------------------------------------------
# 6. NCCL ranges in an NVTX domain without a name (nsys 2026.2: no domain-creation row)
NCCL_RANGE = 9500


def test_nccl_ranges_without_a_domain_name_are_recognised_by_name(tmp_path):
    b = NsysBuilder(tmp_path / "r.sqlite", schema="3.22")
    b.process(PID, "./nccl")
    names = ["ncclGroupStart", "ncclSend", "ncclRecv", "ncclGroupEnd"]
    for i, name in enumerate(names):
        b.nvtx_push(PID, MAIN, 10_000 * (i + 1), 10_000 * (i + 1) + 5_000, registered=name, domain_id=1)
    b.nvtx_payload_schema(1, 0x1000001, "NcclNvtxParamsSend", [("Message size [bytes]", 22, 0)], 8)
    # another unnamed domain whose names are not all nccl*: an ordinary NVTX domain
    b.nvtx_push(PID, MAIN, 60_000, 61_000, text="ncclLookalike", domain_id=2)
    b.nvtx_push(PID, MAIN, 62_000, 63_000, text="mine", domain_id=2)
    b.kernel(PID, 0, 7, 1_000, 2_000, 1, "k")
    src = b.save()
    tr, s = convert(src, tmp_path / "t", "-t", "nccl,nvtx")
    assert s["categories"]["nccl"]["source_rows"] == s["categories"]["nccl"]["translated_rows"] == 4
    assert s["categories"]["nccl"]["notes"] == {NCCL_BY_NAME: 4}
    r = intervals(tr, NCCL_RANGE)
    assert list(zip(r["label"], r["start"])) == [(n, 10_000 * (i + 1)) for i, n in enumerate(names)]
    assert s["categories"]["nvtx"]["translated_rows"] == 2
    assert fates(s)["NVTX_EVENTS"] == [(2, "translated", "nvtx"), (4, "translated", "nccl")]
    assert_every_table_accounted(s, [src])


# ---------------------------------------------------------------------------------------------------
# 4. Lazy exports made by nsys stats (2021-2022): no export metadata, no session start
def stats_export(path: Path, shift: int = 0) -> Path:
    b = NsysBuilder(path, schema="3.0.0", host="statshost")
    b.process(PID, "./app")
    for i in range(3):
        b.cuda_api(PID, MAIN, "cudaLaunchKernel_v7000", 1_000 + 10_000 * i + shift, 2_000 + 10_000 * i + shift, i + 1)
        b.kernel(PID, 0, 7, 3_000 + 10_000 * i + shift, 9_000 + 10_000 * i + shift, i + 1, f"k{i % 2}")
    b.cuda_api(PID, MAIN, "cudaMemcpy_v3020", 31_000 + shift, 36_000 + shift, 4)
    b.memcpy(PID, 0, 7, 32_000 + shift, 35_000 + shift, 4, 4096, copy_kind=2)
    b.nvtx_push(PID, MAIN, 500 + shift, 40_000 + shift, text="step")
    b.save()
    with sqlite3.connect(path) as con:
        for t in ("EXPORT_META_DATA", "TARGET_INFO_SESSION_START_TIME", "META_DATA_CAPTURE", "META_DATA_EXPORT"):
            con.execute(f'DROP TABLE IF EXISTS "{t}"')
    return path


def test_a_lazy_stats_export_is_read_with_a_note(tmp_path):
    src = stats_export(tmp_path / "stats.sqlite")
    with sqlite3.connect(src) as con:  # what makes it a lazy stats export
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert not tables & {"EXPORT_META_DATA", "META_DATA_EXPORT", "TARGET_INFO_SESSION_START_TIME"}
    tr, s = convert(src, tmp_path / "t")
    assert s["reports"][0]["notes"] == [NO_METADATA]
    assert (s["reports"][0]["schema"], s["reports"][0]["nsys"], s["reports"][0]["host"]) == (
        "unknown",
        "unknown",
        "statshost",
    )
    assert s["alignment"]["notes"] == []  # one report: no session start needed
    k = intervals(tr, KERNEL)
    assert list(zip(k["label"], k["start"], k["end"])) == [
        ("k0", 3_000, 9_000),
        ("k1", 13_000, 19_000),
        ("k0", 23_000, 29_000),
    ]
    m = intervals(tr, MEMOP)
    assert list(zip(m["label"], m["start"], m["end"])) == [("CUDA memcpy Device-to-Host", 32_000, 35_000)]
    assert {c: s["categories"][c]["translated_rows"] for c in ("kernels", "memcpy", "cuda_api", "nvtx")} == {
        "kernels": 3,
        "memcpy": 1,
        "cuda_api": 4,
        "nvtx": 1,
    }
    assert s["categories"]["launch_links"]["translated_rows"] == 4
    assert_every_table_accounted(s, [src])
    # the note is printed once
    _, text = run(["--time-origin", "session", src, tmp_path / "p"])
    assert text.count(NO_METADATA) == 1


def test_lazy_stats_exports_merged(tmp_path):
    """No session start: the times are taken as they are (said once); sync points still align them."""
    a, b = stats_export(tmp_path / "stats.sqlite"), stats_export(tmp_path / "stats2.sqlite", shift=100)
    tr, s = convert([a, b], tmp_path / "m", "-m")
    assert [r["notes"] for r in s["reports"]] == [[NO_METADATA], [NO_METADATA]]
    assert [n for n in s["alignment"]["notes"] if n.startswith("session alignment impossible")] == [
        f"session alignment impossible: no session start time (TARGET_INFO_SESSION_START_TIME) in {a}, {b}; "
        "session times taken as they are (MPI, NCCL or marker sync points, where the reports have them, still "
        "align the clocks: --align auto, mpi, nccl, marker:NAME)"
    ]
    assert (s["alignment"]["method"], [r["offset_ns"] for r in s["reports"]]) == ("session", [0, 0])
    k = intervals(tr, KERNEL)
    assert sorted(zip(k["task"], k["start"], k["end"])) == [
        (1, 3_000, 9_000),
        (1, 13_000, 19_000),
        (1, 23_000, 29_000),
        (2, 3_100, 9_100),
        (2, 13_100, 19_100),
        (2, 23_100, 29_100),
    ]
    assert_every_table_accounted(s, [a, b])
    _, text = run(["-m", "--time-origin", "session", a, b, tmp_path / "p"])
    assert text.count(NO_METADATA) == 1 and f"2 reports: note: {NO_METADATA}" in text
    # data-driven alignment: the NVTX range 'step' starts at the same time in both
    tr, s = convert([a, b], tmp_path / "k", "-m", "--align", "marker:step")
    assert [r["offset_ns"] for r in s["reports"]] == [0, -100]
    k = intervals(tr, KERNEL)
    assert sorted(zip(k["task"], k["start"])) == [
        (1, 3_000),
        (1, 13_000),
        (1, 23_000),
        (2, 3_000),
        (2, 13_000),
        (2, 23_000),
    ]


def test_a_plain_sqlite_file_is_still_refused(tmp_path):
    db = tmp_path / "plain.sqlite"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE StringIds (id INTEGER, value TEXT)")
        con.execute("CREATE TABLE things (x INTEGER)")
    _, text = run(["-q", db, tmp_path / "t"], expect=2)
    assert text.strip() == (
        f"nsys2prv: error: {db}: SQLite file is not an Nsight Systems export (none of the "
        "tables TARGET_INFO_SESSION_START_TIME, EXPORT_META_DATA, META_DATA_EXPORT, nor "
        "StringIds with event tables)"
    )
    assert not (tmp_path / "t.prv").exists()


# ---------------------------------------------------------------------------------------------------
# 7. The host name: Hostname, else DEVICE_DISPLAY_NAME (Windows), else made from the file's name
def hostless_export(path: Path, display_name: str | None = None) -> Path:
    """A 3.13.2 export without a Hostname row; META_DATA_CAPTURE's DEVICE_DISPLAY_NAME is
    ``display_name`` (None: no such row either)."""
    b = NsysBuilder(path, schema="3.13.2", host="linuxhost")
    b.process(PID, "./app.exe")
    b.kernel(PID, 0, 7, 1_000, 2_000, 1, "k")
    b.save()
    with sqlite3.connect(path) as con:
        con.execute("DELETE FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'")
        if display_name is None:
            con.execute("DELETE FROM META_DATA_CAPTURE WHERE name = 'DEVICE_DISPLAY_NAME'")
        else:
            con.execute("UPDATE META_DATA_CAPTURE SET value = ? WHERE name = 'DEVICE_DISPLAY_NAME'", (display_name,))
    return path


def test_a_windows_capture_is_named_by_its_device_display_name(tmp_path):
    src = hostless_export(tmp_path / "win.sqlite", "DESKTOP-4F2K9QX")
    tr, s = convert(src, tmp_path / "t")
    assert tr.row["NODE"] == ["DESKTOP-4F2K9QX"]
    assert s["nodes"] == ["DESKTOP-4F2K9QX"] and s["reports"][0]["host"] == "DESKTOP-4F2K9QX"
    assert not any("host unknown" in n for n in s["notes"])


def test_an_export_without_a_host_is_named_after_its_file(tmp_path):
    src = hostless_export(tmp_path / "win.sqlite")
    tr, s = convert(src, tmp_path / "t")
    assert tr.row["NODE"] == ["unknown-host-win"]
    host_notes = [n for n in s["notes"] if n.startswith("host unknown")]
    assert host_notes == [
        "host unknown in 1 report(s) (no Hostname, DEVICE_DISPLAY_NAME or host variable in the export): named "
        "after the file (win.sqlite -> unknown-host-win); reports with unknown hosts are each treated as their "
        "own node, with its own clock"
    ]
    # several: one node each (also for files of the same name), said once
    ranks = [hostless_export(tmp_path / d / "rank.sqlite", "localhost") for d in ("a", "b", "c")]
    tr, s = convert(ranks, tmp_path / "m", "-m")
    assert tr.row["NODE"] == s["nodes"] == ["unknown-host-rank.0", "unknown-host-rank.1", "unknown-host-rank.2"]
    assert len([n for n in s["notes"] if n.startswith("host unknown in 3 report(s)")]) == 1
    _, text = run(["-m", "--time-origin", "session", *ranks, tmp_path / "p"])
    assert text.count("host unknown") == 1
