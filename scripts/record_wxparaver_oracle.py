#!/usr/bin/env python3
"""Record a histogram's numbers as Paraver's GUI gives them (tests/oracles/wxparaver.json, issue 41).

    python3 scripts/record_wxparaver_oracle.py [--check]

Converts the oracle case ``gpu-shared`` of tests/oracle_cases.py (8 generated ranks on 2 hosts sharing
a GPU each), opens it in wxparaver under Xvfb with the shipped analysis/kernel_time.cfg, and saves the
histogram's numbers as a user does (right click on the table, Save > Text..., the file dialog:
tests/wxparaver_driver.py's export_histogram_text).  Writes them with wxparaver's version (the VERSIONS
file scripts/build_wxparaver.sh writes) and the steps; prints what changed; ``--check`` writes nothing
and exits 1 when something changed.  tests/test_wxparaver.py holds the view evaluator and paramedir's
record to these numbers (no GUI needed) and, in the GUI tier, wxparaver to them again.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import oracle_cases as O  # noqa: E402
from wxparaver_driver import (  # noqa: E402
    BUILD_HINT,
    Xvfb,
    export_histogram_text,
    find_wxparaver,
    paraver_home,
    wxparaver_version,
)

ORACLE = ROOT / "tests" / "oracles" / "wxparaver.json"
CASE, VIEW = "gpu-shared", "kernel_time"
STEPS = [
    f"{O.CASES[CASE][1]}",
    f"wxparaver OUT.prv nsys2prv/cfgs/analysis/{VIEW}.cfg",
    "right click on the histogram > Save > Text... > VIEW.csv (wxparaver's text layout, as paramedir's)",
]


def record(wxparaver: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="wxparaver-oracle-") as scratch, Xvfb() as x:
        work = Path(scratch)
        env = dict(os.environ, HOME=str(paraver_home(work, wxparaver, x.display)), DISPLAY=x.display)
        base = O.convert(CASE, work / "trace")
        dest = work / f"{VIEW}.csv"
        res = export_histogram_text(wxparaver, Path(f"{base}.prv"), O.ANALYSIS / f"{VIEW}.cfg", env, dest)
        if res.dialogs or res.exit is not None or not dest.exists():
            raise SystemExit(f"record_wxparaver_oracle: no histogram text: dialogs {res.dialogs}, exit {res.exit}")
        histogram = O.parse_histogram(dest.read_text())
    return {
        "tool": "wxparaver",
        "version": wxparaver_version(wxparaver),
        "steps": STEPS,
        "recorded_by": "python3 scripts/record_wxparaver_oracle.py",
        "case": CASE,
        "what": O.CASES[CASE][0],
        "view": VIEW,
        "histogram": histogram,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when the numbers changed")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # ends Xvfb and wxparaver on the way out
    wxparaver = find_wxparaver()
    if wxparaver is None:
        raise SystemExit(f"record_wxparaver_oracle: wxparaver not found; build it: {BUILD_HINT}")
    new = record(wxparaver)
    old = json.loads(ORACLE.read_text()) if ORACLE.exists() else None
    changed = old is None or old["histogram"] != new["histogram"]
    print(f"{CASE} {VIEW}: {'changed' if changed else 'unchanged'} ({len(new['histogram']['rows'])} rows)")
    if args.check:
        sys.exit(1 if changed else 0)
    ORACLE.write_text(json.dumps(new, indent=1) + "\n")


if __name__ == "__main__":
    main()
