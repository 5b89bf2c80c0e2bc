#!/usr/bin/env python3
"""Kill conversions at random moments and check what they leave behind.

Usage: fault_loop.py [--runs 50] [--seed 1] [WORKDIR]

Each run converts the real 8-rank reports (tests/data/mpi8) into WORKDIR/out, alternately into a fresh
OUT and over the previous run's outputs, and sends SIGKILL, SIGTERM, SIGINT or SIGHUP after a random
delay (or lets it finish).  After each run it checks: no process of the run is left (within 3 s), the
output set is either the previous one untouched or a complete new one (every file present, the summary
matching the .row), and the exit code is the documented one (0, 130, 143, 129; -9 for SIGKILL; a signal
that arrives while the interpreter itself starts, before nsys2prv's first line, has its default action).  Stale
temporaries are counted before the next run and must be gone after it.  Prints a tally.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXT = (".prv", ".pcf", ".row", ".summary.json", ".sync.json", ".pop.json")
EXPECTED = {None: 0, signal.SIGTERM: 143, signal.SIGINT: 130, signal.SIGHUP: 129, signal.SIGKILL: -9}


def digest(base: Path) -> dict:
    return {e: hashlib.sha256(Path(f"{base}{e}").read_bytes()).hexdigest() for e in EXT if Path(f"{base}{e}").is_file()}


def complete(base: Path) -> bool:
    if set(digest(base)) != set(EXT):
        return False
    summary = json.loads(Path(f"{base}.summary.json").read_text())
    row = Path(f"{base}.row").read_text()
    return f"LEVEL TASK SIZE {summary['ranks']}" in row


def alive(marker: str) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if marker in (d / "cmdline").read_bytes().decode(errors="replace"):
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("workdir", nargs="?")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="nsys2prv-faults-"))
    work.mkdir(parents=True, exist_ok=True)
    ranks = sorted(str(p) for p in (ROOT / "tests" / "data" / "mpi8").glob("rank*.sqlite"))
    env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache")}
    tally = collections.Counter()
    for i in range(args.runs):
        out = work / ("out" if i % 2 else f"fresh{i}")
        before = digest(out)
        stale = [p for p in work.iterdir() if p.name.startswith(f".{out.name}.") and not p.name.endswith(".lock")]
        sig = rng.choice([None, signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
        delay = rng.uniform(0.05, 3.0)
        cmd = [sys.executable, "-m", "nsys2prv", "-q", "-j", "2", "-m", *ranks, str(out)]
        if rng.random() < 0.5:
            cmd.insert(3, "--no-cache")
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if sig is not None:
            try:
                proc.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        tally["runs"] += 1
        finished = proc.returncode == 0
        tally["finished" if finished else f"stopped by {signal.Signals(sig).name}"] += 1
        if not finished and proc.returncode == -sig and digest(out) == before:
            # before Python ran nsys2prv's first line (its start-up): the default action, nothing written
            tally["stopped during interpreter start-up (default action, nothing written)"] += 1
        elif not finished and proc.returncode != EXPECTED[sig]:
            tally[f"BAD exit code {proc.returncode} for {sig}"] += 1
            print(err, file=sys.stderr)
        deadline = time.monotonic() + 3
        while alive(str(out)) and time.monotonic() < deadline:
            time.sleep(0.1)
        if alive(str(out)):
            tally["BAD orphan processes"] += 1
        after = digest(out)
        if after == before:
            tally["state: previous outputs untouched" if before else "state: nothing written"] += 1
        elif complete(out):
            tally["state: new complete set"] += 1
        else:
            tally["BAD state: mixed or partial outputs"] += 1
        if stale:
            tally["stale temporaries found before the run"] += 1
            if finished and any(p.exists() for p in stale):
                tally["BAD stale temporaries survived a finished run"] += 1
    for k, v in sorted(tally.items()):
        print(f"{v:6d}  {k}")
    return 1 if any(k.startswith("BAD") for k in tally) else 0


if __name__ == "__main__":
    sys.exit(main())
