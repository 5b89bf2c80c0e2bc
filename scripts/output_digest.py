#!/usr/bin/env python3
"""Convert a fixed set of inputs and print one SHA-256 per output file, to prove that a change keeps
the outputs byte-identical (run before and after, then ``diff`` the two listings).

Usage: output_digest.py WORKDIR [--bench DIR] [--cloverleaf FILE] > digests.txt

- the real reports shipped in tests/data (mpi4, mpi8) with several category sets;
- a real single-rank CUDA export (``--cloverleaf``), when given;
- benchmark inputs made by ``make_bench_inputs.py`` (``--bench DIR`` holding ``rank*.sqlite``), when given;
- ``nsys2prv pop`` on the two real runs given as reports (a weak-scaling table).

Times that legitimately change between runs (none are written into the outputs) are not involved:
every line is ``<sha256>  <case>/<file>``.  The summary JSON is digested too, minus its list of
output paths (which name WORKDIR).
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"


def cases(args) -> list[tuple[str, list[str]]]:
    mpi4 = sorted(glob.glob(str(DATA / "mpi4" / "rank*.sqlite")))
    mpi8 = sorted(glob.glob(str(DATA / "mpi8" / "rank*.sqlite")))
    out = [
        ("mpi4", ["-t", "mpi,nvtx,osrt", "-m", *mpi4]),
        ("mpi4_nvtx", ["-t", "nvtx", "-m", *mpi4]),
        ("mpi4_region", ["-t", "mpi,nvtx", "--iterations", "iteration", "-m", *mpi4]),
        ("mpi8", ["-t", "all,osrt", "-m", *mpi8]),
    ]
    if args.cloverleaf:
        out += [("clover", ["-t", "all,osrt", args.cloverleaf]), ("clover_default", [args.cloverleaf])]
    if args.bench:
        ranks = sorted(glob.glob(str(Path(args.bench) / "rank*.sqlite")))
        out += [("bench", ["-m", *ranks])]
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("workdir")
    ap.add_argument("--bench")
    ap.add_argument("--cloverleaf")
    args = ap.parse_args()
    work = Path(args.workdir)
    for name, argv in cases(args):
        base = work / name / "out"
        cmd = [sys.executable, "-m", "nsys2prv", "-q", "--cfgs", str(work / name / "cfgs"), *argv, str(base)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode:
            print(f"FAILED {name}: exit {res.returncode}: {res.stderr.strip().splitlines()[-1:]}")
            continue
        for f in sorted(p for p in (work / name).rglob("*") if p.is_file()):
            data = f.read_bytes()
            if f.name.endswith(".summary.json"):
                doc = json.loads(data)
                doc.pop("outputs", None)
                for r in doc.get("reports", []):
                    r.pop("path", None)
                data = json.dumps(doc, sort_keys=True).encode()
            print(f"{hashlib.sha256(data).hexdigest()}  {f.relative_to(work)}")
    runs = [str(DATA / "mpi4" / "rank*.sqlite"), str(DATA / "mpi8" / "rank*.sqlite")]
    pop = work / "pop" / "scaling"
    res = subprocess.run(
        [sys.executable, "-m", "nsys2prv", "pop", "-q", *runs, "--scaling", "weak", "--labels", "4,8", "-o", str(pop)],
        capture_output=True,
        text=True,
    )
    if res.returncode:
        print(f"FAILED pop: exit {res.returncode}: {res.stderr.strip().splitlines()[-1:]}")
    for f in sorted(p for p in pop.parent.glob("*") if p.is_file()):
        data = f.read_bytes()
        if f.suffix == ".json":
            doc = json.loads(data)
            for r in doc.get("runs", []):
                r.pop("source", None)
            data = json.dumps(doc, sort_keys=True).encode()
        print(f"{hashlib.sha256(data).hexdigest()}  {f.relative_to(work)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
