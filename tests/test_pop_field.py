"""POP numbers that hold in the field (issue 29): runs without MPI, old GPU tables, CPU-only MPI runs,
the -t categories that found nothing, several runs of one job.  Each test builds data shaped like the
case it stands for (tests/nsysgen.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from nsysgen import NsysBuilder

from nsys2prv.cli import main

MPI_KEYS = (
    "mpi_parallel_efficiency",
    "mpi_load_balance",
    "mpi_load_balance_in",
    "mpi_load_balance_out",
    "mpi_communication_efficiency",
    "serialization_efficiency",
    "transfer_efficiency",
)


def cli(args, code: int = 0):
    res = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert res.exit_code == code, res.output
    return res


def pop_json(base: Path) -> dict:
    return json.loads(Path(f"{base}.pop.json").read_text())


@pytest.mark.parametrize("schema", ["3.0.0", "3.13.2"])
def test_nvtx_without_mpi_gives_no_mpi_factors(tmp_path, schema):
    # one process, CUDA and NVTX, no MPI domain, no MPI_* table, no MPI_RANKS: the MPI factors are n/a
    # (they used to read 100 %: the empty NVTX "MPI" domain passed for traced MPI)
    b = NsysBuilder(tmp_path / "a.sqlite", schema=schema, host="n1")
    b.process(100, "./a")
    b.cuda_api(100, 100, "cudaLaunchKernel_v7000", 0, 10, 1)
    b.kernel(100, 0, 7, 5, 50, 1, "k")
    b.nvtx_push(100, 100, 0, 100, text="loop")
    res = cli(["-q", "--no-cache", "-t", "cuda_api,gpu", b.save(), tmp_path / "o"])
    h = pop_json(tmp_path / "o")["host"]
    assert [h[k] for k in MPI_KEYS] == [None] * len(MPI_KEYS)
    assert h["not_available"]["mpi_parallel_efficiency"] == "no MPI calls in the reports (MPI not traced by nsys)"
    assert h["device_offload_efficiency"] == 0.9 and h["parallel_efficiency"] == 0.9
    assert res.exit_code == 0


def test_cudevice_zero_on_every_gpu_row_falls_back_to_the_ordinal(tmp_path):
    # nsys 2021.2-shaped: 8 ranks on one host, rank r on CUDA ordinal r, TARGET_INFO_GPU lists the 8 GPUs
    # with cuDevice 0 on every row (id 7 first): the map cannot tell GPUs apart, so the ordinal is the GPU
    # (it used to put rank 0 on GPU 7, beside rank 7: "GPUs 7")
    import sqlite3

    paths = []
    for r in range(8):
        b = NsysBuilder(tmp_path / f"rank{r}.sqlite", schema="2.9.1", host="node0")
        b.process(4000 + r, "./app")
        b.mpi_rank(4000 + r, 4000 + r, r)
        b.kernel(4000 + r, r, 7, 1000, 2000 + 100 * r, 1, "saxpy")
        p = b.save()
        con = sqlite3.connect(p)
        tables = {n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert "TARGET_INFO_CUDA_DEVICE" not in tables
        row = con.execute("SELECT vmId FROM TARGET_INFO_GPU").fetchone()
        con.execute("DELETE FROM TARGET_INFO_GPU")
        con.executemany(
            "INSERT INTO TARGET_INFO_GPU (vmId, id, name, cuDevice) VALUES (?, ?, 'old GPU', 0)",
            [(row[0], g) for g in (7, 0, 1, 2, 3, 4, 5, 6)],
        )
        con.commit()
        con.close()
        paths.append(p)
    from nsys2prv.nsys.database import Report
    from nsys2prv.nsys.devices import degenerate_tables, device_map

    rep = Report(paths[0])
    assert device_map(rep).empty and degenerate_tables(rep) == ["TARGET_INFO_GPU"]
    cli(["-q", "--no-cache", "--align", "session", "-m", *paths, tmp_path / "o"])
    res = pop_json(tmp_path / "o")
    assert [(d["label"], d["processes"]) for d in res["devices"]] == [
        (f"node0:GPU{r}", [f"Rank {r}"]) for r in range(8)
    ]
    assert res["device"]["useful_time_ns"] == {f"node0:GPU{r}": 1000 + 100 * r for r in range(8)}


POP4 = Path(__file__).parent / "data" / "pop4"


def pop4_paths() -> list[str]:
    if not (POP4 / "rank0.sqlite").exists():
        pytest.skip("tests/data/pop4 missing")
    return [str(POP4 / f"rank{r}.sqlite") for r in range(4)]


def test_cpu_only_mpi_run_has_a_host_tree_without_offload(tmp_path):
    # a real 4-rank MPI run, no GPU, no CUDA: host parallel and global efficiency are the MPI ones
    # (they were n/a: "no CUDA API calls"), the offload factor alone is n/a and says why
    cli(["-q", "-t", "mpi,nvtx", "--region", "loop", "-m", *pop4_paths(), tmp_path / "o"])
    res = pop_json(tmp_path / "o")
    assert [r["name"] for r in res["regions"]] == ["MPI_Init..MPI_Finalize", "loop"]
    for scope in (res, *res["regions"]):
        h, T = scope["host"], scope["elapsed_ns"]
        assert h["count"] == 4 and scope["device"]["count"] == 0
        pe = sum(h["outside_mpi_time_ns"].values()) / (4 * T)
        assert h["mpi_parallel_efficiency"] == pytest.approx(pe, rel=1e-12)
        assert h["parallel_efficiency"] == h["global_efficiency"] == h["mpi_parallel_efficiency"]
        assert h["device_offload_efficiency"] is None
        assert h["not_available"]["device_offload_efficiency"].startswith("CPU-only run (no GPU activity, no CUDA")
        assert "parallel_efficiency" not in h["not_available"]


def _two_ranks_out_of_step(tmp_path, lag_ns: int, ms: int = 1_000_000) -> list:
    """2 ranks, 3 iterations "it" of 17 ms each, rank 1 ``lag_ns`` behind rank 0."""
    paths = []
    for r in range(2):
        b = NsysBuilder(tmp_path / f"r{r}.sqlite", host="n1")
        b.process(100 + r, "./a")
        b.mpi_rank(100 + r, 100 + r, r)
        for k in range(3):
            b.nvtx_push(100 + r, 100 + r, 17 * k * ms + r * lag_ns, 17 * (k + 1) * ms + r * lag_ns, text="it")
        paths.append(b.save())
    cli(["-q", "--align", "session", "-t", "nvtx", "--iterations", "it", "-m", *paths, tmp_path / "o"])
    return pop_json(tmp_path / "o")["notes"]


def test_iterations_a_few_microseconds_out_of_step_are_no_alarm(tmp_path):
    # ranks leaving each iteration 75 us apart (one host): iteration k+1 begins on rank 0 before k ends on
    # rank 1, which is no clock problem: no note (it used to say "clock skew or nesting")
    assert not any("overlap" in n for n in _two_ranks_out_of_step(tmp_path, 75_000))


def test_iterations_out_of_step_on_a_busy_machine_are_said(tmp_path):
    # pop4 (4 ranks on 2 busy cores): rank 0 sometimes leaves an Allreduce ms after the others, so three
    # iterations overlap the next by 2.9-5.9 ms of 20-26 ms: said, with the amount
    cli(["-q", "-t", "mpi,nvtx", "--iterations", "iter", "-m", *pop4_paths(), tmp_path / "o"])
    res = pop_json(tmp_path / "o")
    t = res["iterations"]["table"]
    assert len(t) == 12 and sum(a["end_ns"] > b["start_ns"] for a, b in zip(t, t[1:])) == 11
    assert [n for n in res["notes"] if "overlap" in n] == [
        "3 iteration(s) of 'iter' overlap the next by more than 10% of their length (up to 5.946 ms): ranks are "
        "far out of step, or their clocks are (see the clock alignment); each iteration is measured in its own "
        "window, the steady-state column over their union"
    ]


def test_iterations_far_out_of_step_are_noted(tmp_path):
    # rank 1 runs 5 ms behind: windows [0, 22], [17, 39], [34, 56] ms overlap the next by 5 of 22 ms
    notes = _two_ranks_out_of_step(tmp_path, 5_000_000)
    assert (
        "2 iteration(s) of 'it' overlap the next by more than 10% of their length (up to 5.000 ms): ranks are "
        "far out of step, or their clocks are (see the clock alignment); each iteration is measured in its "
        "own window, the steady-state column over their union"
    ) in notes


def test_a_range_nested_in_itself_is_said(tmp_path):
    ms = 1_000_000
    b = NsysBuilder(tmp_path / "r0.sqlite", host="n1")
    b.process(100, "./a")
    for s, e in ((0, 10), (2, 5), (10, 20)):
        b.nvtx_push(100, 100, s * ms, e * ms, text="it")
    cli(["-q", "-t", "nvtx", "--iterations", "it", b.save(), tmp_path / "o"])
    assert (
        "NVTX range 'it' overlaps itself (nested or on several threads) in 1 report(s): occurrence k is the "
        "k-th to start"
    ) in pop_json(tmp_path / "o")["notes"]


def test_profiler_start_up_is_not_part_of_a_process_life(tmp_path):
    # pop4: nsys's "NVTX early profiling initialization" (PROFILER_OVERHEAD) runs 21-26 ms in each process
    # before MPI_Init; a process's life starts at its first own event, so that time is neither useful
    # computation nor part of T
    import sqlite3

    cli(["-q", "-t", "mpi,nvtx", "-m", *pop4_paths(), tmp_path / "o"])
    res = pop_json(tmp_path / "o")
    offsets = [r["trace_offset_ns"] for r in json.loads((tmp_path / "o.sync.json").read_text())["reports"]]
    for p, path, off in zip(res["processes"], pop4_paths(), offsets):
        con = sqlite3.connect(path)
        first = con.execute("SELECT min(start) FROM NVTX_EVENTS").fetchone()[0]
        profiler = con.execute("SELECT min(start) FROM PROFILER_OVERHEAD").fetchone()[0]
        con.close()
        assert first - profiler > 20_000_000
        assert p["start_ns"] == first + off


def test_a_process_seen_only_through_profiler_rows_keeps_them(tmp_path):
    from nsys2prv.nsys.database import Report
    from nsys2prv.nsys.lifetimes import process_lifetimes

    b = NsysBuilder(tmp_path / "a.sqlite", host="n1")
    b.process(100, "./a")
    b.process(200, "./b")
    b._add("PROFILER_OVERHEAD", start=10, end=50, globalTid=b.gtid(100, 100), nameId=b.sid("init"), returnValue=0)
    b._add("PROFILER_OVERHEAD", start=5, end=20, globalTid=b.gtid(200, 200), nameId=b.sid("init"), returnValue=0)
    b.nvtx_push(100, 100, 60, 90, text="work")
    assert process_lifetimes(Report(b.save())) == {100: (60, 90), 200: (5, 20)}


def test_processes_with_only_os_runtime_rows_are_counted_out_loud(tmp_path):
    b = NsysBuilder(tmp_path / "a.sqlite", host="n1")
    b.process(100, "./app")
    b.mpi_rank(100, 100, 0)
    b.mpi(100, 100, "MPI_Barrier", 10, 20, kind="coll")
    for pid in range(200, 220):  # 20 helper processes: OS runtime calls only
        b.process(pid, "./helper")
        b.osrt(pid, pid, "read", 5, 30)
    cli(["-q", "-t", "mpi,osrt", b.save(), tmp_path / "o"])
    res = pop_json(tmp_path / "o")
    assert res["host"]["count"] == 1
    assert (
        "20 process(es) of the reports have activity (OS runtime, NVTX, scheduling, ...) but no GPU work, MPI "
        "or CUDA API call: they are not POP processes and are left out of the host tree and of T"
    ) in res["notes"]


def test_advice_is_about_the_region_the_user_asked_for(tmp_path):
    # pop4 with --region loop: the factor findings read the loop's column, the whole-run facts (late
    # start: the ranks start 0.25 s apart) say that the loop column leaves them out
    cli(["-q", "-t", "mpi,nvtx", "--region", "loop", "-m", *pop4_paths(), tmp_path / "o"])
    res = pop_json(tmp_path / "o")
    adv = {a["kind"]: a for a in res["advice"]}
    loop = res["regions"][1]["host"]
    assert res["regions"][1]["name"] == "loop"
    low = adv["lowest_factor"]
    assert low["evidence"]["scope"] == "loop" and low["evidence"]["metric"] == "host.mpi_load_balance"
    assert low["evidence"]["value"] == loop["mpi_load_balance"]
    pct = 100 * loop["mpi_load_balance"]
    assert low["message"].startswith(f"In 'loop': Lowest factor: MPI load balance = {pct:.1f}%")
    assert adv["straggling_rank"]["message"].startswith("In 'loop': Rank 3 spends the most time outside MPI")
    assert adv["late_start"]["message"].endswith("the 'loop' column, where all processes run, leaves it out.")
    # without --region: the steady-state column nsys2prv shows by itself (start-up dominates)
    cli(["-q", "-t", "mpi,nvtx", "-m", *pop4_paths(), tmp_path / "w"])
    adv = {a["kind"]: a for a in pop_json(tmp_path / "w")["advice"]}
    assert adv["lowest_factor"]["evidence"]["scope"] == "MPI_Init..MPI_Finalize"
    assert adv["lowest_factor"]["message"].startswith("In 'MPI_Init..MPI_Finalize': Lowest factor: MPI load balance")
    assert adv["late_start"]["message"].endswith(
        "the 'MPI_Init..MPI_Finalize' column, where all processes run, leaves it out."
    )


def test_categories_that_found_nothing_are_said_and_t_cuda_is_nsys_s_word(tmp_path):
    # a CPU-only MPI run converted with -t mpi,cuda_api_trace,gpu_metrics: the two CUDA-side categories
    # found nothing, and the summary says so (they used to be silently absent)
    cli(["-q", "-t", "mpi,cuda_api_trace,gpu_metrics", "-m", *pop4_paths(), tmp_path / "o"])
    notes = json.loads((tmp_path / "o.summary.json").read_text())["notes"]
    assert (
        "-t found no data for cuda_api (CUDA runtime and driver API calls), gpu_metrics (GPU metrics samples "
        "(one row per GPU) and their attribution to kernels/NVTX ranges): none in these reports (not traced "
        "by nsys, or not in this export)"
    ) in notes
    cli(["-q", "-t", "mpi,nvtx", "-m", *pop4_paths(), tmp_path / "n"])
    assert not any(
        n.startswith("-t found no data") for n in json.loads((tmp_path / "n.summary.json").read_text())["notes"]
    )
    # nsys's -t cuda: the CUDA API calls and the GPU work
    from nsys2prv.config import parse_categories

    assert parse_categories("cuda") == {"gpu", "cuda_api"}
    assert parse_categories("cuda,mpi") == parse_categories("cuda_api,gpu,mpi")


def test_cfgs_for_a_cpu_only_trace_leave_out_gpu_views(tmp_path):
    cli(["-q", "-t", "mpi,nvtx", "--cfgs", tmp_path / "views", "-m", *pop4_paths(), tmp_path / "o"])
    got = sorted(p.relative_to(tmp_path / "views").as_posix() for p in (tmp_path / "views").rglob("*.cfg"))
    assert got == [
        "analysis/host_mpi.cfg",
        "analysis/message_matrix.cfg",
        "analysis/mpi_time.cfg",
        "analysis/nvtx_time.cfg",
        "basics/states.cfg",
        "nvtx/nvtx_0_default_domain.cfg",
        "views/mpi_calls.cfg",
        "views/mpi_messages.cfg",
        "views/nvtx_default_domain.cfg",
    ]  # (no views/nvtx_domain_1.cfg: that domain, "MPI", holds the MPI calls, translated as MPI, not NVTX)


def test_pop_warns_about_one_run_split_into_many(tmp_path):
    # the shell expanded an unquoted glob: one RUN per rank report (it gave "efficiency 129 %")
    res = cli(["pop", *pop4_paths(), "--scaling", "strong", "-o", tmp_path / "s"])
    warn = (
        "each of the 4 RUNs is a single report of one directory: if they are the ranks of one run, the shell "
        "expanded an unquoted glob -- quote it ('dir/rank*.nsys-rep') to make one RUN"
    )
    assert f"  note: {warn}" in res.output.splitlines()
    s = json.loads((tmp_path / "s.pop.json").read_text())
    assert s["warnings"] == [warn]
    # beside a computed computation scalability, no "single run" reason is left
    for row in s["runs"]:
        assert row["host"]["computation_scalability"] is not None
        assert "computation_scalability" not in row["host"]["not_available"]


def test_pop_warns_about_runs_of_one_job(tmp_path):
    paths = []
    for r in range(2):
        d = tmp_path / f"d{r}"
        d.mkdir()
        b = NsysBuilder(d / "rank.sqlite", host="n1", env={"SLURM_JOB_ID": "4242"})
        b.process(100 + r, "./a")
        b.mpi_rank(100 + r, 100 + r, r)
        b.mpi(100 + r, 100 + r, "MPI_Barrier", 10, 20 + r, kind="coll")
        paths.append(str(b.save()))
    res = cli(["pop", *paths, "--scaling", "weak", "--labels", "A,B", "-o", tmp_path / "s"])
    assert (
        "  note: runs A, B come from one job (SLURM_JOB_ID=4242): if they are the reports of one run, give them as "
        "one RUN, a quoted glob ('dir/rank*.nsys-rep')"
    ) in res.output.splitlines()


def test_pop_of_a_single_run_is_no_scaling_table(tmp_path):
    pop4_paths()
    res = cli(["pop", str(POP4 / "rank*.sqlite"), "-o", tmp_path / "s"])
    assert res.output.splitlines()[0] == "POP metrics (4 proc [0 GPU], one run, NCCL as communication)"
    s = json.loads((tmp_path / "s.pop.json").read_text())
    h = s["runs"][0]["host"]
    assert s["scaling"] is None and s["warnings"] == []
    assert h["computation_scalability"] is None and h["global_efficiency"] == h["parallel_efficiency"]
    assert h["not_available"]["computation_scalability"].startswith("single run")
    assert "Scaling mode" not in (tmp_path / "s.pop.md").read_text()


def test_steady_state_is_shown_by_default_when_start_up_dominates(tmp_path):
    # pop4: the ranks start 0.25 s apart and wait in MPI_Init for the last one: 80 % of the whole run is
    # start-up and shutdown.  The whole-run column stays the whole run; the steady-state column (TALP's
    # window: the end of MPI_Init to MPI_Finalize) is beside it without any option, and the advice reads it
    import sqlite3

    cli(["-q", "-t", "mpi,nvtx", "-m", *pop4_paths(), tmp_path / "w"])
    res = pop_json(tmp_path / "w")
    (reg,) = res["regions"]
    assert reg["kind"] == "steady" and reg["name"] == "MPI_Init..MPI_Finalize"
    assert reg["reason"].startswith(
        "start-up to the end of the first MPI_Init takes 1.060 s and shutdown from the last "
        "MPI_Finalize 0.070 s: 80.3% of the whole run's T is outside the MPI program"
    )
    assert "Rank 3 started 0.819 s after Rank 0" in reg["reason"]
    assert "steady_state" in res["definitions"]
    # the window, from the exports: the earliest MPI_Init end and the latest MPI_Finalize start (session
    # clocks: one host), on the trace's timeline (time 0 = the run's start)
    offsets = [r["trace_offset_ns"] for r in json.loads((tmp_path / "w.sync.json").read_text())["reports"]]
    ends, starts = [], []
    for path, off in zip(pop4_paths(), offsets):
        con = sqlite3.connect(path)
        q = "SELECT {} FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId WHERE s.value = '{}'"
        ends.append(con.execute(q.format("e.end", "MPI_Init")).fetchone()[0] + off)
        starts.append(con.execute(q.format("e.start", "MPI_Finalize")).fetchone()[0] + off)
        con.close()
    assert reg["windows_ns"] == [[min(ends), max(starts)]]
    assert reg["elapsed_ns"] == max(starts) - min(ends) == 276838000 + reg["elapsed_ns"] % 1000
    h = reg["host"]
    out = list(h["outside_mpi_time_ns"].values())
    assert h["mpi_load_balance"] == pytest.approx(sum(out) / 4 / max(out), rel=1e-12)
    assert h["mpi_parallel_efficiency"] == pytest.approx(sum(out) / 4 / reg["elapsed_ns"], rel=1e-12)
    assert h["serialization_efficiency"] <= 1 and h["transfer_efficiency"] <= 1
    md = (tmp_path / "w.pop.md").read_text()
    assert "| Metric | trace | MPI_Init..MPI_Finalize |" in md
    assert (
        "Column 'MPI_Init..MPI_Finalize' (0.276838 s, trace time 1.060329 .. 1.337167 s): from the end of the "
        "first MPI_Init to the start of the last MPI_Finalize (TALP's window), shown because start-up" in md
    )
    assert res["advice"][0]["message"].startswith("In 'MPI_Init..MPI_Finalize': Lowest factor: MPI load balance")
    # asked for explicitly: the same column, once
    cli(["-q", "-t", "mpi,nvtx", "--region", "MPI_Init..MPI_Finalize", "-m", *pop4_paths(), tmp_path / "s"])
    asked = pop_json(tmp_path / "s")
    assert asked["regions"] == res["regions"] and asked["host"] == res["host"]
    # and the scalability table can take that scope
    s = cli(["pop", "-q", str(POP4 / "rank*.sqlite"), "--region", "MPI_Init..MPI_Finalize", "-o", tmp_path / "sc"])
    assert s.exit_code == 0
    row = json.loads((tmp_path / "sc.pop.json").read_text())["runs"][0]
    assert row["elapsed_ns"] == reg["elapsed_ns"]


def test_steady_state_needs_mpi_init_and_finalize(tmp_path):
    b = NsysBuilder(tmp_path / "a.sqlite", host="n1")
    b.process(100, "./a")
    b.mpi_rank(100, 100, 0)
    b.mpi(100, 100, "MPI_Barrier", 10, 20, kind="coll")
    res = cli(["-q", "--region", "MPI_Init..MPI_Finalize", b.save(), tmp_path / "o"], code=2)
    assert "--region MPI_Init..MPI_Finalize: the reports have no MPI_Init followed by an MPI_Finalize" in res.output
    assert not (tmp_path / "o.prv").exists()
