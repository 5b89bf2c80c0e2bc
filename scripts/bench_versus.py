#!/usr/bin/env python3
"""CPU per row against another checkout: the same conversion by BASE and by this checkout, run after
run, each as ``bench_convert.py`` measures one (``run_once``: the CPU seconds of the conversion's
processes, user + system, its wall time and peak memory).

Usage: bench_versus.py [--rounds N] [--no-bytecode] BASE OUT -- NSYS2PRV-ARGS...
Example (issue 40's "CPU per row at 10M-20M rows halved", 21ef787 checked out in /tmp/base):
  git worktree add /tmp/base 21ef787
  python scripts/bench_versus.py --rounds 5 /tmp/base /tmp/out -- --no-cache -m /tmp/r10m/rank0.sqlite

Each round runs BASE first, then this checkout (``PYTHONPATH``: the checkout, ``PYTHONSAFEPATH``),
so that a drift of the machine falls on both.  Each reads its bytecode from a private prefix of its
own, warmed once by a conversion whose figures are not printed, as ``bench_convert.py`` does
(``--no-bytecode``: the environment as it is).  Both must write the same number of records (the
.prv's lines, the same trace): a run that does not stops the comparison.

One JSON line per run (``checkout``: "base" or "this"), one per round with ``cpu_ratio`` (this
checkout's CPU seconds over BASE's: 0.5 is half the CPU per row) and ``wall_ratio``, and last the
rounds' median ratios and each checkout's median records per CPU second.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_bytecode import environ_restored  # noqa: E402
from bench_convert import _command, run_once  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MODES = ("PYTHONPATH", "PYTHONSAFEPATH", "PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")


def _environ(checkout: Path, prefix: str | None) -> dict[str, str | None]:
    """The variables a run of ``checkout`` sets (None: unset), its bytecode from ``prefix``."""
    env: dict[str, str | None] = {"PYTHONPATH": str(checkout), "PYTHONSAFEPATH": "1"}
    if prefix is not None:
        env.update(PYTHONPYCACHEPREFIX=prefix, PYTHONDONTWRITEBYTECODE=None)
    return env


def _apply(env: dict[str, str | None]) -> None:
    for k, v in env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def main() -> int:
    if "--" not in sys.argv:
        sys.exit(__doc__)
    sep = sys.argv.index("--")
    ap = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-bytecode", action="store_true")
    ap.add_argument("base")
    ap.add_argument("out")
    opts, args = ap.parse_args(sys.argv[1:sep]), sys.argv[sep + 1 :]
    rounds, compiled = opts.rounds, not opts.no_bytecode
    base, out = Path(opts.base).resolve(), opts.out
    if not (base / "nsys2prv" / "__init__.py").is_file():
        sys.exit(f"{base}: not a checkout of nsys2prv (no nsys2prv/__init__.py)")
    scratch = tempfile.mkdtemp(prefix="bench-versus-")
    try:
        with environ_restored(*MODES):
            envs = {}
            for name, checkout in (("base", base), ("this", ROOT)):
                prefix = tempfile.mkdtemp(prefix=f"{name}-", dir=scratch) if compiled else None
                envs[name] = _environ(checkout, prefix)
                if compiled:  # (the warming run: its bytecode written under the prefix)
                    _apply(envs[name])
                    subprocess.run(_command(out, args), check=True, stdout=subprocess.DEVNULL)
            per: dict[str, list[dict]] = {"base": [], "this": []}
            ratios = []
            for i in range(rounds):
                got = {}
                for name in ("base", "this"):
                    _apply(envs[name])
                    got[name] = run_once(out, args, stages=False)
                    per[name].append(got[name])
                    print(json.dumps({"checkout": name, "round": i + 1, **got[name]}), flush=True)
                if got["base"]["records"] != got["this"]["records"]:
                    n = [got[c]["records"] for c in ("base", "this")]
                    sys.exit(f"round {i + 1}: the checkouts wrote {n[0]} and {n[1]} records: not the same trace")
                ratio = {
                    "round": i + 1,
                    "cpu_ratio": round(got["this"]["cpu_s"] / got["base"]["cpu_s"], 3),
                    "wall_ratio": round(got["this"]["wall_s"] / got["base"]["wall_s"], 3),
                }
                ratios.append(ratio)
                print(json.dumps(ratio), flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(
        json.dumps(
            {
                "rounds": rounds,
                "base": str(base),
                "median_cpu_ratio": statistics.median(r["cpu_ratio"] for r in ratios),
                "median_wall_ratio": statistics.median(r["wall_ratio"] for r in ratios),
                "records": per["this"][0]["records"],
                "base_records_per_cpu_s": statistics.median(r["records_per_cpu_s"] for r in per["base"]),
                "this_records_per_cpu_s": statistics.median(r["records_per_cpu_s"] for r in per["this"]),
                "bytecode": "private PYTHONPYCACHEPREFIX per checkout, warmed once" if compiled else "as is",
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
