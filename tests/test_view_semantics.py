"""Every POP number of OUT.pop.json that a shipped view can show, read from the view as Paraver would
compute it (tests/view_eval.py: the semantics those views use), on real and generated traces; where
Paraver's paramedir is on PATH, the evaluator itself is checked against it.

Which view gives which number (docs/paraver-views.md): host useful = analysis/host_useful.cfg, value 1
on the process's first CPU row; MPI time = analysis/host_mpi.cfg, value 1 on that row (calls of the
main thread); offload (CUDA API time) = analysis/host_cuda_api.cfg, value 1 on that row; per GPU used
by one process: useful = device_useful.cfg, data movement not overlapped by kernels =
device_transfer_nonoverlapped.cfg, active = device_active.cfg, idle = device_idle.cfg, value 1 on
the process's task row; per GPU of a host with one GPU, however many processes share it: the same four
as node_device_*.cfg, value 1 on the host's node row.  A trace whose states follow the scheduler
(Running only on a CPU: its .pcf has the Executing CPU type) shows host useful time on the CPU, which is
OUT.pop.json's host.on_cpu.useful_on_cpu_time_ns (metrics/on_cpu.py: the main thread's off-CPU time
outside calls taken out)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CLOVERLEAF, MPI4, ROOT, convert_valid
from nsysgen import NsysBuilder
from test_rank_scaling import build_rank
from view_eval import Evaluator

from nsys2prv.core import registry as R

CFGS = ROOT / "nsys2prv" / "cfgs" / "analysis"
HOST = {"useful_time_ns": "host_useful", "mpi_time_ns": "host_mpi", "offload_time_ns": "host_cuda_api"}
DEVICE = {
    "useful_time_ns": "device_useful",
    "data_movement_time_ns": "device_transfer_nonoverlapped",
    "active_time_ns": "device_active",
    "idle": "device_idle",
}


def view(ev: Evaluator, name: str) -> list[dict]:
    return ev.histogram((CFGS / f"{name}.cfg").read_text())


def from_views(trace) -> dict[str, dict[str, int]]:
    """The POP quantities as the views show them, keyed like OUT.pop.json."""
    ev = Evaluator(trace)
    tasks = [label.split(" (")[0] for label in trace.row["TASK"]]
    first_row, g = [], 0  # global index of each task's first (CPU) row
    for n, _ in trace.header.apps[0]:
        first_row.append(g)
        g += n
    out = {}
    for key, name in HOST.items():
        rows = view(ev, name)
        out[key] = {t: rows[first_row[i]].get(1.0, 0) for i, t in enumerate(tasks)}
    for key, name in DEVICE.items():
        rows = view(ev, name)
        out["device " + key] = {t: rows[i].get(1.0, 0) for i, t in enumerate(tasks)}
    return out


def expected(pop: dict, scheduler: bool = False) -> dict[str, dict[str, int]]:
    """OUT.pop.json's numbers; device ones per process for the GPUs one process uses; ``scheduler``:
    the trace's states follow the scheduler (host useful time: on the CPU)."""
    out = {key: pop["host"][key] for key in HOST}
    if scheduler:
        out["useful_time_ns"] = pop["host"]["on_cpu"]["useful_on_cpu_time_ns"]
    T = pop["elapsed_ns"]
    dev = pop["device"]
    for key in DEVICE:
        per_gpu = {g: T - a for g, a in dev["active_time_ns"].items()} if key == "idle" else dev[key]
        out["device " + key] = {
            d["processes"][0]: per_gpu[d["label"]] for d in pop["devices"] if len(d["processes"]) == 1
        }
    return out


def check(base: Path, trace) -> dict:
    pop = json.loads(Path(f"{base}.pop.json").read_text())
    got, want = from_views(trace), expected(pop, R.EXECUTING_CPU.id in trace.pcf.types)
    for key, values in want.items():
        assert {p: got[key][p] for p in values} == values, key
    return want


GENERATED = (1_153_598, 15_191_233, 14_712_275, 53_968, 14_766_243, 1_578_588)  # nsysgen.cloverleaf_like


def test_views_reproduce_pop_json_on_the_cloverleaf_export(tmp_path, clover_export):
    trace, _ = convert_valid([clover_export], tmp_path / "clover")
    want = check(tmp_path / "clover", trace)
    # the measured values, so that a view giving nothing cannot pass (the real export's, else the generated's)
    # (the real export's useful time on the CPU: 374,920,852 ns of 464,605,401 outside calls; the
    # generated export's main thread is never descheduled)
    measured = {True: (374_920_852, 571_656_984, 294_404_540, 9_390_923, 303_795_463, 732_466_922), False: GENERATED}[
        clover_export == CLOVERLEAF
    ]
    keys = (
        "useful_time_ns",
        "offload_time_ns",
        "device useful_time_ns",
        "device data_movement_time_ns",
        "device active_time_ns",
        "device idle",
    )
    assert {k: want[k] for k in keys} == {k: {"Rank 0": v} for k, v in zip(keys, measured)}, [
        want[k]["Rank 0"] for k in keys
    ]


def test_views_reproduce_pop_json_on_real_mpi_ranks(tmp_path):
    trace, _ = convert_valid(["-t", "mpi,nvtx,osrt", "-m", *sorted(MPI4.glob("rank*.sqlite"))], tmp_path / "mpi4")
    want = check(tmp_path / "mpi4", trace)
    assert len(want["mpi_time_ns"]) == 4 and min(want["mpi_time_ns"].values()) > 0
    assert min(want["useful_time_ns"].values()) > 0


@pytest.mark.parametrize("per_host", [1, 4])
def test_views_reproduce_pop_json_on_generated_gpu_ranks(tmp_path, per_host):
    """4 ranks: each on a host and GPU of its own, or all 4 on one host sharing its GPU (then the device
    views are per process and OUT.pop.json per GPU: only the host numbers are compared)."""
    ranks = [build_rank(tmp_path / f"rank{r}.sqlite", r, 4, per_host) for r in range(4)]
    trace, _ = convert_valid(["-m", *ranks], tmp_path / "out")
    want = check(tmp_path / "out", trace)
    assert want["mpi_time_ns"] == {f"Rank {r}": 6_000 + 5 * (20_000 - 100 * r) for r in range(4)}
    assert want["offload_time_ns"] == {f"Rank {r}": 5 * 11_000 for r in range(4)}
    if per_host == 1:
        assert want["device useful_time_ns"] == {f"Rank {r}": 5 * 36_000 for r in range(4)}
        assert want["device data_movement_time_ns"] == {f"Rank {r}": 5 * 6_000 for r in range(4)}
    else:
        assert want["device useful_time_ns"] == {}


def shared_gpu_rank(path: Path, r: int, gpus: int = 1, stream: int | None = None) -> str:
    """Rank r of 8, 4 per host sharing its ``gpus`` GPUs (0, or 0 and 1: ranks 0-1 and 2-3 of the host),
    each rank's kernels 7 us after the previous rank's (so the per-GPU union differs from every
    process's own); on stream 7 + r % 4, or ``stream`` (every rank's: the default stream of each
    process)."""
    sid = 7 + r % 4 if stream is None else stream
    b = NsysBuilder(
        path, host=f"node{r // 4:03d}", session_start_ns=1_700_000_000_000_000_000, env={"PMI_RANK": str(r)}
    )
    pid = 4000 + r
    b.process(pid, "./app")
    b.mpi(pid, pid, "MPI_Init", 1_000, 5_000, kind="other")
    b.mpi_rank(pid, pid, r, ts=5_500)
    t = 10_000
    for step in range(3):
        b.cuda_api(pid, pid, "cudaLaunchKernel_v7000", t + 1_000, t + 3_000, 2 * step + 1)
        s = t + 4_000 + (r % 4) * 7_000
        b.kernel(pid, r % 4 * gpus // 4, sid, s, s + 20_000, 2 * step + 1, "saxpy")
        b.cuda_api(pid, pid, "cudaMemcpy_v3020", t + 41_000, t + 50_000, 2 * step + 2)
        b.memcpy(
            pid,
            r % 4 * gpus // 4,
            sid,
            t + 42_000 + r * 500,
            t + 48_000 + r * 500,
            2 * step + 2,
            4096,
            copy_kind=2,
        )
        t += 100_000
    b.mpi(pid, pid, "MPI_Finalize", t, t + 2_000, kind="other")
    return str(b.save())


def node_views(trace) -> dict[str, dict[str, int]]:
    """The node views' column 1 per host, keyed like OUT.pop.json's devices (host:GPU0)."""
    ev = Evaluator(trace)
    hosts = [label.split(" (")[0] if " (" in label else label for label in trace.row["NODE"]]
    return {
        key: {f"{h}:GPU0": row.get(1.0, 0) for h, row in zip(hosts, view(ev, "node_" + name))}
        for key, name in DEVICE.items()
    }


def test_node_views_give_the_per_gpu_numbers_of_ranks_sharing_a_gpu(tmp_path):
    ranks = [shared_gpu_rank(tmp_path / f"rank{r}.sqlite", r) for r in range(8)]
    trace, _ = convert_valid(["-m", *ranks], tmp_path / "out")
    pop = json.loads((tmp_path / "out.pop.json").read_text())
    dev, T = pop["device"], pop["elapsed_ns"]
    got = node_views(trace)
    assert got["useful_time_ns"] == dev["useful_time_ns"] == {"node000:GPU0": 123_000, "node001:GPU0": 123_000}
    assert (
        got["data_movement_time_ns"] == dev["data_movement_time_ns"] == {"node000:GPU0": 13_500, "node001:GPU0": 19_500}
    )
    assert got["active_time_ns"] == dev["active_time_ns"]
    assert got["idle"] == {g: T - a for g, a in dev["active_time_ns"].items()}
    # and the per-process views give each process's own share: 3 kernels of 20 us, not the GPU's 123 us
    assert from_views(trace)["device useful_time_ns"] == {f"Rank {r}": 60_000 for r in range(8)}


def gpu_rows(trace) -> dict[str, dict[str, int]]:
    """analysis/gpu_activity.cfg's columns on the 'Metrics GPU<id>' rows, keyed like OUT.pop.json's devices
    (host:GPU<id>)."""
    rows = view(Evaluator(trace), "gpu_activity")
    hosts = [label.split(", pid")[0].split(" (")[-1] for label in trace.row["TASK"]]
    owner = [i for i, (n, _) in enumerate(trace.header.apps[0]) for _ in range(n)]
    out: dict[str, dict[str, int]] = {"useful_time_ns": {}, "data_movement_time_ns": {}, "idle": {}}
    # the row's number is the run's; the .row's comments give its host and GPU id (several hosts)
    row_text = Path(f"{trace.base}.row").read_text()
    ids = {int(n): f"{h}:GPU{g}" for n, h, g in re.findall(r"^# nsys2prv: GPU (\d+) = (.+) GPU (\d+)$", row_text, re.M)}
    for g, label in enumerate(trace.row["THREAD"]):
        if label.startswith("Metrics GPU"):
            gpu = ids.get(int(label.removeprefix("Metrics GPU")), f"{hosts[owner[g]]}:{label.split()[-1]}")
            for key, value in zip(out, (R.GPU_USEFUL, R.GPU_DATA_MOVEMENT, R.GPU_IDLE)):
                out[key][gpu] = rows[g].get(float(value), 0)
    return out


def test_the_gpu_rows_give_the_per_gpu_numbers_of_hosts_with_several_shared_gpus(tmp_path):
    """2 hosts x 2 GPUs, each GPU shared by 2 ranks: neither the per-process views (a process's own
    kernels) nor the node views (both GPUs of the host) show a GPU; the GPU rows do, exactly."""
    ranks = [shared_gpu_rank(tmp_path / f"rank{r}.sqlite", r, gpus=2) for r in range(8)]
    trace, _ = convert_valid(["-m", *ranks], tmp_path / "out")
    pop = json.loads((tmp_path / "out.pop.json").read_text())
    dev, T = pop["device"], pop["elapsed_ns"]
    got = gpu_rows(trace)
    # per step: kernels of the GPU's two ranks 7 us apart (20 us each): 27 us; their copies 0.5 us apart
    # (6 us each): 6.5 us, less what the second rank's kernel hides on node000:GPU1 (2 us)
    assert (
        got["useful_time_ns"]
        == dev["useful_time_ns"]
        == {"node000:GPU0": 81_000, "node000:GPU1": 81_000, "node001:GPU0": 81_000, "node001:GPU1": 81_000}
    )
    assert (
        got["data_movement_time_ns"]
        == dev["data_movement_time_ns"]
        == {"node000:GPU0": 19_500, "node000:GPU1": 13_500, "node001:GPU0": 19_500, "node001:GPU1": 19_500}
    )
    assert got["idle"] == {g: T - a for g, a in dev["active_time_ns"].items()}
    # one number per GPU of the run (GPU ids are per host): node001's GPUs 0 and 1 are GPUs 2 and 3
    assert sorted(label for label in trace.row["THREAD"] if label.startswith("Metrics")) == [
        "Metrics GPU0",
        "Metrics GPU1",
        "Metrics GPU2",
        "Metrics GPU3",
    ]
    assert node_views(trace)["useful_time_ns"] == {"node000:GPU0": 123_000, "node001:GPU0": 123_000}  # both GPUs


def test_one_process_per_gpu_gets_no_gpu_rows(tmp_path):
    """Processes and GPUs one to one: the per-process views are per GPU, no row is added."""
    ranks = [build_rank(tmp_path / f"rank{r}.sqlite", r, 4, 1) for r in range(4)]
    trace, _ = convert_valid(["-m", *ranks], tmp_path / "out")
    assert not [label for label in trace.row["THREAD"] if label.startswith("Metrics")]
    assert R.GPU_ACTIVITY.id not in set(trace.events["type"].unique())


def test_ranks_each_given_their_own_gpu_as_ordinal_0_do_not_share_it(tmp_path):
    """Two ranks of a host that each see their GPU as CUDA ordinal 0 (CUDA_VISIBLE_DEVICES), GPUs 0 and 1
    by the device map: two GPUs of one process each (no GPU rows), not one GPU shared."""
    ranks = []
    for r in range(2):
        b = NsysBuilder(
            tmp_path / f"rank{r}.sqlite",
            host="node000",
            session_start_ns=1_700_000_000_000_000_000,
            env={"PMI_RANK": str(r)},
        )
        b.gpu_id_of_device.update({0: r})
        b.process(4000 + r, "./app")
        b.kernel(4000 + r, 0, 7, 10_000 + r * 5_000, 30_000, 1, "saxpy")
        ranks.append(str(b.save()))
    trace, _ = convert_valid(["-m", *ranks], tmp_path / "out")
    pop = json.loads((tmp_path / "out.pop.json").read_text())
    assert [(d["label"], d["processes"]) for d in pop["devices"]] == [
        ("node000:GPU0", ["Rank 0"]),
        ("node000:GPU1", ["Rank 1"]),
    ]
    assert pop["device"]["useful_time_ns"] == {"node000:GPU0": 20_000, "node000:GPU1": 15_000}
    assert not [label for label in trace.row["THREAD"] if label.startswith("Metrics")]


def test_a_process_using_two_gpus_gets_a_row_per_gpu(tmp_path):
    b = NsysBuilder(tmp_path / "one.sqlite", host="node000", session_start_ns=1_700_000_000_000_000_000)
    b.process(4000, "./app")
    b.kernel(4000, 0, 7, 10_000, 30_000, 1, "saxpy")
    b.kernel(4000, 1, 8, 20_000, 50_000, 2, "saxpy")
    b.memcpy(4000, 1, 8, 50_000, 55_000, 3, 4096, copy_kind=2)
    trace, _ = convert_valid([str(b.save())], tmp_path / "out")
    pop = json.loads((tmp_path / "out.pop.json").read_text())
    got = gpu_rows(trace)
    assert got["useful_time_ns"] == pop["device"]["useful_time_ns"] == {"node000:GPU0": 20_000, "node000:GPU1": 30_000}
    assert (
        got["data_movement_time_ns"]
        == pop["device"]["data_movement_time_ns"]
        == {"node000:GPU0": 0, "node000:GPU1": 5_000}
    )
    assert got["idle"] == {g: pop["elapsed_ns"] - a for g, a in pop["device"]["active_time_ns"].items()}


def _paramedir_histogram(paramedir: str, prv: Path, cfg: Path, work: Path) -> list[dict]:
    out = work / (cfg.stem + ".txt")
    subprocess.run([paramedir, str(prv), str(cfg), str(out)], check=True, capture_output=True, text=True)
    lines = out.read_text().splitlines()
    cols = [c.strip() for c in lines[0].split("\t")[1:]]
    rows = []
    for line in lines[1:]:
        if not line.strip():
            break
        _, *vals = line.split("\t")
        # (paramedir shows a column 0 when the view has other values than 1: the evaluator has none)
        rows.append({c: float(v) for c, v in zip(cols, vals) if v.strip() and float(v) != 0 and c != "0"})
    return rows


def test_the_evaluator_agrees_with_paramedir(tmp_path):
    paramedir = shutil.which("paramedir")
    if paramedir is None:
        pytest.skip("paramedir (Paraver, built from bsc-performance-tools/paraver-kernel) is not on PATH")
    ranks = [shared_gpu_rank(tmp_path / f"rank{r}.sqlite", r) for r in range(8)]
    trace, _ = convert_valid(["-m", *ranks], tmp_path / "out")
    ev = Evaluator(trace)
    for name in sorted({*HOST.values(), *DEVICE.values(), *("node_" + v for v in DEVICE.values()), "gpu_activity"}):
        mine = [{v: t for v, t in row.items()} for row in view(ev, name)]
        theirs = _paramedir_histogram(paramedir, tmp_path / "out.prv", CFGS / f"{name}.cfg", tmp_path)
        # paramedir labels columns by value (or by state name for state views): compare the totals per row
        assert [sorted(r.values()) for r in mine] == [sorted(r.values()) for r in theirs], name


if __name__ == "__main__":  # the views' numbers of a converted trace: python3 tests/test_view_semantics.py OUT
    from paraver_validator import load_trace

    print(json.dumps(from_views(load_trace(sys.argv[1])), indent=1))
