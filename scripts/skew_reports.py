#!/usr/bin/env python3
"""Copy a set of rank exports with a known clock skew added to some hosts' session start.

    scripts/skew_reports.py SRC_DIR DST_DIR HOST=SKEW_NS [HOST=SKEW_NS ...]

Every SRC_DIR/rank*.sqlite is copied to DST_DIR (expected.json too, when present); in the copies of the
reports whose TARGET_INFO_SYSTEM_ENV Hostname is HOST, TARGET_INFO_SESSION_START_TIME.utcEpochNs (and its
utcTime/localTime texts) moves by SKEW_NS (an integer, may be negative): that host's clock is then off by
SKEW_NS, every event keeps its time relative to the session start. DST_DIR/skew.json records
{"skew_ns": {HOST: SKEW_NS}}: the truth for a clock alignment is a correction of -SKEW_NS for that host
(0 for the others, on the tests/data/mpi23 sets whose hosts share one clock).

For the tests/data/mpi23 sets, e.g.
    scripts/skew_reports.py tests/data/mpi23/p2p4h2 /tmp/p2p4h2_skew node1=250000
Exit status 2 on bad arguments, 1 when a HOST names no report (nothing is written then).
"""

from __future__ import annotations

import datetime
import json
import shutil
import sqlite3
import sys
from pathlib import Path


def _host(path: Path) -> str | None:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = con.execute("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'").fetchone()
    finally:
        con.close()
    return row[0] if row else None


def _iso(ns: int) -> str:
    return datetime.datetime.fromtimestamp(ns // 1_000_000_000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def main(argv: list[str]) -> int:
    if len(argv) < 4:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    src, dst = Path(argv[1]), Path(argv[2])
    skews: dict[str, int] = {}
    for arg in argv[3:]:
        host, _, value = arg.partition("=")
        try:
            skews[host] = int(value)
        except ValueError:
            print(f"skew_reports.py: {arg}: not HOST=SKEW_NS", file=sys.stderr)
            return 2
    reports = sorted(src.glob("rank*.sqlite"))
    hosts = {p: _host(p) for p in reports}
    unknown = sorted(set(skews) - set(hosts.values()))
    if not reports or unknown:
        print(f"skew_reports.py: {src}: no report of host {unknown or 'any'}", file=sys.stderr)
        return 1
    dst.mkdir(parents=True, exist_ok=True)
    for p in reports:
        out = dst / p.name
        shutil.copyfile(p, out)
        skew = skews.get(hosts[p] or "", 0)
        if skew:
            con = sqlite3.connect(out)
            (start,) = con.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()
            new = start + skew
            con.execute(
                "UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = ?, utcTime = ?, localTime = ?",
                (new, _iso(new), _iso(new)),
            )
            con.commit()
            con.close()
        print(f"{out}: host {hosts[p]}, session start {'+' if skew >= 0 else ''}{skew} ns")
    if (src / "expected.json").is_file():
        shutil.copyfile(src / "expected.json", dst / "expected.json")
    with open(dst / "skew.json", "w") as f:
        json.dump({"skew_ns": skews}, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
