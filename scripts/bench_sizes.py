#!/usr/bin/env python3
"""The report-size table of BENCHMARKS.md: each input of ``make_bench_inputs.py --sizes`` converted cold
(``--no-cache``, best of RUNS) by ``bench_convert.py``, beside ``bench_floor.py``'s floor for the same rows
and bytes.

Usage: bench_sizes.py ROOT [--runs N] [--only r10m,e10m] [-- NSYS2PRV-ARGS...]

Prints one Markdown table row per input (and the JSON lines it is made from on stderr):
input | reports | source rows | wall s | CPU s | largest process MB | floor s (import + read per core + write).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
INPUTS = ("r0.6m", "r2.5m", "r10m", "r20m", "e10m", "e20m")


def last_json(cmd: list[str]) -> dict:
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    line = [ln for ln in out.splitlines() if ln.startswith("{")][-1]
    sys.stderr.write(line + "\n")
    return json.loads(line)


def main() -> None:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--only", default=",".join(INPUTS))
    args = ap.parse_args(argv)
    print("| input | reports | source rows | wall s | CPU s | largest process | floor s (import + read/core + write) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in args.only.split(","):
        d = args.root / name
        reports = sorted(str(p) for p in d.glob("rank*.sqlite"))
        if not reports:
            continue
        out = d / "out"
        conv = last_json(
            [
                sys.executable,
                str(HERE / "bench_convert.py"),
                "--runs",
                str(args.runs),
                str(out),
                "--",
                "--no-cache",
                *extra,
                "-m",
                *reports,
            ]
        )
        floor = last_json([sys.executable, str(HERE / "bench_floor.py"), f"{out}.prv", *reports])
        total = floor["import_s"] + floor["read_s_per_core"] + floor["write_s"]
        print(
            f"| {name} | {len(reports)} | {conv['source_rows'] / 1e6:.2f}M | {conv['wall_s']:.1f}"
            f" | {conv['cpu_s']:.1f} | {max(conv['process_hwm_mb']):,.0f} MB | {total:.1f} ({floor['import_s']:.1f} +"
            f" {floor['read_s_per_core']:.1f} + {floor['write_s']:.1f}) |",
            flush=True,
        )


if __name__ == "__main__":
    main()
