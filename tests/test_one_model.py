"""One resource model for the trace and POP (``model.resources.build_model``): built once over the
keys of the translated kinds and of the POP kinds, with one identity per process.  A process or
thread only the POP kinds have (``-t nvtx``: a thread that only calls MPI, a process that only calls
the CUDA API) is the model's, but no row of the trace; POP finds it through ``Model.pop``, so
OUT.pop.json is the same whatever -t translates.

The reports are docs/pop-metrics.md's worked example (2 ranks, 2 GPUs, T = 10 s; its exact values:
tests/test_pop.py), with an NVTX range on each main thread, rank 1's MPI call on a thread of its own
and, in rank 0's report, a helper process with one CUDA API call and nothing else; a third report, on
a host of its own, holds one more such process (with ``-t nvtx`` the trace has nothing of it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from nsysgen import NsysBuilder, encode_gtid

from nsys2prv.cli import main
from nsys2prv.config import Config, parse_categories
from nsys2prv.pipeline.parallel import Serial
from nsys2prv.pipeline.prepare import prepare

S = 1_000_000_000
HELPER = 7000  # rank 0's report: a process with one CUDA API call (a POP process without GPU work)
TOOL = 8000  # a third report, on a host of its own: one such process only
COMM = 1  # rank 1's MPI thread: its main thread's pid + 1


def t(x: float) -> int:
    return int(round(x * S))


def _report(path: Path, rank: int, host: str, kernels, memcpy, nccl, api, mpi) -> str:
    b = NsysBuilder(path, host=host)
    pid = 5000 + rank
    b.process(pid, "./train")
    b.mpi_rank(pid, pid, rank)
    c = 0
    for s, a, e, name in kernels:
        c += 1
        b.kernel(pid, 0, s, t(a), t(e), c, name)
    for s, a, e in memcpy:
        c += 1
        b.memcpy(pid, 0, s, t(a), t(e), c, 1 << 20, copy_kind=1)
    for s, a, e in nccl:
        c += 1
        b.kernel(pid, 0, s, t(a), t(e), c, "ncclDevKernel_AllReduce_Sum_f32_RING_LL")
    for a, e, name in api:
        c += 1
        b.cuda_api(pid, pid, name, t(a), t(e), 1000 + c)
    mpi_tid = pid + COMM if rank == 1 else pid
    if mpi_tid != pid:
        b.thread_name(pid, mpi_tid, "comm")
    for a, e in mpi:
        b.mpi(pid, mpi_tid, "MPI_Allreduce", t(a), t(e), kind="coll", size=8, recv_size=8)
    b.nvtx_push(pid, pid, t(0), t(10), text="step")
    if rank == 0:
        b.process(HELPER, "./helper")
        b.cuda_api(HELPER, HELPER, "cudaGetDeviceCount_v2000", t(2), t(3), 5000)
    return str(b.save())


def _tool(path: Path) -> str:
    b = NsysBuilder(path, host="nodeC")
    b.process(TOOL, "./tool")
    b.cuda_api(TOOL, TOOL, "cudaGetDeviceCount_v2000", t(4), t(5), 1)
    return str(b.save())


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> list[str]:
    d = tmp_path_factory.mktemp("one-model")
    return [
        _report(
            d / "rank0.sqlite",
            0,
            "nodeA",
            kernels=[(13, 0, 6, "gemm"), (14, 5, 7, "softmax")],
            memcpy=[(13, 6.5, 8)],
            nccl=[(15, 8, 9)],
            api=[(0, 1, "cudaLaunchKernel_v7000"), (7, 9, "cudaDeviceSynchronize_v3020")],
            mpi=[(9, 10)],
        ),
        _report(
            d / "rank1.sqlite",
            1,
            "nodeB",
            kernels=[(13, 0, 4, "gemm"), (14, 4.5, 5.5, "softmax")],
            memcpy=[(13, 5, 6)],
            nccl=[(15, 6, 9)],
            api=[(0, 1, "cudaLaunchKernel_v7000"), (5, 6, "cudaMemcpy_v3020")],
            mpi=[(7.5, 10)],
        ),
        _tool(d / "tool.sqlite"),
    ]


def test_a_pop_only_process_and_thread_are_the_models_but_no_rows(reports, tmp_path):
    cfg = Config([Path(p) for p in reports], tmp_path / "x", categories=parse_categories("nvtx"), align="session")
    model = prepare(cfg, Serial(), tmp_path / "cache").model
    # the trace: the two ranks' main threads (their NVTX ranges) and GPU streams (always translated)
    assert [t.label for t in model.tasks] == ["Rank 0", "Rank 1"]
    # (each host's GPU 0: the run's GPUs 0 and 1, one number per GPU of the run)
    streams = [f"CUDA-D{g}.S{s}-{host}" for g, host in enumerate(("nodeA", "nodeB")) for s in (13, 14, 15)]
    assert [th.name for th in model.threads] == ["Rank 0 main (5000)", *streams[:3], "Rank 1 main (5001)", *streams[3:]]
    # the model: the helper and the tool too, after the ranks (the tool's host a node after the trace's);
    # POP's processes are all four, the trace's tasks the same objects
    assert [(t.label, t.report, t.node, t.threads) for t in model.processes] == [
        ("Rank 0", 0, 0, [0, 1, 2, 3]),
        ("Rank 1", 1, 1, [4, 5, 6, 7]),
        ("Process 7000", 0, 0, []),
        ("Process 8000", 2, 2, []),
    ]
    assert model.pop.tasks == model.processes and all(a is b for a, b in zip(model.pop.tasks, model.tasks))
    assert model.nodes == ["nodeA", "nodeB"] and model.pop.nodes == ["nodeA", "nodeB", "nodeC"]
    assert [t.pop_gpu for t in model.processes] == [True, True, False, False]
    # the threads only POP's kinds have: rank 1's MPI thread, the helper's and the tool's threads
    only = [(), (("cpu", 5001 + COMM),), (("cpu", HELPER),), (("cpu", TOOL),)]
    assert [t.pop_only for t in model.processes] == only
    assert model.cpu_threads(1, [encode_gtid(5001, 5001 + COMM), encode_gtid(5001, 5001)]).tolist() == [-1, 4]
    assert model.cpu_threads(0, [encode_gtid(HELPER, HELPER)]).tolist() == [-1]
    # one table of the processes: the trace's task and POP's of each (report, pid)
    assert model.tasks_of(0, [5000, HELPER, 1]).tolist() == [0, -1, -1]
    assert model.pop.task_of(0, [5000, HELPER, 1]).tolist() == [0, 2, -1]
    assert model.pop.task_of(1, [5001]).tolist() == [1] and model.pop.task_of(2, [TOOL]).tolist() == [3]
    assert model.tasks_of(2, [TOOL]).tolist() == [-1] and model.report_tasks(2) == []


def _convert(reports: list[str], out: Path, *args: str) -> dict:
    res = CliRunner().invoke(
        main, ["-q", "--align", "session", *args, "-m", *reports, str(out)], catch_exceptions=False
    )
    assert res.exit_code == 0, res.output
    return json.loads(Path(f"{out}.pop.json").read_text())


def _rows(out: Path) -> dict[str, list[str]]:
    """The .row file's names per level."""
    levels: dict[str, list[str]] = {}
    for block in Path(f"{out}.row").read_text().strip().split("\n\n"):
        head, *names = block.splitlines()
        levels[head.split()[1]] = names
    return levels


def test_pop_finds_what_only_pop_has_and_equals_the_full_conversion(reports, tmp_path):
    (tmp_path / "nvtx").mkdir()
    (tmp_path / "full").mkdir()
    nvtx = _convert(reports, tmp_path / "nvtx" / "run", "-t", "nvtx")
    full = _convert(reports, tmp_path / "full" / "run", "-t", "all")
    assert nvtx == full
    # exactly the worked example's values: rank 1's MPI call (on its thread without a row) is found
    host, dev = nvtx["host"], nvtx["device"]
    assert host["count"] == 2 and nvtx["excluded_processes"] == ["Process 7000", "Process 8000"]
    assert host["mpi_time_ns"] == {"Rank 0": t(1), "Rank 1": t(2.5)}
    assert host["useful_time_ns"] == {"Rank 0": t(6), "Rank 1": t(5.5)}
    assert host["offload_time_ns"] == {"Rank 0": t(3), "Rank 1": t(2)}
    assert host["parallel_efficiency"] == pytest.approx(11.5 / 20)
    assert dev["useful_time_ns"] == {"nodeA:GPU0": t(7), "nodeB:GPU0": t(5)}
    assert dev["parallel_efficiency"] == pytest.approx(0.6, abs=1e-3) and nvtx["elapsed_ns"] == t(10)
    # the trace with -t nvtx: two tasks, their main threads and streams; the full one has every thread
    rows = _rows(tmp_path / "nvtx" / "run")
    assert rows["TASK"] == ["Rank 0 (nodeA, pid 5000)", "Rank 1 (nodeB, pid 5001)"]
    assert rows["THREAD"] == [
        "Rank 0 main (5000)",
        *[f"CUDA-D0.S{s}-nodeA" for s in (13, 14, 15)],
        "Rank 1 main (5001)",
        *[f"CUDA-D1.S{s}-nodeB" for s in (13, 14, 15)],
    ]
    head = Path(f"{tmp_path / 'nvtx' / 'run'}.prv").read_text().splitlines()[0]
    assert head.endswith(":10000000000_ns:2(4,4):1:2(4:1,4:2)"), head
    full = _rows(tmp_path / "full" / "run")
    assert full["NODE"] == ["nodeA", "nodeB", "nodeC"]
    assert full["TASK"] == [*rows["TASK"], "Process 7000 (nodeA, pid 7000)", "Process 8000 (nodeC, pid 8000)"]
    assert full["THREAD"][4:8] == ["Rank 1 main (5001)", "Rank 1 comm (5002)", *rows["THREAD"][5:7]]
