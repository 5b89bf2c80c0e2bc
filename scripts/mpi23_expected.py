#!/usr/bin/env python3
"""Build a fixture set's expected.json from the MPI programs' own logs (scripts/mpi_apps/mpilog.h).

    scripts/mpi23_expected.py LOGDIR NRANKS RANKS_PER_HOST PROGRAM OUT.json

The oracle of tests/data/mpi23: what the program did, never what Nsight Systems recorded.
  messages        every message sent, in each sender's order: src, dst (world ranks), tag, size (bytes),
                  call (the sending call); grouped by sender then order
  receives        every message received: src/tag from the status (ANY_SOURCE/ANY_TAG resolved)
  collectives     every collective call per rank, in order: call, root (world rank, -1: none), comm
                  (the communicator's world ranks)
  communicators   the communicators each rank made (MPI_Comm_split, MPI_Comm_dup): call, ranks
  sends_per_rank  {rank: {call: count}} (the same facts as `messages`, counted)
  hosts           {rank: host name} (rank // RANKS_PER_HOST), thread_level where the program logged it
Exit status 1 when a log is missing or a message sent has no matching receive (or the reverse).
"""

import collections
import json
import os
import sys


def dump(doc: dict) -> str:
    """JSON with one list item per line (diffs stay readable)."""
    parts = []
    for k, v in doc.items():
        if isinstance(v, list) and v:
            items = ",\n  ".join(json.dumps(x) for x in v)
            parts.append(f"{json.dumps(k)}: [\n  {items}\n ]")
        else:
            parts.append(f"{json.dumps(k)}: {json.dumps(v)}")
    return "{\n " + ",\n ".join(parts) + "\n}\n"


def main(argv: list[str]) -> int:
    logdir, n, k, program, out = argv[1], int(argv[2]), int(argv[3]), argv[4], argv[5]
    messages, receives, colls, comms, levels = [], [], [], [], {}
    for r in range(n):
        path = os.path.join(logdir, f"log.rank{r}")
        if not os.path.isfile(path):
            print(f"mpi23_expected.py: {path}: missing", file=sys.stderr)
            return 1
        with open(path) as f:
            for line in f:
                w = line.split()
                if w[0] in ("send", "recv"):
                    row = {"src": int(w[2]), "dst": int(w[3]), "tag": int(w[4]), "size": int(w[5]), "call": w[1]}
                    (messages if w[0] == "send" else receives).append(row)
                elif w[0] == "coll":
                    ranks = [int(x) for x in w[3].split(",")]
                    colls.append({"rank": r, "call": w[1], "root": int(w[2]), "comm": ranks})
                elif w[0] == "comm":
                    comms.append({"rank": r, "call": w[1], "ranks": [int(x) for x in w[2].split(",")]})
                elif w[0] == "thread":
                    levels[str(r)] = w[1]
    key = lambda m: (m["src"], m["dst"], m["tag"], m["size"])  # noqa: E731
    sent = collections.Counter(key(m) for m in messages)
    got = collections.Counter(key(m) for m in receives)
    if sent != got:
        print(f"mpi23_expected.py: sends and receives differ: {sorted((sent - got) + (got - sent))}", file=sys.stderr)
        return 1
    per: dict[str, dict[str, int]] = {str(r): {} for r in range(n)}
    for m in messages:
        d = per[str(m["src"])]
        d[m["call"]] = d.get(m["call"], 0) + 1
    doc = {
        "program": program,
        "ranks": n,
        "hosts": {str(r): f"node{r // k}" for r in range(n)},
        "n_messages": len(messages),
        "sends_per_rank": per,
        "messages": messages,
        "receives": receives,
        "collectives": colls,
        "communicators": comms,
    }
    if levels:
        doc["thread_level"] = levels
    with open(out, "w") as f:
        f.write(dump(doc))
    calls = collections.Counter(m["call"] for m in messages)
    ccalls = collections.Counter(c["call"] for c in colls)
    print(f"expected: {len(messages)} messages {dict(sorted(calls.items()))}")
    print(f"expected: {len(colls)} collective calls {dict(sorted(ccalls.items()))}, {len(comms)} communicators made")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
