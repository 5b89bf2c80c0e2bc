"""Open one Nsight Systems SQLite export read-only and probe what it contains.

Nothing here assumes a schema version: tables and columns are discovered from
``sqlite_master`` / ``PRAGMA table_info`` once per file, and readers ask for what
they need (see docs/nsys-schema.md).
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Literal
from urllib.parse import quote

import numpy as np
import pandas as pd
import pyarrow as pa

from nsys2prv.core.environment import environment
from nsys2prv.core.errors import UserError

SQLITE_MAGIC = b"SQLite format 3\x00"
# Tables that only an Nsight Systems export has; one of them must exist -- or, in a lazy export
# made by ``nsys stats`` (2021-2022: no export metadata, no session start), StringIds and one of
# the event tables (NSYS_EVENT_TABLES, NSYS_EVENT_PREFIX).
NSYS_MARKER_TABLES = ("TARGET_INFO_SESSION_START_TIME", "EXPORT_META_DATA", "META_DATA_EXPORT")
NSYS_EVENT_TABLES = (
    "NVTX_EVENTS",
    "OSRT_API",
    "MPI_P2P_EVENTS",
    "MPI_COLLECTIVES_EVENTS",
    "MPI_OTHER_EVENTS",
    "MPI_START_WAIT_EVENTS",
    "CUDA_GRAPH_EVENTS",
    "GPU_METRICS",
    "GENERIC_EVENTS",
)
NSYS_EVENT_PREFIX = "CUPTI_ACTIVITY_KIND_"
NO_METADATA = (
    "no export metadata and no session start time (a lazy export made by nsys stats?): "
    "read as it is; schema and Nsight Systems version unknown"
)
# The host, in order: TARGET_INFO_SYSTEM_ENV 'Hostname'; META_DATA_CAPTURE 'DEVICE_DISPLAY_NAME' (the
# only name of a Windows capture); the captured environment's host variables.  Placeholders name no host.
HOST_ENV_VARS = ("SLURMD_NODENAME", "HOSTNAME", "COMPUTERNAME")
NOT_A_HOST = {"", "localhost", "local (cli)", "unknown", "unknown-host"}
UNKNOWN_HOST = "unknown-host-"  # + the report file's stem, when the export names no host
_VERSION_SUFFIX = re.compile(r"_v\d+$")


def strip_version_suffix(name: str) -> str:
    """``cudaLaunchKernel_v7000`` -> ``cudaLaunchKernel`` (display names only)."""
    return _VERSION_SUFFIX.sub("", name)


class Report:
    """One report (one SQLite export): schema probe, metadata and typed queries."""

    opened = 0  # SQLite files opened by this process (the table cache's tests count them)

    def __init__(self, path: str | os.PathLike, index: int = 0, source: str | None = None):
        Report.opened += 1
        self.path = Path(path)
        self.index = index
        # The file the user named (a .nsys-rep is exported to a cached .sqlite).
        self.source = source or str(path)
        self._conn, self._uri = _open_readonly(self.path)  # (the URI: the ADBC reader opens the same)
        self._bound = _Bound(self._conn, self.path)
        self.notes: list[str] = []  # what the conversion should say about this export
        try:
            self.tables = self._probe_tables()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise UserError(f"not a readable SQLite database ({exc})", str(self.path)) from None
        if not any(t in self.tables for t in NSYS_MARKER_TABLES):
            if "StringIds" in self.tables and any(
                t in NSYS_EVENT_TABLES or t.startswith(NSYS_EVENT_PREFIX) for t in self.tables
            ):
                self.notes.append(NO_METADATA)
            else:
                self._conn.close()
                raise UserError(
                    "SQLite file is not an Nsight Systems export (none of the tables "
                    f"{', '.join(NSYS_MARKER_TABLES)}, nor StringIds with event tables)",
                    str(self.path),
                )
        self._columns: dict[str, list[str]] = {}
        self._adbc: _AdbcReader | Literal[False] | None = None  # the optional ADBC reader (see _adbc_query);
        #                                                          False once unusable
        self.cache: dict = {}  # per-report memo for loaders shared by several readers
        # what the readers asked of each table: columns found missing, and tables some probe accepted
        self.missing_columns: dict[str, set[str]] = {}
        self.probed_ok: set[str] = set()
        self.window: tuple[str, int, int] | None = None  # queries read only rowids [lo, hi) of this table
        # while a reader runs (readers.base.Reader): rows its queries dropped for a non-numeric value
        # in a numeric column, reason -> rows; and optional columns found missing, table -> columns
        self.type_drops: dict[str, int] | None = None
        self.optional_missing: dict[str, list[str]] = {}

    # -- probing ---------------------------------------------------------
    def _probe_tables(self) -> set[str]:
        """The export's tables.  Only objects of type 'table' are read: nsys writes no view, and a view
        (which could name a table the readers ask for and be any query, an endless recursive one
        too) is said in ``notes`` and skipped; so is a virtual table (a module's code behind a name)."""
        rows = self._conn.execute("SELECT type, name, sql FROM sqlite_master WHERE type IN ('table','view')").fetchall()
        virtual = {n for t, n, sql in rows if t == "table" and str(sql or "").lstrip()[:14].upper() == "CREATE VIRTUAL"}
        for what, names in (
            ("view(s)", sorted(str(n) for t, n, _ in rows if t == "view")),
            ("virtual table(s)", sorted(str(n) for n in virtual)),
        ):
            if names:
                self.notes.append(
                    f"{len(names)} {what} in the export not read (only tables are): "
                    + ", ".join(names[:4])
                    + (" ..." if len(names) > 4 else "")
                )
        return {n for t, n, _ in rows if t == "table" and n not in virtual}

    def base_tables(self) -> list[str]:
        """The export's tables (not its views), sorted."""
        return sorted(r[0] for r in self.rows("SELECT name FROM sqlite_master WHERE type = 'table'"))

    def columns(self, table: str) -> list[str]:
        if table not in self.tables:
            return []
        if table not in self._columns:
            rows = self.rows(f'PRAGMA table_info("{table}")')
            self._columns[table] = [r[1] for r in rows]
        return self._columns[table]

    def has(self, table: str, *cols: str) -> bool:
        have = self.columns(table)
        if not have:
            return False
        missing = [c for c in cols if c not in have]
        if missing:
            self.missing_columns.setdefault(table, set()).update(missing)
            return False
        self.probed_ok.add(table)
        return True

    def unreadable(self, tables) -> dict[str, list[str]]:
        """Of ``tables``, those with rows that no reader's probe accepted: table -> the columns it lacked."""
        return {
            t: sorted(self.missing_columns[t])
            for t in tables
            if t in self.missing_columns and t not in self.probed_ok and self.count(t)
        }

    def count(self, table: str, where: str = "") -> int:
        if table not in self.tables:
            return 0
        sql = f'SELECT count(*) FROM "{table}"' + (f" WHERE {where}" if where else "")
        return int(self.rows(sql)[0][0])

    def col_or_null(self, table: str, col: str, alias: str | None = None, prefix: str = "", warn: bool = False) -> str:
        """``col`` when the table has it, else ``NULL`` (always aliased to ``alias or col``); ``warn``:
        a column whose absence loses information (recorded in ``optional_missing``: the reader says it)."""
        alias = alias or col
        if col in self.columns(table):
            return f"{prefix}{col} AS {alias}"
        if warn and col not in self.optional_missing.setdefault(table, []):
            self.optional_missing[table].append(col)
        return f"NULL AS {alias}"

    # -- queries ---------------------------------------------------------
    def _fetch(self, sql: str, params: tuple = ()):
        """(cursor description, rows).  Text is decoded by sqlite3 itself (C); the first text that
        is not valid UTF-8 switches the connection to a decoder that replaces bad bytes, and the
        query is run again.  Every query is bounded (``_Bound``): one that runs past it is an error."""
        self._bound.start()
        try:
            try:
                cur = self._conn.execute(sql, params)
                return cur.description, cur.fetchall()
            except sqlite3.OperationalError as exc:
                if self._conn.text_factory is not str or "decode" not in str(exc):
                    raise
                self._conn.text_factory = _decode_text
                cur = self._conn.execute(sql, params)
                return cur.description, cur.fetchall()
        except sqlite3.DatabaseError as exc:
            if self._bound.exceeded:
                raise UserError(
                    f"a query ran past its bound of {self._bound.steps} SQLite steps (an export made to hang "
                    "its reader?): not converted",
                    self.source,
                ) from None
            raise UserError(f"cannot read the export ({exc})", self.source) from None

    def rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        """The rows of ``sql`` as Python tuples (small metadata tables: no DataFrame)."""
        return self._fetch(sql, params)[1]

    @contextmanager
    def counting_type_drops(self) -> Iterator[dict[str, int]]:
        """While the block runs, rows dropped for text in a numeric column are counted in a new
        ``type_drops`` (yielded); the outer one is back after it."""
        outer, self.type_drops = self.type_drops, {}
        try:
            yield self.type_drops
        finally:
            self.type_drops = outer

    def rowid_range(self, table: str) -> tuple[int, int] | None:
        """The smallest and largest rowid of a table (None: empty, or a table without rowids)."""
        try:
            lo, hi = self.rows(f'SELECT min(rowid), max(rowid) FROM "{table}"')[0]
        except sqlite3.DatabaseError:
            return None
        return None if lo is None else (int(lo), int(hi))

    def query(self, sql: str, params: tuple = ()) -> pd.DataFrame:
        if self.window is not None:  # one batch of rows of a table (pipeline.scan.read_each)
            table, lo, hi = self.window
            sql = re.sub(
                rf"\bFROM\s+{table}\b",
                f"FROM (SELECT * FROM {table} WHERE rowid >= {lo} AND rowid < {hi}) AS {table}",
                sql,
            )
        if not params and self._adbc is not False:
            df = self._adbc_query(sql)
            if df is not None:
                return df
        description, rows = self._fetch(sql, params)
        names = [d[0] for d in description]
        if not rows:
            return pd.DataFrame({n: pd.Series(dtype="float64") for n in names})
        cols = list(zip(*rows))
        bad = None
        types = [{type(v) for v in c} for c in cols]
        for n, c, kinds in zip(names, cols, types):
            if kinds & TEXT and (kinds & NUMBER or n in NUMERIC_COLUMNS):  # text in a numeric column
                wrong = (
                    pd.to_numeric(pd.Series(c, dtype=object), errors="coerce").isna().to_numpy()
                    & ~pd.isna(pd.Series(c, dtype=object)).to_numpy()
                )
                if wrong.any():
                    self._count_wrong_type(sql, n, wrong, bad)
                    bad = wrong if bad is None else bad | wrong
        if bad is not None:  # those rows are dropped (counted), the other columns typed without them
            keep = np.flatnonzero(~bad)
            cols = [tuple(np.asarray(c, dtype=object)[keep]) for c in cols]
            if not keep.size:
                return pd.DataFrame({n: pd.Series(dtype="float64") for n in names})
            return pd.DataFrame({n: sql_column(c) for n, c in zip(names, cols)})  # kinds of the kept rows
        return pd.DataFrame({n: sql_column(c, k) for n, c, k in zip(names, cols, types)})

    def _count_wrong_type(self, sql: str, column: str, wrong: np.ndarray, before: np.ndarray | None) -> None:
        """Rows of a query dropped for a value that is not a number in a numeric column: counted in
        ``type_drops`` (a reader adds them to its tally) -- or, outside a reader, said in ``notes``."""
        m = re.search(r'\bFROM\s+"?(\w+)', sql, re.IGNORECASE)
        n = int((wrong & ~before).sum()) if before is not None else int(wrong.sum())
        if not n:
            return
        src = re.search(rf'"?(\w+)"?\s+AS\s+"?{re.escape(column)}\b', sql, re.IGNORECASE)  # the export's name
        reason = (
            f"{m.group(1) if m else 'a table'}: text in the numeric column {src.group(1) if src else column} "
            "(row not used)"
        )
        if self.type_drops is not None:
            self.type_drops[reason] = self.type_drops.get(reason, 0) + n
        else:
            self.notes.append(f"{n} row(s) of {reason}")

    def _adbc_query(self, sql: str) -> pd.DataFrame | None:
        """``sql`` through the ADBC SQLite driver (the optional ``fast`` extra: Arrow columns
        straight from C instead of sqlite3's Python tuples), or None when the driver is not
        installed, fails in any way, or gives a column it cannot give exactly as ``sql_column`` does
        (text and blob columns: it turns a number stored in a text column into text); the caller
        then reads through sqlite3."""
        try:
            if self._adbc is None:
                if environment().no_adbc:
                    raise ImportError
                self._adbc = _AdbcReader(self._uri)
            elif self._adbc is False:  # found unusable before
                return None
            return self._adbc.query(sql)
        except ImportError:
            self._adbc = False
        except Exception:  # noqa: BLE001 - any driver error: sqlite3 decides
            pass
        return None

    # -- metadata --------------------------------------------------------
    @cached_property
    def meta(self) -> dict[str, str]:
        for t in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
            if self.has(t, "name", "value"):
                rows = self.rows(f'SELECT name, value FROM "{t}"')
                return {str(k): str(v) for k, v in rows}
        return {}

    @property
    def schema_version(self) -> str:
        return self.meta.get("EXPORT_SCHEMA_VERSION", "unknown")

    @property
    def product_version(self) -> str:
        return self.meta.get("EXPORT_PRODUCT_VERSION", "unknown")

    @cached_property
    def capture_env(self) -> dict[str, str]:
        """Environment variables captured at launch (META_DATA_CAPTURE, 2023+ exports)."""
        env: dict[str, str] = {}
        if not self.has("META_DATA_CAPTURE", "name", "value"):
            return env
        rows = self.rows("SELECT value FROM META_DATA_CAPTURE WHERE name LIKE '%ENVIRONMENT_VARIABLE%'")
        for (v,) in rows:
            if isinstance(v, str) and "=" in v:
                k, _, val = v.partition("=")
                env.setdefault(k.strip(), val.strip().strip('"'))
        return env

    @cached_property
    def device_env(self) -> dict[str, str]:
        """The profiled process's environment as nsys 2022.x stores it: TARGET_INFO_SYSTEM_ENV row
        ``DeviceEnvironment``, NUL-separated KEY=VALUE (tests/data/mpi4/README.md)."""
        env: dict[str, str] = {}
        if not self.has("TARGET_INFO_SYSTEM_ENV", "name", "value"):
            return env
        for (v,) in self.rows("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'DeviceEnvironment'"):
            if isinstance(v, bytes):
                v = v.decode("utf-8", "replace")
            if not isinstance(v, str):
                continue
            for item in v.split("\0"):
                k, sep, val = item.partition("=")
                if sep and k.strip():
                    env.setdefault(k.strip(), val.strip())
        return env

    @cached_property
    def session_start_ns(self) -> int | None:
        if self.has("TARGET_INFO_SESSION_START_TIME", "utcEpochNs"):
            rows = self.rows("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME")
            if rows and rows[0][0] is not None:
                try:
                    return int(float(rows[0][0])) if not isinstance(rows[0][0], int) else rows[0][0]
                except ValueError:
                    return None
        return None

    @property
    def time_normalized(self) -> bool:
        return self.meta.get("EXPORT_PARAM_TIME_NORMALIZE", "false").lower() == "true"

    @property
    def time_shift_ns(self) -> int:
        try:
            return int(self.meta.get("EXPORT_PARAM_TIME_SHIFT", "0") or 0)
        except ValueError:
            return 0

    @cached_property
    def _host(self) -> tuple[str, str | None]:
        """(host name, where the export has it); (a name made from the report file, None) when it has none."""
        for table, key in (("TARGET_INFO_SYSTEM_ENV", "Hostname"), ("META_DATA_CAPTURE", "DEVICE_DISPLAY_NAME")):
            if self.has(table, "name", "value"):
                for (v,) in self.rows(f"SELECT value FROM {table} WHERE name = ?", (key,)):
                    if v is not None and str(v).strip().lower() not in NOT_A_HOST:
                        return str(v).strip(), f"{table} {key}"
        env = {**self.device_env, **self.capture_env}
        for var in HOST_ENV_VARS:
            if env.get(var, "").strip().lower() not in NOT_A_HOST:
                return env[var].strip(), f"captured environment {var}"
        return UNKNOWN_HOST + Path(self.source).stem, None

    @property
    def hostname(self) -> str:
        return self._host[0]

    @property
    def host_known(self) -> bool:
        return self._host[1] is not None

    @cached_property
    def strings(self) -> pd.Series:
        """StringIds as a Series id -> text (loaded once)."""
        if not self.has("StringIds", "id", "value"):
            return pd.Series(dtype=object)
        rows = self.rows("SELECT id, value FROM StringIds")  # straight to Python objects: a
        if not rows:  # DataFrame would make Arrow strings
            return pd.Series(dtype=object)  # of them only to turn them back
        ids, values = zip(*rows)
        texts = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in values]  # a BLOB
        text = np.array(texts, dtype=object)
        try:
            index = pd.Index(np.array(ids, dtype=np.int64))
            if index.is_unique:
                return pd.Series(text, index=index, dtype=object)
        except (TypeError, ValueError, OverflowError):
            pass
        return self._strings_of_damaged(ids, text)

    def _strings_of_damaged(self, ids: tuple, text: np.ndarray) -> pd.Series:
        """StringIds with an id repeated or not an integer (a damaged export): every id one text, the
        first; the rows left out said in ``notes``."""
        keys = pd.to_numeric(pd.Series(ids, dtype=object), errors="coerce")
        ok = (keys.notna() & (keys.abs() < 2**63) & (keys == keys.round())).to_numpy()
        index = np.zeros(len(ids), np.int64)
        index[ok] = keys[ok].astype(np.int64).to_numpy()
        dup = np.zeros(len(ids), bool)
        dup[ok] = pd.Series(index[ok]).duplicated().to_numpy()
        said = [f"{int(dup.sum())} row(s) repeating an id (the first text of each id kept)"] if dup.any() else []
        if not ok.all():
            said.append(f"{int((~ok).sum())} row(s) with an id that is not an integer (not used)")
        self.notes.append("StringIds: " + ", ".join(said))
        keep = ok & ~dup
        return pd.Series(text[keep], index=index[keep], dtype=object)

    def lookup(self, ids: pd.Series | np.ndarray) -> np.ndarray:
        """Map StringIds keys to text; a missing or NULL id gives None (LEFT JOIN semantics)."""
        ids = pd.Series(ids)
        valid = ids.notna()
        out = np.full(len(ids), None, dtype=object)
        if valid.any():
            keys = ids[valid].astype(np.int64).to_numpy()
            out[valid.to_numpy()] = self.strings.reindex(keys).to_numpy()
        return out

    def close(self) -> None:
        if self._adbc:
            self._adbc.close()
            self._adbc = None
        self._conn.close()

    def __repr__(self) -> str:
        return f"Report({self.source!r}, schema={self.schema_version})"


TEXT = {str, bytes}
NUMBER = {int, float}
# columns (as the readers name them in their queries) that hold numbers whatever else a column of the
# same query holds: text there is a damaged row, never a value
NUMERIC_COLUMNS = frozenset(
    {
        "start",
        "end",
        "tid",
        "gpid",
        "pid",
        "device",
        "context",
        "stream",
        "corr",
        "globalTid",
        "globalPid",
        "nameId",
        "shortName",
        "demangledName",
        "rank",
        "id",
        "deviceId",
        "streamId",
        "contextId",
        "correlationId",
        "typeId",
        "metricId",
        "timestamp",
        "bytes",
        "size",
        "copyKind",
        "copy_kind",
        "domainId",
        "eventType",
        "textId",
        "graphNodeId",
        "graphExecId",
    }
)


def sql_column(values: tuple, kinds: set | None = None) -> np.ndarray | pd.Series:
    """A column from sqlite tuples: int64 when all ints, Int64/float when NULLs, else object
    (``kinds``: the values' types, when the caller has them)."""
    arr = np.asarray(values, dtype=object)
    kinds = {type(v) for v in values} if kinds is None else kinds
    if kinds <= {int}:
        try:
            return arr.astype(np.int64)
        except OverflowError:
            return arr.astype(np.uint64).view(np.int64)
    if kinds <= {int, type(None)}:
        return pd.array(list(values), dtype="Int64")
    if kinds <= {int, float, type(None)}:
        return arr.astype(float)
    return arr


def _EXACT(typ) -> bool:
    """Arrow types the ADBC driver gives exactly as sqlite3 + ``sql_column`` would (it refuses an int
    column holding a float or text, and a float column holding text)."""
    return pa.types.is_int64(typ) or pa.types.is_float64(typ) or pa.types.is_null(typ)


class _AdbcReader:
    """A read-only ADBC SQLite connection (low-level API: the DB-API module would import
    pyarrow.dataset)."""

    def __init__(self, uri: str):
        # optional dependency (extra "fast"): ImportError here means the stdlib reader
        import adbc_driver_manager
        import adbc_driver_sqlite
        import pyarrow  # noqa: F401 - the Arrow import below needs it; ImportError = no accelerator

        self._mgr = adbc_driver_manager
        self._db = adbc_driver_sqlite.connect(uri)
        try:
            self._conn = adbc_driver_manager.AdbcConnection(self._db)
        except Exception:
            self._db.close()
            raise

    def query(self, sql: str) -> pd.DataFrame | None:

        stmt = self._mgr.AdbcStatement(self._conn)
        try:
            stmt.set_sql_query(sql)
            handle, _ = stmt.execute_query()
            reader = pa.RecordBatchReader._import_from_c(handle.address)
            if not all(_EXACT(t) for t in reader.schema.types):
                reader.close()
                return None  # text / blob: sqlite3 and _decode_text decide
            table = reader.read_all()
        finally:
            stmt.close()
        names = table.column_names
        if table.num_rows == 0:
            return pd.DataFrame({n: pd.Series(dtype="float64") for n in names})
        cols = {}
        for name, col in zip(names, table.columns):
            typ = col.type
            if pa.types.is_null(typ):
                cols[name] = pd.array([None] * len(col), dtype="Int64")
            elif pa.types.is_int64(typ):
                if col.null_count:
                    values = col.fill_null(0).to_numpy()
                    cols[name] = pd.arrays.IntegerArray(values, col.is_null().to_numpy(zero_copy_only=False))
                else:
                    cols[name] = col.to_numpy()
            elif pa.types.is_float64(typ):
                cols[name] = col.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
            else:
                return None
        return pd.DataFrame(cols)

    def close(self) -> None:
        try:
            self._conn.close()
        finally:
            self._db.close()


class _Bound:
    """A bound on every sqlite3 query of a connection: SQLite's progress handler, called every
    ``EVERY`` virtual machine steps, interrupts a query past ``STEPS_PER_BYTE`` steps per byte of the
    file (at least ``MIN_STEPS``) -- far more than any scan, sort or indexed join of the file needs,
    and a bound on what a crafted export (a recursive query behind a name) could make it run.  The
    ADBC reader (``_AdbcReader``) runs the readers' queries over the export's tables only (views are
    never read: ``Report._probe_tables``), whose work the file's size bounds."""

    EVERY = 10_000
    STEPS_PER_BYTE = 1000
    MIN_STEPS = 10**10

    def __init__(self, conn: sqlite3.Connection, path: Path):
        try:
            size = path.stat().st_size
        except OSError:
            size = 0
        self.steps = max(self.MIN_STEPS, self.STEPS_PER_BYTE * size)
        self.start()
        conn.set_progress_handler(self._tick, self.EVERY)

    def start(self) -> None:
        self._left, self.exceeded = self.steps // self.EVERY, False

    def _tick(self) -> int:
        self._left -= 1
        if self._left < 0:
            self.exceeded = True
            return 1  # interrupt the query
        return 0


def _open_readonly(path: Path) -> tuple[sqlite3.Connection, str]:
    """A read-only connection to an export, and its URI (``_uri``)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise UserError("file not found", str(path)) from None
    except OSError as exc:
        raise UserError(f"cannot open ({exc.strerror})", str(path)) from None
    if stat.S_ISDIR(st.st_mode):
        raise UserError("is a directory, not a report", str(path))
    if not stat.S_ISREG(st.st_mode):  # a FIFO would block the read below forever
        raise UserError("not a regular file (a FIFO, socket or device): give the export itself", str(path))
    try:
        with open(path, "rb") as fh:
            header = fh.read(100)
    except OSError as exc:
        raise UserError(f"cannot open ({exc.strerror})", str(path)) from None
    if header[:16] != SQLITE_MAGIC:
        raise UserError("not an SQLite file (expected an nsys .sqlite export or a .nsys-rep)", str(path))
    uri = _uri(path, header)
    try:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        conn.text_factory = str  # (Report._fetch: invalid UTF-8 switches to _decode_text)
        conn.execute("PRAGMA query_only = ON")
    except sqlite3.DatabaseError as exc:
        raise UserError(f"cannot open SQLite database ({exc})", str(path)) from None
    return conn, uri


def _uri(path: Path, header: bytes) -> str:
    """The read-only URI of an export.  A WAL-mode database (header bytes 18-19 = 2) would need its
    ``-shm`` and ``-wal`` files, created beside it (or refused on read-only media): without a WAL file
    holding data it is opened ``immutable`` -- no locks, no side files."""
    uri = "file:" + _uri_path(path.resolve()) + "?mode=ro"
    if len(header) >= 20 and header[18] == 2 and header[19] == 2:
        wal = Path(f"{path.resolve()}-wal")
        try:
            has_wal = wal.stat().st_size > 0
        except OSError:
            has_wal = False
        if not has_wal:
            uri += "&immutable=1"
    return uri


def _decode_text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _uri_path(path: Path) -> str:
    return quote(str(path))
