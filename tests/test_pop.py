"""POP efficiency metrics (nsys2prv/metrics): the worked example of docs/pop-metrics.md end to end
through the CLI under both NCCL rules, the host tree, regions and iterations, the scalability
subcommand, the table files, and property tests of the interval algebra.

Times in the generated reports are given in seconds (S ns) to read like the sheet.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from nsysgen import NsysBuilder

from nsys2prv.cli import main
from nsys2prv.core.classify import is_nccl
from nsys2prv.metrics import tables
from nsys2prv.metrics.measures import clip_to_windows, mask_durations, union
from nsys2prv.metrics.pop import DeviceIntervals, PopInputs, evaluate, spill_devices

S = 1_000_000_000
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"


def t(x: float) -> int:
    return int(round(x * S))


def build(
    path: Path,
    rank: int,
    host: str,
    kernels=(),
    memcpy=(),
    nccl=(),
    api=(),
    mpi=(),
    nvtx=(),
    device: int = 0,
    pid: int | None = None,
    osrt=(),
    sched=(),
) -> str:
    """One rank's report: kernels/memcpy/nccl = (stream, start, end[, name]) on ``device``;
    api = (start, end, name); mpi = (start, end); nvtx = (start, end, name) push/pop ranges;
    osrt = (start, end, name) OS runtime calls; sched = times of scheduling events (SCHED_EVENTS)."""
    b = NsysBuilder(path, host=host)
    pid = pid or 5000 + rank
    b.process(pid, "./train")
    b.mpi_rank(pid, pid, rank)
    c = 0
    for s, a, e, *name in kernels:
        c += 1
        b.kernel(pid, device, s, t(a), t(e), c, name[0] if name else "gemm")
    for s, a, e in memcpy:
        c += 1
        b.memcpy(pid, device, s, t(a), t(e), c, 1 << 20, copy_kind=1)
    for s, a, e in nccl:
        c += 1
        b.kernel(pid, device, s, t(a), t(e), c, NCCL)
    for a, e, name in api:
        c += 1
        b.cuda_api(pid, pid, name, t(a), t(e), 1000 + c)
    for a, e in mpi:
        b.mpi(pid, pid, "MPI_Allreduce", t(a), t(e), kind="coll", size=8, recv_size=8)
    for a, e, name in nvtx:
        b.nvtx_push(pid, pid, t(a), t(e), text=name)
    for a, e, name in osrt:
        b.osrt(pid, pid, name, t(a), t(e))
    for i, a in enumerate(sched):
        b._add(
            "SCHED_EVENTS",
            start=t(a),
            cpu=0,
            isSchedIn=int(i % 2 == 0),
            globalTid=b.gtid(pid, pid),
            threadState=None,
            threadBlock=None,
        )
    return str(b.save())


# ---------------------------------------------------------------------------------------------------
# docs/pop-metrics.md: 2 GPUs, 2 MPI ranks, T = 10 s.
WORKED = {
    0: dict(
        kernels=[(13, 0, 6), (14, 5, 7, "softmax")],
        memcpy=[(13, 6.5, 8)],
        nccl=[(15, 8, 9)],
        api=[(0, 1, "cudaLaunchKernel_v7000"), (7, 9, "cudaDeviceSynchronize_v3020")],
        mpi=[(9, 10)],
    ),
    1: dict(
        kernels=[(13, 0, 4), (14, 4.5, 5.5, "softmax")],
        memcpy=[(13, 5, 6)],
        nccl=[(15, 6, 9)],
        api=[(0, 1, "cudaLaunchKernel_v7000"), (5, 6, "cudaMemcpy_v3020")],
        mpi=[(7.5, 10)],
    ),
}


@pytest.fixture(scope="module")
def worked(tmp_path_factory):
    d = tmp_path_factory.mktemp("worked")
    return [build(d / f"rank{r}.sqlite", r, ("nodeA", "nodeB")[r], **WORKED[r]) for r in (0, 1)]


def run_cli(args, ok: bool = True):
    """The CLI on synthetic reports whose clocks are exact: session alignment (the expected values are
    stated in session time; `auto` would move the ranks onto their MPI exits)."""
    args = [str(a) for a in args]
    if "--align" not in args:
        args.append("--align=session")
    res = CliRunner().invoke(main, args, catch_exceptions=False)
    if ok:
        assert res.exit_code == 0, res.output
    return res


def pop_json(base: Path) -> dict:
    return json.loads(Path(f"{base}.pop.json").read_text())


EXPECTED_DEVICE = {  # rule -> (PE, LB, CommE, OrchE, U per GPU, X per GPU) from the sheet, §3 (a) and (b)
    "communication": (
        0.600,
        0.857,
        0.778,
        0.900,
        {"nodeA:GPU0": 7, "nodeB:GPU0": 5},
        {"nodeA:GPU0": 2, "nodeB:GPU0": 3.5},
    ),
    "useful": (0.800, 1.000, 0.889, 0.900, {"nodeA:GPU0": 8, "nodeB:GPU0": 8}, {"nodeA:GPU0": 1, "nodeB:GPU0": 0.5}),
}


@pytest.mark.parametrize("rule", ["communication", "useful"])
def test_worked_example_device_tree_both_nccl_rules(worked, tmp_path, rule):
    args = ["-q", "-m", *worked, tmp_path / "w"]
    if rule != "communication":  # the default rule is "communication"
        args = ["--nccl-as", rule, *args]
    run_cli(args)
    res = pop_json(tmp_path / "w")
    pe, lb, comm, orch, U, X = EXPECTED_DEVICE[rule]
    dev = res["device"]
    assert res["nccl_as"] == rule and dev["count"] == 2
    assert dev["parallel_efficiency"] == pytest.approx(pe, abs=1e-3)
    assert dev["load_balance"] == pytest.approx(lb, abs=1e-3)
    assert dev["communication_efficiency"] == pytest.approx(comm, abs=1e-3)
    assert dev["orchestration_efficiency"] == pytest.approx(orch, abs=1e-3)
    assert dev["load_balance"] * dev["communication_efficiency"] * dev["orchestration_efficiency"] == pytest.approx(
        dev["parallel_efficiency"], rel=1e-12
    )
    assert dev["useful_time_ns"] == {k: t(v) for k, v in U.items()}
    assert dev["data_movement_time_ns"] == {k: t(v) for k, v in X.items()}
    assert dev["active_time_ns"] == {"nodeA:GPU0": t(9), "nodeB:GPU0": t(8.5)}
    assert dev["global_efficiency"] == dev["parallel_efficiency"]  # single run: GE = PE
    assert dev["computation_scalability"] is None
    assert res["elapsed_ns"] == t(10) and res["scope"] == {"kind": "trace", "start_ns": 0, "end_ns": t(10)}
    # the other rule is reported alongside
    other = "useful" if rule == "communication" else "communication"
    assert dev["other_nccl_rule"]["nccl_as"] == other
    assert dev["other_nccl_rule"]["load_balance"] == pytest.approx(EXPECTED_DEVICE[other][1], abs=1e-3)
    assert f"--nccl-as {rule}" in res["definitions"]["nccl_kernels"]
    moved = {"communication": "memcpy, memset, NCCL kernels", "useful": "memcpy, memset"}[rule]
    assert (
        res["definitions"]["data_movement_time"]
        == f"X_d = |(union of {moved} on d) minus (union of useful kernels on d)|"
    )


def test_worked_example_host_tree(worked, tmp_path):
    run_cli(["-q", "-m", *worked, tmp_path / "w"])
    h = pop_json(tmp_path / "w")["host"]
    assert h["count"] == 2
    assert h["useful_time_ns"] == {"Rank 0": t(6), "Rank 1": t(5.5)}
    assert h["mpi_time_ns"] == {"Rank 0": t(1), "Rank 1": t(2.5)}
    assert h["offload_time_ns"] == {"Rank 0": t(3), "Rank 1": t(2)}
    assert h["outside_mpi_time_ns"] == {"Rank 0": t(9), "Rank 1": t(7.5)}
    assert h["mpi_parallel_efficiency"] == pytest.approx(16.5 / 20)  # 0.825
    assert h["mpi_load_balance"] == pytest.approx(8.25 / 9)  # 0.917
    assert h["mpi_load_balance_in"] == pytest.approx(1.0)  # one rank per node
    assert h["mpi_load_balance_out"] == pytest.approx(8.25 / 9)
    assert h["mpi_communication_efficiency"] == pytest.approx(0.9)
    assert h["device_offload_efficiency"] == pytest.approx(11.5 / 16.5)  # 0.697
    assert h["parallel_efficiency"] == pytest.approx(11.5 / 20)  # 0.575
    # ideal network: rank 1 enters the Allreduce at 7.5 and waits for rank 0 (9); both leave at 9 instead
    # of 10: T_ideal = 9, SerE = max OutsideMPI / T_ideal = 9 / 9, TrfE = T_ideal / T = 9 / 10
    assert h["ideal_elapsed_ns"] == t(9)
    assert h["serialization_efficiency"] == pytest.approx(1.0) and h["transfer_efficiency"] == pytest.approx(0.9)
    assert h["serialization_efficiency"] * h["transfer_efficiency"] == pytest.approx(h["mpi_communication_efficiency"])
    assert "replay_notes" not in h


def test_host_tree_one_node_splits_lb_in_and_excludes_cpu_only_processes(tmp_path):
    # Ranks 0 and 1 on one node with GPUs 0 and 1; rank 2 on the same node has no GPU (CPU-only).
    r0 = build(tmp_path / "r0.sqlite", 0, "nodeA", device=0, **WORKED[0])
    r1 = build(tmp_path / "r1.sqlite", 1, "nodeA", device=1, **WORKED[1])
    r2 = build(tmp_path / "r2.sqlite", 2, "nodeA", mpi=[(0, 10)])
    run_cli(["-q", "-m", r0, r1, r2, tmp_path / "n"])
    res = pop_json(tmp_path / "n")
    h, dev = res["host"], res["device"]
    assert res["excluded_processes"] == ["Rank 2"] and h["count"] == 2
    assert h["mpi_load_balance_in"] == pytest.approx(8.25 / 9)  # node mean 8.25 / max process 9
    assert h["mpi_load_balance_out"] == pytest.approx(1.0)  # one node
    assert h["mpi_load_balance_in"] * h["mpi_load_balance_out"] == pytest.approx(h["mpi_load_balance"])
    assert h["parallel_efficiency"] == pytest.approx(0.575)
    assert set(dev["useful_time_ns"]) == {"nodeA:GPU0", "nodeA:GPU1"}
    assert dev["parallel_efficiency"] == pytest.approx(0.6)


def test_same_device_id_on_one_host_is_one_gpu_with_a_note(tmp_path):
    # Two processes on one host both using device 0: one physical GPU, activity united, noted.
    r0 = build(tmp_path / "a.sqlite", 0, "nodeA", kernels=[(13, 0, 4)], mpi=[(4, 10)])
    r1 = build(tmp_path / "b.sqlite", 1, "nodeA", kernels=[(13, 2, 6)], mpi=[(6, 10)])
    run_cli(["-q", "-m", r0, r1, tmp_path / "s"])
    res = pop_json(tmp_path / "s")
    assert res["device"]["useful_time_ns"] == {"nodeA:GPU0": t(6)}
    assert res["devices"][0]["processes"] == ["Rank 0", "Rank 1"]
    assert any("used by 2 processes" in n for n in res["notes"])


def test_conversion_prints_table_and_advice(worked, tmp_path):
    out = run_cli(["-m", *worked, tmp_path / "w"]).output
    assert "POP metrics (NCCL kernels as communication; T = 10 s)" in out
    line = next(l for l in out.splitlines() if l.strip().startswith("Device Load balance"))
    assert line.split()[-1] == "85.71%"
    assert "advice:" in out and "GPU nodeA:GPU0 has the most useful time (7.000 s, mean 6.000 s)" in out
    assert "w.pop.json" in out


def test_tex_table_compiles_with_plain_pdflatex(regions, tmp_path):
    # several columns (whole run, --region, --iterations), booktabs only: pdflatex compiles it as it is
    pdflatex = shutil.which("pdflatex")
    if pdflatex is None:
        pytest.skip("pdflatex missing (apt-get install texlive-latex-base texlive-latex-recommended)")
    run_cli(["-q", "-m", *regions, "--region", "init", "--iterations", "step", "--warmup", "1", tmp_path / "r"])
    tex = (tmp_path / "r.pop.tex").read_text()
    assert "siunitx" not in tex and r"\begin{tabular}{lrrr}" in tex
    assert (
        r"\caption{POP metrics of r (NCCL kernels as communication). Columns: trace (the whole run), init, "
        r"step (iterations 2..3).}"
    ) in tex
    doc = tmp_path / "paper.tex"
    doc.write_text(
        "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n\\input{r.pop.tex}\n\\end{document}\n"
    )
    res = subprocess.run(
        [pdflatex, "-interaction=nonstopmode", "-halt-on-error", doc.name], cwd=tmp_path, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stdout[-2000:]
    assert (tmp_path / "paper.pdf").stat().st_size > 0
    assert "Output written on paper.pdf (1 page" in res.stdout
    assert "Overfull" not in res.stdout  # (\small: four columns fit an article's text width)


def test_gpus_that_only_copy_have_no_device_efficiency_but_a_reason(tmp_path):
    # both ranks' GPUs run copies and no kernel: device PE, LB, CommE are n/a with the reason (they read
    # 0.0, "fully inefficient"); orchestration (active / T) and the host tree's offload keep their meaning
    paths = [
        build(
            tmp_path / "rank0.sqlite", 0, "nodeA", memcpy=[(13, 0, 4)], api=[(0, 4, "cudaMemcpy_v3020")], mpi=[(8, 10)]
        ),
        build(
            tmp_path / "rank1.sqlite", 1, "nodeB", memcpy=[(13, 1, 3)], api=[(1, 3, "cudaMemcpy_v3020")], mpi=[(6, 10)]
        ),
    ]
    out = run_cli(["-m", *paths, tmp_path / "c"]).output
    res = pop_json(tmp_path / "c")
    d, h = res["device"], res["host"]
    assert res["elapsed_ns"] == t(10) and d["count"] == 2
    for key in ("parallel_efficiency", "load_balance", "communication_efficiency", "global_efficiency"):
        assert d[key] is None
    why = (
        "no compute kernel (NCCL kernels count as data movement) ran on any GPU in the analysed time, only data "
        "movement (memcpy/memset): there is no useful device time to measure efficiency against"
    )
    assert d["not_available"] == dict.fromkeys(
        ("parallel_efficiency", "load_balance", "communication_efficiency", "global_efficiency"), why
    )
    assert d["orchestration_efficiency"] == pytest.approx(0.4)
    assert d["active_time_ns"] == {"nodeA:GPU0": t(4), "nodeB:GPU0": t(2)}
    assert d["devices_without_useful_time"] == ["nodeA:GPU0", "nodeB:GPU0"]
    # host: outside MPI 8 and 5 s (rank 1 lives from 1 s), of it in CUDA API calls 4 and 2 s
    assert h["device_offload_efficiency"] == pytest.approx(7 / 13)
    assert h["mpi_parallel_efficiency"] == pytest.approx(13 / 20)
    rows = {r["metric"]: r for r in csv.DictReader(open(tmp_path / "c.pop.csv"))}
    assert (
        rows["device.parallel_efficiency"]["trace"] == ""
        and rows["device.orchestration_efficiency"]["trace"] == "0.400000"
    )
    assert (
        "  n/a: Device Parallel efficiency, Device Load balance, Device Communication efficiency, Device Global "
        f"efficiency: {why}"
    ) in out.splitlines()
    # one GPU copies only, the other computes: the metrics are measured, the idle GPU is named
    paths[1] = build(tmp_path / "rank1.sqlite", 1, "nodeB", kernels=[(13, 1, 3)], mpi=[(6, 10)])
    run_cli(["-q", "-m", *paths, tmp_path / "m"])
    d = pop_json(tmp_path / "m")["device"]
    assert d["devices_without_useful_time"] == ["nodeA:GPU0"] and "not_available" not in d
    assert (d["parallel_efficiency"], d["load_balance"]) == pytest.approx((2 / 20, 0.5))


def test_advice_items_carry_evidence(worked, tmp_path):
    run_cli(["-q", "-m", *worked, tmp_path / "w"])
    adv = {a["kind"]: a for a in pop_json(tmp_path / "w")["advice"]}
    assert adv["lowest_factor"]["evidence"]["metric"] == "host.device_offload_efficiency"
    assert adv["lowest_factor"]["evidence"]["value"] == pytest.approx(11.5 / 16.5)
    assert adv["straggling_gpu"]["evidence"]["device"] == "nodeA:GPU0"
    assert adv["straggling_gpu"]["evidence"]["useful_ns"] == t(7)
    assert adv["straggling_gpu"]["evidence"]["least_device"] == "nodeB:GPU0"
    ex = adv["exposed_communication"]["evidence"]
    assert (ex["device"], ex["exposed_data_movement_ns"], ex["exposed_nccl_ns"]) == ("nodeA:GPU0", t(2), t(1))
    assert adv["nccl_rule"]["evidence"]["other"]["load_balance"] == pytest.approx(1.0)
    assert "idle_before_first_kernel" not in adv  # kernels start at 0
    assert "straggling_rank" not in adv  # MPI LB 91.7% >= 90%


def test_table_files(worked, tmp_path):
    run_cli(["-q", "-m", *worked, tmp_path / "w"])
    rows = {r["metric"]: r for r in csv.DictReader(open(f"{tmp_path}/w.pop.csv"))}
    assert rows["device.load_balance"]["trace"] == "0.857143"
    assert rows["host.device_offload_efficiency"]["trace"] == "0.696970"
    assert rows["host.serialization_efficiency"]["trace"] == "1.000000"
    assert rows["host.transfer_efficiency"]["trace"] == "0.900000"
    assert rows["host.computation_scalability"]["trace"] == ""  # n/a: one run
    assert rows["device.count"]["trace"] == "2"
    md = Path(f"{tmp_path}/w.pop.md").read_text()
    assert "| Metric | trace |" in md
    assert "| &emsp;&emsp;Device Load balance | 85.71% |" in md
    assert "| &emsp;&emsp;&emsp;&emsp;Serialization efficiency | 100.00% |" in md
    assert "| &emsp;&emsp;&emsp;&emsp;Transfer efficiency | 90.00% |" in md
    tex = Path(f"{tmp_path}/w.pop.tex").read_text()
    for needle in (
        r"\usepackage{booktabs}",
        "\\centering\n\\small\n",
        r"\toprule",
        r"\midrule",
        r"\bottomrule",
        r"\begin{tabular}{lr}",
        r"Metric & trace \\",
        r"\hspace{2em}Device Load balance & 85.71\% \\",
        r"\hspace{2em}Device Offload efficiency & 69.70\% \\",
        r"Serialization efficiency & 100.00\% \\",
        r"\caption{POP metrics of w (NCCL kernels as communication).}",
        "% Device metrics after per-GPU union of kernel intervals over streams; data movement = memcpy/memset",
    ):
        assert needle in tex, needle
    # the long explanation is a comment block above the table, not the caption
    body = tex[tex.index(r"\begin{table}") :]
    assert "NCCL kernels not overlapped" in tex and "NCCL kernels not overlapped" not in body
    assert all(line.startswith("%") for line in tex[: tex.index(r"\begin{table}")].splitlines())
    png = Path(f"{tmp_path}/w.pop.png")
    summary = json.loads(Path(f"{tmp_path}/w.summary.json").read_text())
    assert {f"{tmp_path}/w.pop.{x}" for x in ("json", "csv", "md", "tex")} <= set(summary["outputs"])
    try:
        import matplotlib  # noqa: F401

        assert png.exists() and str(png) in summary["outputs"]
    except ImportError:
        assert not png.exists()
        out = run_cli(["-m", *worked, tmp_path / "w"]).output
        assert "note: w.pop.png not written: matplotlib is not installed (pip install matplotlib)" in out


def test_png_is_skipped_with_a_note_without_matplotlib(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    cols = [tables.column({"elapsed_ns": 1, "device": {"load_balance": 0.5}, "host": {}}, "run")]
    note = tables.write_png(cols, tmp_path / "x.pop.png")
    assert note == "x.pop.png not written: matplotlib is not installed (pip install matplotlib)"
    assert not (tmp_path / "x.pop.png").exists()


def test_pop_colours_follow_the_80_percent_convention():
    assert tables.colour(0.8, "pct") == tables.colour(1.0, "pct") != tables.colour(0.79, "pct")
    assert tables.colour(None, "pct") == tables.colour(3, "int")


# ---------------------------------------------------------------------------------------------------
# Process lifetimes and T.  Rank 0 runs [0, 10] (scheduling events at 0 and 10 s, read by no translator)
# and waits in MPI_Init [1, 4] for rank 1, which starts at 3 s (an OS runtime call) and ends at 8 s.
LIFE = {
    0: dict(
        sched=[0, 10],
        osrt=[(0.5, 1, "open")],
        mpi=[(1, 4), (6, 8)],
        api=[(4, 4.5, "cudaLaunchKernel_v7000")],
        kernels=[(13, 4, 6)],
    ),
    1: dict(
        osrt=[(3, 3.5, "open")], mpi=[(3.5, 4), (7, 8)], api=[(4, 5, "cudaLaunchKernel_v7000")], kernels=[(13, 4, 7)]
    ),
}


@pytest.fixture(scope="module")
def life(tmp_path_factory):
    d = tmp_path_factory.mktemp("life")
    return [build(d / f"rank{r}.sqlite", r, ("nodeA", "nodeB")[r], **LIFE[r]) for r in (0, 1)]


def test_lifetimes_and_elapsed_time(life, tmp_path):
    run_cli(["-q", "-m", *life, tmp_path / "l"])
    res = pop_json(tmp_path / "l")
    # T = the run's elapsed time [0, 10] (the scheduling events), not the span of the translated events [0.5, 8]
    assert res["elapsed_ns"] == t(10) and res["scope"] == {"kind": "trace", "start_ns": 0, "end_ns": t(10)}
    assert [(p["label"], p["start_ns"], p["end_ns"]) for p in res["processes"]] == [
        ("Rank 0", 0, t(10)),
        ("Rank 1", t(3), t(8)),
    ]
    h, d = res["host"], res["device"]
    assert h["alive_time_ns"] == {"Rank 0": t(10), "Rank 1": t(5)}
    assert h["not_alive_time_ns"] == {"Rank 0": 0, "Rank 1": t(5)}
    assert h["mpi_time_ns"] == {"Rank 0": t(5), "Rank 1": t(1.5)}
    assert h["outside_mpi_time_ns"] == {"Rank 0": t(5), "Rank 1": t(3.5)}  # alive - MPI
    assert h["offload_time_ns"] == {"Rank 0": t(0.5), "Rank 1": t(1)}
    assert h["useful_time_ns"] == {"Rank 0": t(4.5), "Rank 1": t(2.5)}
    assert h["mpi_parallel_efficiency"] == pytest.approx(8.5 / 20)
    assert h["mpi_load_balance"] == pytest.approx(4.25 / 5)
    assert h["mpi_communication_efficiency"] == pytest.approx(0.5)
    assert h["device_offload_efficiency"] == pytest.approx(7 / 8.5)
    assert h["parallel_efficiency"] == pytest.approx(7 / 20)
    assert d["useful_time_ns"] == {"nodeA:GPU0": t(2), "nodeB:GPU0": t(3)}
    assert (d["parallel_efficiency"], d["orchestration_efficiency"]) == pytest.approx((5 / 20, 3 / 10))
    assert d["idle_before_first_kernel_ns"] == {"nodeA:GPU0": t(4), "nodeB:GPU0": t(4)}
    assert "not started yet or already ended" in res["definitions"]["host_times"]
    assert "does not depend on -t" in res["definitions"]["elapsed_time"]
    adv = {a["kind"]: a for a in res["advice"]}
    late = adv["late_start"]
    assert late["evidence"] == {
        "process": "Rank 1",
        "start_delay_ns": t(3),
        "first_process": "Rank 0",
        "elapsed_ns": t(10),
        "all_ns": {"Rank 0": 0, "Rank 1": t(3)},
    }
    assert (
        late["message"].startswith("Rank 1 started 3.000 s (30.0% of the whole run's T) after Rank 0")
        and "--region or --iterations/--warmup" in late["message"]
    )
    assert adv["early_end"]["evidence"]["process"] == "Rank 1"
    assert adv["early_end"]["evidence"]["end_advance_ns"] == t(2)


def test_no_late_start_advice_within_ten_percent(tmp_path):
    r0 = build(tmp_path / "a.sqlite", 0, "nodeA", kernels=[(13, 1, 2)], mpi=[(0, 1), (2, 10)])
    r1 = build(tmp_path / "b.sqlite", 1, "nodeB", kernels=[(13, 1, 2)], mpi=[(0.9, 1), (2, 10)])
    run_cli(["-q", "-m", r0, r1, tmp_path / "n"])
    res = pop_json(tmp_path / "n")
    assert [p["start_ns"] for p in res["processes"]] == [0, t(0.9)]
    assert not {"late_start", "early_end"} & {a["kind"] for a in res["advice"]}


@pytest.mark.parametrize("categories", ["mpi", "cuda_api,osrt", "nvtx", "all,osrt"])
def test_pop_json_is_the_same_whatever_t(life, tmp_path, categories):
    # -t chooses what goes into the trace, never the metrics: OUT.pop.json is byte-identical
    run_cli(["-q", "-m", *life, tmp_path / "ref" / "l"])
    run_cli(["-q", "-t", categories, "-m", *life, tmp_path / "t" / "l"])
    assert Path(f"{tmp_path}/t/l.pop.json").read_bytes() == Path(f"{tmp_path}/ref/l.pop.json").read_bytes()


def test_pop_subcommand_has_the_lifetimes(life, tmp_path):
    run_cli(["-q", "-m", *life, tmp_path / "l"])
    run_cli(["pop", "-q", str(Path(life[0]).parent / "rank*.sqlite"), "-o", tmp_path / "s"])
    conv, run = pop_json(tmp_path / "l"), pop_json(tmp_path / "s")["runs"][0]
    assert run["elapsed_ns"] == conv["elapsed_ns"] == t(10)
    assert run["host"]["not_alive_time_ns"] == conv["host"]["not_alive_time_ns"] == {"Rank 0": 0, "Rank 1": t(5)}


def test_pop_subcommand_takes_the_conversions_device_route(tmp_path, monkeypatch):
    """`nsys2prv pop` on reports measures the GPUs as a conversion does: every report's GPU intervals
    in a file (of a temporary directory, removed), read a GPU at a time -- a GPU two ranks share too."""
    from nsys2prv.metrics import pop
    from nsys2prv.pipeline import parallel

    ranks = [build(tmp_path / f"rank{r}.sqlite", r, "nodeA", **WORKED[r]) for r in (0, 1)]  # both on GPU 0
    paths = []
    real = pop.spill_devices
    monkeypatch.setattr(pop.partial, "spill_devices", lambda *a: paths.append(a[-1]) or real(*a))
    monkeypatch.setenv("NSYS2PRV_IN_PROCESS", "1")  # one job, in this process: the spy sees the calls
    monkeypatch.setattr(parallel, "default_jobs", lambda: 1)
    run_cli(["-q", "-m", *ranks, tmp_path / "c"])
    run_cli(["pop", "-q", str(tmp_path / "rank*.sqlite"), "-o", tmp_path / "s"])
    conv, run = pop_json(tmp_path / "c"), pop_json(tmp_path / "s")["runs"][0]
    assert [d["processes"] for d in conv["devices"]] == [["Rank 0", "Rank 1"]]
    assert run["device"] == conv["device"] and conv["device"]["useful_time_ns"] == {"nodeA:GPU0": t(7)}
    assert len(paths) == 4 and all(p.endswith(".pop.npy") and not Path(p).exists() for p in paths)
    assert not Path(paths[-1]).parent.exists()


def test_filter_window_cuts_lifetimes(life, tmp_path):
    # -f: T is the part of the run inside the window; rank 1 (alive [3, 8]) is alive 2 s of [1, 6] (T = 5)
    a = build(tmp_path / "a.sqlite", 0, "nodeA", **LIFE[0], nvtx=[(1, 6, "w")])
    b = build(tmp_path / "b.sqlite", 1, "nodeB", **LIFE[1], nvtx=[(3, 3.2, "w")])
    run_cli(["-q", "-m", a, b, "-f", "w", tmp_path / "f"])
    res = pop_json(tmp_path / "f")
    assert res["elapsed_ns"] == t(5) and res["scope"]["filter_nvtx"] == "w"
    assert res["host"]["alive_time_ns"] == {"Rank 0": t(5), "Rank 1": t(3)}
    assert res["host"]["outside_mpi_time_ns"] == {"Rank 0": t(2), "Rank 1": t(2.5)}
    out = run_cli(["-m", a, b, "-f", "w", tmp_path / "f"]).output
    assert (
        "T = 5.000000 s: the run's elapsed time (first to last activity of the processes inside the -f "
        "window of NVTX range 'w', trace time 0.000000 .. 5.000000 s); the Paraver trace is " in out
    )
    assert "(from its time 0, the -f window start, to its last record)" in out


MPI4 = sorted(str(p) for p in (Path(__file__).parent / "data" / "mpi4").glob("rank*.sqlite"))


def test_real_mpi4_pop_is_the_same_whatever_t_and_fits_the_lifetimes(tmp_path):
    outs = {}
    for cats in ("mpi", "nvtx"):
        res = CliRunner().invoke(main, ["-t", cats, "-m", *MPI4, str(tmp_path / cats / "o")], catch_exceptions=False)
        assert res.exit_code == 0, res.output
        outs[cats] = res.output
    assert Path(f"{tmp_path}/mpi/o.pop.json").read_bytes() == Path(f"{tmp_path}/nvtx/o.pop.json").read_bytes()
    res = pop_json(tmp_path / "nvtx" / "o")
    h, T = res["host"], res["elapsed_ns"]
    # the SQL lifetimes of the reports (every event table), moved by the clock offsets of the trace
    sync = json.loads(Path(f"{tmp_path}/nvtx/o.sync.json").read_text())
    offsets = [r["trace_offset_ns"] for r in sync["reports"]]
    import sqlite3

    for p, path, off in zip(res["processes"], MPI4, offsets):
        con = sqlite3.connect(path)
        # (PROFILER_OVERHEAD, nsys's own start-up inside the process, does not count)
        lo = min(con.execute(f"SELECT min(start) FROM {tb}").fetchone()[0] for tb in ("NVTX_EVENTS", "OSRT_API"))
        hi = max(
            con.execute(f"SELECT max(coalesce(end, start)) FROM {tb}").fetchone()[0]
            for tb in ("NVTX_EVENTS", "OSRT_API")
        )
        con.close()
        assert (p["start_ns"], p["end_ns"]) == (lo + off, hi + off)
        alive = p["end_ns"] - p["start_ns"]
        assert h["alive_time_ns"][p["label"]] == alive
        assert 0 <= h["outside_mpi_time_ns"][p["label"]] <= alive
        assert h["not_alive_time_ns"][p["label"]] == T - alive
    assert T == max(p["end_ns"] for p in res["processes"]) - min(p["start_ns"] for p in res["processes"])
    assert res["host"]["mpi_load_balance"] is not None  # MPI read whatever -t (here: nvtx only)
    # n/a reasons and notes are printed under the table
    for out in outs.values():
        assert "n/a: every device metric: no GPU activity in the analysed time" in out
        assert "note: no process owns a GPU stream: the host tree counts every process" in out
        assert "Paraver trace length" in out and "T = " in out
    assert "late_start" in {a["kind"] for a in res["advice"]}


# ---------------------------------------------------------------------------------------------------
# Regions and iterations.  NVTX "init" [0,2] then "step" x3; rank 1's third step ends later (12 s).
REGIONS = {
    0: dict(
        kernels=[(13, 0.5, 1), (13, 2, 4), (13, 5, 7.5), (13, 8, 10)],
        mpi=[(4, 5), (7.5, 8), (10, 11)],
        api=[(1, 2, "cudaMalloc_v3020")],
        nvtx=[(0, 2, "init"), (2, 5, "step"), (5, 8, "step"), (8, 11, "step")],
    ),
    1: dict(
        kernels=[(13, 3, 4), (13, 5, 6), (13, 8, 11.5)],
        mpi=[(4, 5), (6, 8), (11.5, 12)],
        nvtx=[(0, 2, "init"), (2, 5, "step"), (5, 8, "step"), (8, 12, "step")],
    ),
}


@pytest.fixture(scope="module")
def regions(tmp_path_factory):
    d = tmp_path_factory.mktemp("regions")
    return [build(d / f"rank{r}.sqlite", r, ("nodeA", "nodeB")[r], **REGIONS[r]) for r in (0, 1)]


def _factors(m: dict) -> tuple:
    d, h = m["device"], m["host"]
    return (
        m["elapsed_ns"] / S,
        d["parallel_efficiency"],
        d["load_balance"],
        d["communication_efficiency"],
        d["orchestration_efficiency"],
        h["mpi_parallel_efficiency"],
        h["mpi_load_balance"],
        h["mpi_communication_efficiency"],
        h["device_offload_efficiency"],
    )


def test_each_region_adds_its_column_and_a_repeat_is_an_error(regions, tmp_path):
    run_cli(["-q", "-m", *regions, "--region", "step", "--region", "init", tmp_path / "r"])
    res = pop_json(tmp_path / "r")
    step, init = res["regions"]
    assert (step["name"], step["kind"], step["occurrences"]) == ("step", "region", 3)
    assert step["windows_ns"] == [[t(2), t(12)]] and step["elapsed_ns"] == t(10)
    assert init["name"] == "init" and init["windows_ns"] == [[0, t(2)]]
    assert _factors(init) == pytest.approx((2, 0.125, 0.5, 1, 0.25, 1, 1, 1, 0.75))
    assert sorted(res["definitions"]["region"]) == ["init", "step"]
    head = next(csv.reader(open(f"{tmp_path}/r.pop.csv")))
    assert head == ["metric", "label", "trace", "step", "init"]
    assert "| Metric | trace | step | init |" in open(f"{tmp_path}/r.pop.md").read()
    bad = run_cli(["-q", "-m", *regions, "--region", "init", "--region", "init", tmp_path / "x"], ok=False)
    assert bad.exit_code == 2
    assert "--region init is given twice (each --region adds one column)" in bad.output
    assert not (tmp_path / "x.prv").exists()


def test_whole_trace_region_and_iterations(regions, tmp_path):
    run_cli(["-q", "-m", *regions, "--region", "init", "--iterations", "step", "--warmup", "1", tmp_path / "r"])
    res = pop_json(tmp_path / "r")
    # whole trace [0, 12]: U = 7, 5.5
    assert _factors(res)[:5] == pytest.approx((12, 12.5 / 24, 6.25 / 7, 1, 7 / 12))
    reg, steady = res["regions"]
    # --region init: T = 2, U = 0.5, 0; no MPI inside; rank 0 in cudaMalloc for 1 s
    assert reg["name"] == "init" and reg["windows_ns"] == [[0, t(2)]]
    assert _factors(reg) == pytest.approx((2, 0.125, 0.5, 1, 0.25, 1, 1, 1, 0.75))
    assert reg["host"]["parallel_efficiency"] == pytest.approx(0.75)
    # iterations 2..3 (warm-up 1): windows [5,8] and [8,12] (rank 1's third step ends at 12)
    it = res["iterations"]
    assert (it["name"], it["warmup"], it["count"]) == ("step", 1, 2)
    assert [(r["index"], r["start_ns"], r["end_ns"]) for r in it["table"]] == [(2, t(5), t(8)), (3, t(8), t(12))]
    assert _factors(it["table"][0]) == pytest.approx((3, 3.5 / 6, 0.7, 1, 2.5 / 3, 3.5 / 6, 0.7, 2.5 / 3, 1))
    # rank 0 ends at 11 s (its last MPI call): in [8, 12] it is alive 3 s, 1 s of it in MPI -> outside MPI 2, 3.5
    assert _factors(it["table"][1]) == pytest.approx((4, 5.5 / 8, 2.75 / 3.5, 1, 0.875, 5.5 / 8, 2.75 / 3.5, 0.875, 1))
    assert it["table"][1]["host"]["not_alive_time_ns"] == {"Rank 0": t(1), "Rank 1": 0}
    # steady state = union [5, 12]: U = 4.5, 4.5; alive 6, 7; outside MPI = 4.5, 4.5
    assert steady["kind"] == "iterations" and steady["name"] == "step (iterations 2..3)"
    assert _factors(steady) == pytest.approx((7, 9 / 14, 1, 1, 4.5 / 7, 9 / 14, 1, 4.5 / 7, 1))
    assert steady["host"]["alive_time_ns"] == {"Rank 0": t(6), "Rank 1": t(7)}
    # per-iteration CSV and the region columns of the tables
    iters = list(csv.DictReader(open(f"{tmp_path}/r.pop.iterations.csv")))
    assert [r["iteration"] for r in iters] == ["2", "3"]
    assert float(iters[0]["device.load_balance"]) == pytest.approx(0.7)
    head = next(csv.reader(open(f"{tmp_path}/r.pop.csv")))
    assert head == ["metric", "label", "trace", "init", "step (iterations 2..3)"]
    assert "iteration k = the k-th occurrences' span" in res["definitions"]["iterations"]


def test_idle_before_first_kernel_advice(regions, tmp_path):
    run_cli(["-q", "-m", *regions, tmp_path / "r"])
    res = pop_json(tmp_path / "r")
    assert res["device"]["idle_before_first_kernel_ns"] == {"nodeA:GPU0": t(0.5), "nodeB:GPU0": t(3)}
    adv = {a["kind"]: a for a in res["advice"]}["idle_before_first_kernel"]
    assert adv["evidence"]["device"] == "nodeB:GPU0" and adv["evidence"]["idle_before_first_kernel_ns"] == t(3)


def test_regions_need_no_nvtx_in_the_trace(regions, tmp_path):
    # the NVTX ranges of --region/--iterations are read for the metrics even when -t leaves NVTX out
    args = ["--region", "init", "--iterations", "step", "--warmup", "1"]
    run_cli(["-q", "-m", *regions, *args, tmp_path / "all" / "r"])
    run_cli(["-q", "-t", "mpi", "-m", *regions, *args, tmp_path / "mpi" / "r"])
    assert Path(f"{tmp_path}/mpi/r.pop.json").read_bytes() == Path(f"{tmp_path}/all/r.pop.json").read_bytes()


def test_all_iterations_without_warmup(regions, tmp_path):
    run_cli(["-q", "-m", *regions, "--iterations", "step", tmp_path / "r"])
    first = pop_json(tmp_path / "r")["iterations"]["table"][0]
    assert first["index"] == 1 and _factors(first)[:5] == pytest.approx((3, 0.5, 0.75, 1, 2 / 3))


@pytest.mark.parametrize(
    "args, message",
    [
        (["--region", "nope"], "NVTX range 'nope' (--region) not found"),
        (["--warmup", "1"], "--warmup needs --iterations NAME"),
        (["--iterations", "step", "--warmup", "3"], "--warmup 3 leaves no iteration ('step' occurs 3 times)"),
    ],
)
def test_region_errors_write_nothing(regions, tmp_path, args, message):
    res = run_cli(["-q", "-m", *regions, *args, tmp_path / "o" / "r"], ok=False)
    assert res.exit_code == 2 and message in res.output
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").iterdir())


@pytest.mark.parametrize("many", [False, True])
def test_pop_beside_the_merge_gives_the_same_metrics_and_errors(regions, tmp_path, monkeypatch, many):
    """After the GPUs (what the merge needs of POP), the rest of the reduction runs while the merge's
    forked processes run (relayed blocks: this process formats none, so nothing is taken off a part
    of its own), or with many reports in a forked process of its own.  The same OUT.pop.json as when
    it runs before a merge that is not split (-j 1), and a POP error is the same one-line error,
    nothing written."""
    import nsys2prv.pipeline.conversion as P
    from nsys2prv.paraver import merge as M
    from nsys2prv.paraver import writer as W

    args = ["-q", "-m", *regions, "--region", "init", "--iterations", "step"]
    run_cli([*args, "-j", "1", tmp_path / "one" / "r"])
    real, asked = M.split_times, []
    monkeypatch.setattr(
        M,
        "split_times",
        lambda c, p, first_less=0: asked.append(first_less) or real(c, p, first_less),
    )
    monkeypatch.setattr(W, "MIN_SPLIT", 1)
    monkeypatch.setattr(P, "FORK_HEAVY_FROM_REPORTS", 2 if many else 10**9)
    run_cli([*args, "-j", "2", tmp_path / "two" / "r"])
    # the merge was cut (into blocks), with nothing taken off for the reduction beside it
    assert asked == [0]
    one, two = pop_json(tmp_path / "one" / "r"), pop_json(tmp_path / "two" / "r")
    assert one == two
    res = run_cli([*args[:-4], "--region", "nope", "-j", "2", tmp_path / "bad" / "r"], ok=False)
    assert res.exit_code == 2 and res.output.strip().splitlines() == [
        "nsys2prv: error: NVTX range 'nope' (--region) not found in any report (push/pop or start/end ranges "
        "of any domain but MPI/NCCL)"
    ]
    assert not (tmp_path / "bad").exists() or not list((tmp_path / "bad").iterdir())


# ---------------------------------------------------------------------------------------------------
# Scalability: reference = the worked example (2 GPUs, sum U = 12 s, T = 10 s, host useful 11.5 s);
# run B = 4 ranks on 4 GPUs, one 3.3 s kernel each, T = 6 s (sum U = 13.2 s, Device PE = 0.55), host
# useful 6 - 1 (MPI) - 0.5 (CUDA API) = 4.5 s per rank.
@pytest.fixture(scope="module")
def runs(tmp_path_factory, worked):
    d = tmp_path_factory.mktemp("scaling")
    run_cli(["-q", "-m", *worked, d / "a" / "a"])
    for r in range(4):
        build(
            d / "b" / f"rank{r}.sqlite",
            r,
            f"node{r // 2}",
            device=r % 2,
            kernels=[(13, 1, 4.3)],
            api=[(0, 0.5, "cudaLaunchKernel_v7000")],
            mpi=[(5, 6)],
        )
    return str(d / "a" / "a.pop.json"), str(d / "b" / "rank*.sqlite")


@pytest.mark.parametrize(
    "mode, expected",
    [
        # (device CompS, device GE, host CompS, host GE, speedup, efficiency) of run B
        ("strong", (12 / 13.2, 0.55 * 12 / 13.2, 11.5 / 18, 0.75 * 11.5 / 18, 10 / 6, 10 / 6 * 2 / 4)),
        ("weak", (12 / 13.2 * 2, 0.55 * 12 / 13.2 * 2, 11.5 / 18 * 2, 0.75 * 11.5 / 18 * 2, 10 / 6 * 2, 10 / 6)),
    ],
)
def test_scalability_subcommand(runs, tmp_path, mode, expected):
    out = run_cli(["pop", *runs, "--scaling", mode, "--labels", "2GPU,4GPU", "-o", tmp_path / "s"]).output
    res = pop_json(tmp_path / "s")
    assert res["scaling"] == mode and res["reference"] == "2GPU" and res["nccl_as"] == "communication"
    a, b = res["runs"]
    assert (a["device"]["computation_scalability"], a["host"]["computation_scalability"]) == (1.0, 1.0)
    assert a["device"]["global_efficiency"] == pytest.approx(0.6)
    assert a["host"]["global_efficiency"] == pytest.approx(0.575)
    assert (a["speedup"], a["efficiency"]) == (1.0, 1.0)
    assert b["device"]["parallel_efficiency"] == pytest.approx(0.55)
    assert b["host"]["parallel_efficiency"] == pytest.approx(0.75)
    got = (
        b["device"]["computation_scalability"],
        b["device"]["global_efficiency"],
        b["host"]["computation_scalability"],
        b["host"]["global_efficiency"],
        b["speedup"],
        b["efficiency"],
    )
    assert got == pytest.approx(expected)
    assert f"POP scalability ({mode} scaling, reference 2GPU" in out
    tex = Path(f"{tmp_path}/s.pop.tex").read_text()
    assert r"Metric & 2GPU & 4GPU \\" in tex and r"\begin{tabular}{lrr}" in tex
    assert f"Scaling mode: {mode} (stated, not detected); reference = 2GPU" in tex
    md = Path(f"{tmp_path}/s.pop.md").read_text()
    assert f"| &emsp;Device Computation scalability | 100.00% | {100 * expected[0]:.2f}% |" in md
    rows = {r["metric"]: r for r in csv.DictReader(open(f"{tmp_path}/s.pop.csv"))}
    assert float(rows["speedup"]["4GPU"]) == pytest.approx(expected[4], abs=1e-6)


def test_scalability_needs_explicit_mode_and_matching_labels(runs, tmp_path):
    res = run_cli(["pop", *runs, "-o", tmp_path / "s"], ok=False)
    assert res.exit_code == 2 and "give --scaling strong or --scaling weak" in res.output
    res = run_cli(["pop", *runs, "--scaling", "strong", "--labels", "x", "-o", tmp_path / "s"], ok=False)
    assert res.exit_code == 2 and "--labels has 1 label(s) for 2 run(s)" in res.output
    res = run_cli(["pop", str(tmp_path / "none*.sqlite"), "-o", tmp_path / "s"], ok=False)
    assert res.exit_code == 2 and "matches no file" in res.output


def test_scalability_refuses_a_run_without_its_nccl_rule_beside_one_with_it(runs, tmp_path):
    old = json.loads(Path(runs[0]).read_text())
    del old["nccl_as"]  # (a result that does not record its rule)
    (tmp_path / "old.pop.json").write_text(json.dumps(old))
    res = run_cli(
        ["pop", str(tmp_path / "old.pop.json"), runs[1], "--scaling", "strong", "-o", tmp_path / "s"], ok=False
    )
    assert (
        res.exit_code == 2
        and "runs were computed with different --nccl-as rules (communication, not recorded)" in res.output
    ), res.output


def test_scalability_default_labels_and_help(runs, tmp_path):
    run_cli(["pop", "-q", *runs, "--scaling", "strong", "-o", tmp_path / "s"])
    assert [r["label"] for r in pop_json(tmp_path / "s")["runs"]] == ["2 proc [2 GPU]", "4 proc [4 GPU]"]
    out = subprocess.run(
        [sys.executable, "-m", "nsys2prv", "pop", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "Usage: nsys2prv pop [OPTIONS] RUN..." in out and "--scaling [strong|weak]" in out


# ---------------------------------------------------------------------------------------------------
# Unit and property tests of the interval algebra and the trees.
def test_is_nccl_is_case_insensitive():
    assert is_nccl(["ncclDevKernel_AllReduce", "NCCLKernel", "gemm", None]).tolist() == [True, True, False, False]
    assert is_nccl([]).tolist() == []


@pytest.fixture(scope="module")
def spill_dir(tmp_path_factory):
    """Where the property tests' GPU intervals go (a file, as the workers write them)."""
    return tmp_path_factory.mktemp("spill")


def _inputs(spill_dir, dev_rows, host_rows, n_dev, n_proc, t1, nodes=None, nccl_as="communication") -> PopInputs:
    def arr(rows, i):
        return np.array([r[i] for r in rows], np.int64)

    g, s, e, c = (arr(dev_rows, i) for i in range(4))
    spills = spill_devices(g, np.zeros(len(g), np.int64), c, s, e, str(spill_dir / "dev.npy"))
    runs = spills[0].runs if spills else np.zeros((0, 4), np.int64)
    dev = DeviceIntervals(
        spills, np.stack([runs[:, 0], np.zeros(len(runs), np.int64), runs[:, 2], runs[:, 3]], axis=1), n_dev
    )
    host = tuple(arr(host_rows, i) for i in range(4))
    nodes = nodes or [0] * n_proc
    return PopInputs(
        0,
        t1,
        nccl_as,
        [{"label": f"G{i}"} for i in range(n_dev)],
        dev,
        [{"label": f"P{i}", "node": nodes[i]} for i in range(n_proc)],
        host,
        True,
        True,
        [],
        [],
    )


def _brute_union(rows, t1) -> int:
    line = np.zeros(t1, bool)
    for _, s, e, _ in rows:
        line[s:e] = True
    return int(line.sum())


interval = st.tuples(st.integers(0, 60), st.integers(0, 20)).map(lambda x: (x[0], x[0] + x[1]))
dev_row = st.tuples(st.integers(0, 2), interval, st.integers(0, 2)).map(lambda x: (x[0], *x[1], x[2]))
host_row = st.tuples(st.integers(0, 2), interval, st.integers(0, 1)).map(lambda x: (x[0], *x[1], x[2]))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(dev_row, max_size=25),
    st.lists(host_row, max_size=25),
    st.sampled_from(["communication", "useful"]),
    st.lists(st.integers(0, 1), min_size=3, max_size=3),
)
def test_property_trees(spill_dir, dev_rows, host_rows, rule, nodes):
    T = 81
    inp = _inputs(spill_dir, dev_rows, host_rows, 3, 3, T, nodes, rule)
    m = evaluate(inp, [0], [T])[0]
    d, h = m["device"], m["host"]
    useful_cls = {0} if rule == "communication" else {0, 2}
    moved = any(r[2] > r[1] for r in dev_rows)
    if moved and not any(r[3] in useful_cls and r[2] > r[1] for r in dev_rows):
        # GPUs that only moved data: no useful device time, the device factors but orchestration are n/a
        assert set(d["not_available"]) == {
            "parallel_efficiency",
            "load_balance",
            "communication_efficiency",
            "global_efficiency",
        }
        assert all(d[k] is None for k in d["not_available"])
        d = {**d, "parallel_efficiency": 0.0, "load_balance": 1.0, "communication_efficiency": 0.0}
        assert d["orchestration_efficiency"] > 0
    factors = [
        d[k] for k in ("parallel_efficiency", "load_balance", "communication_efficiency", "orchestration_efficiency")
    ]
    factors += [
        h[k]
        for k in (
            "parallel_efficiency",
            "mpi_parallel_efficiency",
            "mpi_load_balance",
            "mpi_load_balance_in",
            "mpi_load_balance_out",
            "mpi_communication_efficiency",
            "device_offload_efficiency",
        )
    ]
    assert all(0.0 <= f <= 1.0 + 1e-12 for f in factors), factors
    assert d["load_balance"] * d["communication_efficiency"] * d["orchestration_efficiency"] == pytest.approx(
        d["parallel_efficiency"], rel=1e-9, abs=1e-12
    )
    assert h["mpi_load_balance_in"] * h["mpi_load_balance_out"] == pytest.approx(h["mpi_load_balance"], rel=1e-9)
    assert h["mpi_parallel_efficiency"] * h["device_offload_efficiency"] == pytest.approx(
        h["parallel_efficiency"], rel=1e-9, abs=1e-12
    )
    for g in range(3):  # exact against a brute-force timeline
        mine = [r for r in dev_rows if r[0] == g]
        U = _brute_union([r for r in mine if r[3] in useful_cls], T)
        A = _brute_union(mine, T)
        assert d["useful_time_ns"][f"G{g}"] == U
        assert d["active_time_ns"][f"G{g}"] == A
        assert d["data_movement_time_ns"][f"G{g}"] == A - U


@settings(max_examples=200, deadline=None)
@given(st.lists(interval, min_size=1, max_size=20), st.lists(interval, max_size=20))
def test_property_overlapping_streams_never_exceed_one(spill_dir, s1, s2):
    # kernels on two streams of ONE GPU, overlapping at will: utilisation U/T stays <= 1, U is the union
    T = 81
    rows = [(0, s, e, 0) for s, e in s1 + s2]
    d = evaluate(_inputs(spill_dir, rows, [], 1, 0, T), [0], [T])[0]["device"]
    assert d["useful_time_ns"]["G0"] == _brute_union(rows, T) <= T
    assert 0 <= d["parallel_efficiency"] <= 1 and d["orchestration_efficiency"] <= 1


@settings(max_examples=200, deadline=None)
@given(st.lists(dev_row, max_size=25), st.lists(interval, min_size=1, max_size=6))
def test_property_windows_add_up(dev_rows, wins):
    # per-window durations over disjoint windows sum to the duration over their union
    lo, hi = union([w[0] for w in wins], [w[1] for w in wins])
    g = np.array([r[0] for r in dev_rows], np.int64)
    s = np.array([r[1] for r in dev_rows], np.int64)
    e = np.array([r[2] for r in dev_rows], np.int64)
    c = np.array([r[3] for r in dev_rows], np.int64)
    row, win, cs, ce = clip_to_windows(s, e, lo, hi)
    per = mask_durations(win * 3 + g[row], cs, ce, c[row], 3 * len(lo), 3).reshape(len(lo), 3, 8)
    agg = mask_durations(g[row], cs, ce, c[row], 3, 3)
    assert (per.sum(axis=0)[:, 1:] == agg[:, 1:]).all()
    assert ((ce - cs) <= (hi[win] - lo[win])).all() and (cs >= lo[win]).all() and (ce <= hi[win]).all()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(-50, 50), st.integers(0, 20)), min_size=1, max_size=40),
    st.sampled_from([1, 10**9, 10**17]),
)
def test_group_time_order_is_lexsorts(rows, scale):
    """mask_durations' sweep order: one stable sort of a (group, time) key where it fits int64, else
    lexsort (times 10**17 apart over 4 groups do not fit) -- the same permutation either way."""
    from nsys2prv.metrics.measures import _group_time_order

    g = np.array([r[0] for r in rows], np.int64)
    s = np.array([r[1] for r in rows], np.int64) * scale
    t2 = np.concatenate([s, s + np.array([r[2] for r in rows], np.int64)])
    want = np.lexsort((t2, np.concatenate([g, g])))
    assert (_group_time_order(g, t2, 4) == want).all()
    assert (_group_time_order(g, t2, int(g.max()) + 1) == want).all()


def test_devices_are_measured_one_gpu_at_a_time(tmp_path):
    """Every report's GPU intervals go to a file (spill_devices); the main process reads one GPU's --
    all reports' rows of one (node, GPU id) -- at a time (gather_devices, measure_devices) and gets
    exactly the measures of all intervals at once; the files go with discard."""
    from types import SimpleNamespace as NS

    from nsys2prv.metrics.pop import gather_devices, measure_devices

    rng = np.random.default_rng(28)
    tasks = [NS(node=n, label=f"T{i}") for i, n in enumerate((0, 0, 1))]  # tasks 0 and 1 share node 0
    model = NS(tasks=tasks, nodes=["a", "b"])
    every, parts = [], []
    for report, (task, gpus) in enumerate(((0, (0, 1)), (1, (1,)), (2, (1,)))):  # a:GPU1 shared, b:GPU1 alone
        n = 300
        dev = rng.choice(gpus, n).astype(np.int64)
        s = rng.integers(0, 10_000, n)
        e = s + rng.integers(0, 500, n)
        c = rng.integers(0, 3, n)
        every.append((tasks[task].node * 10 + dev, s, e, c))
        parts.append(NS(dev=spill_devices(dev, np.full(n, task, np.int64), c, s, e, str(tmp_path / f"r{report}.npy"))))
    devices, notes, dev = gather_devices(parts, model)
    assert [d["label"] for d in devices] == ["a:GPU0", "a:GPU1", "b:GPU1"]
    assert [d["processes"] for d in devices] == [["T0"], ["T0", "T1"], ["T2"]] and len(notes) == 1
    read = []
    each = dev.each
    dev.each = lambda: ((g, rows) for g, rows in each() if not read.append((g, rows)))
    lo, hi = np.array([0, 2_000, 2_500]), np.array([3_000, 4_000, 9_000])  # overlapping windows
    per, first_k, first_n = measure_devices(dev, lo, hi, per_window=True)
    whole = measure_devices(dev, [0], [20_000])[0]
    gpu_of = {k: i for i, k in enumerate((0, 1, 11))}
    g, s, e, c = (np.concatenate(x) for x in zip(*every))
    g = np.array([gpu_of[int(x)] for x in g], np.int64)
    assert (whole[0][:, 1:] == mask_durations(g, s, e, c, 3, 3)[:, 1:]).all()
    for w, (a, b) in enumerate(zip(lo, hi)):
        row, _, cs, ce = clip_to_windows(s, e, [a], [b])
        assert (per[w][:, 1:] == mask_durations(g[row], cs, ce, c[row], 3, 3)[:, 1:]).all()
    for k in range(3):
        assert first_k[k] == s[(g == k) & (c == 0)].min() and first_n[k] == s[(g == k) & (c == 2)].min()
    # one GPU in memory at a time (one GPU id of one node), whatever files its rows came from
    assert [x for x, _ in read] == [0, 1, 2, 0, 1, 2]
    assert all(len(np.unique(rows[0])) == 1 and len({tasks[t].node for t in rows[1]}) == 1 for _, rows in read)
    assert sorted(np.unique(rows[1]).tolist() for x, rows in read[:3]) == [[0], [0, 1], [2]]
    dev.discard()
    assert not list(tmp_path.iterdir())


def test_windows_inside_the_one_before_are_cut_one_by_one():
    """Iteration windows need not be monotone (a long k-th occurrence on one rank): clip_to_windows
    then cuts window after window, the same pieces as each window alone."""
    s, e = np.array([0, 5, 12, 30]), np.array([10, 20, 25, 40])
    lo, hi = np.array([2, 4, 15]), np.array([35, 18, 38])
    row, win, cs, ce = clip_to_windows(s, e, lo, hi)
    got = sorted(zip(win.tolist(), row.tolist(), cs.tolist(), ce.tolist()))
    want = sorted(
        (w, int(r), int(a), int(b))
        for w in range(3)
        for r, _, a, b in zip(*clip_to_windows(s, e, lo[w : w + 1], hi[w : w + 1]))
    )
    assert got == want and len(got) == 4 + 3 + 3


def test_pieces_inside_windows_exactly():
    """clip_to_windows on three disjoint windows [10, 20), [30, 40), [50, 60): an interval before,
    between or after the windows, or only touching one, gives no piece; a zero-length one neither;
    one across several windows gives a piece in each, clipped to it."""
    s = np.array([0, 5, 15, 20, 22, 0, 60, 65, 55, 15])
    e = np.array([5, 10, 35, 30, 28, 100, 70, 70, 58, 15])
    row, win, cs, ce = clip_to_windows(s, e, [10, 30, 50], [20, 40, 60])
    assert sorted(zip(row.tolist(), win.tolist(), cs.tolist(), ce.tolist())) == [
        (2, 0, 15, 20),
        (2, 1, 30, 35),
        (5, 0, 10, 20),
        (5, 1, 30, 40),
        (5, 2, 50, 60),
        (8, 2, 55, 58),
    ]
    row, win, cs, ce = clip_to_windows(s, e, [10], [20])  # one window (its own branch)
    assert list(zip(row.tolist(), win.tolist(), cs.tolist(), ce.tolist())) == [(2, 0, 15, 20), (5, 0, 10, 20)]


def test_filter_window_is_the_analysed_time(regions, tmp_path):
    # -f step keeps the first "step" window [2, 5]: the trace column equals iteration 1; no CUDA API call
    # falls inside it, but CUDA API was traced, so the offload factors are 100%, not n/a.
    run_cli(["-q", "-m", *regions, "-f", "step", tmp_path / "f"])
    res = pop_json(tmp_path / "f")
    assert _factors(res) == pytest.approx((3, 0.5, 0.75, 1, 2 / 3, 4 / 6, 1, 2 / 3, 1))
    assert res["host"]["parallel_efficiency"] == pytest.approx(4 / 6)


def test_a_report_without_timed_rows_gives_no_task_a_lifetime():
    """task_spans over tables that hold no timed row (absent, empty, or without start/end) spans no task:
    three empty arrays, not a [0, 0] lifetime of the first task."""
    import pandas as pd

    from nsys2prv.metrics.pop.partial import task_spans

    empty = pd.DataFrame({"tid": np.zeros(0, np.int64), "start": np.zeros(0, np.int64), "end": np.zeros(0, np.int64)})
    got = task_spans({"kernels": None, "mpi": empty, "nvtx": pd.DataFrame({"tid": [1]})}, None)
    assert [a.tolist() for a in got] == [[], [], []] and all(a.dtype == np.int64 for a in got)


def test_task_spans_are_each_tasks_first_start_and_last_end_aligned():
    """task_spans: per task of the POP model, the first start and last end of its rows over every table
    (GPU rows by gpid, host rows by tid), on the aligned timeline; rows of processes the model does not
    know (-1) are left out."""
    from types import SimpleNamespace

    import pandas as pd

    from nsys2prv.metrics.pop.partial import task_spans
    from nsys2prv.model.align.clock import Clock
    from nsys2prv.nsys.ids import PID_SHIFT

    def gid(pid, tid=1):
        return (pid << PID_SHIFT) | tid

    tasks = {100: 0, 200: 1}  # (pid 300: not in the model)
    pop = SimpleNamespace(task_of=lambda report, pids: np.array([tasks.get(int(p), -1) for p in pids]))
    model = SimpleNamespace(pop=pop)  # (POP's view of the model)
    ctx = SimpleNamespace(model=model, report=0, clock=Clock(offset=1_000))
    kernels = pd.DataFrame({"gpid": [gid(100), gid(200)], "start": [50, 20], "end": [60, 90]})
    mpi = pd.DataFrame({"tid": [gid(100, 7), gid(300), gid(200)], "start": [10, 0, 30], "end": [40, 999, 95]})
    got = task_spans({"kernels": kernels, "mpi": mpi}, ctx)
    assert [a.tolist() for a in got] == [[0, 1], [1_010, 1_020], [1_060, 1_095]]


def test_the_window_of_a_run_without_lifetimes_is_empty_at_zero():
    """run_window: the first start to the last end of the processes alive (lo <= hi), else of the reports'
    processes; with neither, the empty window [0, 0] (not an inverted one)."""
    from nsys2prv.metrics.pop.inputs import run_window

    none = np.zeros(0, np.int64)
    assert run_window(none, none, None) == (0, 0) and run_window(none, none, [{}, {}]) == (0, 0)
    dead = np.array([5], np.int64), np.array([4], np.int64)  # (a process never alive: lo > hi)
    assert run_window(*dead, [{7: (30, 80)}, {8: (10, 50)}]) == (10, 80)
    assert run_window(np.array([20, 5, 9]), np.array([70, 4, 90]), [{7: (0, 999)}]) == (9, 90)
