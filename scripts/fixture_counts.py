#!/usr/bin/env python3
"""Print Markdown tables of row counts for Nsight Systems SQLite exports (one per rank).

    scripts/fixture_counts.py tests/data/mpi4/rank*.sqlite

Used to write tests/data/mpi4/README.md. Opens the files read-only.
"""

import collections
import os
import sqlite3
import sys


def connect(path):
    return sqlite3.connect(f"file:{os.path.abspath(path)}?mode=ro", uri=True)


def table(title, header, rows):
    print(f"\n### {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")


def nvtx_rows(con):
    """(eventType, domain name, event name, globalTid) for every NVTX event."""
    doms = {}
    for dom, g, text in con.execute("SELECT domainId, globalTid, text FROM NVTX_EVENTS WHERE eventType=75"):
        doms[(dom, g >> 24)] = text
    q = """SELECT n.eventType, n.domainId, n.globalTid, COALESCE(n.text, s.value)
           FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId"""
    out = []
    for et, dom, g, name in con.execute(q):
        dname = "(default)" if not dom else doms.get((dom, g >> 24), f"domain {dom}")
        out.append((et, dname, name, g))
    return out


def main(paths):
    labels = [os.path.splitext(os.path.basename(p))[0] for p in paths]
    cons = [connect(p) for p in paths]

    # 1. every non-ENUM table
    counts = collections.defaultdict(dict)
    for lab, con in zip(labels, cons):
        for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name"):
            if not t.startswith("ENUM_"):
                counts[t][lab] = con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]
    table("Rows per table", ["table"] + labels, [[t] + [counts[t].get(l, "-") for l in labels] for t in sorted(counts)])

    etn = {}
    try:
        etn = dict(cons[0].execute("SELECT id, name FROM ENUM_NSYS_EVENT_TYPE"))
    except sqlite3.Error:
        pass
    nv = [nvtx_rows(c) for c in cons]

    # 2. NVTX by eventType
    keys = sorted({r[0] for rows in nv for r in rows})
    table(
        "NVTX_EVENTS by eventType",
        ["eventType", "name"] + labels,
        [[k, etn.get(k, "?")] + [sum(1 for r in rows if r[0] == k) for rows in nv] for k in keys],
    )

    # 3. NVTX by domain and eventType
    keys = sorted({(r[1], r[0]) for rows in nv for r in rows})
    table(
        "NVTX_EVENTS by domain and eventType",
        ["domain", "eventType"] + labels,
        [[d, e] + [sum(1 for r in rows if (r[1], r[0]) == (d, e)) for rows in nv] for d, e in keys],
    )

    # 4. MPI functions (push/pop ranges in domain "MPI")
    keys = sorted({r[2] for rows in nv for r in rows if r[1] == "MPI" and r[0] == 59})
    table(
        'MPI calls (eventType 59 ranges in NVTX domain "MPI")',
        ["function"] + labels,
        [[k] + [sum(1 for r in rows if r[1] == "MPI" and r[0] == 59 and r[2] == k) for rows in nv] for k in keys]
        + [["**total**"] + [sum(1 for r in rows if r[1] == "MPI" and r[0] == 59) for rows in nv]],
    )

    # 5. user annotations (everything not in domain MPI)
    keys = sorted({(r[1], r[0], r[2] or "") for rows in nv for r in rows if r[1] != "MPI"})
    table(
        "Non-MPI NVTX events by domain, eventType and text",
        ["domain", "eventType", "text"] + labels,
        [
            [d, e, f"`{n}`"] + [sum(1 for r in rows if (r[1], r[0], r[2] or "") == (d, e, n)) for rows in nv]
            for d, e, n in keys
        ],
    )

    # 6. OSRT
    osrt = []
    for con in cons:
        c = collections.Counter()
        try:
            for cls, name in con.execute(
                "SELECT o.eventClass, s.value FROM OSRT_API o LEFT JOIN StringIds s ON s.id=o.nameId"
            ):
                c[(cls, name)] += 1
        except sqlite3.Error:
            pass
        osrt.append(c)
    keys = sorted({k for c in osrt for k in c}, key=lambda k: (k[0], -sum(c[k] for c in osrt), k[1] or ""))
    table(
        "OSRT_API by eventClass and function",
        ["eventClass", "function"] + labels,
        [[k[0], k[1]] + [c[k] for c in osrt] for k in keys],
    )

    # 7. threads
    print("\n### Threads\n")
    for lab, con in zip(labels, cons):
        tn = con.execute("""SELECT t.globalTid & 16777215, s.value FROM ThreadNames t
                            LEFT JOIN StringIds s ON s.id=t.nameId ORDER BY 1""").fetchall()
        ev = con.execute("""SELECT globalTid & 16777215, text FROM NVTX_EVENTS WHERE eventType=39
                            ORDER BY start""").fetchall()
        print(f"- {lab}: ThreadNames {tn}; NVTX thread-name events (39) {ev}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
