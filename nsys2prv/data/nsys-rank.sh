#!/usr/bin/env bash
# nsys-rank.sh: profile one MPI rank with Nsight Systems, one report per rank.
#
# Put it between the launcher and the application:
#   srun   "$(nsys2prv wrapper)" ./app args...
#   mpirun -np 8 "$(nsys2prv wrapper)" ./app args...
#   mpirun -np 8 "$(nsys2prv wrapper)" -t cuda,nvtx,mpi --cuda-graph-trace=node -- ./app args...
# Options before a "--" go to `nsys profile` instead of the defaults below.
#
# Each rank gets its own TMPDIR (several nsys agents sharing one on a node can hang or fail),
# starts NSYS2PRV_STAGGER seconds (default 0.2) after the previous rank of its node, and writes
# ${NSYS2PRV_OUTDIR:-.}/rank<N>.nsys-rep. Then: nsys2prv -m rank*.nsys-rep out/trace
#
# Environment: NSYS2PRV_OUTDIR (report directory), NSYS2PRV_STAGGER (seconds per local rank),
# NSYS_HOME (an Nsight Systems installation, when nsys is not on PATH).
set -euo pipefail

me="nsys-rank.sh"
rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-${MV2_COMM_WORLD_RANK:-0}}}}}
local_rank=${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-${MPI_LOCALRANKID:-${MV2_COMM_WORLD_LOCAL_RANK:-0}}}}

nsys=$(command -v nsys 2>/dev/null || true)
if [ -z "$nsys" ] && [ -n "${NSYS_HOME:-}" ] && [ -x "$NSYS_HOME/bin/nsys" ]; then
    nsys=$NSYS_HOME/bin/nsys
fi
if [ -z "$nsys" ]; then
    echo "$me: rank $rank: nsys not found: put Nsight Systems' bin directory on PATH or set NSYS_HOME" >&2
    exit 127
fi

# `nsys profile` options: the user's (before "--"), else defaults for an MPI + CUDA job
user_opts=()
separator=0
for arg in "$@"; do [ "$arg" = "--" ] && { separator=1; break; }; done   # an argument "--" (not " -- " in one)
if [ "$separator" = 1 ]; then
    while [ "$1" != "--" ]; do user_opts+=("$1"); shift; done
    shift
fi
[ $# -gt 0 ] || { echo "usage: $me [NSYS-PROFILE-OPTIONS --] APP [ARGS...]" >&2; exit 2; }
if [ ${#user_opts[@]} -eq 0 ]; then
    impl=openmpi
    if [ -z "${OMPI_COMM_WORLD_RANK:-}" ] && { [ -n "${PMI_RANK:-}" ] || [ -n "${MPI_LOCALRANKID:-}" ]; }; then
        impl=mpich
    fi
    user_opts=(-t "cuda,nvtx,mpi,osrt" "--mpi-impl=$impl" -s none --cpuctxsw=none)
fi

outdir=${NSYS2PRV_OUTDIR:-.}
mkdir -p "$outdir"
private_tmp=$(mktemp -d "${TMPDIR:-/tmp}/nsys-rank$rank.XXXXXX")
trap 'rm -rf "$private_tmp"' EXIT
sleep "$(awk -v r="$local_rank" -v s="${NSYS2PRV_STAGGER:-0.2}" 'BEGIN { printf "%.3f", r * s }')"
TMPDIR=$private_tmp "$nsys" profile "${user_opts[@]}" --force-overwrite=true -o "$outdir/rank$rank" "$@"
