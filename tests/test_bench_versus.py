"""scripts/bench_versus.py: the same conversion by two checkouts, run after run, and the ratio of their
CPU seconds (issue 40's CPU per row is measured with it against the base)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "bench_versus.py"


def test_two_checkouts_run_after_run(tmp_path):
    from nsysgen import cloverleaf_like

    report = cloverleaf_like(tmp_path / "clover.sqlite")
    # (no bytecode written into the checkout)
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONDONTWRITEBYTECODE="1")
    cmd = [sys.executable, str(SCRIPT), "--rounds", "2", "--no-bytecode", str(ROOT), str(tmp_path / "out")]
    got = subprocess.run([*cmd, "--", "--no-cache", str(report)], capture_output=True, text=True, env=env, timeout=600)
    assert got.returncode == 0, got.stderr
    lines = [json.loads(line) for line in got.stdout.splitlines()]
    runs = [r for r in lines if "checkout" in r]
    assert [(r["checkout"], r["round"]) for r in runs] == [("base", 1), ("this", 1), ("base", 2), ("this", 2)]
    assert len({r["records"] for r in runs}) == 1 and runs[0]["records"] > 0  # (the same trace)
    rounds = [r for r in lines if "cpu_ratio" in r]
    assert len(rounds) == 2
    for i, r in enumerate(rounds):
        base, this = runs[2 * i], runs[2 * i + 1]
        assert r["round"] == i + 1 and r["cpu_ratio"] == round(this["cpu_s"] / base["cpu_s"], 3)
        assert r["wall_ratio"] == round(this["wall_s"] / base["wall_s"], 3)
    last = lines[-1]
    assert last["rounds"] == 2 and last["base"] == str(ROOT) and last["records"] == runs[0]["records"]
    assert last["median_cpu_ratio"] == sum(r["cpu_ratio"] for r in rounds) / 2
    assert last["bytecode"] == "as is"


def test_a_base_that_is_not_a_checkout(tmp_path):
    got = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path), str(tmp_path / "out"), "--", "x.sqlite"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (
        got.returncode == 1
        and got.stderr.strip() == f"{tmp_path}: not a checkout of nsys2prv (no nsys2prv/__init__.py)"
    )
