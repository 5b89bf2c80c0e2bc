#!/usr/bin/env bash
# Regenerate the real Nsight Systems fixtures tests/data/mpi4/rank{0,1,2,3}.sqlite
# (and, through scripts/dump_ddl.sh, the schema dumps in tests/data/ddl/).
#
#   scripts/make_real_fixtures.sh [--no-ddl] [--keep-tmp]
#
# 1. scripts/profile_app.sh TMP 4          -> TMP/rank0..3.nsys-rep
# 2. nsys export --type sqlite -o rankN.sqlite rankN.nsys-rep   (lazy export, the default)
# 3. scripts/scrub_sqlite.py --trim --vacuum TMP/rankN.sqlite tests/data/mpi4/rankN.sqlite
# 4. checks: every event table has the same row count as the raw export, rank N's
#    file names its thread "MPI Rank N", files are < 1 MB and open read-only.
# 5. scripts/dump_ddl.sh TMP/rank0.nsys-rep  (unless --no-ddl)
#
# Note: the export of nsys 2022.4 has no --tables option (the export always
# contains all tables that have data; see `nsys export --help`).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)
DEST="$REPO/tests/data/mpi4"
NRANKS=4
DO_DDL=1
KEEP_TMP=0
for a in "$@"; do
    case "$a" in
        --no-ddl) DO_DDL=0 ;;
        --keep-tmp) KEEP_TMP=1 ;;
        *) echo "usage: $0 [--no-ddl] [--keep-tmp]" >&2; exit 2 ;;
    esac
done

PY=${PYTHON:-python3}
command -v "$PY" >/dev/null 2>&1 || { echo "make_real_fixtures.sh: ERROR: $PY not found" >&2; exit 1; }
command -v nsys >/dev/null 2>&1 || { echo "make_real_fixtures.sh: ERROR: nsys not found (run scripts/install_nsys.sh)" >&2; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/nsys2prv_fixtures.XXXXXX")
if [ "$KEEP_TMP" -eq 0 ]; then trap 'rm -rf "$TMP"' EXIT; else echo "keeping $TMP"; fi

"$SCRIPT_DIR/profile_app.sh" "$TMP/prof" "$NRANKS"

cd "$TMP/prof"   # export with relative paths, so the metadata holds only file names
for ((r = 0; r < NRANKS; r++)); do
    nsys export --type sqlite --quiet true --force-overwrite true -o "rank$r.sqlite" "rank$r.nsys-rep"
done

mkdir -p "$DEST"
for ((r = 0; r < NRANKS; r++)); do
    "$PY" "$SCRIPT_DIR/scrub_sqlite.py" --trim --vacuum "rank$r.sqlite" "$DEST/rank$r.sqlite"
done

"$PY" - "$TMP/prof" "$DEST" "$NRANKS" <<'PYEOF'
import os, re, sqlite3, sys
raw_dir, dest, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
EVENT = re.compile(r"^(NVTX_EVENTS|OSRT_API|PROFILER_OVERHEAD|CUPTI_.*|.*_EVENTS?|TARGET_INFO_SESSION_START_TIME|ANALYSIS_DETAILS|ProcessStreams|OSRT_CALLCHAINS)$")
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
        if EVENT.match(t):
            a = sorted(raw.execute(f'select * from "{t}"').fetchall(), key=repr)
            b = sorted(new.execute(f'select * from "{t}"').fetchall(), key=repr)
            if a != b:
                print(f"rank{r}: {t} differs ({len(a)} vs {len(b)} rows)"); ok = False
    names = [v for (v,) in new.execute("select text from NVTX_EVENTS where eventType=39")]
    if f"MPI Rank {r}" not in names:
        print(f"rank{r}: no 'MPI Rank {r}' thread-name event (have {names})"); ok = False
    size = os.path.getsize(path)
    if size >= 1 << 20:
        print(f"rank{r}: {size} bytes >= 1 MiB"); ok = False
    print(f"check rank{r}: {size} bytes, thread names {names}")
print("check:", "OK (event rows identical to the raw export)" if ok else "FAILED")
sys.exit(0 if ok else 1)
PYEOF

"$PY" "$SCRIPT_DIR/fixture_counts.py" "$DEST"/rank*.sqlite

if [ "$DO_DDL" -eq 1 ]; then
    "$SCRIPT_DIR/dump_ddl.sh" "$TMP/prof/rank0.nsys-rep"
fi
echo "make_real_fixtures.sh: wrote $DEST/rank{0..$((NRANKS - 1))}.sqlite"
