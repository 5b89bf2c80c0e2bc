"""The read-only connections to an export: sqlite3 opened read-only and every query bounded
(``Bound``), the ADBC driver's reader (``AdbcReader``), and typed columns from SQLite rows
(``sql_column``)."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pandas as pd
import pyarrow as pa

from nsys2prv.core.errors import UserError

SQLITE_MAGIC = b"SQLite format 3\x00"


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


def _own(values: np.ndarray) -> np.ndarray:
    """``values`` as a writable array of their own: the driver's batches (1,024 rows each) are
    already concatenated into a new array; a single batch is Arrow's read-only memory: copied."""
    return values if values.flags.writeable else values.copy()


class AdbcReader:
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
                return None  # text / blob: sqlite3 and decode_text decide
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
                    values = _own(col.fill_null(0).to_numpy())
                    cols[name] = pd.arrays.IntegerArray(values, col.is_null().to_numpy(zero_copy_only=False))
                else:
                    cols[name] = _own(col.to_numpy())
            elif pa.types.is_float64(typ):
                cols[name] = _own(col.to_numpy(zero_copy_only=False).astype(np.float64, copy=False))
            else:
                return None
        return pd.DataFrame(cols, copy=False)  # (the columns as they are: not copied into one block)

    def close(self) -> None:
        try:
            self._conn.close()
        finally:
            self._db.close()


class Bound:
    """A bound on every sqlite3 query of a connection: SQLite's progress handler, called every
    ``EVERY`` virtual machine steps, interrupts a query past ``STEPS_PER_BYTE`` steps per byte of the
    file (at least ``MIN_STEPS``) -- far more than any scan, sort or indexed join of the file needs,
    and a bound on what a crafted export (a recursive query behind a name) could make it run.  The
    ADBC reader (``AdbcReader``) runs the readers' queries over the export's tables only (views are
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


def open_readonly(path: Path) -> tuple[sqlite3.Connection, str]:
    """A read-only connection to an export, and its URI (``_read_only_uri``)."""
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
    uri = _read_only_uri(path, header)
    try:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        conn.text_factory = str  # (Report._fetch: invalid UTF-8 switches to decode_text)
        conn.execute("PRAGMA query_only = ON")
    except sqlite3.DatabaseError as exc:
        raise UserError(f"cannot open SQLite database ({exc})", str(path)) from None
    return conn, uri


def _read_only_uri(path: Path, header: bytes) -> str:
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


def decode_text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _uri_path(path: Path) -> str:
    return quote(str(path))
