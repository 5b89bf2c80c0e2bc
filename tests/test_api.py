"""The Python API (nsys2prv/api.py, docs/api.md): the conversion's own stages, so the command line and
``nsys2prv.open`` give the same outputs; docs/api.md's example runs as it is."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import nsys2prv
from nsys2prv.cli import main
from nsys2prv.core import errors as nsys2prv_errors

ROOT = Path(__file__).resolve().parent.parent
POP4 = ROOT / "tests" / "data" / "pop4"


def pop4() -> list[Path]:
    if not (POP4 / "rank0.sqlite").exists():
        pytest.skip("tests/data/pop4 missing")
    return sorted(POP4.glob("rank*.sqlite"))


def cli(args) -> None:
    res = CliRunner().invoke(main, ["-q", *map(str, args)], catch_exceptions=False)
    assert res.exit_code == 0, res.output


def without_label(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "label"}


def test_the_docs_example_runs_and_its_pop_equals_the_command_s(tmp_path):
    pop4()
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"```python\n(.*?)```", text, re.S)
    assert 'OUT = Path("out")' in code
    code = code.replace('OUT = Path("out")', f"OUT = Path({str(tmp_path / 'out')!r})")
    space: dict = {}
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            exec(compile(code, "docs/api.md", "exec"), space)
    finally:
        os.chdir(cwd)
    shown = printed.getvalue().splitlines()
    assert "MPI parallel efficiency in the steady state: 45.5%" in shown
    lines = re.findall(r"^    (host\.\S+ +[\d.]+ +[\d.]+)$", text, re.M)  # the output docs/api.md shows
    assert len(lines) == 3 and all(line in shown for line in lines), lines
    # its POP result is the command's OUT.pop.json, and so is the trace it wrote
    cli(["-t", "mpi,nvtx", "-m", *pop4(), tmp_path / "cli" / "pop4"])
    want = json.loads((tmp_path / "cli" / "pop4.pop.json").read_text())
    assert without_label(space["pop"].result) == without_label(want)
    assert json.loads((tmp_path / "out" / "pop4.pop.json").read_text()) == want
    for ext in (".prv", ".pcf", ".row"):
        api_out = (tmp_path / "out" / f"pop4{ext}").read_bytes()
        assert api_out == (tmp_path / "cli" / f"pop4{ext}").read_bytes(), ext
    # the DataFrame holds the JSON's numbers (n/a: NaN)
    table = space["pop"].table
    assert list(table.columns) == ["label", "trace", "MPI_Init..MPI_Finalize"]
    steady = want["regions"][0]
    assert table.loc["host.mpi_load_balance", "MPI_Init..MPI_Finalize"] == steady["host"]["mpi_load_balance"]
    assert table.loc["host.mpi_parallel_efficiency", "trace"] == want["host"]["mpi_parallel_efficiency"]
    assert table.loc["elapsed_s", "trace"] == want["elapsed_ns"] / 1e9
    assert np.isnan(table.loc["device.parallel_efficiency", "trace"])
    # the MPI table: every call of the exports, on the trace's timeline, with its rank
    per_call = space["per_call"]
    assert per_call.loc[(0, "MPI_Init"), "count"] == 1 and per_call.loc[(3, "MPI_Finalize"), "count"] == 1
    assert per_call["count"].sum() == len(space["mpi"])


def test_pop_with_regions_equals_the_command_s(tmp_path):
    run = nsys2prv.open(pop4(), align="session")
    res = run.pop(region=["loop", "MPI_Init..MPI_Finalize"], nccl_as="useful")
    cli(
        ["-t", "mpi,nvtx", "--align", "session", "--nccl-as", "useful", "--region", "loop"]
        + ["--region", "MPI_Init..MPI_Finalize", "-m", *pop4(), tmp_path / "o"]
    )
    want = json.loads((tmp_path / "o.pop.json").read_text())
    assert without_label(res.result) == without_label(want)
    assert [r["name"] for r in res.result["regions"]] == ["MPI_Init..MPI_Finalize", "loop"]
    assert list(res.table.columns) == ["label", "trace", "MPI_Init..MPI_Finalize", "loop"]
    assert res.iterations is None


def test_tables_are_on_the_trace_timeline_and_read_when_asked(tmp_path, monkeypatch):
    run = nsys2prv.open(pop4(), align="session", cache_dir=tmp_path / "cache")
    assert "prepared" not in run.__dict__  # opening reads nothing
    mpi = run.mpi
    assert "prepared" in run.__dict__
    assert set(mpi.columns) >= {"report", "rank", "pid", "thread", "start", "end", "name"}
    assert sorted(mpi["rank"].unique().tolist()) == [0, 1, 2, 3]
    assert isinstance(mpi["name"].dtype, pd.CategoricalDtype)
    # the trace's time 0 is the run's start: the earliest call starts at or after it, the run's T
    # (OUT.pop.json's elapsed time) bounds the last
    res = run.pop()
    assert mpi["start"].min() >= 0 and mpi["end"].max() <= res.result["elapsed_ns"]
    # MPI_Init ends on the steady-state window's start (the first MPI_Init end), MPI_Finalize starts at its end
    lo, hi = res.result["regions"][0]["windows_ns"][0]
    assert mpi.loc[mpi["name"] == "MPI_Init", "end"].min() == lo
    assert mpi.loc[mpi["name"] == "MPI_Finalize", "start"].max() == hi
    assert run.kernels.empty and run.memops.empty  # a CPU-only run
    with pytest.raises(nsys2prv_errors.UserError, match="no data kind 'kernel': one of cuda_api, gpu_metrics"):
        run.table("kernel")


def test_gpu_tables_and_the_trace_equal_the_command_s(tmp_path):
    # docs/pop-metrics.md's worked example (tests/test_pop.py): 2 ranks on 2 hosts, a GPU each
    from test_pop import WORKED, build

    paths = [build(tmp_path / f"rank{r}.sqlite", r, ("nodeA", "nodeB")[r], **WORKED[r]) for r in (0, 1)]
    run = nsys2prv.open(paths, align="session", cache_dir=tmp_path / "cache")
    k = run.kernels
    S = 1_000_000_000
    got = sorted(zip(k["host"], k["rank"], k["gpu"], k["stream"], k["start"] // S, k["end"] // S, k["name"]))
    assert got == [
        ("nodeA", 0, 0, 13, 0, 6, "gemm"),
        ("nodeA", 0, 0, 14, 5, 7, "softmax"),
        ("nodeA", 0, 0, 15, 8, 9, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
        ("nodeB", 1, 0, 13, 0, 4, "gemm"),
        ("nodeB", 1, 0, 14, 4, 5, "softmax"),
        ("nodeB", 1, 0, 15, 6, 9, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
    ]
    assert k["nccl"].tolist().count(True) == 2
    m = run.memops
    assert sorted(zip(m["kind"], m["operation"], m["rank"], m["start"], m["end"])) == [
        ("memcpy", "CUDA memcpy Host-to-Device", 0, int(6.5 * S), 8 * S),
        ("memcpy", "CUDA memcpy Host-to-Device", 1, 5 * S, 6 * S),
    ]
    api = run.cuda_api
    assert sorted(zip(api["rank"], api["thread"], api["name"].astype(str))) == [
        (0, 5000, "cudaDeviceSynchronize"),
        (0, 5000, "cudaLaunchKernel"),
        (1, 5001, "cudaLaunchKernel"),
        (1, 5001, "cudaMemcpy"),
    ]
    # the trace and the POP files of run.to_paraver are the command's, byte for byte
    run.to_paraver(tmp_path / "api" / "w")
    cli(["--align", "session", "-m", *paths, tmp_path / "cli" / "w"])
    for ext in (".prv", ".pcf", ".row", ".pop.json", ".pop.csv", ".pop.md", ".pop.tex"):
        assert (tmp_path / "api" / f"w{ext}").read_bytes() == (tmp_path / "cli" / f"w{ext}").read_bytes(), ext
    res = run.pop()
    assert res.table.loc["device.load_balance", "trace"] == pytest.approx(0.857143, abs=1e-6)
    assert res.table.loc["host.device_offload_efficiency", "trace"] == pytest.approx(11.5 / 16.5)
