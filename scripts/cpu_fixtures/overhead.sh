#!/usr/bin/env bash
# The cost of CPU sampling + scheduling (the wrapper's defaults where nsys's environment check passes):
#
#   scripts/cpu_fixtures/overhead.sh [REPS]       (Nsight Systems on PATH; Open MPI; a C compiler)
#
# 1. compute.c (a fixed amount of CPU work) timed inside nsys: no nsys, nsys without sampling
#    (-t osrt -s none --cpuctxsw=none), nsys with it (-t osrt -s process-tree --cpuctxsw=process-tree
#    --backtrace=fp); the program's own CPU time, user + system (the work only, not nsys's start and
#    end; wall time is meaningless on a loaded machine).
# 2. mpi_wait.c on 2 ranks through the wrapper, with `-t mpi,nvtx,osrt -s none --cpuctxsw=none` and with
#    the wrapper's defaults: the wall time of the whole mpirun and the size of the reports.
# 3. the project's MPI programs (scripts/mpi_apps: p2p and coll on 4 ranks, threads and polls on 2) the
#    same way.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
REPS=${1:-3}
export PYTHONPATH=$REPO${PYTHONPATH:+:$PYTHONPATH}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/nsys2prv_overhead.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
cc -O1 -fno-omit-frame-pointer -fno-inline "$HERE/compute.c" -o compute
mpicc -O1 -fno-omit-frame-pointer "$HERE/mpi_wait.c" -o mpi_wait
cat > timed.sh <<'EOS'
#!/bin/sh
exec /usr/bin/time -a -o "$TIMES" -f "%U %S" "$@"
EOS
chmod +x timed.sh
ms() { awk 'NF == 2 { print int(($1 + $2) * 1000) } NF == 1' "$1" | sort -n \
    | awk '{ a[NR] = $1 } END { printf "median %d ms (%s runs: %s)", a[int((NR + 1) / 2)], NR, a[1] ".." a[NR] }'; }

for ((r = 0; r < REPS; r++)); do
    TIMES=plain.txt ./timed.sh ./compute > /dev/null
    TIMES=nosampling.txt nsys profile -t osrt -s none --cpuctxsw=none --force-overwrite=true -o ns ./timed.sh ./compute > /dev/null 2>&1
    TIMES=sampling.txt nsys profile -t osrt -s process-tree --cpuctxsw=process-tree --backtrace=fp \
        --force-overwrite=true -o s ./timed.sh ./compute > /dev/null 2>&1
done
echo "compute.c, no nsys:            $(ms plain.txt)"
echo "compute.c, nsys, no sampling:  $(ms nosampling.txt)"
echo "compute.c, nsys, sampling:     $(ms sampling.txt)"

W=$(python3 -m nsys2prv wrapper)
for ((r = 0; r < REPS; r++)); do
    for cfg in none defaults; do
        opts=(); [ "$cfg" = none ] && opts=(-t mpi,nvtx,osrt --mpi-impl=openmpi -s none --cpuctxsw=none --)
        s=$(date +%s%N)
        NSYS2PRV_OUTDIR=$cfg mpirun --allow-run-as-root --oversubscribe -np 2 "$W" "${opts[@]}" ./mpi_wait > /dev/null 2>&1
        echo "$(( ($(date +%s%N) - s) / 1000000 ))" >> "mpi_$cfg.txt"
    done
done
echo "mpi_wait.c (2 ranks), wrapper with -s none --cpuctxsw=none: $(ms mpi_none.txt); reports $(du -cb none/*.nsys-rep | tail -1 | cut -f1) bytes"
echo "mpi_wait.c (2 ranks), wrapper defaults:                     $(ms mpi_defaults.txt); reports $(du -cb defaults/*.nsys-rep | tail -1 | cut -f1) bytes"
echo "wrapper defaults here: $(grep -c 'process-tree): OK' <(nsys status -e 2>&1)) = sampling on (1) / off (0)"

for app in p2p:4 coll:4 threads:2 polls:2; do
    prog=${app%%:*}; np=${app##*:}
    mpicc -O1 -o "$prog" "$REPO/scripts/mpi_apps/$prog.c" -lpthread
    for ((r = 0; r < REPS; r++)); do
        for cfg in none defaults; do
            opts=(); [ "$cfg" = none ] && opts=(-t mpi,nvtx,osrt --mpi-impl=openmpi -s none --cpuctxsw=none --)
            rm -rf "$prog-$cfg"; mkdir -p "$prog-$cfg"
            s=$(date +%s%N)
            MPILOG_DIR=$prog-$cfg NSYS2PRV_OUTDIR=$prog-$cfg mpirun --allow-run-as-root --oversubscribe -np "$np" \
                "$W" "${opts[@]}" "./$prog" > /dev/null 2>&1
            echo "$(( ($(date +%s%N) - s) / 1000000 ))" >> "${prog}_$cfg.txt"
        done
    done
    for cfg in none defaults; do
        echo "$prog.c ($np ranks), wrapper $cfg: $(ms "${prog}_$cfg.txt"); reports $(du -cb "$prog-$cfg"/*.nsys-rep | tail -1 | cut -f1) bytes"
    done
done
