#!/usr/bin/env bash
# Make the real Nsight Systems 2023.4 MPI fixtures tests/data/mpi23/<set>/rank<N>.sqlite + expected.json.
#
#   scripts/make_mpi23_fixtures.sh [--keep-tmp] [SET...]      (default: every set)
#
# MPI23_DEST=DIR writes DIR/<set>/ instead of tests/data/mpi23/<set>/ (to compare a new run with the
# committed one).
#
#   set       program                       ranks  ranks per host  hosts
#   p2p4      scripts/mpi_apps/p2p.c        4      4               node0
#   coll4     scripts/mpi_apps/coll.c       4      4               node0
#   p2p4h2    scripts/mpi_apps/p2p.c        4      2               node0 node1
#   coll8h4   scripts/mpi_apps/coll.c       8      2               node0 .. node3
#   thr6h3    scripts/mpi_apps/threads.c    6      2               node0 .. node2
#   pp2h2     scripts/mpi_apps/pingpong.c   2      1               node0 node1
#   pp4h4     scripts/mpi_apps/pingpong.c   4      1               node0 .. node3
#
# The pingpong sets (the clock alignment's accuracy, docs/clock-alignment.md) run with
# `--mca mpi_yield_when_idle 1 --bind-to none`: a rank waiting in MPI yields the core, so the other
# rank's reply is not delayed by a time slice on the 2 cores.
#
# Per set:
# 1. mpicc the program (scripts/mpi_apps/*.c, logging through mpilog.h);
# 2. profile with nsys 2023.4 through the shipped wrapper, every rank in its own UTS namespace named
#    node<rank / ranks-per-host> (all "hosts" share this machine's clock: the true clock correction is 0):
#      mpirun --allow-run-as-root --oversubscribe -np N \
#        unshare -u sh -c 'hostname node$((OMPI_COMM_WORLD_RANK / K)); exec "$0" "$@"' \
#        "$(nsys2prv wrapper)" -t mpi,nvtx --mpi-impl=openmpi -s none --cpuctxsw=none -- ./PROGRAM
#    (the wrapper imports the .qdstrm nsys 2023.4 leaves: it cannot find its own QdstrmImporter);
# 3. nsys export --type sqlite rankN.sqlite rankN.nsys-rep (2023.4's nsys, run in the run directory so
#    the export's metadata holds file names only);
# 4. scripts/scrub_sqlite.py --trim --vacuum --host node<X> (the node names are ours and stay);
# 5. checks: every event table and MPI_RANKS / MPI_COMMUNICATORS row-for-row identical to the raw export,
#    MPI_RANKS of rankN.sqlite is N, TARGET_INFO_SYSTEM_ENV Hostname is the rank's node, and no byte of
#    this machine's host name, the user's name or the run directory is left in the file;
# 6. scripts/mpi23_expected.py: expected.json from the programs' logs; row counts printed.
#
# Needs: nsys 2023.4 (scripts/install_nsys.sh puts it in /opt/nsys-2023.4; NSYS23_HOME overrides), mpicc,
# mpirun, unshare (util-linux) and root (unshare -u, hostname). Re-running gives new files: timestamps,
# pids and handles change; the messages, receives and collectives of expected.json do not (as multisets:
# the order of wildcard receives and of two threads' lines may change).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)
PY=${PYTHON:-python3}
NSYS23_HOME=${NSYS23_HOME:-/opt/nsys-2023.4}
KEEP_TMP=0
sets=()
for a in "$@"; do
    case "$a" in
        --keep-tmp) KEEP_TMP=1 ;;
        p2p4|coll4|p2p4h2|coll8h4|thr6h3|pp2h2|pp4h4) sets+=("$a") ;;
        *) echo "usage: $0 [--keep-tmp] [p2p4|coll4|p2p4h2|coll8h4|thr6h3|pp2h2|pp4h4 ...]" >&2; exit 2 ;;
    esac
done
[ ${#sets[@]} -gt 0 ] || sets=(p2p4 coll4 p2p4h2 coll8h4 thr6h3 pp2h2 pp4h4)

die() { echo "make_mpi23_fixtures.sh: ERROR: $*" >&2; exit 1; }
[ -x "$NSYS23_HOME/usr/bin/nsys" ] || die "no nsys 2023.4 in $NSYS23_HOME (run scripts/install_nsys.sh)"
export PATH=$NSYS23_HOME/usr/bin:$PATH
export LD_LIBRARY_PATH=$NSYS23_HOME/extralib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
case "$(nsys --version)" in *2023.4.*) ;; *) die "nsys on PATH is not 2023.4: $(nsys --version)" ;; esac
for tool in mpicc mpirun unshare "$PY"; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' not found (run scripts/install_nsys.sh)"
done
[ "$(id -u)" = 0 ] || die "must run as root (unshare -u and hostname set each rank's host name)"
export PYTHONPATH=$REPO${PYTHONPATH:+:$PYTHONPATH}
WRAPPER=$("$PY" -m nsys2prv wrapper)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

TMP=$(mktemp -d "${TMPDIR:-/tmp}/nsys2prv_mpi23.XXXXXX")
if [ "$KEEP_TMP" -eq 0 ]; then trap 'rm -rf "$TMP"' EXIT; else echo "keeping $TMP"; fi

for set in "${sets[@]}"; do
    case $set in
        p2p4) prog=p2p n=4 k=4 ;;
        coll4) prog=coll n=4 k=4 ;;
        p2p4h2) prog=p2p n=4 k=2 ;;
        coll8h4) prog=coll n=8 k=2 ;;
        thr6h3) prog=threads n=6 k=2 ;;
        pp2h2) prog=pingpong n=2 k=1 ;;
        pp4h4) prog=pingpong n=4 k=1 ;;
    esac
    mca=()
    [ "$prog" != pingpong ] || mca=(--mca mpi_yield_when_idle 1 --bind-to none)
    run=$TMP/$set
    dest=${MPI23_DEST:-$REPO/tests/data/mpi23}/$set
    mkdir -p "$run"
    echo "== $set: $prog, $n ranks, $k per host"
    mpicc -O1 -Wall -o "$run/$prog" "$SCRIPT_DIR/mpi_apps/$prog.c" -lpthread || die "$set: compiling $prog.c failed"
    (cd "$run" && MPILOG_DIR=$run NSYS2PRV_OUTDIR=$run timeout -k 10 600 \
        mpirun --allow-run-as-root --oversubscribe ${mca[@]+"${mca[@]}"} -np "$n" \
        unshare -u sh -c 'hostname node$((OMPI_COMM_WORLD_RANK / '"$k"')); exec "$0" "$@"' \
        "$WRAPPER" -t mpi,nvtx --mpi-impl=openmpi -s none --cpuctxsw=none -- "./$prog") \
        > "$run/mpirun.log" 2>&1 || { tail -n 20 "$run/mpirun.log" >&2; die "$set: the run failed"; }
    for ((r = 0; r < n; r++)); do
        [ -s "$run/rank$r.nsys-rep" ] || { tail -n 20 "$run/mpirun.log" >&2; die "$set: no rank$r.nsys-rep"; }
        (cd "$run" && nsys export --type sqlite --quiet true --force-overwrite true -o "rank$r.sqlite" "rank$r.nsys-rep") \
            || die "$set: exporting rank$r failed"
    done
    rm -rf "$dest"
    mkdir -p "$dest"
    for ((r = 0; r < n; r++)); do
        "$PY" "$SCRIPT_DIR/scrub_sqlite.py" --trim --vacuum --host "node$((r / k))" \
            "$run/rank$r.sqlite" "$dest/rank$r.sqlite" > "$run/scrub$r.log" \
            || { tail -n 20 "$run/scrub$r.log" >&2; die "$set: scrubbing rank$r failed"; }
    done
    "$PY" - "$run" "$dest" "$n" "$k" "$(hostname)" "$(id -un)" <<'PYEOF'
import os, re, sqlite3, sys
raw_dir, dest, n, k, host, user = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
KEEP = re.compile(r"^(NVTX_EVENTS|MPI_.*|PROFILER_OVERHEAD|TARGET_INFO_SESSION_START_TIME|ANALYSIS_DETAILS|ProcessStreams)$")
ok = True
for r in range(n):
    raw = sqlite3.connect(os.path.join(raw_dir, f"rank{r}.sqlite"))
    path = os.path.join(dest, f"rank{r}.sqlite")
    new = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    tr = {t for (t,) in raw.execute("select name from sqlite_master where type='table'")}
    tn = {t for (t,) in new.execute("select name from sqlite_master where type='table'")}
    if tr != tn:
        print(f"rank{r}: table sets differ: {sorted(tr ^ tn)}"); ok = False
    for t in sorted(tr & tn):
        if KEEP.match(t):
            a = sorted(raw.execute(f'select * from "{t}"').fetchall(), key=repr)
            b = sorted(new.execute(f'select * from "{t}"').fetchall(), key=repr)
            if a != b:
                print(f"rank{r}: {t} differs ({len(a)} vs {len(b)} rows)"); ok = False
    ranks = [x for (x,) in new.execute("select rank from MPI_RANKS")]
    hosts = [x for (x,) in new.execute("select value from TARGET_INFO_SYSTEM_ENV where name='Hostname'")]
    if ranks != [r] or hosts != [f"node{r // k}"]:
        print(f"rank{r}: MPI_RANKS {ranks}, Hostname {hosts}"); ok = False
    new.close()
    blob = open(path, "rb").read()
    for word in {host, user, raw_dir, os.path.dirname(raw_dir)} - {"root", ""}:
        if len(word) >= 3 and word.encode() in blob:
            print(f"rank{r}: {word!r} left in the file"); ok = False
    print(f"check rank{r}: {os.path.getsize(path)} bytes, MPI rank {ranks}, host {hosts}")
print("check:", "OK" if ok else "FAILED")
sys.exit(0 if ok else 1)
PYEOF
    "$PY" "$SCRIPT_DIR/mpi23_expected.py" "$run" "$n" "$k" "$prog" "$dest/expected.json"
    "$PY" - "$dest" "$n" <<'PYEOF'
import sqlite3, sys
dest, n = sys.argv[1], int(sys.argv[2])
tables = ["MPI_P2P_EVENTS", "MPI_COLLECTIVES_EVENTS", "MPI_START_WAIT_EVENTS", "MPI_OTHER_EVENTS",
          "MPI_RANKS", "MPI_COMMUNICATORS", "NVTX_EVENTS", "StringIds", "ThreadNames", "PROCESSES"]
print("| rank | " + " | ".join(tables) + " |")
for r in range(n):
    con = sqlite3.connect(f"file:{dest}/rank{r}.sqlite?mode=ro", uri=True)
    have = {t for (t,) in con.execute("select name from sqlite_master where type='table'")}
    counts = [str(con.execute(f'select count(*) from "{t}"').fetchone()[0]) if t in have else "-" for t in tables]
    print(f"| {r} | " + " | ".join(counts) + " |")
PYEOF
    du -sh "$dest"
done
echo "make_mpi23_fixtures.sh: done: ${sets[*]}"
