#!/usr/bin/env python3
"""CPU seconds of stage C's translation, the table load apart, in this process.

Usage: bench_stage_c.py [--runs N] [--no-cache] REPORT.sqlite...

Converts the reports N times (``-j 1 -q -m``, the per-report stages in this process:
NSYS2PRV_IN_PROCESS=1, into a temporary directory) and prints one JSON line per run, then the best
run (least ``c_minus_read``) last: the CPU seconds (user + system, ``time.process_time``) of
``slices.translate_slice`` over every report, of the tables' load in it (``read``: a report of one
slice, ``stages.read_whole``; a slice of a sliced report, ``slices._read_slice``), their difference
(``c_minus_read``: the translation, the POP partial, painting, sorting and the chunk files) and of
its parts: ``translate`` (``stages.translate_tables``), ``pop`` (``slices._window_partial``),
``chunk`` (``chunks.write_chunk``, its file writes included) and ``release``.
Run it once first to fill the table cache (a warm run reads the Parquet cache); ``--no-cache``: every
run reads the reports and loads the run's own Arrow tables, as a cold conversion does. CPU seconds of
one process, steadier than wall time on a shared machine; compare two checkouts run after run
(``PYTHONPATH=CHECKOUT``)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from typing import Any, Callable


def _timed(module: Any, name: str, label: str, acc: dict[str, float]) -> None:
    fn: Callable[..., Any] = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            acc[label] = acc.get(label, 0.0) + time.process_time() - t

    setattr(module, name, wrapper)


def timers() -> tuple[tuple[Any, str, str], ...]:
    """(module, function, label) of each function ``main`` wraps with a timer, for the rest of the
    process (a caller that goes on, e.g. a test, puts them back)."""
    import nsys2prv.pipeline.slices as slices
    import nsys2prv.pipeline.stages as stages

    return (
        (slices, "translate_slice", "stage_c"),
        (stages, "read_whole", "read"),  # (a report of one slice)
        (slices, "_read_slice", "read"),  # (a slice of a sliced report)
        (stages, "translate_tables", "translate"),
        (slices, "_window_partial", "pop"),
        (slices, "write_chunk", "chunk"),
        (slices, "release", "release"),
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-cache", action="store_true", help="the run's own tables, as a cold conversion")
    ap.add_argument("reports", nargs="+")
    args = ap.parse_args()
    os.environ["NSYS2PRV_IN_PROCESS"] = "1"
    from nsys2prv.cli import main as convert

    acc: dict[str, float] = {}
    for module, name, label in timers():
        _timed(module, name, label, acc)
    argv = ["-j", "1", "-q", *(["--no-cache"] if args.no_cache else []), "-m"]
    runs = []
    for _ in range(args.runs):
        acc.clear()
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
            convert([*argv, *args.reports, os.path.join(tmp, "OUT")], standalone_mode=False)
        run = {k: round(v, 4) for k, v in acc.items()}
        run["c_minus_read"] = round(acc["stage_c"] - acc.get("read", 0.0), 4)
        runs.append(run)
        print(json.dumps(run), flush=True)
    print(json.dumps({"best_of": args.runs, **min(runs, key=lambda r: r["c_minus_read"])}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
