#!/usr/bin/env bash
# nsys-rank.sh: profile one MPI rank with Nsight Systems, one report per rank.
#
# Put it between the launcher and the application:
#   srun   "$(nsys2prv wrapper)" ./app args...
#   mpirun -np 8 "$(nsys2prv wrapper)" ./app args...
#   mpirun -np 8 "$(nsys2prv wrapper)" -t cuda,nvtx,mpi --cuda-graph-trace=node -- ./app args...
# Options before a "--" go to `nsys profile` instead of the defaults below.
#
# Each rank gets its own TMPDIR (several nsys agents sharing one on a node can hang or fail) and writes
# ${NSYS2PRV_OUTDIR:-.}/rank<N>.nsys-rep. Then: nsys2prv -m rank*.nsys-rep out/trace
# - When nsys leaves a .qdstrm (some packages cannot find their importer), the wrapper imports it with
#   the QdstrmImporter of the installation (next to nsys, NSYS_HOME, Debian's and NVIDIA's layouts).
# - When nsys fails or hangs before the application started (its agent failed: "Agent launcher failed",
#   "Connection to the Agent lost", ...), the rank is retried; once the application ran, never.
# - Every process it started (nsys, its agent, nsys-launcher, nsys-tee) is ended when it exits.
# - At most NSYS2PRV_CONCURRENT_STARTS nsys start at once on a node; no stagger by default. A rank that
#   waited for its turn or was retried starts late; its report records it (NSYS2PRV_ATTEMPT,
#   NSYS2PRV_DELAY_S: seconds from the wrapper's start to its nsys's, in the application's environment).
# - It prints one line per rank: the report written, how long it waited for its turn, whether it was
#   retried. nsys's own messages ("Collecting data...", "Generating ...", "Importer error status ...")
#   go to ${NSYS2PRV_OUTDIR:-.}/rank<N>.nsys.log instead of the job's output (the application's output
#   is passed through as it is); the log is removed when nsys said nothing.
#
# Environment: NSYS2PRV_OUTDIR (report directory), NSYS_HOME (an Nsight Systems installation, when nsys
# is not on PATH), NSYS2PRV_IMPORTER (the QdstrmImporter binary), NSYS2PRV_ATTEMPTS (default 5),
# NSYS2PRV_START_TIMEOUT (seconds for the application to start, default 30), NSYS2PRV_CONCURRENT_STARTS
# (nsys starting at once on a node, default: cores / 4), NSYS2PRV_STAGGER (seconds per local rank, default
# 0), NSYS2PRV_KEEP_QDSTRM=1 (keep the imported .qdstrm).
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
    # CPU samples with call stacks and thread scheduling when this nsys can take them here: version
    # 2023 or later (2022.4 hung after the application ended in one of 4 ranks) and its own environment
    # check (perf_event_open, paranoid level); see docs/profiling.md for their overhead
    cpu_opts=(-s none --cpuctxsw=none)
    version=$("$nsys" --version 2>/dev/null || true) year=0
    [[ $version =~ version\ ([0-9]{4})\. ]] && year=${BASH_REMATCH[1]}
    if [ "$year" -ge 2023 ] && "$nsys" status -e 2>/dev/null | grep -q 'CPU Profiling Environment (process-tree): OK'; then
        cpu_opts=(-s process-tree --cpuctxsw=process-tree --backtrace=fp)
    fi
    user_opts=(-t "cuda,nvtx,mpi,osrt" "--mpi-impl=$impl" "${cpu_opts[@]}")
fi

outdir=${NSYS2PRV_OUTDIR:-.}
mkdir -p "$outdir"
report=$(cd "$outdir" && pwd)/rank$rank
attempts=${NSYS2PRV_ATTEMPTS:-5}
start_timeout=${NSYS2PRV_START_TIMEOUT:-30}
log=$report.nsys.log

# nsys's own lines (not the application's): they go to the log. nsys 2022.4-2024.x's messages.
nsys_noise='^(Collecting data\.\.\.|Generating '"'"'|Generated:|Generating:|\[[0-9]+/[0-9]+\] |Importer error status|Importation |Unable to retrieve the importer|Processing events|Processing \[|Saving temporary |Creating final output|Saved report file|Report file (moved|saved)|Failed to create '"'"'|Use `--force-overwrite|The target application (returned|terminated)|Capture range |Agent launcher failed|Connection to the Agent lost|The timeout expired|Try the '"'"'nsys status|WARNING: (CPU |Device-side |Backtrace|OS runtime |The [a-z]+ (is|are) not supported)|[[:space:]]+/.*\.(nsys-rep|qdstrm|sqlite)$)'
# a filter: nsys's lines to descriptor 3 (the log), the others through, a line at a time
sieve() { awk -v noise="$nsys_noise" '{ if ($0 ~ noise) { print >> "/dev/fd/3"; fflush("/dev/fd/3") } else { print; fflush() } }'; }

# QdstrmImporter: NSYS2PRV_IMPORTER, else beside every link of the nsys path (bin/../host-linux-x64:
# NVIDIA's layout and Debian's /usr/lib/nsight-systems/bin), NSYS_HOME, the usual install places
find_importer() {
    local p=$nsys d c
    if [ -n "${NSYS2PRV_IMPORTER:-}" ]; then     # only this one
        [ -f "$NSYS2PRV_IMPORTER" ] && [ -x "$NSYS2PRV_IMPORTER" ] && echo "$NSYS2PRV_IMPORTER"
        return 0
    fi
    local cands=()
    for _ in 1 2 3 4 5 6 7 8; do
        d=$(cd "$(dirname "$p")" 2>/dev/null && pwd) || break
        cands+=("$d/../host-linux-x64" "$d/host-linux-x64" "$d")
        [ -L "$p" ] || break
        c=$(readlink "$p")
        case $c in /*) p=$c ;; *) p=$d/$c ;; esac
    done
    [ -n "${NSYS_HOME:-}" ] && cands+=("$NSYS_HOME/host-linux-x64" "$NSYS_HOME")
    cands+=(/usr/lib/nsight-systems/host-linux-x64 /opt/nvidia/nsight-systems/*/host-linux-x64
            /usr/local/cuda/nsight-systems-*/host-linux-x64 /usr/local/cuda*/nsight-systems*/host-linux-x64)
    for d in "${cands[@]}"; do
        [ -f "$d/QdstrmImporter" ] && [ -x "$d/QdstrmImporter" ] && { echo "$d/QdstrmImporter"; return; }
    done
    return 0
}

# 0 when the application runs: a child of nsys-launcher, itself a child of `nsys profile` (pid $1)
app_started() {
    local f line pid ppid comm rest
    local -A parent=() name=()
    for f in /proc/[0-9]*/stat; do
        read -r line 2>/dev/null < "$f" || continue
        pid=${line%% *}; comm=${line#*(}; comm=${comm%)*}; rest=${line##*) }; rest=${rest#* }
        parent[$pid]=${rest%% *}; name[$pid]=$comm
    done
    for pid in "${!parent[@]}"; do
        ppid=${parent[$pid]}
        [ "${name[$ppid]:-}" = nsys-launcher ] && [ "${parent[$ppid]:-}" = "$1" ] || continue
        case ${name[$pid]} in nsys-launcher|nsys-tee) ;; *) return 0 ;; esac
    done
    return 1
}

# End every process started for this rank (nsys profile, its agent daemon `nsys --start-agent`,
# nsys-launcher, nsys-tee, an application left running): they all carry its private TMPDIR. An agent
# daemonizes after its nsys may have exited: scan until two scans in a row find nothing.
end_ours() {
    local quiet=0 round f p pids
    for ((round = 0; round < 30 && quiet < 2; round++)); do
        pids=()
        for f in $(grep -lzF "TMPDIR=$private_tmp/" /proc/[0-9]*/environ 2>/dev/null || true); do
            p=${f#/proc/}; p=${p%/environ}
            [ "$p" != "$$" ] && [ "$p" != "$BASHPID" ] && running "$p" && pids+=("$p")
        done
        if [ ${#pids[@]} -eq 0 ]; then quiet=$((quiet + 1)); else quiet=0; stop "${pids[@]}"; fi
        read -rt 0.1 -u "$tick" _ || true
    done
}

# nsys processes left behind by earlier runs of this wrapper (killed, or older versions): their private
# TMPDIR is gone, or the wrapper that wrote its "owner" file does not run. A live agent whose nsys died
# makes every later nsys on the node fail ("Agent launcher failed") or hang: they are ended first.
end_orphans() {
    local f p d c owner cmd pids=()
    for f in $(grep -lzE '^TMPDIR=.*/nsys-rank[0-9]+\.[A-Za-z0-9]{6}(/[0-9]+)?$' /proc/[0-9]*/environ 2>/dev/null || true); do
        p=${f#/proc/}; p=${p%/environ}
        read -r c 2>/dev/null < "/proc/$p/comm" || continue
        case $c in nsys|nsys-launcher|nsys-tee) ;; *) continue ;; esac
        d=$(grep -zm1 '^TMPDIR=' "$f" 2>/dev/null | tr -d '\0') || continue
        d=${d#TMPDIR=}; d=${d%/[0-9]*}
        if [ -d "$d" ]; then
            owner=; read -r owner 2>/dev/null < "$d/owner" || continue     # an older wrapper, still running
            cmd=$(tr '\0' ' ' 2>/dev/null < "/proc/$owner/cmdline") || cmd=
            [[ $cmd == *nsys-rank* ]] && running "$owner" && continue
        fi
        running "$p" && pids+=("$p")
    done
    [ ${#pids[@]} -eq 0 ] || { echo "$me: rank $rank: ending ${#pids[@]} nsys processes of earlier runs" >&2; stop "${pids[@]}"; }
}

# Nsight Systems' session registry (/dev/shm/NSys-<version>) left locked by an nsys that was killed makes
# every later nsys of the node hang or fail: when no nsys runs on the node, it is unused and removed
# (nsys makes a new one).
reset_registry() {
    local f p c
    for f in /proc/[0-9]*/comm; do
        read -r c 2>/dev/null < "$f" || continue
        case $c in
            nsys|nsys-launcher|nsys-tee|QdstrmImporter) p=${f#/proc/}; running "${p%/comm}" && return 0 ;;
        esac
    done
    for f in "${NSYS2PRV_SHM_DIR:-/dev/shm}"/NSys-*; do
        [ -f "$f" ] && [ ! -L "$f" ] && [ -O "$f" ] && rm -f "$f" || true
    done
}

# TERM, then KILL after 1 s
stop() {
    kill -TERM "$@" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        running "$@" || return 0
        read -rt 0.1 -u "$tick" _ || true
    done
    kill -KILL "$@" 2>/dev/null || true
}

# 0 when one of the processes runs (a zombie waiting for init to reap it does not)
running() {
    local p line
    for p in "$@"; do
        read -r line 2>/dev/null < "/proc/$p/stat" || continue
        line=${line##*) }
        [ "${line:0:1}" = Z ] || return 0
    done
    return 1
}

# At most NSYS2PRV_CONCURRENT_STARTS nsys start at once on a node (default: a quarter of its cores, at
# least 1): several agents starting together on a loaded node time out ("Agent launcher failed", "The
# timeout expired") and leave agents that make every later nsys fail. A slot is a lock file in a private
# directory, held from `nsys profile` until the application runs (not inherited by nsys).
slots=${NSYS2PRV_CONCURRENT_STARTS:-$(( $(nproc 2>/dev/null || echo 4) / 4 ))}
[ "$slots" -ge 1 ] 2>/dev/null || slots=1
lockdir=${TMPDIR:-/tmp}/nsys2prv-$(id -u)
exec {lk}</dev/null
take_slot() {
    command -v flock > /dev/null || return 0
    mkdir -p -m 700 "$lockdir" 2>/dev/null || true
    [ -d "$lockdir" ] && [ ! -L "$lockdir" ] && [ -O "$lockdir" ] || return 0
    exec {lk}>&- {lk}>> "$lockdir/start$((local_rank % slots)).lock" || { exec {lk}</dev/null; return 0; }
    flock -w "$((start_timeout + 30))" "$lk" || true         # a stuck holder does not stop this rank
}
free_slot() { exec {lk}>&- {lk}</dev/null; }

private_tmp=$(mktemp -d "${TMPDIR:-/tmp}/nsys-rank$rank.XXXXXX")
echo "$$" > "$private_tmp/owner"
exec {tick}<> <(:)      # read -t on this descriptor: a sleep without a process
cleanup() { trap '' TERM INT; end_ours; rm -rf "$private_tmp"; [ -s "$log" ] || rm -f -- "$log"; }
trap cleanup EXIT
trap 'trap "" TERM INT; exit 143' TERM
trap 'trap "" TERM INT; exit 130' INT
rm -f -- "$log"
(set -C; : > "$log") 2>/dev/null || { echo "$me: rank $rank: cannot create $log" >&2; exit 1; }
exec {logfd}>> "$log"
exec {sieve_out}> >(sieve 3>&"$logfd" {lk}>&- {tick}>&-)
sieves=($!)
exec {sieve_err}> >(sieve 3>&"$logfd" >&2 {lk}>&- {tick}>&- {sieve_out}>&-)
sieves+=($!)
# the sieves end when every writer closed its pipe: this shell's copies, then nsys's processes
close_sieves() {
    exec {sieve_out}>&- {sieve_err}>&-
    local p
    for p in "${sieves[@]}"; do
        for ((w = 0; w < 50; w++)); do running "$p" || break; read -rt 0.1 -u "$tick" _ || true; done
    done
}
waited=0      # seconds this rank waited for its turn (a start slot), over its attempts
t_start=$(date +%s.%N)
stagger=$(awk -v r="$local_rank" -v s="${NSYS2PRV_STAGGER:-0}" 'BEGIN { printf "%.3f", r * s }')
[ "$stagger" = 0.000 ] || sleep "$stagger"

ok=0
for ((attempt = 1; attempt <= attempts; attempt++)); do
    if [ "$attempt" -gt 1 ]; then
        # the other ranks of the node are ending their failed attempts too: wait, longer each time
        for ((w = 0; w < (attempt - 1) * 10 + RANDOM % 10; w++)); do read -rt 0.1 -u "$tick" _ || true; done
    fi
    rm -f "$report.qdstrm" "$report.nsys-rep"
    mkdir -p "$private_tmp/$attempt"
    t_slot=$(date +%s.%N)
    take_slot
    waited=$(awk -v w="$waited" -v a="$t_slot" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", w + b - a }')
    end_orphans
    reset_registry
    delay=$(awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
    TMPDIR=$private_tmp/$attempt NSYS2PRV_ATTEMPT=$attempt NSYS2PRV_DELAY_S=$delay \
        "$nsys" profile "${user_opts[@]}" --force-overwrite=true -o "$report" "$@" \
        >&"$sieve_out" 2>&"$sieve_err" {lk}>&- {tick}>&- {logfd}>&- {sieve_out}>&- {sieve_err}>&- &
    nsys_pid=$!
    started=0 hung=0 polls=0
    while kill -0 "$nsys_pid" 2>/dev/null; do
        if app_started "$nsys_pid"; then started=1; break; fi
        if (( ++polls > start_timeout * 10 )); then hung=1; break; fi
        read -rt 0.1 -u "$tick" _ || true
    done
    if [ "$hung" = 1 ]; then
        echo "$me: rank $rank: the application did not start within ${start_timeout} s (attempt $attempt/$attempts)" >&2
        end_ours
    fi
    [ "$started" = 0 ] || free_slot
    rc=0; wait "$nsys_pid" || rc=$?
    # (nsys can exit 0 after "Connection to the Agent lost" without having started the application)
    if [ "$hung" = 0 ] && { [ "$started" = 1 ] || [ -e "$report.qdstrm" ] || [ -e "$report.nsys-rep" ]; }
    then
        # the application ran: never again (this rank would start twice in one MPI job)
        [ "$rc" = 0 ] || echo "$me: rank $rank: nsys profile or the application exited with code $rc" >&2
        ok=1; break
    fi
    end_ours
    free_slot
    [ "$attempt" -lt "$attempts" ] && echo "$me: rank $rank: nsys profile failed before the application started (exit code $rc); retrying ($((attempt + 1))/$attempts)" >&2
done
free_slot
[ "$ok" = 1 ] || { echo "$me: rank $rank: nsys profile failed $attempts times before the application started" >&2; exit 1; }

if [ -e "$report.qdstrm" ] && [ ! -e "$report.nsys-rep" ]; then
    importer=$(find_importer)
    if [ -z "$importer" ]; then
        echo "$me: rank $rank: $report.qdstrm not imported: QdstrmImporter not found (set NSYS2PRV_IMPORTER); import it with: <nsight-systems>/host-linux-x64/QdstrmImporter -i $report.qdstrm -o $report.nsys-rep" >&2
        exit 1
    fi
    if ! (cd "$private_tmp" && "$importer" -i "$report.qdstrm" -o "$report.nsys-rep" -f > import.log 2>&1) \
            || [ ! -s "$report.nsys-rep" ]; then
        echo "$me: rank $rank: importing failed: $importer -i $report.qdstrm -o $report.nsys-rep: $(tail -n 1 "$private_tmp/import.log")" >&2
        rm -f "$report.nsys-rep"
        exit 1
    fi
    imported=" (imported from its .qdstrm with $importer)"
    [ "${NSYS2PRV_KEEP_QDSTRM:-0}" = 1 ] || rm -f "$report.qdstrm"
fi
end_ours
close_sieves
exec {logfd}>&-
said="; nsys's messages: $log"
[ -s "$log" ] || { rm -f -- "$log"; said=; }
retried="not retried"
[ "$attempt" = 1 ] || retried="retried: attempt $attempt of $attempts"
if [ -e "$report.nsys-rep" ]; then
    echo "$me: rank $rank: wrote $report.nsys-rep${imported:-}; waited $waited s for its turn; $retried$said"
else
    echo "$me: rank $rank: no report: nsys profile wrote no $report.nsys-rep; waited $waited s for its turn; $retried$said" >&2
fi
exit "$rc"
