"""scripts/make_bench_inputs.py makes realistic N-rank reports (issue 36): every rank's ids move in their
PID and TID bits alike, so each process keeps its main thread (tid == pid) and the metrics' host.on_cpu
counts the scheduling data of every rank, as the host_useful view on its first CPU row does."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CLOVERLEAF, ROOT, convert

from nsys2prv.nsys.ids import pid_of, tid_of


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _threads(path: Path) -> set[tuple[int, int]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    g = [r[0] for r in con.execute("SELECT DISTINCT globalTid FROM SCHED_EVENTS")]
    con.close()
    return {(int(p), int(t)) for p, t in zip(pid_of(g), tid_of(g))}


def test_ranks_keep_their_main_threads_and_the_on_cpu_time(clover_export, tmp_path):
    """Rank 1's threads are rank 0's with pid and tid both + 1000 (before: the tids stayed, so no thread
    of rank 1 had tid == pid and host.on_cpu counted it as without scheduling data, while the view read
    its first row's scheduler states: check_views' host useful differed by rank 0's off-CPU time).
    Both ranks, copies of one report, have the source's off-CPU time outside calls to the ns."""
    bench = _script("make_bench_inputs")
    ins = tmp_path / "in"
    bench.make(clover_export, ins, 2, 1.0)
    t0, t1 = _threads(ins / "rank0.sqlite"), _threads(ins / "rank1.sqlite")
    assert t0 == _threads(clover_export) and any(p == t for p, t in t0)
    assert t1 == {(p + 1000, t + 1000) for p, t in t0}

    convert(["-m", clover_export, tmp_path / "one"])
    one = json.loads((tmp_path / "one.pop.json").read_text())["host"]["on_cpu"]
    (source_off,) = one["off_cpu_outside_calls_ns"].values()
    # (the generated export's main thread is off its CPU only inside its calls)
    assert source_off == (89684549 if clover_export == CLOVERLEAF else 0)
    convert(["-m", ins / "rank0.sqlite", ins / "rank1.sqlite", tmp_path / "two"])
    two = json.loads((tmp_path / "two.pop.json").read_text())["host"]["on_cpu"]
    assert "without_scheduling_data" not in two
    assert two["off_cpu_outside_calls_ns"] == {"Rank 0": source_off, "Rank 1": source_off}

    paramedir = shutil.which("paramedir")
    if paramedir is None:
        pytest.skip(
            "paramedir is not on PATH (build Paraver's kernel from github.com/bsc-performance-tools/paraver-kernel:"
            " scripts/build_bsc_tools.sh)"
        )
    res = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check_views.py"), str(tmp_path / "two")],
        capture_output=True,
        text=True,
    )
    host = [line for line in res.stdout.splitlines() if line.startswith("host useful per process")]
    assert host == [f"{'host useful per process':<55}    2 compared, largest difference 0 ns"], res.stdout + res.stderr
