#!/usr/bin/env python3
"""Time a conversion and measure its peak memory.

Usage: bench_convert.py [--runs N] [--stages] [--pss] [--first-run] [--no-bytecode] OUT -- NSYS2PRV-ARGS...
Example:
  python scripts/make_bench_inputs.py CUDA_EXPORT.sqlite /tmp/bench8 --ranks 8 --repeat 15
  python scripts/bench_convert.py --runs 3 /tmp/bench8/out -- -m /tmp/bench8/rank*.sqlite            # warm cache
  python scripts/bench_convert.py --runs 3 /tmp/bench8/out -- --no-cache -m /tmp/bench8/rank*.sqlite # cold read

Prints one JSON line per run (and the best of the runs last):
- cpu_s: user + system CPU seconds of the conversion's processes (the command and the workers
  it waited for), and records_per_cpu_s: records per CPU second -- the one-core throughput, steadier
  than wall time on a shared machine (run under ``taskset -c 0`` for a one-core wall time);
- peak_rss_mb: the largest RSS of any single process of the conversion (main or a worker: what
  ``getrusage(RUSAGE_CHILDREN).ru_maxrss`` reports);
- peak_hwm_mb: the largest VmHWM (peak RSS) of any one process of the tree, sampled every 10 ms
  (a lower bound, but valid for every run, unlike ru_maxrss after the first); process_hwm_mb: each
  process's, the command's own first, then the others largest first;
- peak_tree_pss_mb (with --pss): the largest sum of PSS over the conversion's process tree, sampled
  every 10 ms (shared pages of forked workers counted once). Reading smaps_rollup walks the page
  tables under the process's memory lock and slowed the 8-rank conversion by 0.2-0.4 s, so it is
  off unless asked for: time without it, measure memory with it;
- with --stages, per stage of the main process: [seconds, RSS after, peak RSS during (MB), CPU
  seconds], as the conversion reports them (NSYS2PRV_TIMING); cpu_s_to_stage_a: the main process's CPU
  seconds up to stage A (the interpreter, the imports, the command line and numba's start-up: the
  figure to hold against ``bench_floor.py``'s import_cpu_s).

Bytecode: the conversions read their modules' bytecode from a private ``PYTHONPYCACHEPREFIX``
(``PYTHONDONTWRITEBYTECODE`` unset), warmed once by a conversion with the same arguments whose
figures are not printed -- what an installed nsys2prv runs (``bench_bytecode.py``); each line says so
("bytecode"). ``--no-bytecode``: with the environment as it is (on a machine that sets
``PYTHONDONTWRITEBYTECODE=1``, every run compiles nsys2prv's modules: 0.15 s of CPU more).

--first-run: the first run after install against a cold repeat.  Each of the N rounds gives the
conversion a fresh, empty cache directory (``XDG_CACHE_HOME``: no compiled kernel, no table cache;
``NUMBA_CACHE_DIR`` unset), converts once (the first run: it compiles the kernels) and once more
(the cold repeat: the kernels load from the cache), both with ``--no-cache`` (added when absent);
one JSON line per conversion ("run": "first" or "cold"), then the best first run over the best
cold repeat (wall and CPU):
  python scripts/bench_convert.py --runs 3 --first-run /tmp/bench8/out -- -m /tmp/bench8/rank*.sqlite
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time

from bench_bytecode import bytecode, environ_restored


def _children(pid: int) -> list[int]:
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                out += [int(c) for c in fh.read().split()]
    except OSError:
        pass
    return out


def _proc_kb(path: str, field: str) -> int:
    """The kB value of ``field`` in a /proc file (0 when the process is gone)."""
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _pss_kb(pid: int) -> int:
    return _proc_kb(f"/proc/{pid}/smaps_rollup", "Pss")


def _hwm_kb(pid: int) -> int:
    return _proc_kb(f"/proc/{pid}/status", "VmHWM")


def _tree_pss(root: int, hwm: list | None = None, pss: bool = True, each: dict | None = None) -> int:
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pss:
            total += _pss_kb(pid)
        if hwm is not None:
            kb = _hwm_kb(pid)
            hwm[0] = max(hwm[0], kb)
            if each is not None:
                each[pid] = max(each.get(pid, 0), kb)
        todo += _children(pid)
    return total


def _command(out: str, args: list[str]) -> list[str]:
    return [sys.executable, "-m", "nsys2prv", "-q", *args, out]


def _safe_path() -> dict[str, str]:
    # the checkout PYTHONPATH names, not one in the current directory (``python -m`` puts the
    # current directory first on sys.path; Python 3.11+ leaves it out with PYTHONSAFEPATH)
    return {"PYTHONSAFEPATH": "1"} if os.environ.get("PYTHONPATH") else {}


def run_once(out: str, args: list[str], stages: bool, pss: bool = False) -> dict:
    cmd = _command(out, args)
    env = dict(os.environ, NSYS2PRV_TIMING="1") if stages else dict(os.environ)
    env.update(_safe_path())
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    before = r0.ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE if stages else None, text=True)
    peak, hwm, each = [0], [0], {}
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], _tree_pss(proc.pid, hwm, pss, each))
            stop.wait(0.01)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - t0
    stop.set()
    th.join()
    if proc.returncode:
        sys.stderr.write(err or "")
        sys.exit(proc.returncode)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    maxrss = r1.ru_maxrss
    cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    summary = json.load(open(f"{out}.summary.json"))
    rec = summary["records"]
    total = rec["states"] + rec["events"] + rec["communications"]
    src = sum(c["source_rows"] for c in summary["categories"].values())
    res = {
        "ranks": summary["ranks"],
        "source_rows": src,
        "records": total,
        "wall_s": round(wall, 3),
        "records_per_s": round(total / wall),
        "cpu_s": round(cpu, 3),
        "records_per_cpu_s": round(total / cpu) if cpu > 0 else None,
        "peak_rss_mb": round(max(maxrss, before) / 1024, 1),
        "peak_tree_pss_mb": round(peak[0] / 1024, 1) if pss else None,
    }
    if maxrss <= before:
        res["peak_rss_mb"] = None  # an earlier run of this script was larger: ru_maxrss cannot tell
    res["peak_hwm_mb"] = round(hwm[0] / 1024, 1)  # the largest VmHWM sampled (any one process, every run)
    # every process's VmHWM, the command's first, then the largest
    res["process_hwm_mb"] = [round(each.pop(proc.pid, 0) / 1024)] + sorted(
        (round(kb / 1024) for kb in each.values()), reverse=True
    )
    if stages:
        res["stages"], cpu_main = {}, 0.0
        for line in (err or "").splitlines():
            m = re.search(
                r"timing: (.*) ([0-9.]+) s \(rss ([0-9.]+) MB, peak ([0-9.]+) MB(?:, cpu ([0-9.]+) s)?\)", line
            )
            if m:  # seconds, the main process's RSS after the stage and its peak during it (MB), its CPU s
                res["stages"][m[1]] = [float(m[2]), float(m[3]), float(m[4])]
                if m[5] is not None:  # (an older nsys2prv's lines have none)
                    cpu_main, prev = float(m[5]), cpu_main
                    res["stages"][m[1]].append(round(cpu_main - prev, 3))
                    if len(res["stages"]) == 1:  # the interpreter, imports, command line and numba's start-up
                        res["cpu_s_to_stage_a"] = cpu_main
    return res


def first_runs(out: str, args: list[str], rounds: int, stages: bool, pss: bool, how: str) -> None:
    """``--first-run``: per round a fresh cache, a first run and a cold repeat (module doc)."""
    args = args if "--no-cache" in args else ["--no-cache", *args]
    best: dict[str, dict] = {}
    with environ_restored("XDG_CACHE_HOME", "NUMBA_CACHE_DIR"):
        os.environ.pop("NUMBA_CACHE_DIR", None)
        for _ in range(rounds):
            with tempfile.TemporaryDirectory(prefix="bench-first-run-") as cache:
                os.environ["XDG_CACHE_HOME"] = cache
                for kind in ("first", "cold"):
                    res = {"run": kind, **run_once(out, args, stages, pss), "bytecode": how}
                    print(json.dumps(res), flush=True)
                    if kind not in best or res["wall_s"] < best[kind]["wall_s"]:
                        best[kind] = res
    first, cold = best["first"], best["cold"]
    ratio = {
        "best_of": rounds,
        "first_wall_s": first["wall_s"],
        "cold_wall_s": cold["wall_s"],
        "first_over_cold_wall": round(first["wall_s"] / cold["wall_s"], 3),
        "first_cpu_s": first["cpu_s"],
        "cold_cpu_s": cold["cpu_s"],
        "first_over_cold_cpu": round(first["cpu_s"] / cold["cpu_s"], 3),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "bytecode": how,
    }
    print(json.dumps(ratio))


def main() -> None:
    if "--" not in sys.argv:
        sys.exit(__doc__)
    sep = sys.argv.index("--")
    opts, args = sys.argv[1:sep], sys.argv[sep + 1 :]
    runs, stages, pss, first_run, compiled = 1, False, False, False, True
    while opts and opts[0].startswith("--"):
        o = opts.pop(0)
        if o == "--runs":
            runs = int(opts.pop(0))
        elif o == "--stages":
            stages = True
        elif o == "--pss":
            pss = True
        elif o == "--first-run":
            first_run = True
        elif o == "--no-bytecode":
            compiled = False
        else:
            sys.exit(f"unknown option {o}\n{__doc__}")
    out = opts[0]
    with tempfile.TemporaryDirectory(prefix="bench-warm-") as scratch:
        # the warming run: for --first-run, in a cache of its own (the rounds' first runs find none)
        warm_env = {**_safe_path(), **({"XDG_CACHE_HOME": scratch} if first_run else {})}
        with bytecode(compiled, _command(out, args), warm_env) as how:
            if first_run:
                return first_runs(out, args, runs, stages, pss, how)
            results = [{**run_once(out, args, stages, pss), "bytecode": how} for _ in range(runs)]
    for r in results:
        print(json.dumps(r))
    if runs > 1:
        best = min(results, key=lambda r: r["wall_s"])
        print(json.dumps({"best_of": runs, **best}))


if __name__ == "__main__":
    main()
