#!/usr/bin/env python3
"""Run the shipped POP views with Paraver's paramedir on a converted trace and compare them with
OUT.pop.json (docs/paraver-views.md has the table of which view gives which number).

    python3 scripts/check_views.py out/run            # needs paramedir on PATH (or --paramedir)

Per process: useful host time (host_useful.cfg, the process's first CPU row, column Running; on a trace
whose states follow the scheduler, the useful time on a CPU: host.on_cpu), and,
for processes whose GPU no other process uses, useful / non-overlapped transfer / active / idle
device time (device_*.cfg, column 1), and for hosts with one GPU the same per node (node_device_*.cfg,
however many processes share the GPU), and per GPU from its GPU row when the trace has them
(gpu_activity.cfg, columns useful / data movement / idle).  Prints one line per quantity with the largest difference
in ns; exits 1 when a difference is not 0.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

VIEWS = {
    "host_useful": "analysis/host_useful.cfg",
    "device_useful": "analysis/device_useful.cfg",
    "device_transfer": "analysis/device_transfer_nonoverlapped.cfg",
    "device_active": "analysis/device_active.cfg",
    "device_idle": "analysis/device_idle.cfg",
    "node_device_useful": "analysis/node_device_useful.cfg",
    "node_device_transfer": "analysis/node_device_transfer_nonoverlapped.cfg",
    "node_device_active": "analysis/node_device_active.cfg",
    "node_device_idle": "analysis/node_device_idle.cfg",
    "gpu_activity": "analysis/gpu_activity.cfg",
}
GPU_COLUMNS = {
    "device_useful": "Useful",
    "device_transfer": "Data movement",
    "device_idle": "Idle",
}


def histogram(path: Path) -> tuple[list[str], list[tuple[str, list[float]]]]:
    """paramedir's histogram text: (column labels, [(row label, values)]) without the statistics rows
    (none: paramedir wrote no file, as for a view whose event type the trace does not have)."""
    if not path.exists():
        return [], []
    lines = path.read_text().splitlines()
    columns = lines[0].split("\t")[1:]
    rows = []
    for line in lines[1:]:
        if not line.strip():
            break
        label, *vals = line.split("\t")
        rows.append((label, [float(v) if v.strip() else 0.0 for v in vals]))
    return [c.strip() for c in columns], rows


def column(path: Path, name: str) -> list[tuple[str, float]]:
    cols, rows = histogram(path)
    if name not in cols:
        return [(label, 0.0) for label, _ in rows]
    i = cols.index(name)
    return [(label, vals[i] if i < len(vals) else 0.0) for label, vals in rows]


def run_views(trace: Path, cfg_dir: Path, paramedir: str, work: Path) -> dict[str, Path]:
    args, outs = [paramedir, str(trace.with_suffix(".prv"))], {}
    for key, rel in VIEWS.items():
        outs[key] = work / f"{key}.txt"
        if (cfg_dir / rel).exists():  # (not written for a trace without the view's event types)
            args += [str(cfg_dir / rel), str(outs[key])]
    if len(args) > 2:
        subprocess.run(args, check=True, capture_output=True, text=True)
    return outs


def compare(base: Path, paramedir: str) -> list[tuple[str, int, int]]:
    """[(quantity, compared values, largest |difference| in ns)]: the views run by paramedir."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cfg_dir = work / "cfgs"
        subprocess.run(
            [sys.executable, "-m", "nsys2prv.paraver.cfgs", "render", str(base), str(cfg_dir)],
            check=True,
            capture_output=True,
        )
        return compare_histograms(base, run_views(base, cfg_dir, paramedir, work))


def compare_histograms(base: Path, out: dict[str, Path]) -> list[tuple[str, int, int]]:
    """[(quantity, compared values, largest |difference| in ns)] of OUT.pop.json against paramedir's
    histogram files ``out`` (VIEWS key -> file; recorded ones too: tests/test_oracles.py)."""
    pop = json.loads(Path(f"{base}.pop.json").read_text())
    row = Path(f"{base}.row").read_text().split("LEVEL THREAD SIZE")[1].splitlines()[1:]
    host = dict(column(out["host_useful"], "Running"))
    device = {k: [v for _, v in column(out[k], "1")] for k in VIEWS if k.startswith("device")}
    node = {k: dict(column(out["node_" + k], "1")) for k in VIEWS if k.startswith("device")}
    gpu = {k: [v for _, v in column(out["gpu_activity"], c)] for k, c in GPU_COLUMNS.items()}
    results = []
    procs = pop["processes"]
    useful = pop["host"].get("useful_time_ns") or {}
    if any(line.startswith("# nsys2prv: CPU thread states from the scheduler") for line in row):
        # states from the scheduler: Running only on a CPU, so the view gives the useful time on a CPU
        useful = (pop["host"].get("on_cpu") or {}).get("useful_on_cpu_time_ns") or useful
    first_rows = {}
    for label in row:  # the first CPU row of each process ("Rank 3 main (1234)")
        key = " ".join(label.split()[:2])
        first_rows.setdefault(key, label)
    diffs = [
        abs(host.get(first_rows.get(p["label"], ""), 0.0) - useful[p["label"]]) for p in procs if p["label"] in useful
    ]
    results.append(("host useful per process", len(diffs), int(max(diffs, default=0))))
    devs = [d for d in pop["devices"] if len(d["processes"]) == 1]
    task_of = {p["label"]: i for i, p in enumerate(procs)}
    T = pop["elapsed_ns"]
    want = {
        "device_useful": pop["device"]["useful_time_ns"],
        "device_transfer": pop["device"]["data_movement_time_ns"],
        "device_active": pop["device"]["active_time_ns"],
        "device_idle": {k: T - v for k, v in pop["device"]["active_time_ns"].items()},
    }
    for key, by_dev in want.items():
        diffs = [abs(device[key][task_of[d["processes"][0]]] - by_dev[d["label"]]) for d in devs]
        results.append(
            (f"{key.replace('_', ' ')} per GPU (GPUs of one process)", len(diffs), int(max(diffs, default=0)))
        )
    hosts = {}
    for d in pop["devices"]:
        hosts.setdefault(d["host"], []).append(d)
    alone = [ds[0] for ds in hosts.values() if len(ds) == 1]  # hosts with one GPU: node row = GPU
    for key, by_dev in want.items():
        diffs = [abs(node[key].get(d["host"], 0.0) - by_dev[d["label"]]) for d in alone]
        results.append(
            (f"{key.replace('_', ' ')} per GPU (node views, hosts of one GPU)", len(diffs), int(max(diffs, default=0)))
        )
    # GPU rows: the thread's task (header) gives the host (.row task label "Rank 0 (host, pid 1)")
    header = Path(f"{base}.prv").open().readline()
    apps = header.split(":", 5)[5] if header.count(":") >= 5 else ""
    counts = (
        [int(x.split(":")[0]) for x in apps[apps.index("(") + 1 : apps.index(")")].split(",")] if "(" in apps else []
    )
    tasks = Path(f"{base}.row").read_text().split("LEVEL TASK SIZE")[1].splitlines()[1 : 1 + len(counts)]
    hosts_of = [t.rsplit("(", 1)[-1].split(", pid")[0] for t in tasks]
    owner = [i for i, n in enumerate(counts) for _ in range(n)]
    # a GPU row's number is the run's (the .row's comments give each number's host and GPU id when
    # they differ: several hosts), OUT.pop.json's label the host's GPU id
    ids = {int(m[1]): f"{m[2]}:GPU{m[3]}" for line in row if (m := GPU_NUMBER.match(line))}
    rows = {
        ids.get(int(label.split("GPU")[-1]), f"{hosts_of[owner[g]]}:{label.split()[-1]}"): g
        for g, label in enumerate(row)
        if label.startswith("Metrics GPU") and g < len(owner)
    }
    if any(r in rows for r in (d["label"] for d in pop["devices"])):
        for key in GPU_COLUMNS:
            diffs = [abs(gpu[key][rows[d["label"]]] - want[key][d["label"]]) for d in pop["devices"]]
            results.append((f"{key.replace('_', ' ')} per GPU (GPU rows)", len(diffs), int(max(diffs, default=0))))
    return results


GPU_NUMBER = re.compile(r"^# nsys2prv: GPU (\d+) = (.+) GPU (-?\d+)$")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base", type=Path, help="OUT of the conversion (OUT.prv, OUT.pop.json beside it)")
    ap.add_argument("--paramedir", default=shutil.which("paramedir"), help="paramedir binary")
    args = ap.parse_args()
    if not args.paramedir:
        print("paramedir not found: put it on PATH or pass --paramedir", file=sys.stderr)
        return 2
    results = compare(Path(str(args.base).removesuffix(".prv")), args.paramedir)
    for what, n, diff in results:
        print(f"{what:<55} {n:>4} compared, largest difference {diff} ns")
    return 0 if all(d == 0 for _, _, d in results) else 1


if __name__ == "__main__":
    sys.exit(main())
