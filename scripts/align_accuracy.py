#!/usr/bin/env python3
"""Measure the clock alignment's error against a known truth: skew each host of a fixture set in turn.

    scripts/align_accuracy.py [--skews NS,NS,...] SET_DIR [SET_DIR ...]

For every SET_DIR (a tests/data/mpi23 set: rank*.sqlite of hosts sharing one clock, so the truth is a
correction of 0), without skew and then for every host H and every skew S (default +-50 us, +-500 us,
+-5 ms), scripts/skew_reports.py adds S to H's session starts and ``nsys2prv -t mpi -m`` converts the
copies. The truth is then: H's clock is S late against the others'; the trace keeps the clock of the first
rank's host (the reference), so the true correction of a host X is skew(reference) - skew(X). The error of
a host is its correction (``OUT.sync.json``) minus that truth. Prints a Markdown table: per set and skewed
host, the largest |error| over all hosts (us) for each skew and over the row; per set (a comment) the
largest over everything and the causality violations seen (there should be none).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SKEWS = [50_000, -50_000, 500_000, -500_000, 5_000_000, -5_000_000]


def _convert(src: Path, work: Path, host: str | None, skew: int) -> tuple[dict[str, int], int]:
    """Per host its error (ns), and the causality violations, for ``skew`` added to ``host``."""
    data = work / "skewed"
    # (no skew: a copy all the same; skew_reports needs a HOST=SKEW and 0 changes nothing)
    args = [f"{host}={skew}" if host else f"{_hosts(src)[0]}=0"]
    subprocess.run(
        [sys.executable, str(HERE / "skew_reports.py"), str(src), str(data), *args], check=True, capture_output=True
    )
    ranks = sorted(data.glob("rank*.sqlite"), key=lambda p: int(p.stem[4:]))
    out = work / "out"
    subprocess.run([sys.executable, "-m", "nsys2prv", "-q", "-t", "mpi", "-m", *map(str, ranks), str(out)], check=True)
    sync = json.loads(Path(f"{out}.sync.json").read_text())
    skews = {h: 0 for h in _hosts(src)}
    if host:
        skews[host] = skew
    ref = next(r["host"] for r in sync["reports"] if r["report"] == sync["reference_report"])
    err: dict[str, int] = {}
    for r in sync["reports"]:
        e = r["correction_ns"] - (skews[ref] - skews[r["host"]])
        err[r["host"]] = max(err.get(r["host"], 0), e, key=abs)
    cau = sync.get("causality", {})
    return err, int(cau.get("collectives_violated", 0)) + int(cau.get("messages_violated", 0))


def _hosts(src: Path) -> list[str]:
    ex = json.loads((src / "expected.json").read_text())
    return sorted(set(ex["hosts"].values()), key=lambda h: (len(h), h))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skews", default=",".join(map(str, SKEWS)), help="ns, comma-separated")
    ap.add_argument("sets", nargs="+", type=Path)
    a = ap.parse_args()
    skews = [int(s) for s in a.skews.split(",")]
    print("| set | skewed host | no skew | " + " | ".join(f"{s / 1e3:+g} us" for s in skews) + " | worst |")
    print("|---|---|---|" + "---|" * len(skews) + "---|")
    for src in a.sets:
        with tempfile.TemporaryDirectory() as t:
            base, bad = _convert(src, Path(t), None, 0)
            zero = max(abs(v) for v in base.values())
            worst = zero
            for host in _hosts(src):
                cells, row = [], zero
                for s in skews:
                    with tempfile.TemporaryDirectory() as t2:
                        err, v = _convert(src, Path(t2), host, s)
                    bad += v
                    e = max(abs(x) for x in err.values())
                    row = max(row, e)
                    cells.append(f"{e / 1e3:.2f}")
                print(f"| `{src.name}` | {host} | {zero / 1e3:.2f} | " + " | ".join(cells) + f" | {row / 1e3:.2f} |")
                worst = max(worst, row)
            print(f"<!-- {src.name}: worst {worst} ns, causality violations {bad} -->")
    return 0


if __name__ == "__main__":
    sys.exit(main())
