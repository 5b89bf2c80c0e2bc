#!/usr/bin/env bash
# Dump export schemas (DDL) and ENUM_* contents into tests/data/ddl/.
#
#   scripts/dump_ddl.sh [REPORT.nsys-rep]
#
# * schema_<ver>.sql / enums_<ver>.sql for the local nsys (2022.4 -> 3.0.0): REPORT is
#   exported with `nsys export --type sqlite --lazy false` (every table is created).
#   enums_<ver>_lazy.sql: the ENUM_* rows of the default (lazy) export of REPORT, which
#   are complete (with --lazy false, 2022.4 leaves most ENUM_* tables empty).
#   With nsys 2023.4 first on PATH (scripts/install_nsys.sh puts it in /opt/nsys-2023.4) and a 2023.4
#   report, the same gives schema_3.7.2.sql / enums_3.7.2*.sql.
#   Without REPORT, a 1-rank report is made first with scripts/profile_app.sh.
# * schema_3.13.2.sql / enums_3.13.2.sql from the cloverleaf export
#   ($CLOVERLEAF_SQLITE: a real export of schema 3.13.2, e.g. Nsight Systems 2024.5;
#   skipped if unset or absent). Only its DDL and enum rows are written, never its data.
#
# schema_*.sql is exactly `sqlite3 FILE .schema` (Python fallback when the sqlite3
# CLI is missing); enums_*.sql holds one INSERT per row of every ENUM_* table, in
# table-creation order (same text as sqlite3's `.mode insert`).
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/.." && pwd)
DEST=${DDL_DEST:-$REPO/tests/data/ddl}   # DDL_DEST: write elsewhere (e.g. to diff)
CLOVERLEAF_SQLITE=${CLOVERLEAF_SQLITE:-}
PY=${PYTHON:-python3}
mkdir -p "$DEST"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/nsys2prv_ddl.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

schema_version() {
    "$PY" - "$1" <<'PYEOF'
import sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
tabs = {t for (t,) in con.execute("select name from sqlite_master where type='table'")}
for t in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
    if t in tabs:
        print(con.execute(f"select value from {t} where name='EXPORT_SCHEMA_VERSION'").fetchone()[0])
        break
PYEOF
}

dump_schema() {  # FILE OUT
    if command -v sqlite3 >/dev/null 2>&1; then
        sqlite3 -readonly "$1" .schema > "$2"
    else
        "$PY" - "$1" > "$2" <<'PYEOF'
import sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
for (sql,) in con.execute("select sql from sqlite_master where sql is not null order by rowid"):
    print(sql + ";")
PYEOF
    fi
}

dump_enums() {  # FILE OUT
    "$PY" - "$1" > "$2" <<'PYEOF'
import sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
tabs = [t for (t,) in con.execute(
    "select name from sqlite_master where type='table' and name like 'ENUM\\_%' escape '\\' order by rowid")]
for t in tabs:
    cols = [r[1] for r in con.execute(f'pragma table_info("{t}")')]
    expr = " || ',' || ".join(f'quote("{c}")' for c in cols)
    for (vals,) in con.execute(f'select {expr} from "{t}" order by rowid'):
        print(f"INSERT INTO {t} VALUES({vals});")
PYEOF
}

# --- local nsys (schema 3.0.0 with Debian's 2022.4) --------------------------
REPORT=${1:-}
if [ -z "$REPORT" ]; then
    "$SCRIPT_DIR/profile_app.sh" "$TMP/prof" 1
    REPORT="$TMP/prof/rank0.nsys-rep"
fi
[ -f "$REPORT" ] || { echo "dump_ddl.sh: ERROR: no report $REPORT" >&2; exit 1; }
nsys export --type sqlite --lazy false --quiet true --force-overwrite true -o "$TMP/full.sqlite" "$REPORT"
VER=$(schema_version "$TMP/full.sqlite")
dump_schema "$TMP/full.sqlite" "$DEST/schema_$VER.sql"
dump_enums "$TMP/full.sqlite" "$DEST/enums_$VER.sql"
echo "dump_ddl.sh: schema $VER: $(grep -c '^CREATE TABLE' "$DEST/schema_$VER.sql") tables," \
     "$(grep -c '^INSERT' "$DEST/enums_$VER.sql") enum rows"
# Quirk of nsys 2022.4: with --lazy false most ENUM_* tables are created but left
# EMPTY (only ENUM_NSYS_EVENT_TYPE/_CLASS, ENUM_STACK_UNWIND_METHOD, ENUM_SAMPLING_THREAD_STATE
# are filled); the default lazy export fills all of them. Keep both.
nsys export --type sqlite --quiet true --force-overwrite true -o "$TMP/lazy.sqlite" "$REPORT"
dump_enums "$TMP/lazy.sqlite" "$DEST/enums_${VER}_lazy.sql"
echo "dump_ddl.sh: schema $VER (lazy export): $(grep -c '^INSERT' "$DEST/enums_${VER}_lazy.sql") enum rows"

# --- cloverleaf (schema 3.13.2, nsys 2024.5) -----------------------------------
if [ -f "$CLOVERLEAF_SQLITE" ]; then
    VER=$(schema_version "$CLOVERLEAF_SQLITE")
    dump_schema "$CLOVERLEAF_SQLITE" "$DEST/schema_$VER.sql"
    dump_enums "$CLOVERLEAF_SQLITE" "$DEST/enums_$VER.sql"
    echo "dump_ddl.sh: schema $VER: $(grep -c '^CREATE TABLE' "$DEST/schema_$VER.sql") tables," \
         "$(grep -c '^INSERT' "$DEST/enums_$VER.sql") enum rows"
else
    echo "dump_ddl.sh: $CLOVERLEAF_SQLITE not found, skipping schema 3.13.2" >&2
fi
