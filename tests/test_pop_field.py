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

MPI_KEYS = ("mpi_parallel_efficiency", "mpi_load_balance", "mpi_load_balance_in", "mpi_load_balance_out",
            "mpi_communication_efficiency", "serialization_efficiency", "transfer_efficiency")


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
