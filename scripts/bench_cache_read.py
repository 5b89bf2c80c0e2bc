#!/usr/bin/env python3
"""CPU seconds of reading a warm table cache back, as stage C does (``pipeline.report.load``), and of
decoding its metadata objects (``nsys.codec.decode`` of each ``meta.n2p`` and ``scan-*.n2p``).

Usage: bench_cache_read.py CACHE_DIR REPORT.sqlite... [--repeat N]

CACHE_DIR is a ``--cache-dir`` a conversion of the same reports filled (``nsys2prv --cache-dir CACHE_DIR -m
REPORT.sqlite... OUT``); every kind cached for the first report is loaded.  One process, one report after
the other, best of N passes (the first pass, which fills what is missing, is not counted).  The figures
are process CPU time (every thread), steadier than wall time on a shared machine.
"""

from __future__ import annotations

import argparse
import glob
import json
import time
from pathlib import Path

from nsys2prv.nsys.cache import entry_dir
from nsys2prv.nsys.codec import decode, system_pool
from nsys2prv.nsys.identity import Identity
from nsys2prv.nsys.readers.mpi import RawMpi
from nsys2prv.pipeline.report import Reading, ReportFile, ReportInfo, Source, load
from nsys2prv.pipeline.scan import Scan


def best(fn, repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        out = min(out, time.process_time() - t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("cache_dir")
    ap.add_argument("reports", nargs="+")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    system_pool()
    root = Path(args.cache_dir) / "tables"
    entries = [entry_dir(root, Path(r)) for r in args.reports]
    manifest = entries[0] / "kinds.json"
    if not manifest.is_file():
        raise SystemExit(f"{args.reports[0]}: no entry in {root} for this code: convert with --cache-dir first")
    kinds = tuple(json.loads(manifest.read_text())["kinds"])
    srcs = [Source(i, ReportFile(r, str(root), None, False), Reading(kinds=kinds)) for i, r in enumerate(args.reports)]
    for s in srcs:
        load(s)
    cpu = best(lambda: [load(s) for s in srcs], args.repeat)
    print(f"load: {len(srcs)} reports, kinds {','.join(kinds)}: best CPU {cpu:.4f} s")
    for pattern, expect, classes in (
        ("meta.n2p", ReportInfo, (Identity,)),
        ("scan-*.n2p", Scan, (ReportInfo, Identity, RawMpi)),
    ):
        files = [Path(f).read_bytes() for e in entries for f in sorted(glob.glob(str(e / pattern)))]

        def run(files=files, expect=expect, classes=classes):
            for data in files:
                decode(data, expect, classes)

        size = sum(map(len, files))
        print(f"decode {pattern}: {len(files)} files, {size} bytes: best CPU {best(run, args.repeat):.4f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
