#!/usr/bin/env bash
# Profile the fixture MPI+NVTX app (scripts/fixture_app/app.c) with Nsight Systems,
# one report per rank.
#
#   scripts/profile_app.sh OUTDIR NRANKS
#
# Result: OUTDIR/app and OUTDIR/rank0.nsys-rep ... OUTDIR/rank<N-1>.nsys-rep
#
# Per rank it runs (through a small wrapper, see below)
#   nsys profile -t mpi,nvtx,osrt --mpi-impl=openmpi -s none --cpuctxsw=none \
#        -o 'OUTDIR/rank%q{OMPI_COMM_WORLD_RANK}' ./app
# under
#   mpirun --allow-run-as-root --oversubscribe -np NRANKS
# and then converts each rankN.qdstrm with QdstrmImporter, because Debian's
# nsight-systems 2022.4 (and the 2023.4 that scripts/install_nsys.sh unpacks) cannot
# find its own importer ("Importer error status: The importer binary and its
# dependencies were not found"). The `nsys` first on PATH is the one used: put
# /opt/nsys-2023.4/usr/bin first (and its extralib on LD_LIBRARY_PATH) for 2023.4.
#
# Why a wrapper: several nsys 2022.4 CLIs starting at the same moment on one host
# race each other (observed: "Agent launcher failed", "Connection to the Agent
# lost", "Local Endpoint is not available", "End of file"; 3 failures in ~16 runs).
# The wrapper gives every rank its own TMPDIR (nsys keeps its session-manager
# lock and stream files there) and starts rank r after r*NSYS_STAGGER seconds.
# A failed attempt is cleaned up (only processes started by this script) and
# retried.
#
# Environment knobs:
#   NSYS_STAGGER=0.25      seconds between rank start-ups
#   NSYS_ATTEMPTS=3        attempts before giving up
#   NSYS_RUN_TIMEOUT=120   seconds per attempt
#   NSYS_EXTRA_ARGS=...    extra `nsys profile` options (default:
#                          --osrt-backtrace-threshold=1000000, i.e. OS-runtime
#                          backtraces only for calls >= 1 ms; keeps reports small)
#   NVTX_INCLUDE=dir       NVTX headers (default: found in the nsys install)
#   NSYS_IMPORTER=path     QdstrmImporter binary (default: found in the nsys install)
#   KEEP_QDSTRM=1          keep the (large, ~14 MB) .qdstrm files
#   NSYS_TRACE=mpi,nvtx,osrt  what `nsys profile -t` traces
#   APP_NITER=4            iterations of the app (more = more MPI sync points)
set -euo pipefail

die() {
    echo "profile_app.sh: ERROR: $*" >&2
    [ -n "${WORK:-}" ] && [ -d "$WORK" ] && echo "profile_app.sh: logs kept in $WORK" >&2
    exit 1
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", b-a}'; }

[ $# -eq 2 ] || { echo "usage: $0 OUTDIR NRANKS" >&2; exit 2; }
OUTDIR_ARG=$1
NRANKS=$2
[[ "$NRANKS" =~ ^[1-9][0-9]*$ ]] || die "NRANKS must be a positive integer, got '$NRANKS'"

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
APP_SRC="$SCRIPT_DIR/fixture_app/app.c"
[ -f "$APP_SRC" ] || die "missing $APP_SRC"

for tool in nsys mpicc mpirun timeout; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' not found on PATH (run scripts/install_nsys.sh)"
done

NSYS_BIN=$(dirname "$(command -v nsys)")      # Debian's layout: <prefix>/bin/nsys, <prefix>/lib/nsight-systems
NSYS_REAL=$(readlink -f "$(command -v nsys)")  # NVIDIA's: <home>/bin/nsys beside <home>/host-linux-x64
if [ -z "${NSYS_IMPORTER:-}" ]; then
    for cand in "$NSYS_BIN/../lib/nsight-systems/host-linux-x64/QdstrmImporter" \
                "$(dirname "$NSYS_REAL")/../host-linux-x64/QdstrmImporter" \
                /usr/lib/nsight-systems/host-linux-x64/QdstrmImporter \
                /opt/nvidia/nsight-systems/*/host-linux-x64/QdstrmImporter; do
        if [ -x "$cand" ]; then NSYS_IMPORTER=$cand; break; fi
    done
fi
[ -n "${NSYS_IMPORTER:-}" ] && [ -x "$NSYS_IMPORTER" ] || die "QdstrmImporter not found (set NSYS_IMPORTER)"

if [ -z "${NVTX_INCLUDE:-}" ]; then
    for cand in "$NSYS_BIN/../lib/nsight-systems/target-linux-x64/nvtx/include" \
                /usr/lib/x86_64-linux-gnu/nsight-systems/target-linux-x64/nvtx/include \
                /usr/lib/nsight-systems/target-linux-x64/nvtx/include \
                "$(dirname "$NSYS_REAL")/../target-linux-x64/nvtx/include" \
                /opt/nvidia/nsight-systems/*/target-linux-x64/nvtx/include; do
        if [ -f "$cand/nvtx3/nvToolsExt.h" ]; then NVTX_INCLUDE=$cand; break; fi
    done
fi
[ -n "${NVTX_INCLUDE:-}" ] && [ -f "$NVTX_INCLUDE/nvtx3/nvToolsExt.h" ] || die "NVTX headers not found (set NVTX_INCLUDE)"

NSYS_STAGGER=${NSYS_STAGGER:-0.25}
NSYS_ATTEMPTS=${NSYS_ATTEMPTS:-3}
NSYS_RUN_TIMEOUT=${NSYS_RUN_TIMEOUT:-120}
NSYS_EXTRA_ARGS=${NSYS_EXTRA_ARGS---osrt-backtrace-threshold=1000000}
NSYS_TRACE=${NSYS_TRACE:-mpi,nvtx,osrt}
APP_NITER=${APP_NITER:-4}

mkdir -p "$OUTDIR_ARG"
OUTDIR=$(cd "$OUTDIR_ARG" && pwd)
WORK="$OUTDIR/.profile_work.$$"
rm -rf "$WORK"; mkdir -p "$WORK"

# Open MPI refuses to run as root without these (the flag below is also passed).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

T0=$(now)
echo "profile_app.sh: $(nsys --version)"
echo "profile_app.sh: compiling $APP_SRC -> $OUTDIR/app"
mpicc -O1 -Wall -I"$NVTX_INCLUDE" "$APP_SRC" -o "$OUTDIR/app" -ldl -lpthread \
    || die "compilation failed"
T1=$(now)

# Per-rank wrapper: private TMPDIR, staggered start, then exec nsys on ./app.
cat > "$WORK/rank_wrapper.sh" <<WRAP
#!/usr/bin/env bash
r=\${OMPI_COMM_WORLD_RANK:-\${PMI_RANK:-0}}
export TMPDIR="$WORK/tmp.r\$r"
mkdir -p "\$TMPDIR"
sleep \$(awk -v r="\$r" -v s="$NSYS_STAGGER" 'BEGIN{print r*s}')
cd "$OUTDIR"
export APP_NITER=$APP_NITER
exec nsys profile -t $NSYS_TRACE --mpi-impl=openmpi -s none --cpuctxsw=none \\
    $NSYS_EXTRA_ARGS -o '$OUTDIR/rank%q{OMPI_COMM_WORLD_RANK}' ./app
WRAP
chmod +x "$WORK/rank_wrapper.sh"

# Kill processes left behind by a failed attempt: they carry our TMPDIR marker in
# their environment (nsys agents daemonize and survive mpirun).
cleanup_leftovers() {
    local marker="TMPDIR=$WORK/tmp.r" pids="" p
    for p in /proc/[0-9]*; do
        p=${p#/proc/}
        [ "$p" = "$$" ] && continue
        if { tr '\0' '\n' < "/proc/$p/environ"; } 2>/dev/null | grep -qF "$marker"; then
            pids="$pids $p"
        fi
    done
    if [ -n "$pids" ]; then
        echo "profile_app.sh: killing leftover processes:$pids" >&2
        kill $pids 2>/dev/null || true
        sleep 2
        kill -9 $pids 2>/dev/null || true
        for p in $pids; do
            rm -f "/dev/shm/quadd-agent-instance-$p" "/dev/shm/sem.nsys_sem_$p"
        done
    fi
    # A stale nsys session registry in /dev/shm makes every later run fail with
    # "Agent launcher failed". Remove it only when no nsys process is running.
    if ! ps -eo comm= | grep -qx 'nsys'; then
        rm -f /dev/shm/NSys-20* /dev/shm/quadd-create-agent-* 2>/dev/null || true
    fi
}

ok=0
for attempt in $(seq 1 "$NSYS_ATTEMPTS"); do
    rm -f "$OUTDIR"/rank*.qdstrm "$OUTDIR"/rank*.nsys-rep
    rm -rf "$WORK"/tmp.r*
    echo "profile_app.sh: attempt $attempt/$NSYS_ATTEMPTS: mpirun -np $NRANKS nsys profile ... ./app"
    TA=$(now)
    set +e
    (cd "$OUTDIR" && timeout -k 10 "$NSYS_RUN_TIMEOUT" \
        mpirun --allow-run-as-root --oversubscribe -np "$NRANKS" "$WORK/rank_wrapper.sh") \
        > "$WORK/mpirun.$attempt.log" 2>&1
    rc=$?
    set -e
    TB=$(now)
    nq=$(find "$OUTDIR" -maxdepth 1 \( -name 'rank*.qdstrm' -o -name 'rank*.nsys-rep' \) | wc -l)
    echo "profile_app.sh:   mpirun exit $rc, $nq rank file(s), $(elapsed "$TA" "$TB") s"
    if [ "$rc" -eq 0 ]; then
        all=1
        for ((r = 0; r < NRANKS; r++)); do
            [ -s "$OUTDIR/rank$r.qdstrm" ] || [ -s "$OUTDIR/rank$r.nsys-rep" ] || all=0
        done
        if [ "$all" -eq 1 ]; then ok=1; break; fi
    fi
    echo "profile_app.sh:   attempt failed; last lines of the mpirun output:" >&2
    grep -v -e '^\s*$' "$WORK/mpirun.$attempt.log" | tail -n 15 | sed 's/^/    | /' >&2
    cleanup_leftovers
done
[ "$ok" -eq 1 ] || die "profiling failed after $NSYS_ATTEMPTS attempts (see above)"
T2=$(now)

# Convert .qdstrm -> .nsys-rep (QdstrmImporter writes it next to the .qdstrm).
for ((r = 0; r < NRANKS; r++)); do
    q="$OUTDIR/rank$r.qdstrm"
    rep="$OUTDIR/rank$r.nsys-rep"
    if [ -s "$rep" ] && [ ! -e "$q" ]; then continue; fi   # nsys imported it itself
    (cd "$WORK" && "$NSYS_IMPORTER" -i "$q" > "$WORK/import.r$r.log" 2>&1) \
        || { tail -n 5 "$WORK/import.r$r.log" >&2; die "QdstrmImporter failed on $q"; }
    if [ ! -s "$rep" ]; then
        for cand in "$WORK/rank$r.nsys-rep" "$(pwd)/rank$r.nsys-rep"; do
            if [ -s "$cand" ]; then mv -f "$cand" "$rep"; break; fi
        done
    fi
    [ -s "$rep" ] || die "no $rep after importing $q"
    [ "${KEEP_QDSTRM:-0}" = 1 ] || rm -f "$q"
done
T3=$(now)

rm -rf "$WORK"
echo "profile_app.sh: done: $(cd "$OUTDIR" && ls rank*.nsys-rep | tr '\n' ' ')"
echo "profile_app.sh: timing: compile $(elapsed "$T0" "$T1") s, profile $(elapsed "$T1" "$T2") s," \
     "import $(elapsed "$T2" "$T3") s, total $(elapsed "$T0" "$T3") s (NRANKS=$NRANKS)"
