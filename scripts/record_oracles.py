#!/usr/bin/env python3
"""Record paramedir's answers on the example traces as the tests' oracles (tests/oracles/paramedir.json).

    python3 scripts/record_oracles.py [--paramedir PATH] [--check]

Converts each case of tests/oracle_cases.py (the Quick start's mpi4 reports, generated GPU runs), runs
every shipped analysis view (nsys2prv/cfgs/analysis/*.cfg) on it with Paraver's paramedir, one
``paramedir OUT.prv VIEW.cfg VIEW.txt`` per view, and writes the histograms with paramedir's version and
source commit (``--version-file``; default: the VERSIONS file of the installation whose bin/ holds
paramedir, its paraver-kernel line) and the command.  Prints what changed against the recorded file
(view, row, column: old -> new); ``--check`` writes nothing and exits 1 when something changed.
tests/test_oracles.py holds the product (OUT.pop.json) and the in-repo view evaluator to the recorded
answers, without paramedir.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import oracle_cases as O  # noqa: E402

COMMAND = "paramedir OUT.prv nsys2prv/cfgs/analysis/VIEW.cfg VIEW.txt"


def tool_version(paramedir: str, version_file: Path | None) -> str:
    """The paraver-kernel line of the VERSIONS file next to paramedir's installation."""
    path = version_file or Path(paramedir).resolve().parent.parent / "VERSIONS"
    if path.exists():
        for line in path.read_text().splitlines():
            if line.startswith("paraver-kernel"):
                return line.strip()
    return "unknown (no VERSIONS file beside paramedir)"


def record_case(case: str, paramedir: str, work: Path) -> dict:
    base = O.convert(case, work)
    got = {}
    for view in O.views():
        out = work / f"{view}.txt"
        res = subprocess.run(
            [paramedir, f"{base}.prv", str(O.ANALYSIS / f"{view}.cfg"), str(out)], capture_output=True, text=True
        )
        if res.returncode != 0:
            raise RuntimeError(f"{case} {view}: paramedir failed ({res.returncode}): {res.stderr.strip()}")
        got[view] = O.parse_histogram(out.read_text()) if out.exists() else None
    return {"what": O.CASES[case][0], "conversion": O.CASES[case][1], "views": got}


def changes(old: dict, new: dict) -> list[str]:
    out = []
    for case in sorted(set(old) | set(new)):
        a, b = old.get(case, {}).get("views"), new.get(case, {}).get("views")
        if a is None or b is None:
            out.append(f"{case}: {'new case' if a is None else 'case gone'}")
            continue
        for view in sorted(set(a) | set(b)):
            ha, hb = a.get(view), b.get(view)
            if ha == hb:
                continue
            if ha is None or hb is None:
                out.append(
                    f"{case} {view}: {'no histogram' if ha is None else ha['columns']} -> "
                    f"{'no histogram' if hb is None else hb['columns']}"
                )
                continue
            ra = {label: dict(zip(ha["columns"], vals)) for label, vals in ha["rows"]}
            rb = {label: dict(zip(hb["columns"], vals)) for label, vals in hb["rows"]}
            for label in sorted(set(ra) | set(rb)):
                ca, cb = ra.get(label, {}), rb.get(label, {})
                for col in sorted(set(ca) | set(cb)):
                    if ca.get(col) != cb.get(col):
                        out.append(f"{case} {view} [{label}] [{col}]: {ca.get(col)} -> {cb.get(col)}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--paramedir", default=shutil.which("paramedir"), help="paramedir (default: on PATH)")
    ap.add_argument("--version-file", type=Path, help="the file naming paramedir's version and commit")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when an answer changed")
    args = ap.parse_args()
    if not args.paramedir:
        print("paramedir not found: put it on PATH or pass --paramedir", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="nsys2prv-oracles-") as tmp:
        cases = {case: record_case(case, args.paramedir, Path(tmp) / case) for case in O.CASES}
    new = {
        "tool": "paramedir",
        "version": tool_version(args.paramedir, args.version_file),
        "command": COMMAND,
        "recorded_by": "python3 scripts/record_oracles.py",
        "cases": cases,
    }
    old = O.load() if O.ORACLES.exists() else {"cases": {}}
    diff = changes(old.get("cases", {}), cases)
    if old.get("version") != new["version"]:
        diff.insert(0, f"paramedir: {old.get('version')} -> {new['version']}")
    print("\n".join(diff) if diff else "no change")
    if args.check:
        return 1 if diff else 0
    O.ORACLES.parent.mkdir(parents=True, exist_ok=True)
    O.ORACLES.write_text(json.dumps(new, indent=1) + "\n")
    print(f"written: {O.ORACLES.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
