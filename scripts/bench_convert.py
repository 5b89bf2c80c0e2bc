#!/usr/bin/env python3
"""Time a conversion and measure its peak memory (RSS of the child process).

Usage: bench_convert.py OUT -- NSYS2PRV-ARGS...
Example:
  python scripts/make_bench_inputs.py ../shared/data/cloverleaf-cuda-nsys2024.5.sqlite /tmp/bench8 --ranks 8 --repeat 10
  python scripts/bench_convert.py /tmp/bench8/out -- -m /tmp/bench8/rank*.sqlite
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time


def main() -> None:
    if "--" not in sys.argv:
        sys.exit(__doc__)
    sep = sys.argv.index("--")
    out, args = sys.argv[1], sys.argv[sep + 1:]
    cmd = [sys.executable, "-m", "nsys2prv", "-q", *args, out]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd)
    wall = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if proc.returncode:
        sys.exit(proc.returncode)
    summary = json.load(open(f"{out}.summary.json"))
    rec = summary["records"]
    total = rec["states"] + rec["events"] + rec["communications"]
    src = sum(c["source_rows"] for c in summary["categories"].values())
    print(json.dumps({"ranks": summary["ranks"], "source_rows": src, "records": total, "wall_s": round(wall, 3),
                      "records_per_s": round(total / wall), "peak_rss_mb": round(peak_mb, 1)}))


if __name__ == "__main__":
    main()
