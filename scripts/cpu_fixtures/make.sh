#!/usr/bin/env bash
# Regenerate the CPU-side fixtures tests/data/cpu23/ (thread scheduling, CPU samples with call stacks,
# OS runtime call stacks) with Nsight Systems 2023.4 and the programs beside this script:
#
#   scripts/cpu_fixtures/make.sh [--keep-tmp]
#
#   compute.sqlite            compute.c: 70 % of its time in f(), 30 % in g()
#   threads.sqlite            threads.c: 3 workers computing, sleeping, waiting for a mutex
#   mpi_rank0/1.sqlite        mpi_wait.c on 2 ranks: rank 1 blocks in MPI_Recv, through the wrapper
#
# Steps (the exact commands):
#   cc -O1 -fno-omit-frame-pointer -fno-inline compute.c -o compute
#   cc -O1 -fno-omit-frame-pointer threads.c -o threads -lpthread
#   mpicc -O1 -fno-omit-frame-pointer mpi_wait.c -o mpi_wait
#   nsys profile -t osrt -s cpu --cpuctxsw=process-tree --backtrace=fp -o compute ./compute   (same: threads)
#   QdstrmImporter -i compute.qdstrm -o compute.nsys-rep        (nsys 2023.4 cannot find its importer)
#   mpirun --allow-run-as-root --oversubscribe -np 2 "$(nsys2prv wrapper)" \
#       -t mpi,osrt --mpi-impl=openmpi -s cpu --cpuctxsw=process-tree --backtrace=fp -- ./mpi_wait
#   nsys export --type sqlite -o X.sqlite X.nsys-rep             (in the run directory: relative paths)
#   scripts/scrub_sqlite.py --trim --keep-cpu --vacuum X.sqlite tests/data/cpu23/X.sqlite
#
# Needs Nsight Systems 2023.4 (NSYS23, default /opt/nsys-2023.4: an unpacked nsight-systems 2023.4.4 .deb,
# with its QdstrmImporter under usr/lib/nsight-systems/host-linux-x64), a C compiler and Open MPI.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
DEST="$REPO/tests/data/cpu23"
NSYS23=${NSYS23:-/opt/nsys-2023.4}
KEEP_TMP=0
[ "${1:-}" = --keep-tmp ] && KEEP_TMP=1
PY=${PYTHON:-python3}
IMPORTER=$NSYS23/usr/lib/nsight-systems/host-linux-x64/QdstrmImporter
[ -x "$NSYS23/usr/bin/nsys" ] || { echo "make.sh: ERROR: no Nsight Systems 2023.4 in $NSYS23 (set NSYS23)" >&2; exit 1; }
[ -x "$IMPORTER" ] || { echo "make.sh: ERROR: no QdstrmImporter at $IMPORTER" >&2; exit 1; }
export PATH=$NSYS23/usr/bin:$PATH
[ -d "$NSYS23/extralib" ] && export LD_LIBRARY_PATH=$NSYS23/extralib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$REPO${PYTHONPATH:+:$PYTHONPATH}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/nsys2prv_cpu23.XXXXXX")
if [ "$KEEP_TMP" -eq 0 ]; then trap 'rm -rf "$TMP"' EXIT; else echo "keeping $TMP"; fi
cd "$TMP"

cc -O1 -fno-omit-frame-pointer -fno-inline "$HERE/compute.c" -o compute
cc -O1 -fno-omit-frame-pointer "$HERE/threads.c" -o threads -lpthread
mpicc -O1 -fno-omit-frame-pointer "$HERE/mpi_wait.c" -o mpi_wait

CPU_OPTS=(-s cpu --cpuctxsw=process-tree --backtrace=fp)
for app in compute threads; do
    nsys profile -t osrt "${CPU_OPTS[@]}" --force-overwrite=true -o "$app" "./$app"
    if [ ! -e "$app.nsys-rep" ]; then
        "$IMPORTER" -i "$app.qdstrm" -o "$app.nsys-rep" > "$app.import.log" 2>&1
    fi
done
NSYS2PRV_IMPORTER=$IMPORTER mpirun --allow-run-as-root --oversubscribe -np 2 \
    "$("$PY" -m nsys2prv wrapper)" -t mpi,osrt --mpi-impl=openmpi "${CPU_OPTS[@]}" -- ./mpi_wait
mv rank0.nsys-rep mpi_rank0.nsys-rep
mv rank1.nsys-rep mpi_rank1.nsys-rep

mkdir -p "$DEST"
for r in compute threads mpi_rank0 mpi_rank1; do
    nsys export --type sqlite --quiet true --force-overwrite true -o "$r.sqlite" "$r.nsys-rep"
    "$PY" "$REPO/scripts/scrub_sqlite.py" --trim --keep-cpu --vacuum "$r.sqlite" "$DEST/$r.sqlite"
done
ls -l "$DEST"
