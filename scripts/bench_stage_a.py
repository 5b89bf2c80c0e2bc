#!/usr/bin/env python3
"""CPU seconds of stage A (``scan.scan_for_stage_b``) over reports read cold, and of stage C's re-read of
what it stored (``report.load``), in one process -- the figures of stage A's CPU beyond the floor.

Usage: bench_stage_a.py REPORT.sqlite... [--repeat N] [--shared]

The reports' ``Source``s are those a ``--no-cache`` conversion makes (one is run first, in this process,
into a temporary directory); each pass then scans every report into a fresh, empty table cache root and
loads them back, as a ``--no-cache`` run does (its own cache: ``ReportFile.private``; ``--shared``: as a
first conversion into a shared cache).  The early process's lifetimes are found first, as the command
line's early process finds them.  Best of N passes; process CPU time (every thread).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import tempfile
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("reports", nargs="+")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--shared", action="store_true")
    args = ap.parse_args()
    os.environ["NSYS2PRV_IN_PROCESS"] = "1"
    from nsys2prv.cli import main as cli
    from nsys2prv.nsys.lifetimes import process_lifetimes
    from nsys2prv.nsys.schema import Export
    from nsys2prv.pipeline import early, prepare, report, scan

    sources: list = []
    real = scan.scan_for_stage_b

    def spy(src, filter_nvtx=None):
        sources.append(src)
        return real(src, filter_nvtx)

    prepare.scan.scan_for_stage_b = spy
    work = Path(tempfile.mkdtemp(prefix="bench_stage_a."))
    try:
        try:
            cli(["--no-cache", "-q", "-j", "1", "-m", *args.reports, str(work / "out")], standalone_mode=False)
        except SystemExit:
            pass
        prepare.scan.scan_for_stage_b = real
        for s in sources:
            path = str(Path(s.file.input).resolve())
            export = Export(path)
            try:
                early._found[path] = (early._identity(path), process_lifetimes(export))
            finally:
                export.close()
        best_a = best_c = float("inf")
        for k in range(args.repeat):
            root = work / f"tables{k}"
            own = {k: not args.shared for k in ("private", "ipc") if hasattr(sources[0].file, k)}  # (older code: none)
            srcs = [
                dataclasses.replace(s, file=dataclasses.replace(s.file, cache_root=str(root), **own)) for s in sources
            ]
            t = time.process_time()
            for s in srcs:
                scan.scan_for_stage_b(s, None)
            a = time.process_time() - t
            t = time.process_time()
            for s in srcs:
                report.load(s)
            c = time.process_time() - t
            best_a, best_c = min(best_a, a), min(best_c, c)
            shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    what = "a shared cache" if args.shared else "the run's own cache"
    print(f"{len(sources)} reports, {what}: stage A {best_a:.3f} s, stage C's re-read {best_c:.3f} s", end="")
    print(f" (best of {args.repeat})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
