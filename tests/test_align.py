"""Clock alignment (--align) and MPI messages across ranks.

Real data: reports taken on ONE host share one clock, so ``--align session`` is the truth for
them.  Copies with their session starts shifted by known amounts must be re-aligned by ``auto``
from the MPI data alone.  Generated data (tests/nsysgen.py, 3.22 shape with MPI_* tables):
8 ranks on 2 hosts whose clocks have known offsets AND drift; the truth is the generator's
global timeline.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from conftest import MPI4, ROOT, convert, convert_valid, load_trace, need
from nsysgen import NsysBuilder
from trace_tools import intervals

from nsys2prv.core import registry as R
from nsys2prv.model.align.fit import P2P, fit_clocks
from nsys2prv.model.align.syncpoints import SyncPoints

MPI8 = ROOT / "tests" / "data" / "mpi8"
BOUND_REAL_NS = 50_000
SHIFTS_MS = [37.0, -81.5, 100.0, -12.25, 55.5, -99.0, 3.75, -64.0]


# --- real reports, shifted session starts -----------------------------------------------------------
def _shifted_copies(src: list[Path], dest: Path) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for r, p in enumerate(src):
        q = dest / p.name
        shutil.copy(p, q)
        with sqlite3.connect(q) as con:
            con.execute(
                "UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = utcEpochNs + ?", (int(SHIFTS_MS[r] * 1e6),)
            )
        out.append(q)
    return out


def _mpi_calls(trace) -> dict[int, np.ndarray]:
    """Per task (1-based): begin and end times of every MPI call, in call order."""
    iv = intervals(trace, list(R.MPI_TYPES)).sort_values(["task", "start"], kind="stable")
    return {int(t): g[["start", "end"]].to_numpy(np.int64).ravel() for t, g in iv.groupby("task")}


@pytest.mark.parametrize("data,n", [(MPI4, 4), (MPI8, 8)], ids=["mpi4", "mpi8"])
def test_auto_keeps_the_one_clock_of_one_host(tmp_path, data, n):
    """Reports of one host share its clock: ``auto`` aligns them by their session starts (exact, no
    constraint violated) instead of fitting the MPI exits, and says why."""
    src = [need(data / f"rank{r}.sqlite") for r in range(n)]
    truth, _ = convert_valid(["-t", "mpi,nvtx", "--align", "session", "-m", *src], tmp_path / "truth")
    got, summary = convert_valid(["-t", "mpi,nvtx", "-m", *src], tmp_path / "auto")
    sync = json.loads((tmp_path / "auto.sync.json").read_text())
    assert sync["method"] == "session" and sync["violations"]["after_fix"] == 0
    assert all(r["correction_ns"] == 0 for r in sync["reports"])
    assert any("every report comes from host node01" in n for n in sync["notes"])
    assert (tmp_path / "auto.prv").read_bytes() == (tmp_path / "truth.prv").read_bytes()


@pytest.mark.parametrize("data,n", [(MPI4, 4), (MPI8, 8)], ids=["mpi4", "mpi8"])
def test_real_reports_realigned_from_mpi(tmp_path, data, n):
    src = [need(data / f"rank{r}.sqlite") for r in range(n)]
    truth, _ = convert_valid(["-t", "mpi,nvtx", "--align", "session", "-m", *src], tmp_path / "truth")
    copies = _shifted_copies(src, tmp_path / "shifted")
    got, summary = convert_valid(["-t", "mpi,nvtx", "-m", *copies], tmp_path / "auto")
    sync = json.loads((tmp_path / "auto.sync.json").read_text())
    # one host, but the shifted session starts contradict the MPI exits: auto fits the clocks
    assert sync["method"] == "mpi" and summary["alignment"]["method"] == "mpi"
    assert any("violate" in n and "clocks fitted" in n for n in sync["notes"])
    assert sync["violations"]["after_fix"] == 0
    t_truth, t_got = _mpi_calls(truth), _mpi_calls(got)
    shift = {task: float(np.median(t_got[task] - t_truth[task])) for task in t_truth}
    err = {task - 1: shift[task] - shift[1] for task in shift}  # the trace's zero is rank 0's clock
    print(
        f"\n{data.name}: error per rank vs --align session on the originals (us): "
        + ", ".join(f"{r}: {e / 1e3:+.1f}" for r, e in err.items())
    )
    print(
        f"{data.name}: session alone on the shifted copies would be off by (us): "
        + ", ".join(f"{r}: {(SHIFTS_MS[r] - SHIFTS_MS[0]) * 1e3:+.0f}" for r in range(n))
    )
    assert max(abs(e) for e in err.values()) < BOUND_REAL_NS, err
    # within a rank nothing moves relative to anything else: exact durations
    for task in t_truth:
        assert np.array_equal(np.diff(t_got[task]), np.diff(t_truth[task]))


def test_real_session_method_is_evaluated_without_violations(tmp_path):
    src = [need(MPI4 / f"rank{r}.sqlite") for r in range(4)]
    convert_valid(["-t", "mpi", "--align", "session", "-m", *src], tmp_path / "s")
    sync = json.loads((tmp_path / "s.sync.json").read_text())
    assert sync["method"] == "session" and sync["sync_points"] == 7  # Init, Barrier, 4 Allreduce, Finalize
    assert sync["violations"] == {"after_estimate": 0, "after_clamp": 0, "after_fix": 0}
    assert all(r["correction_ns"] == 0 and r["residual_spread_ns"] is not None for r in sync["reports"])


def test_marker_alignment_on_real_reports(tmp_path):
    src = [need(MPI4 / f"rank{r}.sqlite") for r in range(4)]
    _, summary = convert_valid(["-t", "mpi,nvtx", "--align", "marker:iteration", "-m", *src], tmp_path / "m")
    sync = json.loads((tmp_path / "m.sync.json").read_text())
    assert sync["method"] == "marker:iteration" and sync["sync_points"] == 4
    code, text = convert(["-t", "mpi,nvtx", "--align", "marker:nope", "-m", *src, tmp_path / "x"], expect_ok=False)
    assert code == 2 and len(text.strip().splitlines()) == 1 and "marker:nope" in text


# --- generated run: 8 ranks, 2 hosts, known clock offsets and drift ------------------------------------
@dataclass
class Run:
    paths: list[Path]
    calls: dict[int, list] = field(default_factory=dict)  # rank -> [(name, T start, T end)]
    msgs: list = field(default_factory=list)  # (src, dst, tag, size, send call, recv call)
    offset: dict[int, float] = field(default_factory=dict)  # rank -> clock error at T = 0 (ns)
    drift: dict[int, float] = field(default_factory=dict)  # rank -> clock rate error


PID0, NRANKS, ITER = 4000, 8, 60
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"


def generate(
    d: Path, seed: int = 7, job=lambda r: "4242", start_gap_ns: int = 0, unmatched: bool = False, nranks: int = NRANKS
) -> Run:
    rng = np.random.default_rng(seed)
    d.mkdir(parents=True, exist_ok=True)
    run = Run([])
    b_err = {r: 0.0 if r == 0 else float(rng.uniform(-3e6, 3e6)) for r in range(nranks)}
    a_err = {r: 0.0 if r == 0 else float(rng.uniform(-20e-6, 20e-6)) for r in range(nranks)}
    sigma = {
        r: int(SHIFTS_MS[r % len(SHIFTS_MS)] * 1e6) + (start_gap_ns if r == nranks - 1 else 0) for r in range(nranks)
    }
    run.offset, run.drift = b_err, a_err
    builders = {}
    for r in range(nranks):
        b = NsysBuilder(
            d / f"rank{r}.sqlite",
            schema="3.22",
            host="node-a" if r < nranks // 2 else "node-b",
            session_start_ns=1_700_000_000_000_000_000 + sigma[r],
            env={"SLURM_JOB_ID": job(r), "SLURM_PROCID": str(r)},
        )
        b.process(PID0 + r, "./app")
        builders[r] = b
        run.calls[r] = []

    def loc(r: int, t: float) -> int:  # true time -> rank r's report time
        return int(round(t + b_err[r] + a_err[r] * t - sigma[r]))

    def call(r, name, t0, t1, **kw):
        pid = PID0 + r
        builders[r].mpi(pid, pid, name, loc(r, t0), loc(r, t1), **kw)
        run.calls[r].append((name, t0, t1))

    ranks = range(nranks)
    init_in = {r: 200e6 + r * 1e6 for r in ranks}
    rel = max(init_in.values()) + 1e6
    for r in ranks:
        call(r, "MPI_Init", init_in[r], rel + rng.uniform(1e3, 20e3), kind="other")
        builders[r].mpi_rank(PID0 + r, PID0 + r, r)
    t = rel + 50e3
    corr = {r: 0 for r in ranks}
    for k in range(ITER):
        enter = {r: t + 30e6 + rng.uniform(0, 10e6) + r * 0.5e6 for r in ranks}
        for r in ranks:  # a kernel launched during the compute phase, and an NCCL allreduce kernel
            pid = PID0 + r
            corr[r] += 1
            l0 = enter[r] - 5e6
            builders[r].cuda_api(pid, pid, "cudaLaunchKernel_v7000", loc(r, l0), loc(r, l0 + 8e3), corr[r])
            builders[r].kernel(pid, 0, 7, loc(r, l0 + 12e3), loc(r, l0 + 2e6), corr[r], "compute")
        nccl_in = {r: enter[r] - 3e6 + rng.uniform(0, 1e5) for r in ranks}
        nccl_rel = max(nccl_in.values()) + 20e3
        for r in ranks:
            pid = PID0 + r
            corr[r] += 1
            builders[r].cuda_api(
                pid, pid, "cudaLaunchKernel_v7000", loc(r, nccl_in[r] - 10e3), loc(r, nccl_in[r] - 2e3), corr[r]
            )
            builders[r].kernel(pid, 0, 13, loc(r, nccl_in[r]), loc(r, nccl_rel + rng.uniform(0, 3e3)), corr[r], NCCL)
        released = max(enter.values()) + 5e3
        exit_ = {r: released + rng.uniform(0.5e3, 4e3) for r in ranks}
        for r in ranks:
            call(r, "MPI_Allreduce", enter[r], exit_[r], kind="coll", size=8, recv_size=8, comm=11)
        # Sendrecv ring: send to the right, receive from the left (two P2P rows: send half first)
        s0 = {r: exit_[r] + rng.uniform(1e3, 3e3) for r in ranks}
        s1 = {r: max(s0[r], s0[(r - 1) % nranks]) + 3e3 + rng.uniform(0, 1e3) for r in ranks}
        tag = 10 + k % 3
        for r in ranks:
            pid = PID0 + r
            right, left = (r + 1) % nranks, (r - 1) % nranks
            builders[r].mpi(
                pid, pid, "MPI_Sendrecv", loc(r, s0[r]), loc(r, s1[r]), kind="p2p", peer=right, size=2048, tag=tag
            )
            builders[r].mpi(
                pid, pid, "MPI_Sendrecv", loc(r, s0[r]), loc(r, s1[r]), kind="p2p", peer=left, size=2048, tag=tag
            )
            run.calls[r].append(("MPI_Sendrecv", s0[r], s1[r]))
            run.msgs.append((r, right, tag, 2048, ("MPI_Sendrecv", s0[r], s1[r]), None))
        # Irecv from the right + Isend to the left + Waitall (one START_WAIT row per request)
        a = {r: s1[r] + rng.uniform(1e3, 2e3) for r in ranks}
        w1 = {r: max(a[r], a[(r + 1) % nranks]) + 8e3 + rng.uniform(0, 1e3) for r in ranks}
        for r in ranks:
            pid = PID0 + r
            right, left = (r + 1) % nranks, (r - 1) % nranks
            h = 1000 * (k + 1) + 1
            call(r, "MPI_Irecv", a[r], a[r] + 1e3, kind="p2p", peer=right, size=512, tag=100, request=h)
            call(r, "MPI_Isend", a[r] + 2e3, a[r] + 3e3, kind="p2p", peer=left, size=512, tag=100, request=h + 1)
            for req in (h, h + 1):
                builders[r].mpi(
                    pid, pid, "MPI_Waitall", loc(r, a[r] + 4e3), loc(r, w1[r]), kind="startwait", request=req
                )
            run.calls[r].append(("MPI_Waitall", a[r] + 4e3, w1[r]))
            run.msgs.append((r, left, 100, 512, ("MPI_Isend", a[r] + 2e3, a[r] + 3e3), None))
        t = max(w1.values()) + 100e3
    if unmatched:  # a send nobody receives
        call(0, "MPI_Send", t, t + 2e3, kind="p2p", peer=1, size=64, tag=999)
        t += 10e3
    fin = {r: t + rng.uniform(0, 1e6) for r in ranks}
    for r in ranks:
        call(r, "MPI_Finalize", fin[r], max(fin.values()) + 1e6 + rng.uniform(0, 1e5), kind="other")
    run.paths = [builders[r].save() for r in ranks]
    return run


@pytest.fixture(scope="module")
def gen(tmp_path_factory):
    d = tmp_path_factory.mktemp("gen")
    run = generate(d / "in")
    trace, summary = convert_valid(["-t", "mpi,cuda_api", "-m", *run.paths], d / "out")
    return run, trace, summary, json.loads((d / "out.sync.json").read_text())


def _errors(run: Run, trace) -> dict[int, np.ndarray]:
    """Per rank: trace time - true time of every MPI call boundary, minus rank 0's median."""
    got = _mpi_calls(trace)
    dev = {}
    for r, calls in run.calls.items():
        true = np.array([[c[1], c[2]] for c in sorted(calls, key=lambda c: c[1])]).ravel()
        assert len(got[r + 1]) == len(true)
        dev[r] = got[r + 1] - true
    base = np.median(dev[0])
    return {r: v - base for r, v in dev.items()}


def test_generated_offsets_and_drift_recovered(gen):
    run, trace, summary, sync = gen
    err = _errors(run, trace)
    print(
        "\ngenerated: max |error| per rank (us): "
        + ", ".join(f"{r}: {np.abs(e).max() / 1e3:.2f}" for r, e in err.items())
    )
    assert sync["method"] == "mpi+nccl+p2p"
    for r, e in err.items():
        assert np.abs(e).max() < 2_000, (r, np.abs(e).max())  # every call within 2 us
    for rep in sync["reports"]:
        r = rep["ranks"][0]
        assert rep["drift_ppm"] == pytest.approx(-run.drift[r] * 1e6, abs=1.0), r
    assert sync["violations"]["after_fix"] == 0
    assert sync["reports"][0]["correction_ns"] == 0 and sync["reports"][0]["drift_ppm"] == 0


def test_generated_nccl_only(tmp_path):
    run = generate(tmp_path / "in", seed=11)
    trace, _ = convert_valid(["-t", "mpi", "--align", "nccl", "-m", *run.paths], tmp_path / "out")
    sync = json.loads((tmp_path / "out.sync.json").read_text())
    assert sync["method"] == "nccl" and sync["sync_points"] == ITER and sync["messages"] == 0
    err = _errors(run, trace)
    assert max(np.abs(e).max() for e in err.values()) < 5_000


def test_two_hosts_eight_ranks(gen):
    _, trace, summary, _ = gen
    h = trace.header
    assert (h.n_nodes, h.n_tasks) == (2, 8) and trace.row["NODE"] == ["node-a", "node-b"]
    assert [node for _, node in h.apps[0]] == [1, 1, 1, 1, 2, 2, 2, 2]
    assert [t.split(" (")[0] for t in trace.row["TASK"]] == [f"Rank {r}" for r in range(8)]
    cpus_a = h.nodes[0]
    threads = trace.states.drop_duplicates(["task", "thread"])
    for task, cpu in zip(threads["task"], threads["cpu"]):  # each thread's CPU is on its host's node
        assert (cpu <= cpus_a) == (task <= 4)


def test_generated_messages_exact(gen):
    run, trace, summary, sync = gen
    c = trace.comms[trace.comms["tag"].isin([10, 11, 12, 100])]
    assert len(c) == len(run.msgs) == sync["messages"] == 2 * ITER * NRANKS
    mc = summary["categories"]["mpi_messages"]
    assert mc["source_rows"] == 4 * ITER * NRANKS and mc["translated_rows"] == mc["source_rows"]
    assert mc["dropped"] == {}
    iv = intervals(trace, list(R.MPI_TYPES))
    calls = {
        (int(t), lbl, int(s)): int(e) for t, lbl, s, e in iv[["task", "label", "start", "end"]].itertuples(index=False)
    }
    # every record: sender / receiver threads, size and tag exact; its times are exactly the
    # times of the calls in the trace (log send = send start, phys send = send end, ...)
    for row in c.itertuples(index=False):
        src, dst = row.task - 1, row.rtask - 1
        assert (row.thread, row.rthread) == (1, 1)
        if row.tag == 100:
            assert dst == (src - 1) % NRANKS and row.size == 512
            assert calls[(row.task, "MPI_Isend", row.log_send)] == row.phys_send
            assert (row.rtask, "MPI_Waitall", row.log_recv) not in calls  # Irecv end, not a call start
            waits = iv[(iv["task"] == row.rtask) & (iv["label"] == "MPI_Waitall")]
            assert row.phys_recv in set(waits["end"])
        else:
            assert dst == (src + 1) % NRANKS and row.size == 2048
            # a Sendrecv returns after its own receive: the physical send is drawn at the receive
            # when the call ended later (Paraver wants physical receive >= physical send)
            assert min(calls[(row.task, "MPI_Sendrecv", row.log_send)], row.phys_recv) == row.phys_send
            assert calls[(row.rtask, "MPI_Sendrecv", row.log_recv)] == row.phys_recv


def test_generated_causality(gen):
    _, trace, _, _ = gen
    c = trace.comms
    mpi = c[c["tag"].isin([10, 11, 12, 100])]
    assert (mpi["phys_recv"] >= mpi["log_send"]).all()  # no receive ends before its send started
    launch = c[c["tag"] == 55001]
    assert len(launch) == 2 * ITER * NRANKS and (launch["log_recv"] >= launch["log_send"]).all()
    iv = intervals(trace, list(R.MPI_TYPES))
    ar = iv[iv["label"] == "MPI_Allreduce"].sort_values(["task", "start"])
    k = ar.groupby("task").cumcount()
    per = ar.assign(k=k).groupby("k").agg(last_in=("start", "max"), first_out=("end", "min"))
    assert (per["last_in"] <= per["first_out"]).all()


def test_generated_counts_conserved(gen):
    run, trace, summary, _ = gen
    for kind, c in summary["categories"].items():
        assert c["source_rows"] == c["translated_rows"] + sum(c["dropped"].values()), kind
    iv = intervals(trace, list(R.MPI_TYPES))
    for r in range(NRANKS):
        assert (iv["task"] == r + 1).sum() == len(run.calls[r])


def test_unmatched_messages_counted(tmp_path):
    run = generate(tmp_path / "in", nranks=4, unmatched=True)
    _, summary = convert_valid(["-t", "mpi", "-m", *run.paths], tmp_path / "out")
    mc = summary["categories"]["mpi_messages"]
    assert sum(mc["dropped"].values()) == 1 and "unmatched send" in next(iter(mc["dropped"]))


def test_different_jobs_refused(tmp_path):
    run = generate(tmp_path / "in", nranks=4, job=lambda r: "11" if r < 2 else "12")
    code, text = convert(["-t", "mpi", "-m", *run.paths, tmp_path / "out"], expect_ok=False)
    lines = text.strip().splitlines()
    assert (
        code == 2
        and len(lines) == 1
        and "different jobs" in lines[0]
        and "rank0.sqlite" in lines[0]
        and "rank2.sqlite" in lines[0]
        and "--force" in lines[0]
    )
    _, summary = convert_valid(["-t", "mpi", "--force", "-m", *run.paths], tmp_path / "forced")
    assert any("different jobs" in n for n in summary["alignment"]["notes"])


def test_different_jobs_in_device_environment_refused(tmp_path):
    """2022.4 exports: the job id is in TARGET_INFO_SYSTEM_ENV DeviceEnvironment (NUL-separated)."""
    src = [need(MPI4 / f"rank{r}.sqlite") for r in range(4)]
    copies = []
    for r, p in enumerate(src):
        q = tmp_path / p.name
        shutil.copy(p, q)
        with sqlite3.connect(q) as con:
            con.execute(
                "UPDATE TARGET_INFO_SYSTEM_ENV SET value = ? WHERE name = 'DeviceEnvironment'",
                (f"HOME=\0SLURM_JOB_ID={100 + r // 3}\0OMPI_COMM_WORLD_RANK={r}\0",),
            )
        copies.append(q)
    code, text = convert(["-t", "mpi", "-m", *copies, tmp_path / "out"], expect_ok=False)
    assert (
        code == 2 and len(text.strip().splitlines()) == 1 and "SLURM_JOB_ID=100" in text and "SLURM_JOB_ID=101" in text
    )


def test_far_apart_starts_refused(tmp_path):
    run = generate(tmp_path / "in", nranks=4, start_gap_ns=2 * 3600 * 10**9)
    code, text = convert(["-t", "mpi", "-m", *run.paths, tmp_path / "out"], expect_ok=False)
    lines = text.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "h apart" in lines[0] and "rank3.sqlite" in lines[0]
    convert_valid(["-t", "mpi", "--force", "-m", *run.paths], tmp_path / "forced")


def test_align_none_and_bad_method(tmp_path):
    run = generate(tmp_path / "in", nranks=2)
    _, summary = convert_valid(["-t", "mpi", "--align", "none", "-m", *run.paths], tmp_path / "none")
    assert summary["alignment"]["method"] == "none"
    assert [r["correction_ns"] for r in summary["alignment"]["reports"]] == [0, 0]
    code, text = convert(["--align", "ptp", "-m", *run.paths, tmp_path / "bad"], expect_ok=False)
    assert code == 2 and "unknown --align method 'ptp'" in text


def test_fit_of_many_ranks():
    """300 ranks x 600 sync points with offsets, drift and noise: offsets within 2 us (its time is a
    benchmark's business: scripts/bench_align.py, not a test's)."""
    rng = np.random.default_rng(3)
    n_rank, n_pt = 300, 600
    true_t = np.cumsum(rng.uniform(1e6, 3e6, n_pt))  # release times
    c = rng.uniform(-1e6, 1e6, n_rank)
    c[0] = 0
    k = rng.uniform(-1e-5, 1e-5, n_rank)
    k[0] = 0
    x_true = true_t[None, :] + rng.exponential(2e3, (n_rank, n_pt))
    e_true = x_true - rng.uniform(1e4, 1e6, (n_rank, n_pt))
    e_true = np.minimum(e_true, true_t[None, :] - 1)  # everyone entered before release
    to_local = lambda t: np.rint(t - c[:, None] - k[:, None] * t).astype(np.int64)  # noqa: E731
    sp = SyncPoints(
        np.arange(n_rank),
        np.arange(n_rank),
        [f"p#{i}" for i in range(n_pt)],
        to_local(e_true),
        to_local(x_true),
        np.ones(n_pt, bool),
        np.ones(n_pt, bool),
        ["mpi"],
    )
    res = fit_clocks(sp, P2P.empty(), np.zeros(n_rank, np.int64), 0)
    aligned = sp.exit + res.offsets[:, None] + np.rint(res.drift[:, None] * (sp.exit - res.t_ref[:, None]))
    err = np.median(aligned - x_true, axis=1)
    err -= err[0]
    # exits 1 ns after the last entry: any drift error leaves some constraints contradictory; they are
    # counted (and the offsets are not pushed around by a relaxation that cannot converge)
    assert np.abs(err).max() < 2_000 and res.violations_after < n_pt // 10


# ---------------------------------------------------------------------------------------------------
# causality, whatever the method (tests/data/pop4: the NVTX mark "tick" ends rank r's computation,
# 2 + 5 r ms into each iteration, before its Allreduce: a marker off the collectives)
POP4 = Path(__file__).parent / "data" / "pop4"


def _allreduce_violations(trace) -> tuple[int, int, int]:
    """From the written trace: (Allreduce instances, those a rank leaves before the last rank entered,
    the largest such gap in ns)."""
    iv = intervals(trace, list(R.MPI_TYPES))
    ar = iv[iv["label"] == "MPI_Allreduce"].sort_values(["task", "start"], kind="stable").copy()
    ar["k"] = ar.groupby("task").cumcount()
    g = ar.groupby("k")
    gap = (g["start"].max() - g["end"].min()).to_numpy()
    return len(gap), int((gap > 0).sum()), int(gap.max())


@pytest.mark.parametrize("method, violated", [("marker:tick", 10), ("session", 0), ("mpi", 0)])
def test_every_method_reports_the_causality_of_its_clocks(tmp_path, method, violated):
    if not (POP4 / "rank0.sqlite").exists():
        pytest.skip("tests/data/pop4 missing")
    paths = [POP4 / f"rank{r}.sqlite" for r in range(4)]
    convert(["-t", "mpi,nvtx", "--align", method, "-m", *paths, tmp_path / "o"])
    sync = json.loads((tmp_path / "o.sync.json").read_text())
    cau, notes = sync["causality"], " ".join(sync["notes"])
    trace = load_trace(str(tmp_path / "o"))
    n, bad, worst = _allreduce_violations(trace)
    # 12 Allreduce + MPI_Init + MPI_Finalize are checked; the marker's own constraints are all met
    assert cau["collectives_checked"] == 14 and n == 12
    assert cau["collectives_violated"] == violated
    if violated:
        # all 10 are Allreduces, as the written trace shows them (its times: the clocks, 1 ns grid)
        assert bad == violated and cau["collective_max_violation_ns"] == worst == 5_834_312
        assert (
            f"the {method} clocks break causality: 10 of 14 synchronising MPI/NCCL collective(s) have a "
            "rank leaving before the last rank entered (up to 5834.3 us)"
        ) in notes
    else:
        assert bad == 0 and cau["collective_max_violation_ns"] == 0
        assert "break causality" not in notes


def test_alignment_table_gives_units_and_counts_that_agree(tmp_path):
    """The printed table: spread and error in us with their meaning, no error for clocks that were not
    fitted (session), and the sync points counted the same way in the header and per report."""
    if not (POP4 / "rank0.sqlite").exists():
        pytest.skip("tests/data/pop4 missing")
    from click.testing import CliRunner

    from nsys2prv.cli import main

    paths = [str(POP4 / f"rank{r}.sqlite") for r in range(4)]
    res = CliRunner().invoke(main, ["-t", "mpi,nvtx", "-m", *paths, str(tmp_path / "o")], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert (
        "  clock alignment: session; 14 sync point(s) (12 estimate the offsets, 2 -- MPI_Init/MPI_Finalize -- "
        "only constrain them), 0 matched message(s); violated constraints 0 after the estimate, 0 after the "
        "fix"
    ) in lines
    assert (
        "  causality on these clocks: 0 of 14 MPI/NCCL collective(s) left by a rank before the last rank "
        "entered, 0 of 0 message(s) received before sent"
    ) in lines
    head = next(line for line in lines if line.lstrip().startswith("ranks"))
    assert "spread (us)" in head and "error (us)" in head and "(ns)" not in head.replace("correction (ns)", "")
    rows = [line.split() for line in lines if line.split()[:2] in (["0", "session"], ["3", "session"])]
    assert [(r[5], r[6], r[7]) for r in rows] == [("2190.4", "-", "12"), ("1310.4", "-", "12")]
    assert "how unevenly the ranks leave their collectives, not an alignment error" in res.output


def test_alignment_table_shows_each_method_whole(capsys):
    """A method longer than the column (a clock placed by the bounds, a session clock the sync points do
    not move) is shown whole, as OUT.sync.json has it: the column widens to the longest one."""
    from nsys2prv.pipeline.summary import _alignment_table

    bounds = "linear (bounds: the midpoint of the fastest exchanges each way)"
    kept = "session (the sync points do not move it significantly)"

    def rep(ranks, method, offset, correction, bound=None):
        r = {
            "ranks": ranks,
            "method": method,
            "session_offset_ns": offset,
            "correction_ns": correction,
            "drift_ppm": 0.0,
            "residual_spread_ns": 1500,
            "sync_points": 7,
        }
        return r | ({"bound_ns": bound} if bound is not None else {})

    al = {
        "method": "linear",
        "sync_points": 7,
        "messages": 3,
        "violations": {},
        "reports": [rep([0], kept, 0, 0), rep([1], bounds, 2_000_000_000, -4200, 2500)],
    }
    _alignment_table(al)
    lines = capsys.readouterr().out.splitlines()
    w = len(bounds)
    assert lines[1] == (
        f"  {'ranks':<10} {'method':<{w}} {'started (s)':>12} {'correction (ns)':>16} {'drift ppm':>10} "
        f"{'spread (us)':>12} {'error (us)':>11} {'points':>7}"
    )
    assert lines[2] == f"  {'0':<10} {kept:<{w}} {0.0:>12.6f} {0:>16} {0.0:>10.3f} {'1.5':>12} {'-':>11} {7:>7}"
    assert lines[3] == f"  {'1':<10} {bounds} {2.0:>12.6f} {-4200:>16} {0.0:>10.3f} {'1.5':>12} {'2.5':>11} {7:>7}"


def test_reports_one_hour_apart_are_one_run_a_nanosecond_more_is_refused():
    """The session-start check's boundary (model/align/session.py: more than an hour apart = not one run)."""
    from dataclasses import dataclass

    from nsys2prv.core.errors import UserError
    from nsys2prv.model.align.session import check_start_times

    @dataclass
    class Times:
        source: str
        session_start_ns: int
        hostname: str = "node01"
        time_normalized: bool = False
        time_shift_ns: int = 0

    hour = 3600 * 10**9
    assert check_start_times([Times("a", 10**18), Times("b", 10**18 + hour)], force=False) == []
    late = [Times("a", 10**18), Times("b", 10**18 + hour + 1)]
    with pytest.raises(UserError, match=r"reports started 1\.0 h apart \(a and b\): not one run; use --force"):
        check_start_times(late, force=False)
    assert check_start_times(late, force=True) == [
        "reports started 1.0 h apart (a and b): not one run (merged because of --force)"
    ]
