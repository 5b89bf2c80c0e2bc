#!/usr/bin/env python3
"""Stage C's CPU where it runs: user and system CPU seconds and minor page faults of every
``translate_slice`` call, summed over the workers (``bench_stage_c.py``: in one process, by parts;
``bench_convert.py --stages``: each stage's CPU of the main process only).  A worker's page faults
are half of stage C's CPU on a virtual machine (``core.memory.keep_heap``), which only workers show.

Usage: bench_stage_c_workers.py [--runs N] -- NSYS2PRV-ARGS...
Example (base and branch alternately, each with its own cache directory):
  PYTHONPATH=BASE python scripts/bench_stage_c_workers.py --runs 3 -- -q -m /tmp/bench8/rank*.sqlite OUT
  PYTHONPATH=.    python scripts/bench_stage_c_workers.py --runs 3 -- -q -m /tmp/bench8/rank*.sqlite OUT

One JSON line per run: user_s, sys_s, cpu_s, faults (minor page faults), calls, max_rss_mb (the
largest RSS of a process that ran a call); the best run (least cpu_s) last.  Each run converts in a
child process of its own (this script imports nothing of nsys2prv).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import sys
if sys.path and sys.path[0] == "":  # (-c puts the working directory first: PYTHONPATH says which nsys2prv)
    del sys.path[0]
import json, os, resource
from nsys2prv.pipeline import slices
log = os.environ["NSYS2PRV_STAGE_C_LOG"]
inner = slices.translate_slice
def translate_slice(*args, **kwargs):
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    try:
        return inner(*args, **kwargs)
    finally:
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        row = [r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime, r1.ru_minflt - r0.ru_minflt, r1.ru_maxrss]
        with open(log, "a") as f:  # (one short line per call: appended whole)
            f.write(json.dumps(row) + "\n")
translate_slice.__module__ = slices.__name__  # (pickled by name to the workers: they inherit this one)
slices.translate_slice = translate_slice
from nsys2prv.cli import main
main(sys.argv[1:])
"""


def run_once(args: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench_stage_c") as tmp:
        log = os.path.join(tmp, "calls.jsonl")
        env = {**os.environ, "NSYS2PRV_STAGE_C_LOG": log}
        subprocess.run([sys.executable, "-c", CHILD, *args], check=True, env=env)
        with open(log) as f:
            rows = [json.loads(line) for line in f]
    user, system = sum(r[0] for r in rows), sum(r[1] for r in rows)
    return {
        "user_s": round(user, 3),
        "sys_s": round(system, 3),
        "cpu_s": round(user + system, 3),
        "faults": sum(r[2] for r in rows),
        "calls": len(rows),
        "max_rss_mb": max((r[3] for r in rows), default=0) // 1024,
    }


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print(__doc__, file=sys.stderr)
        return 2
    mine, args = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    runs = int(mine[mine.index("--runs") + 1]) if "--runs" in mine else 1
    results = []
    for _ in range(runs):
        results.append(run_once(args))
        print(json.dumps(results[-1]), flush=True)
    print(json.dumps({"best_of": runs, **min(results, key=lambda r: r["cpu_s"])}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
